//! The shape of the source tree: no crate of the workspace has an import cycle between its
//! modules. Each file is a module; a module depends on another when it names an item of it
//! (through `use`, or a path in code such as `crate::builtin::release`). A re-export
//! (`pub use`) is not a dependency of the module that makes it: names are followed through
//! it to the module that defines the item, so a parent that re-exports its children's items
//! does not depend on them. Module declarations (`mod x;`) are not dependencies either, and
//! unit tests (`#[cfg(test)]` modules, inline or in their own file) are left out: a test may
//! drive the whole crate from inside the module it tests.
//!
//! The same holds one level up: the files and folders directly under a crate's `src/` (its
//! rooms) import each other in no loop either, so each folder stands on the ones below it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One file of a crate, as a module.
#[derive(Debug, Default)]
struct Module {
    file: PathBuf,
    /// Child modules by name.
    children: BTreeMap<String, usize>,
    parent: Option<usize>,
    /// Items defined here (structs, functions, constants, macros, ...).
    items: BTreeSet<String>,
    /// Re-exports: the name they give, and the path they name.
    reexports: Vec<(String, Vec<String>)>,
    /// Glob re-exports (`pub use x::*`): the paths.
    globs: Vec<Vec<String>>,
    /// The paths this module names (`use`, and paths in code).
    references: Vec<Vec<String>>,
    /// The names its `use` statements bring in, and the paths they stand for.
    imports: BTreeMap<String, Vec<String>>,
}

/// The crate rooted at `root` (a `lib.rs` or `main.rs`), one module per file.
struct Crate {
    modules: Vec<Module>,
}

impl Crate {
    fn load(root: &Path) -> Crate {
        let mut krate = Crate {
            modules: Vec::new(),
        };
        krate.add(root.to_path_buf(), None);
        for index in 0..krate.modules.len() {
            krate.read_references(index);
        }
        krate
    }

    /// Adds the module in `file` and, recursively, the modules it declares.
    fn add(&mut self, file: PathBuf, parent: Option<usize>) -> usize {
        let index = self.modules.len();
        let text = code_of(&file);
        self.modules.push(Module {
            file: file.clone(),
            parent,
            ..Module::default()
        });
        let dir = child_dir(&file);
        for name in declared_modules(&text) {
            let candidates = [
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            ];
            if let Some(child) = candidates.into_iter().find(|c| c.is_file()) {
                let child = self.add(child, Some(index));
                self.modules[index].children.insert(name, child);
            }
        }
        let module = &mut self.modules[index];
        module.items = defined_items(&text);
        for (public, path) in use_paths(&text) {
            if path.last().is_some_and(|last| last != "*") {
                let (name, source) = split_alias(path.clone());
                module.imports.insert(name, source);
            }
            match (public, path.last().map(String::as_str)) {
                (true, Some("*")) => module.globs.push(path[..path.len() - 1].to_vec()),
                (true, _) => {
                    let (name, path) = split_alias(path);
                    module.reexports.push((name, path));
                }
                (false, _) => module.references.push(path),
            }
        }
        index
    }

    /// Adds the paths in code (`crate::x::y`, `super::x`, `child::x`) to the references.
    fn read_references(&mut self, index: usize) {
        let text = code_of(&self.modules[index].file);
        let inline = inline_modules(&text);
        let uses: Vec<(usize, usize)> = keyword_statements(&text, "use")
            .into_iter()
            .map(|(start, end, _, _)| (start, end))
            .collect();
        let children: Vec<String> = self.modules[index].children.keys().cloned().collect();
        let mut found = Vec::new();
        let tests = test_modules(&text);
        for (at, path) in code_paths(&text) {
            if uses.iter().any(|&(start, end)| start <= at && at <= end) || depth_at(&tests, at) > 0
            {
                continue;
            }
            let path = in_file_terms(path, depth_at(&inline, at));
            let first = path[0].as_str();
            if matches!(first, "crate" | "super" | "self") || children.iter().any(|c| c == first) {
                found.push(path);
            } else if let Some(source) = self.modules[index].imports.get(first) {
                let mut full = source.clone();
                full.extend(path[1..].iter().cloned());
                found.push(full);
            }
        }
        self.modules[index].references.extend(found);
    }

    /// The module whose file defines what `path` (as written in module `from`) names.
    fn resolve(&self, from: usize, path: &[String], depth: usize) -> Option<usize> {
        if depth > 32 || path.is_empty() {
            return None;
        }
        let (mut at, rest) = match path[0].as_str() {
            "crate" => (0, &path[1..]),
            "self" => (from, &path[1..]),
            "super" => {
                let mut at = from;
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    at = self.modules[at].parent?;
                    rest = &rest[1..];
                }
                (at, rest)
            }
            first if self.modules[from].children.contains_key(first) => (from, path),
            first if self.modules[from].items.contains(first) => return Some(from),
            _ => return None,
        };
        for (i, segment) in rest.iter().enumerate() {
            let module = &self.modules[at];
            if let Some(&child) = module.children.get(segment) {
                at = child;
                continue;
            }
            if let Some((_, source)) = module.reexports.iter().find(|(name, _)| name == segment) {
                let mut source = source.clone();
                source.extend(rest[i + 1..].iter().cloned());
                return self.resolve(at, &source, depth + 1).or(Some(at));
            }
            if module.items.contains(segment) {
                return Some(at);
            }
            for glob in &module.globs {
                let mut source = glob.clone();
                source.extend(rest[i..].iter().cloned());
                if let Some(found) = self.resolve(at, &source, depth + 1)
                    && found != at
                {
                    return Some(found);
                }
            }
            return Some(at);
        }
        Some(at)
    }

    /// Module `a` depends on module `b`: the edges, each with the first path that makes it.
    fn dependencies(&self) -> BTreeMap<(usize, usize), String> {
        let mut edges = BTreeMap::new();
        for (index, module) in self.modules.iter().enumerate() {
            for path in &module.references {
                if let Some(target) = self.resolve(index, path, 0)
                    && target != index
                {
                    edges
                        .entry((index, target))
                        .or_insert_with(|| path.join("::"));
                }
            }
        }
        edges
    }

    /// Every cycle (strongly connected set of two or more modules): its files, and the
    /// dependencies between them (`from -> to: path`).
    fn cycles(&self) -> Vec<(Vec<PathBuf>, Vec<String>)> {
        let named = self.dependencies();
        let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for &(from, to) in named.keys() {
            edges.entry(from).or_default().insert(to);
        }
        let mut finder = Tarjan {
            edges: &edges,
            index: vec![None; self.modules.len()],
            low: vec![0; self.modules.len()],
            stack: Vec::new(),
            on_stack: vec![false; self.modules.len()],
            next: 0,
            found: Vec::new(),
        };
        for module in 0..self.modules.len() {
            if finder.index[module].is_none() {
                finder.visit(module);
            }
        }
        let name = |m: usize| self.modules[m].file.display().to_string();
        finder
            .found
            .into_iter()
            .map(|set| {
                let why = named
                    .iter()
                    .filter(|((from, to), _)| set.contains(from) && set.contains(to))
                    .map(|(&(from, to), path)| format!("{} -> {}: {path}", name(from), name(to)))
                    .collect();
                (
                    set.iter().map(|&m| self.modules[m].file.clone()).collect(),
                    why,
                )
            })
            .collect()
    }
}

impl Crate {
    /// The room of the crate's top level a module belongs to: the file or folder directly
    /// under the root's folder (`config` for `src/config/schema.rs`, `error` for
    /// `src/error.rs`); the root itself is a room of its own.
    fn room_of(&self, module: usize) -> String {
        let root = child_dir(&self.modules[0].file);
        let file = &self.modules[module].file;
        if module == 0 {
            return "(root)".to_string();
        }
        let first = file
            .strip_prefix(&root)
            .ok()
            .and_then(|rest| rest.components().next())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        first.strip_suffix(".rs").unwrap_or(&first).to_string()
    }

    /// Room `a` depends on room `b`: the edges between top-level rooms, each with the first
    /// module dependency that makes it (`from -> to: path`).
    fn room_dependencies(&self) -> BTreeMap<(String, String), String> {
        let mut edges = BTreeMap::new();
        for ((from, to), path) in self.dependencies() {
            let (a, b) = (self.room_of(from), self.room_of(to));
            if a != b {
                edges.entry((a, b)).or_insert_with(|| {
                    format!(
                        "{} -> {}: {path}",
                        self.modules[from].file.display(),
                        self.modules[to].file.display()
                    )
                });
            }
        }
        edges
    }

    /// Every loop between top-level rooms: the rooms, and the dependencies that tie them.
    fn room_cycles(&self) -> Vec<(Vec<String>, Vec<String>)> {
        let named = self.room_dependencies();
        let rooms: Vec<String> = (0..self.modules.len())
            .map(|m| self.room_of(m))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let at = |room: &str| rooms.iter().position(|r| r == room).expect("a room");
        let mut edges: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
        for (from, to) in named.keys() {
            edges.entry(at(from)).or_default().insert(at(to));
        }
        let mut finder = Tarjan {
            edges: &edges,
            index: vec![None; rooms.len()],
            low: vec![0; rooms.len()],
            stack: Vec::new(),
            on_stack: vec![false; rooms.len()],
            next: 0,
            found: Vec::new(),
        };
        for room in 0..rooms.len() {
            if finder.index[room].is_none() {
                finder.visit(room);
            }
        }
        finder
            .found
            .into_iter()
            .map(|set| {
                let members: Vec<String> = set.iter().map(|&r| rooms[r].clone()).collect();
                let why = named
                    .iter()
                    .filter(|((from, to), _)| members.contains(from) && members.contains(to))
                    .map(|(_, why)| why.clone())
                    .collect();
                (members, why)
            })
            .collect()
    }

    /// The rooms `room` reaches through its dependencies, itself left out.
    fn rooms_below(&self, room: &str) -> BTreeSet<String> {
        let named = self.room_dependencies();
        let mut seen = BTreeSet::new();
        let mut next = vec![room.to_string()];
        while let Some(at) = next.pop() {
            for (from, to) in named.keys() {
                if *from == at && to != room && seen.insert(to.clone()) {
                    next.push(to.clone());
                }
            }
        }
        seen
    }
}

struct Tarjan<'a> {
    edges: &'a BTreeMap<usize, BTreeSet<usize>>,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    next: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for &w in self.edges.get(&v).into_iter().flatten() {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut set = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                set.push(w);
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                self.found.push(set);
            }
        }
    }
}

/// The directory a file's child modules live in.
fn child_dir(file: &Path) -> PathBuf {
    let dir = file.parent().expect("a file has a directory").to_path_buf();
    match file.file_stem().and_then(|s| s.to_str()) {
        Some("mod" | "lib" | "main") => dir,
        Some(stem) => dir.join(stem),
        None => dir,
    }
}

/// The source without comments and string literals (which could look like paths), in ASCII.
fn code_of(file: &Path) -> String {
    let text =
        std::fs::read_to_string(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
            }
            'r' if chars.peek() == Some(&'#') || chars.peek() == Some(&'"') => {
                let mut hashes = 0;
                while chars.peek() == Some(&'#') {
                    chars.next();
                    hashes += 1;
                }
                if chars.peek() == Some(&'"') {
                    chars.next();
                    let closing: String = std::iter::once('"')
                        .chain(std::iter::repeat_n('#', hashes))
                        .collect();
                    let mut body = String::new();
                    for c in chars.by_ref() {
                        body.push(c);
                        if body.ends_with(&closing) {
                            break;
                        }
                    }
                    out.push_str("\"\"");
                } else {
                    out.push('r');
                    out.push_str(&"#".repeat(hashes));
                }
            }
            '"' => {
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push_str("\"\"");
            }
            '\'' => {
                // A char literal ('x', '\n', '\u{1b}') or a lifetime ('a).
                let rest: String = chars.clone().take(12).collect();
                if let Some(end) = char_literal_len(&rest) {
                    for _ in 0..end {
                        chars.next();
                    }
                    out.push_str("' '");
                } else {
                    out.push('\'');
                }
            }
            c if c.is_alphanumeric() || c == '_' => {
                out.push(c);
                // Keep identifiers whole, so that `br"..."` or `for'` do not start literals.
                while let Some(&n) = chars.peek() {
                    if n.is_alphanumeric() || n == '_' {
                        out.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if chars.peek() == Some(&'"') && out.ends_with('b') {
                    out.pop();
                }
            }
            // Offsets into the result are byte and char offsets alike.
            c if !c.is_ascii() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// How many characters after an opening `'` a char literal takes (its closing `'` included).
fn char_literal_len(rest: &str) -> Option<usize> {
    let chars: Vec<char> = rest.chars().collect();
    match chars.as_slice() {
        ['\\', 'u', '{', ..] => chars.iter().position(|&c| c == '\'').map(|p| p + 1),
        ['\\', _, '\'', ..] => Some(3),
        ['\\', 'x', _, _, '\'', ..] => Some(5),
        [c, '\'', ..] if *c != '\\' => Some(2),
        _ => None,
    }
}

/// The names of the file modules a source declares (`mod x;`, with any visibility).
fn declared_modules(code: &str) -> Vec<String> {
    keyword_statements(code, "mod")
        .into_iter()
        .filter(|&(at, _, _, _)| !is_test_only(code, at))
        .filter_map(|(_, _, _, body)| is_ident(body.trim()).then(|| body.trim().to_string()))
        .collect()
}

/// Whether the item starting at `at` (after its visibility) is marked `#[cfg(test)]`.
fn is_test_only(code: &str, at: usize) -> bool {
    let before = code[..at].trim_end();
    let before = before.strip_suffix("pub").unwrap_or(before).trim_end();
    before.ends_with("#[cfg(test)]")
}

/// The spans of a source's `#[cfg(test)]` inline modules.
fn test_modules(code: &str) -> Vec<(usize, usize)> {
    inline_modules(code)
        .into_iter()
        .filter(|&(open, _)| {
            let head = &code[..open];
            head.rfind("mod ").is_some_and(|at| is_test_only(code, at))
        })
        .collect()
}

/// The names a source defines at any depth: good enough to tell an item from a module.
fn defined_items(code: &str) -> BTreeSet<String> {
    let mut items = BTreeSet::new();
    for keyword in [
        "struct",
        "enum",
        "trait",
        "fn",
        "const",
        "static",
        "type",
        "union",
        "mod",
        "macro_rules!",
    ] {
        let mut from = 0;
        while let Some(found) = code[from..].find(keyword) {
            let at = from + found;
            from = at + keyword.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '\'') {
                continue;
            }
            let rest = &code[from..];
            if !rest.starts_with(char::is_whitespace) {
                continue;
            }
            let rest = rest.trim_start();
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if is_ident(&rest[..end]) {
                items.insert(rest[..end].to_string());
            }
        }
    }
    items
}

/// Every `use` of a source, expanded (`a::{b, c::d}` gives `a::b` and `a::c::d`), with
/// whether it is a re-export (`pub use`, any visibility). A `super` is taken as the inline
/// module (`mod tests { use super::*; }`) it is written in, not the file's parent.
fn use_paths(code: &str) -> Vec<(bool, Vec<String>)> {
    let inline = inline_modules(code);
    let tests = test_modules(code);
    let mut out = Vec::new();
    for (at, _, public, tree) in keyword_statements(code, "use") {
        if depth_at(&tests, at) > 0 {
            continue;
        }
        for path in expand(&tree) {
            out.push((public, in_file_terms(path, depth_at(&inline, at))));
        }
    }
    out
}

/// The statements `keyword ...;` (at any depth, with any visibility): where each starts and
/// ends, whether it has a visibility, and its body up to the `;` that ends it.
fn keyword_statements(code: &str, keyword: &str) -> Vec<(usize, usize, bool, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find(keyword) {
        let at = from + found;
        from = at + keyword.len();
        let before = code[..at].trim_end();
        let boundary_after = code[from..].starts_with(char::is_whitespace);
        let word_start =
            at == 0 || !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        if !(word_start && boundary_after) {
            continue;
        }
        let (public, before) = match before.strip_suffix("pub") {
            Some(rest) => (true, rest.trim_end()),
            None => match before
                .strip_suffix(')')
                .and_then(|b| b.rfind("pub(").map(|p| &b[..p]))
            {
                Some(rest) => (true, rest.trim_end()),
                None => (false, before),
            },
        };
        if !(before.is_empty() || before.ends_with([';', '{', '}', ']'])) {
            continue;
        }
        let mut depth = 0i32;
        let mut end = None;
        for (i, c) in code[from..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ';' if depth == 0 => {
                    end = Some(from + i);
                    break;
                }
                _ => {}
            }
            if depth < 0 {
                break;
            }
        }
        if let Some(end) = end {
            out.push((at, end, public, code[from..end].trim().to_string()));
        }
    }
    out
}

/// The spans of the inline modules of a source (`mod tests { ... }`).
fn inline_modules(code: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("mod ") {
        let at = from + found;
        from = at + 4;
        if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[from..];
        // `$name` too: modules that macros write.
        let name_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        if !rest[name_len..].trim_start().starts_with('{') {
            continue;
        }
        let open = from + name_len + rest[name_len..].find('{').unwrap_or(0);
        let mut depth = 0;
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        spans.push((open, open + i));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    spans
}

/// How many inline modules enclose offset `at`.
fn depth_at(spans: &[(usize, usize)], at: usize) -> usize {
    spans
        .iter()
        .filter(|(start, end)| *start < at && at < *end)
        .count()
}

/// A path written `depth` inline modules deep, as the file's module would write it: each
/// leading `super` that leaves an inline module is dropped (`self` when all are).
fn in_file_terms(mut path: Vec<String>, depth: usize) -> Vec<String> {
    let mut left = depth;
    while left > 0 && path.first().is_some_and(|s| s == "super") {
        path.remove(0);
        left -= 1;
    }
    if left < depth && (path.is_empty() || path.first().is_some_and(|s| s != "super")) {
        path.insert(0, "self".into());
    }
    path
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e`; `x as y` stays one segment.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim().trim_start_matches("::");
    if let Some(open) = tree.find('{') {
        let prefix: Vec<String> = segments(&tree[..open]);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut out = Vec::new();
        for part in split_top_level(inner) {
            for mut path in expand(part) {
                if path.first().is_some_and(|s| s == "self") {
                    path.remove(0);
                }
                let mut full = prefix.clone();
                full.extend(path);
                if !full.is_empty() {
                    out.push(full);
                }
            }
        }
        out
    } else {
        let path = segments(tree);
        if path.is_empty() {
            Vec::new()
        } else {
            vec![path]
        }
    }
}

fn segments(text: &str) -> Vec<String> {
    text.split("::")
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| !s.is_empty())
        .collect()
}

/// A `use` path's name and its target: `a::b as c` names `c`.
fn split_alias(mut path: Vec<String>) -> (String, Vec<String>) {
    let last = path.pop().unwrap_or_default();
    match last.split_once(" as ") {
        Some((source, alias)) => {
            path.push(source.trim().to_string());
            (alias.trim().to_string(), path)
        }
        None => {
            path.push(last.clone());
            (last, path)
        }
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// The paths in code: `a::b::c` sequences of identifiers, with where each starts.
fn code_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts_ident = (bytes[i].is_alphabetic() || bytes[i] == '_')
            && (i == 0
                || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_' || bytes[i - 1] == ':'));
        if !starts_ident {
            i += 1;
            continue;
        }
        let mut path = Vec::new();
        let at = i;
        loop {
            let start = i;
            while i < bytes.len() && (bytes[i].is_alphanumeric() || bytes[i] == '_') {
                i += 1;
            }
            path.push(bytes[start..i].iter().collect::<String>());
            if i + 2 < bytes.len()
                && bytes[i] == ':'
                && bytes[i + 1] == ':'
                && (bytes[i + 2].is_alphabetic() || bytes[i + 2] == '_')
            {
                i += 2;
            } else {
                break;
            }
        }
        if path.len() > 1 {
            out.push((at, path));
        }
    }
    out
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Every crate root of the workspace: each member's `src/lib.rs` and `src/main.rs`.
fn crate_roots() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("host/ is in the workspace")
        .to_path_buf();
    let manifest =
        std::fs::read_to_string(root.join("Cargo.toml")).expect("the workspace manifest");
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("the workspace lists its members")
        .0;
    let mut roots = Vec::new();
    for member in members.split(',').map(|m| m.trim().trim_matches('"')) {
        if member.is_empty() {
            continue;
        }
        for file in ["src/lib.rs", "src/main.rs"] {
            let path = root.join(member).join(file);
            if path.is_file() {
                roots.push(path);
            }
        }
    }
    roots
}

#[test]
fn no_crate_has_an_import_cycle() {
    let roots = crate_roots();
    assert!(roots.len() >= 10, "found the crates: {roots:?}");
    let mut report = Vec::new();
    let mut modules = 0;
    for root in &roots {
        let krate = Crate::load(root);
        modules += krate.modules.len();
        for (_, why) in krate.cycles() {
            report.push(format!("in {}:\n  {}", root.display(), why.join("\n  ")));
        }
    }
    assert!(modules > 100, "read {modules} modules");
    assert!(report.is_empty(), "import cycles:\n{}", report.join("\n"));
}

#[test]
fn no_crate_has_a_loop_between_its_top_level_folders() {
    let mut report = Vec::new();
    for root in crate_roots() {
        for (rooms, why) in Crate::load(&root).room_cycles() {
            report.push(format!(
                "in {}: {}\n  {}",
                root.display(),
                rooms.join(", "),
                why.join("\n  ")
            ));
        }
    }
    assert!(
        report.is_empty(),
        "loops between top-level folders:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_device_families_sit_below_the_code_that_uses_them() {
    let host = Crate::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"));
    let below = host.rooms_below("families");
    for user in ["api", "manager", "runtime", "builtin", "workloads"] {
        assert!(
            !below.contains(user),
            "families/ reaches {user}: it should be registered from above, not use it (it reaches {below:?})"
        );
    }
    // The catalog is handed down from the builder (`api`): nothing it is handed to names it.
    for receiver in [
        "config", "manager", "runtime", "state", "imports", "devices",
    ] {
        let reached = host.rooms_below(receiver);
        for named in ["families", "builtin"] {
            assert!(
                !reached.contains(named),
                "{receiver}/ reaches {named}: it should receive the catalog (it reaches {reached:?})"
            );
        }
    }
}

/// The modules the library makes public only under its `internals` feature (for the fuzz
/// targets and the benchmark harness), as its root declares them.
fn internal_modules(lib_rs: &str) -> Vec<String> {
    let lines: Vec<&str> = lib_rs.lines().map(str::trim).collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if *line != "#[cfg(feature = \"internals\")]" {
            continue;
        }
        let declared = lines[i + 1..]
            .iter()
            .find(|l| !l.starts_with("#["))
            .and_then(|l| l.strip_prefix("pub mod "))
            .and_then(|l| l.strip_suffix(';'));
        found.extend(declared.map(str::to_string));
    }
    found
}

/// The places in `code` (the file `file`) that name one of `internal` through the library.
fn internals_named(file: &Path, code: &str, internal: &[String]) -> Vec<String> {
    code_paths(code)
        .into_iter()
        .filter(|(_, path)| {
            path.first().is_some_and(|p| p == "accelhost")
                && path.get(1).is_some_and(|m| internal.contains(m))
        })
        .chain(
            use_paths(code)
                .into_iter()
                .map(|(_, path)| (0, path))
                .filter(|(_, path)| {
                    path.first().is_some_and(|p| p == "accelhost")
                        && path.get(1).is_some_and(|m| internal.contains(m))
                }),
        )
        .map(|(_, path)| format!("{}: {}", file.display(), path.join("::")))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn the_cli_is_built_on_the_public_api() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let internal =
        internal_modules(&std::fs::read_to_string(root.join("host/src/lib.rs")).unwrap());
    assert!(
        internal.iter().any(|m| m == "families") && internal.iter().any(|m| m == "perf"),
        "read the internals-only modules: {internal:?}"
    );
    let manifest = std::fs::read_to_string(root.join("cli/Cargo.toml")).unwrap();
    let dependencies = manifest
        .split("[dependencies]")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("cli/Cargo.toml has dependencies");
    assert!(
        !dependencies.contains("internals"),
        "the CLI turns on the library's internals:\n{dependencies}"
    );
    let mut named = Vec::new();
    for entry in std::fs::read_dir(root.join("cli/src")).unwrap() {
        let file = entry.unwrap().path();
        if file.extension().is_some_and(|e| e == "rs") {
            named.extend(internals_named(&file, &code_of(&file), &internal));
        }
    }
    assert!(
        named.is_empty(),
        "the CLI names the library's internals:\n{}",
        named.join("\n")
    );
    let planted = "use accelhost::families::xocl;\nfn f() { accelhost::perf::forget_loaded(); }\n";
    assert_eq!(
        internals_named(Path::new("planted.rs"), planted, &internal).len(),
        2,
        "the check finds a use and a path in code"
    );
}

#[test]
fn the_folder_checker_finds_a_loop_through_nested_files() {
    let dir = std::env::temp_dir().join(format!("accelhost-rooms-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("low/deep")).unwrap();
    std::fs::create_dir_all(src.join("high")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod high;\nmod low;\n").unwrap();
    std::fs::write(src.join("high/mod.rs"), "mod user;\n").unwrap();
    std::fs::write(
        src.join("high/user.rs"),
        "use crate::low::deep::Tool;\npub struct Thing;\n",
    )
    .unwrap();
    std::fs::write(src.join("low/mod.rs"), "pub mod deep;\nmod other;\n").unwrap();
    std::fs::write(src.join("low/deep/mod.rs"), "pub struct Tool;\n").unwrap();
    std::fs::write(src.join("low/other.rs"), "pub fn helper() {}\n").unwrap();
    let krate = Crate::load(&src.join("lib.rs"));
    assert!(krate.cycles().is_empty() && krate.room_cycles().is_empty());
    assert_eq!(
        krate.rooms_below("high"),
        BTreeSet::from(["low".to_string()])
    );
    assert!(krate.rooms_below("low").is_empty());
    // A file deep in `low/` that names `high/`: no file imports itself back, yet the folders
    // form a loop.
    std::fs::write(
        src.join("low/other.rs"),
        "pub fn helper() { let _ = crate::high::user::Thing; }\n",
    )
    .unwrap();
    let krate = Crate::load(&src.join("lib.rs"));
    assert!(krate.cycles().is_empty(), "{:?}", krate.cycles());
    let loops = krate.room_cycles();
    assert_eq!(loops.len(), 1, "{loops:?}");
    assert_eq!(loops[0].0, ["high", "low"]);
    assert!(
        loops[0]
            .1
            .iter()
            .any(|why| why.contains("other.rs") && why.contains("user.rs")),
        "{loops:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_checker_finds_a_cycle_and_follows_reexports() {
    let dir = std::env::temp_dir().join(format!("accelhost-layout-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use a::Thing;\n").unwrap();
    std::fs::write(src.join("a/mod.rs"), "mod inner;\npub use inner::Thing;\n").unwrap();
    std::fs::write(
        src.join("a/inner.rs"),
        "use crate::b::helper; // a comment naming crate::nothing\npub struct Thing;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("b.rs"),
        "pub fn helper() {}\n#[cfg(test)]\nmod tests {\n    use crate::Thing;\n}\n",
    )
    .unwrap();
    assert!(
        Crate::load(&src.join("lib.rs")).cycles().is_empty(),
        "re-exports, module declarations and unit tests are not dependencies"
    );
    std::fs::write(
        src.join("b.rs"),
        "use crate::a as renamed;\npub fn helper() { let _ = renamed::Thing; }\n",
    )
    .unwrap();
    assert_eq!(
        Crate::load(&src.join("lib.rs")).cycles().len(),
        1,
        "a path through a renamed import is followed"
    );
    std::fs::write(
        src.join("b.rs"),
        "pub fn helper() { let _ = crate::Thing; }\n",
    )
    .unwrap();
    let cycles = Crate::load(&src.join("lib.rs")).cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    let names: Vec<String> = cycles[0]
        .0
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["inner.rs", "b.rs"],
        "followed crate::Thing to its definition"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

//! clang's IR of a kernel as the barrier split reads it: its variables (the entry's
//! allocas), its blocks, and how each line uses a variable.

use std::collections::{HashMap, HashSet};

/// A variable of the kernel: its alloca's name, type and alignment.
pub(super) struct Variable {
    pub(super) name: String,
    pub(super) ty: String,
    pub(super) align: String,
    pub(super) line: String,
}

/// A block of the kernel as it will run: its label and its lines.
pub(super) struct Block {
    pub(super) label: String,
    pub(super) lines: Vec<String>,
}

/// How a line uses a variable.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    Load,
    Store,
    /// Its address goes elsewhere (a call, a cast, an element): what it holds is not followed.
    Escapes,
}

/// Where `line` names the value `%name` (and not one whose name goes on from it).
fn mentions_of(line: &str, name: &str) -> Vec<usize> {
    let token = format!("%{name}");
    line.match_indices(&token)
        .filter(|(at, _)| {
            !line[at + token.len()..]
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
        })
        .map(|(at, _)| at)
        .collect()
}

/// How `line` uses `%name`, if it names it.
fn use_in(line: &str, name: &str) -> Option<Use> {
    let token_len = name.len() + 1;
    let mentions = mentions_of(line, name);
    let &[at] = mentions.as_slice() else {
        return (!mentions.is_empty()).then_some(Use::Escapes);
    };
    let code = line.trim_start();
    let as_pointer = line[..at].ends_with("* ") || line[..at].ends_with("ptr ");
    let pointer_last =
        line[at + token_len..].starts_with(", align") || at + token_len == line.len();
    if !(as_pointer && pointer_last) {
        return Some(Use::Escapes);
    }
    if code.starts_with("store ") {
        Some(Use::Store)
    } else if code.starts_with('%') && code.contains(" = load ") {
        Some(Use::Load)
    } else {
        Some(Use::Escapes)
    }
}

/// Each variable's uses, in the order of the kernel's lines: the block, how, and the line.
pub(super) type Uses<'a> = HashMap<&'a str, Vec<(usize, Use, &'a str)>>;

/// The uses of `variables` in `blocks`.
pub(super) fn variable_uses<'a>(variables: &'a [Variable], blocks: &'a [Block]) -> Uses<'a> {
    let wanted: HashSet<&str> = variables.iter().map(|v| v.name.as_str()).collect();
    let mut uses: Uses<'a> = HashMap::new();
    for (i, block) in blocks.iter().enumerate() {
        for line in &block.lines {
            let mut seen = HashSet::new();
            for name in values_named(line, "%") {
                if let Some(&name) = wanted.get(name)
                    && seen.insert(name)
                    && let Some(used) = use_in(line, name)
                {
                    uses.entry(name).or_default().push((i, used, line));
                }
            }
        }
    }
    uses
}

/// The value a `store` line stores (`%v3`, or a constant).
pub(super) fn stored_value(line: &str) -> Option<&str> {
    line.trim_start()
        .strip_prefix("store ")?
        .split(',')
        .next()?
        .split_whitespace()
        .last()
}

/// The names that follow `prefix` in `line` (`%` for values, `label %` for branch targets).
pub(super) fn values_named<'a>(
    line: &'a str,
    prefix: &'a str,
) -> impl Iterator<Item = &'a str> + 'a {
    line.match_indices(prefix).filter_map(move |(at, _)| {
        let rest = &line[at + prefix.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(rest.len());
        (end > 0).then_some(&rest[..end])
    })
}

/// The graph of `blocks`: each one's successors (by index), the blocks its branches name.
pub(super) fn successors(blocks: &[Block]) -> Vec<Vec<usize>> {
    let index: HashMap<&str, usize> = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| (b.label.as_str(), i))
        .collect();
    blocks
        .iter()
        .map(|b| {
            b.lines
                .iter()
                .flat_map(|l| values_named(l, "label %"))
                .filter_map(|t| index.get(t).copied())
                .collect()
        })
        .collect()
}

/// Whether `block` branches to the label `to` (one not among the blocks).
pub(super) fn branches_to(block: &Block, to: &str) -> bool {
    block
        .lines
        .iter()
        .any(|l| values_named(l, "label %").any(|t| t == to))
}

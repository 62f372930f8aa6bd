//! Which exports a plugin's source defines, found in its text before the build: a misspelled
//! export (`enumarate`, `mapMMIO`) or a Python method with other parameters than its export
//! would otherwise build silently and surface only when the host calls it, as `unsupported` or
//! a failed call. Each finding names the file and line.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use wit_bindgen_core::wit_parser::WorldItem;

use crate::checkout::{Language, plugin_world};

/// One function a plugin may export, as the language names it.
#[derive(Clone, Debug)]
pub struct Export {
    /// The WIT name, such as `fpga.map-mmio`.
    pub wit: String,
    /// The name the plugin defines: `mapMmio`, `map_mmio`, `exports_accel_plugin_fpga_map_mmio`.
    pub name: String,
    /// Its parameters, as the WIT names them.
    pub params: Vec<String>,
}

/// The functions of every interface the `plugin` world of `wit_dir` exports, named for
/// `language`.
pub fn exports(wit_dir: &Path, language: Language) -> Result<Vec<Export>> {
    let (resolve, world) = plugin_world(wit_dir)?;
    let mut found = Vec::new();
    for item in resolve.worlds[world].exports.values() {
        let WorldItem::Interface { id, .. } = item else {
            continue;
        };
        let interface = &resolve.interfaces[*id];
        let interface_name = interface.name.clone().unwrap_or_default();
        for (name, function) in &interface.functions {
            let snake = name.replace('-', "_");
            found.push(Export {
                wit: format!("{interface_name}.{name}"),
                name: match language {
                    Language::C => format!(
                        "exports_accel_plugin_{}_{snake}",
                        interface_name.replace('-', "_")
                    ),
                    Language::Js => lower_camel(name),
                    Language::Rust | Language::Python => snake,
                },
                params: function.params.iter().map(|p| p.name.clone()).collect(),
            });
        }
    }
    Ok(found)
}

/// Something in a plugin's source that will not do what its author meant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The file, as the plugin directory names it.
    pub file: PathBuf,
    /// Its line, from 1.
    pub line: usize,
    /// What is wrong, and what was probably meant.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.message)
    }
}

/// What a plugin's source defines of the exports.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The exports it defines, in the language's names, in the order found.
    pub defined: Vec<String>,
    /// Names close to an export that are not one, and Python methods whose parameters differ
    /// from their export's.
    pub findings: Vec<Finding>,
}

/// Reads the sources of the plugin in `plugin_dir` (C: its `*.c`; JavaScript: `plugin.js`;
/// Python: its `*.py`) and reports which of `exports` it defines and what looks mistaken.
pub fn check(language: Language, plugin_dir: &Path, exports: &[Export]) -> Result<Report> {
    let mut report = Report::default();
    for file in sources(language, plugin_dir)? {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        for (index, line) in text.lines().enumerate() {
            let Some((name, params)) = definition(language, line) else {
                continue;
            };
            let finding = |message: String| Finding {
                file: file.clone(),
                line: index + 1,
                message,
            };
            if let Some(export) = exports.iter().find(|e| e.name == name) {
                if !report.defined.contains(&name) {
                    report.defined.push(name.clone());
                }
                if let Some(params) = params
                    && params.len() != export.params.len()
                {
                    report.findings.push(finding(format!(
                        "`{name}` takes ({}) here, but the host calls {} with ({}): the call \
                         will fail",
                        params.join(", "),
                        export.wit,
                        export.params.join(", ")
                    )));
                }
            } else if language == Language::Rust {
                // A near miss in a Rust impl of `Plugin` does not compile; a helper of
                // another name is the author's own.
            } else if let Some(meant) = exports.iter().find(|e| looks_like(&name, &e.name)) {
                report.findings.push(finding(format!(
                    "`{name}` is not an export, so the host never calls it; did you mean `{}` \
                     ({})?",
                    meant.name, meant.wit
                )));
            }
        }
    }
    Ok(report)
}

/// The files of the plugin a build reads its exports from.
fn sources(language: Language, plugin_dir: &Path) -> Result<Vec<PathBuf>> {
    let wanted = |path: &Path| match language {
        Language::Rust => path.extension().is_some_and(|e| e == "rs"),
        Language::C => path.extension().is_some_and(|e| e == "c"),
        Language::Js => path.file_name().is_some_and(|n| n == "plugin.js"),
        Language::Python => path.extension().is_some_and(|e| e == "py"),
    };
    // A crate's sources are in src/ (a template's lib.rs sits alone).
    let dir = match language {
        Language::Rust if plugin_dir.join("src").is_dir() => plugin_dir.join("src"),
        _ => plugin_dir.to_path_buf(),
    };
    let plugin_dir = dir.as_path();
    let mut files: Vec<PathBuf> = std::fs::read_dir(plugin_dir)
        .with_context(|| format!("reading {}", plugin_dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_file() && wanted(path))
        .collect();
    files.sort();
    Ok(files)
}

/// The function or method `line` defines, and for Python its parameters (without `self`;
/// `None` when it takes `*args` or `**kwargs`).
fn definition(language: Language, line: &str) -> Option<(String, Option<Vec<String>>)> {
    let indented = line.starts_with([' ', '\t']);
    let code = line.trim();
    match language {
        // A method of the `Plugin` impl: `    fn open(&mut self, ...`. The compiler refuses a
        // misspelled one, so only the names matter.
        Language::Rust => {
            let rest = code
                .strip_prefix("pub ")
                .unwrap_or(code)
                .strip_prefix("fn ")?;
            let name = identifier_at_start(rest)?;
            (indented && rest[name.len()..].trim_start().starts_with(['(', '<']))
                .then_some((name, None))
        }
        // A top-level function definition: `bool exports_..._open(...) {`, not a declaration.
        Language::C => {
            if indented || code.ends_with(';') || code.starts_with(['#', '/', '*']) {
                return None;
            }
            let before = &code[..code.find('(')?];
            let name = identifier_at_end(before)?;
            (before.len() > name.len()).then_some((name, None))
        }
        // A class method: `  enumerate(filters) {`.
        Language::Js => {
            if !indented || !code.ends_with('{') {
                return None;
            }
            let code = code.strip_prefix("async ").unwrap_or(code);
            let name = identifier_at_start(code)?;
            let rest = code[name.len()..].trim_start();
            const KEYWORDS: &[&str] = &[
                "if", "for", "while", "switch", "catch", "function", "return", "with",
            ];
            (rest.starts_with('(') && !KEYWORDS.contains(&name.as_str())).then_some((name, None))
        }
        // A method: `    def map_mmio(self, handle, index):`.
        Language::Python => {
            if !indented {
                return None;
            }
            let rest = code.strip_prefix("def ")?;
            let name = identifier_at_start(rest)?;
            let inside = rest[name.len()..].trim_start().strip_prefix('(')?;
            let inside = &inside[..inside.rfind(')').unwrap_or(inside.len())];
            let params: Vec<String> = split_params(inside)
                .into_iter()
                .filter(|p| p != "self")
                .collect();
            let variadic = params.iter().any(|p| p.starts_with('*'));
            Some((name, (!variadic).then_some(params)))
        }
    }
}

/// Python parameters, without annotations or defaults (commas inside brackets kept).
fn split_params(text: &str) -> Vec<String> {
    let mut params = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for c in text.chars() {
        match c {
            '[' | '(' | '{' => depth += 1,
            ']' | ')' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                params.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    params.push(current);
    params
        .into_iter()
        .map(|p| p.split([':', '=']).next().unwrap_or("").trim().to_string())
        .filter(|p| !p.is_empty() && p != "/")
        .collect()
}

fn identifier_at_start(text: &str) -> Option<String> {
    let name: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
        .collect();
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

fn identifier_at_end(text: &str) -> Option<String> {
    let trimmed = text.trim_end();
    let start = trimmed
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    identifier_at_start(&trimmed[start..])
}

/// Whether `name` looks like a misspelling of `export`: the same but for case or underscores
/// (`mapMMIO`, `map_mmio` for `mapMmio`), or a typo or two away in a longer name.
fn looks_like(name: &str, export: &str) -> bool {
    let plain = |s: &str| s.replace('_', "").to_ascii_lowercase();
    if plain(name) == plain(export) {
        return true;
    }
    let allowed = match export.len() {
        0..=4 => 0,
        5..=7 => 1,
        _ => 2,
    };
    allowed > 0
        && edit_distance(&name.to_ascii_lowercase(), &export.to_ascii_lowercase()) <= allowed
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

fn lower_camel(wit_name: &str) -> String {
    let mut out = String::new();
    for (i, part) in wit_name.split('-').enumerate() {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            if i == 0 {
                out.push(first);
            } else {
                out.push(first.to_ascii_uppercase());
            }
            out.extend(chars);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkout::Sdk;

    fn report(language: Language, file: &str, source: &str) -> Report {
        let dir = std::env::temp_dir().join(format!(
            "accelhost-sdk-exports-{}-{}",
            language.key(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(file), source).unwrap();
        let exports = exports(&Sdk::in_repository().unwrap().wit_dir(language), language).unwrap();
        let report = check(language, &dir, &exports).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        report
    }

    fn messages(report: &Report) -> Vec<String> {
        report.findings.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn javascript_methods_close_to_an_export_are_named_with_their_line() {
        let report = report(
            Language::Js,
            "plugin.js",
            "class P {\n  enumarate(filters) {\n    return [];\n  }\n  mapMMIO(h, i) {\n  }\n  \
             open(token, mode) {\n    if (token) {\n    }\n  }\n  helper() {\n  }\n}\n",
        );
        assert_eq!(report.defined, ["open"]);
        let said = messages(&report);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("plugin.js:2: `enumarate` is not an export"),
            "{said:?}"
        );
        assert!(
            said[0].contains("did you mean `enumerate` (discovery.enumerate)"),
            "{said:?}"
        );
        assert!(
            said[1].contains(":5: `mapMMIO`") && said[1].contains("`mapMmio`"),
            "{said:?}"
        );
    }

    #[test]
    fn python_methods_are_checked_for_spelling_and_parameters() {
        let report = report(
            Language::Python,
            "app.py",
            "class P(accelhost.Plugin):\n    def enumerate(self):\n        return []\n\n    \
             def map_mmio(self, handle: int, index: int) -> mmio.Region:\n        pass\n\n    \
             def realease_buffer(self, handle, id):\n        pass\n\n    \
             def reset(self, *args):\n        pass\n",
        );
        assert_eq!(report.defined, ["enumerate", "map_mmio", "reset"]);
        let said = messages(&report);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains(
                "app.py:2: `enumerate` takes () here, but the host calls \
                              discovery.enumerate with (filters)"
            ),
            "{said:?}"
        );
        assert!(said[1].contains(":8: `realease_buffer`") && said[1].contains("`release_buffer`"));
    }

    #[test]
    fn c_definitions_not_declarations_are_checked() {
        let report = report(
            Language::C,
            "plugin.c",
            "#include \"accelhost.h\"\n\
             bool exports_accel_plugin_fpga_reset(uint64_t handle, accelhost_error_t *err);\n\
             bool exports_accel_plugin_fpga_reset(uint64_t handle, accelhost_error_t *err) {\n\
             \x20   return true;\n}\n\
             bool exports_accel_plugin_fpga_rest(uint64_t handle, accelhost_error_t *err) {\n\
             \x20   return true;\n}\n\
             static int helper(void) {\n    return 0;\n}\n",
        );
        assert_eq!(report.defined, ["exports_accel_plugin_fpga_reset"]);
        let said = messages(&report);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("plugin.c:6: `exports_accel_plugin_fpga_rest`"),
            "{said:?}"
        );
    }

    #[test]
    fn the_templates_and_examples_check_clean() {
        let sdk = Sdk::installed().unwrap();
        for language in Language::ALL {
            let exports = exports(&sdk.wit_dir(language), language).unwrap();
            for dir in [sdk.template_dir(language), sdk.example_dir(language)] {
                let report = check(language, &dir, &exports).unwrap();
                assert!(
                    report.findings.is_empty(),
                    "{}: {:?}",
                    dir.display(),
                    report.findings
                );
                assert!(
                    report.defined.iter().any(|d| d.contains("enumerate")),
                    "{}: {:?}",
                    dir.display(),
                    report.defined
                );
            }
        }
    }

    #[test]
    fn the_exports_come_from_the_wit() {
        let js = exports(
            &Sdk::in_repository().unwrap().wit_dir(Language::Js),
            Language::Js,
        )
        .unwrap();
        let map = js.iter().find(|e| e.wit == "fpga.map-mmio").unwrap();
        assert_eq!(map.name, "mapMmio");
        assert_eq!(map.params, ["handle", "index"]);
        assert!(js.iter().any(|e| e.name == "supportsHost"));
    }
}

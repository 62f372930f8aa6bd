//! `accelhost-sdk new`: a plugin directory that builds and loads as it is, and the config
//! that loads what `build` writes there.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::checkout::{Language, Sdk};

/// What a new plugin starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Starter {
    /// The language's template: one device with no hardware behind it, to open and close.
    Template,
    /// The NLB0 example: a plugin for the emulated NLB0 card (MMIO, buffers, reset).
    Nlb0,
}

/// The config file `new` writes into the plugin directory: `accelhost` finds
/// `./accelhost.json` when run there.
pub const CONFIG: &str = "accelhost.json";

/// Creates `dir` (which must not exist or be empty) with the starter's sources and a config
/// that loads the component `build` will write; returns the files written.
pub fn new_plugin(
    sdk: &Sdk,
    language: Language,
    starter: Starter,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    if dir.exists() {
        let mut entries = std::fs::read_dir(dir)
            .with_context(|| format!("{} exists and is not a directory", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "{} exists and is not empty: give a new directory",
                dir.display()
            );
        }
    }
    let name = plugin_name(dir)?;
    let from = match starter {
        Starter::Template => sdk.template_dir(language),
        Starter::Nlb0 => sdk.example_dir(language),
    };
    // A Rust plugin is a crate: its sources go to src/, beside the manifest.
    let sources = match language {
        Language::Rust => dir.join("src"),
        _ => dir.to_path_buf(),
    };
    std::fs::create_dir_all(&sources).with_context(|| format!("creating {}", sources.display()))?;
    let mut written = Vec::new();
    for entry in std::fs::read_dir(&from).with_context(|| format!("reading {}", from.display()))? {
        let source = entry?.path();
        let file_name = source.file_name().unwrap_or_default();
        if !source.is_file() || file_name == CONFIG {
            continue;
        }
        let target = sources.join(file_name);
        std::fs::copy(&source, &target)
            .with_context(|| format!("copying {} to {}", source.display(), target.display()))?;
        written.push(target);
    }
    if language == Language::Rust {
        let manifest = dir.join("Cargo.toml");
        std::fs::write(&manifest, crate::rust::manifest(sdk, &name))
            .with_context(|| format!("writing {}", manifest.display()))?;
        written.push(manifest);
        let toolchain = dir.join(crate::rust::TOOLCHAIN_FILE);
        std::fs::copy(sdk.root().join(crate::rust::TOOLCHAIN_FILE), &toolchain)
            .with_context(|| format!("writing {}", toolchain.display()))?;
        written.push(toolchain);
    }
    let target = dir.join(CONFIG);
    std::fs::write(&target, config(starter, &name))
        .with_context(|| format!("writing {}", target.display()))?;
    written.push(target);
    Ok(written)
}

/// The config that loads plugin `name` from `<name>.wasm` beside it: the template's device
/// needs no grant; the NLB0 example is granted one emulated NLB0 card, as the examples' configs
/// are.
fn config(starter: Starter, name: &str) -> String {
    let entry = |grants: &str| {
        format!(
            "{{ \"name\": {}, \"module\": {}{grants} }}",
            serde_json::Value::from(name),
            serde_json::Value::from(format!("{name}.wasm"))
        )
    };
    match starter {
        Starter::Template => format!("{{\n  \"plugins\": [\n    {}\n  ]\n}}\n", entry("")),
        Starter::Nlb0 => format!(
            "{{\n  \"devices\": [\n    {{ \"id\": \"card0\", \"family\": \"dfl\", \"accelerator\": \"nlb0\" }}\n  ],\n  \"plugins\": [\n    {}\n  ]\n}}\n",
            entry(", \"grants\": { \"devices\": [\"emu:card0\"], \"dma_memory_mib\": 256 }")
        ),
    }
}

/// The plugin's name in configs and in the component's file name: the directory's name,
/// with what a plugin name may not hold (letters, digits, `-`, `_` and `.`, up to 64) made
/// `-`.
pub fn plugin_name(dir: &Path) -> Result<String> {
    let absolute = std::path::absolute(dir).with_context(|| format!("{}", dir.display()))?;
    let base = absolute
        .components()
        .next_back()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .filter(|n| !n.is_empty() && n != "/")
        .unwrap_or_else(|| "plugin".into());
    let name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    Ok(name)
}

/// The language of the plugin in `dir`, by its entry file: `Cargo.toml`, `plugin.js`,
/// `app.py`, or `.c` files.
pub fn detect_language(dir: &Path) -> Result<Language> {
    if dir.join("Cargo.toml").is_file() {
        return Ok(Language::Rust);
    }
    if dir.join(crate::js::ENTRY).is_file() {
        return Ok(Language::Js);
    }
    if dir
        .join(format!("{}.py", crate::python::APP_MODULE))
        .is_file()
    {
        return Ok(Language::Python);
    }
    let has_c = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .any(|e| e.path().extension().is_some_and(|x| x == "c"));
    if has_c {
        return Ok(Language::C);
    }
    bail!(
        "{} holds no plugin: a Rust plugin has Cargo.toml, a JavaScript one {}, a Python one \
         {}.py, a C one .c files (`accelhost-sdk new` makes one)",
        dir.display(),
        crate::js::ENTRY,
        crate::python::APP_MODULE
    )
}

/// The `plugins` entry that loads `component`, as `build` prints it.
pub fn config_entry(name: &str, component: &Path) -> String {
    format!(
        "{{ \"name\": {}, \"module\": {} }}",
        serde_json::Value::from(name),
        serde_json::Value::from(component.to_string_lossy())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_come_from_the_directory() {
        assert_eq!(
            plugin_name(Path::new("/tmp/my plugin")).unwrap(),
            "my-plugin"
        );
        assert_eq!(plugin_name(Path::new("/tmp/echo.v2/")).unwrap(), "echo.v2");
        assert_eq!(plugin_name(Path::new("/tmp/ünï")).unwrap(), "-n-");
    }

    #[test]
    fn a_new_plugin_refuses_a_directory_in_use_and_loads_from_its_config() {
        let home = std::env::temp_dir().join(format!("accelhost-sdk-new-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let sdk = Sdk::at(crate::home::unpacked_sdk(&home).unwrap(), &home);
        let dir = home.join("echo");
        let written = new_plugin(&sdk, Language::C, Starter::Template, &dir).unwrap();
        assert!(dir.join("plugin.c").is_file(), "{written:?}");
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(CONFIG)).unwrap()).unwrap();
        assert_eq!(config["plugins"][0]["module"], "echo.wasm");
        assert_eq!(detect_language(&dir).unwrap(), Language::C);
        let err = new_plugin(&sdk, Language::C, Starter::Template, &dir).unwrap_err();
        assert!(err.to_string().contains("is not empty"), "{err}");

        let nlb0 = home.join("nlb0-py");
        new_plugin(&sdk, Language::Python, Starter::Nlb0, &nlb0).unwrap();
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(nlb0.join(CONFIG)).unwrap()).unwrap();
        assert_eq!(config["plugins"][0]["name"], "nlb0-py");
        assert_eq!(config["devices"][0]["family"], "dfl");
        assert_eq!(detect_language(&nlb0).unwrap(), Language::Python);
        let err = detect_language(&home).unwrap_err();
        assert!(err.to_string().contains("holds no plugin"), "{err}");
        std::fs::remove_dir_all(&home).unwrap();
    }

    /// The lines of `source` that are code: not blank, not a comment, not a docstring.
    fn code_lines(source: &str) -> usize {
        let mut in_docstring = false;
        source
            .lines()
            .map(str::trim)
            .filter(|line| {
                let quotes = line.matches("\"\"\"").count();
                let docstring = in_docstring || quotes > 0;
                if quotes % 2 == 1 {
                    in_docstring = !in_docstring;
                }
                !(line.is_empty()
                    || docstring
                    || line.starts_with("//")
                    || line.starts_with("# ")
                    || line.starts_with("/*")
                    || line.starts_with('*'))
            })
            .count()
    }

    #[test]
    fn each_template_is_a_plugin_of_at_most_15_lines_of_code() {
        let sdk = Sdk::installed().unwrap();
        for language in Language::ALL {
            let dir = sdk.template_dir(language);
            let mut total = 0;
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                total += code_lines(&std::fs::read_to_string(&path).unwrap());
            }
            assert!(
                (5..=15).contains(&total),
                "{}: {total} lines of code",
                dir.display()
            );
        }
        assert_eq!(
            code_lines("\"\"\"doc\nmore\"\"\"\n# c\n\nx = 1\n// c\n#include <a.h>\n"),
            2
        );
    }
}

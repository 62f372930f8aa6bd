//! What a build reads, as one digest: the plugin's files, the SDK files of its language, the
//! WIT, and the toolchain's versions. A build whose inputs have the same digest as the last
//! build of the same output keeps that output, so a rebuild of unchanged sources gives the same
//! bytes even where the toolchain cannot (JavaScript and Python snapshot an interpreter run with
//! the machine's clocks and randomness), and the host's compile cache still has it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// Directories of a plugin that are not its sources: caches and build output.
const NOT_PLUGIN_SOURCES: &[&str] = &["__pycache__", ".git", "target"];

/// Directories of an SDK tree that are not read by a build, or are read only through the
/// toolchain whose versions stand for them: installed packages, virtual environments, the
/// template, generated types.
const NOT_SDK_SOURCES: &[&str] = &[
    "__pycache__",
    ".git",
    "target",
    "node_modules",
    ".venv",
    "template",
    "generated",
];

/// The digest of everything a build of `plugin_dir` reads besides the toolchain itself, whose
/// `versions` stand for it. Files in `skip` (the output and its record, should they lie in a
/// tree) are left out.
pub fn digest(
    versions: &str,
    plugin_dir: &Path,
    sdk_trees: &[PathBuf],
    skip: &[&Path],
) -> Result<String> {
    let mut hash = Sha256::new();
    hash.update(env!("CARGO_PKG_VERSION").as_bytes());
    hash.update([0]);
    hash.update(versions.as_bytes());
    let trees = std::iter::once((plugin_dir, NOT_PLUGIN_SOURCES))
        .chain(sdk_trees.iter().map(|t| (t.as_path(), NOT_SDK_SOURCES)));
    for (tree, not_sources) in trees {
        hash.update([0xff]);
        let mut files = Vec::new();
        collect(tree, tree, not_sources, skip, &mut files)?;
        files.sort();
        for (relative, path) in files {
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            hash.update(relative.as_bytes());
            hash.update([0]);
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(&bytes);
        }
    }
    Ok(hex(&hash.finalize()))
}

/// The files under `dir`, with their paths relative to `root`.
fn collect(
    root: &Path,
    dir: &Path,
    not_sources: &[&str],
    skip: &[&Path],
    files: &mut Vec<(String, PathBuf)>,
) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry
            .with_context(|| format!("reading {}", dir.display()))?
            .path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if path.is_dir() {
            if !name.is_some_and(|n| not_sources.contains(&n.as_str())) {
                collect(root, &path, not_sources, skip, files)?;
            }
        } else if path.is_file() && !skip.iter().any(|s| is_same_file(&path, s)) {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            files.push((relative.to_string_lossy().into_owned(), path));
        }
    }
    Ok(())
}

fn is_same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the last build of an output read and wrote, kept next to it as `<out>.inputs`.
pub struct Record {
    path: PathBuf,
}

impl Record {
    /// Where the record lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The record of the output `out`.
    pub fn of(out: &Path) -> Record {
        let mut path = out.as_os_str().to_owned();
        path.push(".inputs");
        Record {
            path: PathBuf::from(path),
        }
    }

    /// Whether the last build read inputs with digest `inputs` and wrote what `out` holds now.
    pub fn matches(&self, inputs: &str, out_sha256: Option<&str>) -> bool {
        let Some(out_sha256) = out_sha256 else {
            return false;
        };
        std::fs::read_to_string(&self.path).is_ok_and(|text| text == Self::text(inputs, out_sha256))
    }

    /// Notes that inputs with digest `inputs` built the output with digest `out_sha256`.
    pub fn write(&self, inputs: &str, out_sha256: &str) -> Result<()> {
        std::fs::write(&self.path, Self::text(inputs, out_sha256))
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Forgets the last build (before a new one overwrites the output).
    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    fn text(inputs: &str, out_sha256: &str) -> String {
        format!("inputs {inputs}\noutput {out_sha256}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "accelhost-sdk-inputs-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_digest_follows_sources_and_versions_but_not_caches_or_the_output() {
        let dir = scratch("digest");
        std::fs::write(dir.join("plugin.js"), "export const a = 1;\n").unwrap();
        let out = dir.join("plugin.wasm");
        let first = digest("jco 1", &dir, &[], &[&out]).unwrap();
        std::fs::create_dir_all(dir.join("__pycache__")).unwrap();
        std::fs::write(dir.join("__pycache__/x.pyc"), "cache").unwrap();
        std::fs::write(&out, "component").unwrap();
        assert_eq!(digest("jco 1", &dir, &[], &[&out]).unwrap(), first);
        assert_ne!(digest("jco 2", &dir, &[], &[&out]).unwrap(), first);
        std::fs::write(dir.join("plugin.js"), "export const a = 2;\n").unwrap();
        assert_ne!(digest("jco 1", &dir, &[], &[&out]).unwrap(), first);
        std::fs::write(dir.join("plugin.js"), "export const a = 1;\n").unwrap();
        std::fs::write(dir.join("helper.js"), "").unwrap();
        assert_ne!(
            digest("jco 1", &dir, &[], &[&out]).unwrap(),
            first,
            "a new file counts, even an empty one"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_record_matches_only_the_same_inputs_and_the_same_output() {
        let dir = scratch("record");
        let record = Record::of(&dir.join("p.wasm"));
        assert!(!record.matches("in", Some("out")), "no record yet");
        record.write("in", "out").unwrap();
        assert!(record.matches("in", Some("out")));
        assert!(!record.matches("other", Some("out")));
        assert!(!record.matches("in", Some("changed")));
        assert!(!record.matches("in", None), "the output is gone");
        record.remove();
        assert!(!record.matches("in", Some("out")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

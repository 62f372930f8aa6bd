//! The tool's per-user directory: the SDK files embedded in the tool, unpacked once per
//! version, and the language toolchains it installs. Nothing is written into a checkout.
//!
//! `$ACCELHOST_SDK_HOME`, else `$XDG_CACHE_HOME/accelhost-sdk`, else
//! `~/.cache/accelhost-sdk`:
//!
//! - `sdk-<version>-<digest>/`: the embedded SDK (`wit/`, `sdk/<language>/`, `examples/`);
//! - `toolchains/js/`: the npm packages `sdk/js/package-lock.json` pins;
//! - `toolchains/python/venv/`: componentize-py as `sdk/python/requirements.txt` pins it;
//! - `work/`: intermediate build files, by plugin directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

/// The variable that moves the tool's directory.
pub const HOME_ENV: &str = "ACCELHOST_SDK_HOME";

/// The tool's per-user directory (not created here).
pub fn home() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os(HOME_ENV).filter(|h| !h.is_empty()) {
        return std::path::absolute(PathBuf::from(home)).context(HOME_ENV);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|c| !c.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .context("neither $ACCELHOST_SDK_HOME, $XDG_CACHE_HOME nor $HOME is set")?;
    Ok(cache.join("accelhost-sdk"))
}

/// The embedded files, as (path relative to the SDK root, contents).
pub fn embedded_files() -> &'static [(&'static str, &'static [u8])] {
    embedded::FILES
}

/// The embedded SDK unpacked below `home` (in a directory named by the files' digest, so a
/// changed SDK unpacks apart), unpacking it first if this version is not there.
/// Concurrent calls are safe: each unpacks into a directory of its own and renames it.
pub fn unpacked_sdk(home: &Path) -> Result<PathBuf> {
    let root = home.join(format!(
        "sdk-{}-{}",
        env!("CARGO_PKG_VERSION"),
        embedded::DIGEST
    ));
    if root.join(COMPLETE).is_file() {
        return Ok(root);
    }
    static UNPACKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = UNPACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let staging = home.join(format!(".unpacking-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    for (path, contents) in embedded_files() {
        let file = staging.join(path);
        let dir = file.parent().expect("embedded files are below the root");
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(&file, contents).with_context(|| format!("writing {}", file.display()))?;
    }
    std::fs::write(staging.join(COMPLETE), "")
        .with_context(|| format!("writing {}", staging.display()))?;
    if root.exists() && !root.join(COMPLETE).is_file() {
        // A directory without the mark was not made by a rename of a whole staging
        // directory (each is marked before it is renamed): damaged, so replaced. One with the
        // mark is another process's, which may be building from it now.
        let _ = std::fs::remove_dir_all(&root);
    }
    if let Err(err) = std::fs::rename(&staging, &root) {
        let _ = std::fs::remove_dir_all(&staging);
        // Another process unpacked the same SDK first.
        if !root.join(COMPLETE).is_file() {
            return Err(err).with_context(|| format!("unpacking the SDK into {}", root.display()));
        }
    }
    Ok(root)
}

/// The file that marks an unpacked SDK as whole.
const COMPLETE: &str = ".complete";

#[cfg(test)]
mod tests {
    use super::*;

    /// `embedded/` holds symlinks into the checkout; `cargo package` must put every file they
    /// reach in the crate (it leaves out, for one, a directory holding a `Cargo.toml`), and
    /// none of the toolchains a checkout may hold.
    #[test]
    fn the_packaged_crate_carries_every_embedded_file() {
        let out = std::process::Command::new(env!("CARGO"))
            .args(["package", "--list", "--allow-dirty", "--offline"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "cargo package --list: {stderr}");
        let listed: std::collections::HashSet<&str> =
            std::str::from_utf8(&out.stdout).unwrap().lines().collect();
        assert_eq!(embedded::SOURCES.len(), embedded::FILES.len());
        for source in embedded::SOURCES {
            let packaged = format!("embedded/{source}");
            assert!(
                listed.contains(packaged.as_str()),
                "{packaged} is not packaged"
            );
        }
        assert!(
            !listed
                .iter()
                .any(|l| l.contains("node_modules") || l.ends_with(".wasm")),
            "{listed:?}"
        );
    }

    #[test]
    fn the_sdk_unpacks_once_and_whole() {
        let home = std::env::temp_dir().join(format!("accelhost-sdk-home-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let root = unpacked_sdk(&home).unwrap();
        for needed in [
            "wit/plugin.wit",
            "sdk/c/include/accelhost.h",
            "sdk/js/accelhost.js",
            "sdk/python/accelhost.py",
            "sdk/c/template/plugin.c",
            "examples/python-nlb0/app.py",
        ] {
            assert!(root.join(needed).is_file(), "{needed} is not unpacked");
        }
        assert!(!root.join("sdk/js/node_modules").exists());
        // A second call finds it; a half-unpacked directory is never taken.
        assert_eq!(unpacked_sdk(&home).unwrap(), root);
        std::fs::remove_file(root.join(COMPLETE)).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(unpacked_sdk(&home).unwrap(), root);
        std::fs::remove_dir_all(&home).unwrap();
    }

    #[test]
    fn concurrent_unpacks_agree_and_leave_one_whole_sdk() {
        let home =
            std::env::temp_dir().join(format!("accelhost-sdk-home-race-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let roots: Vec<PathBuf> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..4)
                .map(|_| s.spawn(|| unpacked_sdk(&home).unwrap()))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(roots.iter().all(|r| r == &roots[0]), "{roots:?}");
        for (path, contents) in embedded_files() {
            assert_eq!(
                &std::fs::read(roots[0].join(path)).unwrap(),
                contents,
                "{path}"
            );
        }
        let left: Vec<_> = std::fs::read_dir(&home)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 1, "staging directories left behind: {left:?}");
        std::fs::remove_dir_all(&home).unwrap();
    }
}

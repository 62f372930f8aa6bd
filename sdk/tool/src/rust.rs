//! Rust plugins: a cdylib crate on the Rust SDK (`sdk/rust`, the `Plugin` trait and the
//! export macro), built by cargo for `wasm32-wasip2`, whose linker writes a component
//! directly. The compiler checks the exports: a misspelled trait method does not build.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::checkout::Sdk;
use crate::process::{self, run};

/// The target plugins are built for.
pub const TARGET: &str = "wasm32-wasip2";

/// The Rust toolchain plugins build with: the one the SDK pins in its `rust-toolchain.toml`
/// (which `new` copies into each Rust plugin, so rustup picks it there), with the
/// `wasm32-wasip2` standard library.
#[derive(Clone, Debug)]
pub struct Cargo {
    /// `rustc --version` of that toolchain.
    pub rustc_version: String,
}

impl Cargo {
    /// Finds rustup and checks that the pinned toolchain is installed with [`TARGET`].
    pub fn probe(sdk: &Sdk) -> Result<Cargo, String> {
        let channel = channel(sdk)?;
        let rustup = Path::new("rustup");
        process::version_line(rustup, &["--version"])
            .map_err(|why| format!("{why}; plugins build with rustup's toolchains"))?;
        let rustc_version = process::version_line(rustup, &["run", &channel, "rustc", "--version"])
            .map_err(|why| {
                format!("{why}; `accelhost-sdk toolchains --install rust` installs Rust {channel}")
            })?;
        let libdir = Command::new("rustup")
            .args([
                "run",
                &channel,
                "rustc",
                "--print",
                "target-libdir",
                "--target",
                TARGET,
            ])
            .output()
            .map_err(|err| format!("`rustup` cannot run: {err}"))?;
        let libdir = PathBuf::from(String::from_utf8_lossy(&libdir.stdout).trim());
        if !libdir.is_dir() {
            return Err(format!(
                "Rust {channel} has no {TARGET} standard library: `accelhost-sdk toolchains \
                 --install rust` installs it"
            ));
        }
        Ok(Cargo { rustc_version })
    }

    /// Writes `plugin_dir/Cargo.lock` if the crate has none yet.
    pub fn lock(&self, plugin_dir: &Path) -> Result<()> {
        if plugin_dir.join("Cargo.lock").is_file() {
            return Ok(());
        }
        let manifest = plugin_dir.join("Cargo.toml");
        let mut cargo = Command::new("cargo");
        cargo
            .args(["generate-lockfile", "--manifest-path"])
            .arg(&manifest)
            .current_dir(plugin_dir);
        run(
            &mut cargo,
            &format!("locking the dependencies of {}", manifest.display()),
        )?;
        Ok(())
    }

    /// Builds the crate in `plugin_dir` in release mode for [`TARGET`] and copies the
    /// component to `out`. The target directory is cargo's: `CARGO_TARGET_DIR` when it is
    /// set (shared by every plugin built with it), else the crate's own `target/`, kept
    /// between builds so cargo rebuilds only what changed, and gone with the crate.
    pub fn build(&self, plugin_dir: &Path, out: &Path) -> Result<()> {
        let manifest = plugin_dir.join("Cargo.toml");
        let crate_name = package_name(&manifest)?.replace('-', "_");
        let target_dir = target_dir(plugin_dir)?;
        let mut cargo = Command::new("cargo");
        cargo
            .args(["build", "--release", "--target", TARGET, "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target_dir)
            .current_dir(plugin_dir);
        run(
            &mut cargo,
            &format!("building {} with cargo", manifest.display()),
        )?;
        let built = target_dir
            .join(TARGET)
            .join("release")
            .join(format!("{crate_name}.wasm"));
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::copy(&built, out).with_context(|| {
            format!(
                "copying {} to {}: is {} a cdylib (`[lib] crate-type = [\"cdylib\"]`)?",
                built.display(),
                out.display(),
                manifest.display()
            )
        })?;
        Ok(())
    }
}

/// Where cargo builds the crate in `plugin_dir`: `CARGO_TARGET_DIR` as cargo takes it (a
/// relative one from where the tool was started, not from the crate), else `target/` in the
/// crate.
fn target_dir(plugin_dir: &Path) -> Result<PathBuf> {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => Ok(std::env::current_dir()
            .context("reading the current directory")?
            .join(dir)),
        None => Ok(plugin_dir.join("target")),
    }
}

/// Installs the pinned toolchain with the `wasm32-wasip2` standard library, with rustup.
pub fn install(sdk: &Sdk) -> Result<()> {
    let channel = channel(sdk).map_err(anyhow::Error::msg)?;
    let mut rustup = Command::new("rustup");
    rustup.args([
        "toolchain",
        "install",
        &channel,
        "--profile",
        "minimal",
        "--target",
        TARGET,
    ]);
    run(
        &mut rustup,
        &format!("installing Rust {channel} with the {TARGET} target"),
    )?;
    Ok(())
}

/// The toolchain file `new` puts into a Rust plugin.
pub const TOOLCHAIN_FILE: &str = "rust-toolchain.toml";

/// The channel the SDK's `rust-toolchain.toml` pins.
fn channel(sdk: &Sdk) -> Result<String, String> {
    let path = sdk.root().join(TOOLCHAIN_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("channel")?
                .trim_start()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_string())
        })
        .ok_or_else(|| format!("{} names no channel", path.display()))
}

/// The `[package]` name of the manifest at `path`.
fn package_name(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("a Rust plugin needs {}", path.display()))?;
    let mut in_package = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(value) = line.strip_prefix("name").map(str::trim_start)
            && let Some(value) = value.strip_prefix('=')
        {
            return Ok(value.trim().trim_matches('"').to_string());
        }
    }
    bail!("{} has no [package] name", path.display())
}

/// The manifest `new` writes: a cdylib on the SDK unpacked at `sdk`, small in release mode, and
/// a workspace of its own (so a plugin made inside another workspace still builds).
pub fn manifest(sdk: &Sdk, name: &str) -> String {
    let sdk_crate = sdk.language_dir(crate::checkout::Language::Rust);
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"

[lib]
crate-type = ["cdylib"]

[dependencies]
accelhost-sdk = {{ path = {path} }}

[profile.release]
opt-level = "s"
lto = true
strip = true

[workspace]
"#,
        path = serde_json::Value::from(sdk_crate.to_string_lossy()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_name_comes_from_the_package_table() {
        let dir = std::env::temp_dir().join(format!("accelhost-rust-name-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("Cargo.toml");
        std::fs::write(
            &manifest,
            "[lib]\nname = \"other\"\n\n[package]\nversion = \"1\"\nname = \"my-plugin\"\n",
        )
        .unwrap();
        assert_eq!(package_name(&manifest).unwrap(), "my-plugin");
        std::fs::write(&manifest, "[workspace]\n").unwrap();
        assert!(package_name(&manifest).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Builds the WebAssembly plugins (the shipped ones in `guest-plugins/` and the test fixtures
//! in `tests/fixtures/`) for `wasm32-wasip2` in their own target directory, so that `cargo
//! build` and `cargo test` need no separate step. The shipped plugins are embedded in the
//! host; the fixtures are left on disk for the end-to-end tests (`ACCELHOST_GUEST_DIR`).

use std::path::{Path, PathBuf};
use std::process::Command;

const WASM_TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .parent()
        .expect("host/ lives in the workspace root");
    for watched in [
        "wit",
        "sdk/rust",
        "guest-plugins",
        "tests/fixtures",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");

    let version = wit_version(&root.join("wit"));
    println!("cargo:rustc-env=ACCELHOST_WIT_VERSION={version}");

    let guests = guest_packages(root);
    ensure_wasm_target();
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_relative() {
                root.join(dir)
            } else {
                dir
            }
        })
        .unwrap_or_else(|| root.join("target"))
        .join("guest");

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "--profile",
            "guest",
            "--target",
            WASM_TARGET,
            "--target-dir",
        ])
        .arg(&target_dir);
    for (package, _) in &guests {
        cmd.args(["-p", package]);
    }
    // The outer build's flags and wrappers (clippy, coverage) are for the host, not for wasm.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    let output = cmd
        .output()
        .expect("running cargo to build the wasm plugins");
    if !output.status.success() {
        panic!(
            "building the wasm plugins failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    let out_dir = PathBuf::from(env("OUT_DIR")).join("guests");
    std::fs::create_dir_all(&out_dir).expect("creating OUT_DIR/guests");
    let built = target_dir.join(WASM_TARGET).join("guest");
    // The sha256 of each plugin, the compile cache's key: an embedded plugin then starts
    // without hashing its bytes first.
    let mut digests = String::from("&[\n");
    for (package, _) in &guests {
        let file = format!("{}.wasm", package.replace('-', "_"));
        let from = built.join(&file);
        let to = out_dir.join(&file);
        std::fs::copy(&from, &to)
            .unwrap_or_else(|e| panic!("copying {} to {}: {e}", from.display(), to.display()));
        let bytes = std::fs::read(&to).unwrap_or_else(|e| panic!("reading {}: {e}", to.display()));
        let digest: [u8; 32] = sha2::Digest::finalize(sha2::Digest::chain_update(
            <sha2::Sha256 as sha2::Digest>::new(),
            &bytes,
        ))
        .into();
        digests.push_str(&format!("    ({file:?}, {digest:?}),\n"));
    }
    digests.push_str("]\n");
    std::fs::write(out_dir.join("digests.rs"), digests).expect("writing the plugin digests");
    println!("cargo:rustc-env=ACCELHOST_GUEST_DIR={}", out_dir.display());
}

/// The version of `accel:plugin` that `wit/` declares, in its one `package` line.
fn wit_version(dir: &Path) -> String {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("reading wit/").flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "wit") {
            let text = std::fs::read_to_string(&path).expect("reading a .wit file");
            for line in text.lines() {
                if let Some(rest) = line.trim().strip_prefix("package accel:plugin@") {
                    found.push(rest.trim_end_matches(';').trim().to_string());
                }
            }
        }
    }
    match found.as_slice() {
        [version] => version.clone(),
        _ => {
            panic!("wit/ must declare `package accel:plugin@X.Y.Z;` exactly once, found {found:?}")
        }
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}

/// Every crate under `guest-plugins/` and `tests/fixtures/`, as (package name, directory).
fn guest_packages(root: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for parent in ["guest-plugins", "tests/fixtures"] {
        let Ok(entries) = std::fs::read_dir(root.join(parent)) else {
            continue;
        };
        for entry in entries.flatten() {
            let manifest = entry.path().join("Cargo.toml");
            if let Ok(text) = std::fs::read_to_string(&manifest) {
                let name = text
                    .lines()
                    .find_map(|line| line.trim().strip_prefix("name = "))
                    .map(|v| v.trim_matches('"').to_string())
                    .unwrap_or_else(|| panic!("{} has no package name", manifest.display()));
                found.push((name, entry.path()));
            }
        }
    }
    found.sort();
    found
}

/// `rust-toolchain.toml` lists the wasm target, but rustup installs listed targets only when
/// it installs the toolchain; a machine that already had the toolchain gets it here.
fn ensure_wasm_target() {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let installed = sysroot
        .as_ref()
        .is_some_and(|root| root.join("lib/rustlib").join(WASM_TARGET).is_dir());
    if installed {
        return;
    }
    println!("cargo:warning=installing the {WASM_TARGET} target with rustup (one time)");
    let mut cmd = Command::new("rustup");
    cmd.args(["target", "add", WASM_TARGET]);
    if let Some(toolchain) = std::env::var_os("RUSTUP_TOOLCHAIN") {
        cmd.arg("--toolchain").arg(toolchain);
    }
    let status = cmd.status();
    if !status.is_ok_and(|s| s.success()) {
        panic!(
            "the {WASM_TARGET} target is missing and `rustup target add {WASM_TARGET}` failed; \
             install it and build again"
        );
    }
}

//! Embeds the SDK a plugin build reads (the WIT package, each language's helpers and
//! template, the NLB0 examples) into the tool, so an installed `accelhost-sdk` works from any
//! directory without the checkout it was built from.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The WIT package plugins build against: the `.wit` files of this directory (not the older
/// versions the host keeps in its subdirectories).
const WIT: &str = "wit";

/// What else is embedded, relative to the repository root: directories are taken whole
/// (minus [`SKIPPED`]), files one by one.
const EMBEDDED: &[&str] = &[
    "rust-toolchain.toml",
    "sdk/rust/Cargo.toml",
    "sdk/rust/src",
    "sdk/rust/template",
    "sdk/c/include",
    "sdk/c/src",
    "sdk/c/template",
    "sdk/js/accelhost.js",
    "sdk/js/source-lines.mjs",
    "sdk/js/package.json",
    "sdk/js/package-lock.json",
    "sdk/js/generated",
    "sdk/js/template",
    "sdk/python/accelhost.py",
    "sdk/python/requirements.txt",
    "sdk/python/template",
    "examples/c-nlb0",
    "examples/js-nlb0",
    "examples/python-nlb0",
];

/// Files embedded under another path: (in the repository, in the SDK). The shipped dfl
/// plugin is the Rust NLB0 example.
const RENAMED: &[(&str, &str)] = &[("guest-plugins/dfl/src/lib.rs", "examples/rust-nlb0/lib.rs")];

/// Names never embedded: toolchains, caches and build outputs that may sit in a checkout.
const SKIPPED: &[&str] = &["node_modules", ".venv", "__pycache__"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join("../..");
    let mut files = Vec::new();
    println!("cargo:rerun-if-changed={}", root.join(WIT).display());
    for entry in std::fs::read_dir(root.join(WIT)).unwrap() {
        let name = PathBuf::from(entry.unwrap().file_name());
        if name.extension().is_some_and(|e| e == "wit") {
            collect(&root, &Path::new(WIT).join(name), &mut files);
        }
    }
    for entry in EMBEDDED {
        collect(&root, Path::new(entry), &mut files);
    }
    let mut files: Vec<(PathBuf, PathBuf)> = files.into_iter().map(|f| (f.clone(), f)).collect();
    for (from, to) in RENAMED {
        println!("cargo:rerun-if-changed={}", root.join(from).display());
        files.push((PathBuf::from(from), PathBuf::from(to)));
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    let mut code =
        String::from("/// The embedded SDK files: path relative to the SDK root, and contents.\n");
    code.push_str("pub static FILES: &[(&str, &[u8])] = &[\n");
    for (from, to) in &files {
        let absolute = std::fs::canonicalize(root.join(from)).unwrap();
        writeln!(
            code,
            "    ({:?}, include_bytes!({:?})),",
            to.to_str().unwrap(),
            absolute.to_str().unwrap()
        )
        .unwrap();
    }
    code.push_str("];\n");
    // Which unpacked SDK directory is this one's: decided here, not at every run.
    let mut digest = <sha2::Sha256 as sha2::Digest>::new();
    for (from, to) in &files {
        let contents = std::fs::read(root.join(from)).unwrap();
        let path = to.to_str().unwrap();
        for part in [path.as_bytes(), &contents] {
            sha2::Digest::update(&mut digest, (part.len() as u64).to_le_bytes());
            sha2::Digest::update(&mut digest, part);
        }
    }
    let digest = sha2::Digest::finalize(digest);
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    writeln!(
        code,
        "/// The first 8 bytes of the sha256 of the files, in hex.\npub const DIGEST: &str = {hex:?};"
    )
    .unwrap();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("embedded.rs");
    std::fs::write(out, code).unwrap();
}

/// Adds `relative` (a file, or every file below a directory) to `files`, and tells cargo to
/// rerun when it changes.
fn collect(root: &Path, relative: &Path, files: &mut Vec<PathBuf>) {
    let path = root.join(relative);
    println!("cargo:rerun-if-changed={}", path.display());
    let name = relative.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if SKIPPED.contains(&name) || name.ends_with(".wasm") || name.ends_with(".inputs") {
        return;
    }
    let metadata =
        std::fs::symlink_metadata(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    if metadata.is_dir() {
        for entry in std::fs::read_dir(&path).unwrap() {
            collect(root, &relative.join(entry.unwrap().file_name()), files);
        }
    } else if metadata.is_file() {
        files.push(relative.to_path_buf());
    }
}

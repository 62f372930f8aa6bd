//! Embeds the SDK a plugin build reads (the WIT package, each language's helpers and
//! template, the NLB0 examples) into the tool, so an installed `accelhost-sdk` works from any
//! directory without the checkout it was built from.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The SDK as this crate carries it: in a checkout, symlinks to the files of the repository
/// (the WIT package, `rust-toolchain.toml`, each language's SDK directory, the NLB0 examples,
/// the shipped dfl plugin as the Rust NLB0 example); in a packaged crate, `cargo package` has
/// put the files themselves there.
const EMBEDDED: &str = "embedded";

/// The WIT packages plugins build against: the `.wit` files of this directory, the newest
/// (for Rust), and of [`WIT_OTHER_LANGUAGES`] below it; not the older versions the host
/// keeps in its other subdirectories.
const WIT: &str = "wit";
/// The version the C, JavaScript and Python SDKs build against.
const WIT_OTHER_LANGUAGES: &str = "0.2.0";

/// Files embedded under another name: (in `embedded/`, in the SDK). `cargo package` leaves
/// out a directory that holds a `Cargo.toml`, as another package's.
const RENAMED: &[(&str, &str)] = &[("sdk/rust/manifest.toml", "sdk/rust/Cargo.toml")];

/// Names never embedded: toolchains, caches and build outputs that may sit in a checkout.
const SKIPPED: &[&str] = &["node_modules", ".venv", "__pycache__", "target"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.join(EMBEDDED);
    let mut files = Vec::new();
    for dir in [
        Path::new(WIT).to_path_buf(),
        Path::new(WIT).join(WIT_OTHER_LANGUAGES),
    ] {
        rerun_if_changed(&root.join(&dir));
        for entry in std::fs::read_dir(root.join(&dir)).unwrap() {
            let name = PathBuf::from(entry.unwrap().file_name());
            if name.extension().is_some_and(|e| e == "wit") {
                collect(&root, &dir.join(name), &mut files);
            }
        }
    }
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = PathBuf::from(entry.unwrap().file_name());
        if name != Path::new(WIT) {
            collect(&root, &name, &mut files);
        }
    }
    files.sort();
    let mut code =
        String::from("/// The embedded SDK files: path relative to the SDK root, and contents.\n");
    code.push_str("pub static FILES: &[(&str, &[u8])] = &[\n");
    for file in &files {
        let absolute = std::fs::canonicalize(root.join(file)).unwrap();
        writeln!(
            code,
            "    ({:?}, include_bytes!({:?})),",
            sdk_path(file),
            absolute.to_str().unwrap()
        )
        .unwrap();
    }
    code.push_str("];\n");
    code.push_str(
        "/// Where each of [`FILES`] comes from, relative to the crate's `embedded/` (what \
         `cargo package` must carry).\n#[cfg(test)]\npub static SOURCES: &[&str] = &[\n",
    );
    for file in &files {
        writeln!(code, "    {:?},", file.to_str().unwrap()).unwrap();
    }
    code.push_str("];\n");
    // Which unpacked SDK directory is this one's: decided here, not at every run.
    let mut digest = <sha2::Sha256 as sha2::Digest>::new();
    for file in &files {
        let contents = std::fs::read(root.join(file)).unwrap();
        let path = sdk_path(file);
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

/// Where `file` (relative to `embedded/`) goes in the unpacked SDK.
fn sdk_path(file: &Path) -> &str {
    let file = file.to_str().unwrap();
    RENAMED
        .iter()
        .find(|(from, _)| *from == file)
        .map_or(file, |(_, to)| to)
}

/// Adds `relative` (a file, or every file below a directory, symlinks followed) to `files`,
/// and tells cargo to rerun when it changes.
fn collect(root: &Path, relative: &Path, files: &mut Vec<PathBuf>) {
    let path = root.join(relative);
    let name = relative.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if SKIPPED.contains(&name) || name.ends_with(".wasm") || name.ends_with(".inputs") {
        return;
    }
    rerun_if_changed(&path);
    let metadata =
        std::fs::metadata(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    if metadata.is_dir() {
        for entry in std::fs::read_dir(&path).unwrap() {
            collect(root, &relative.join(entry.unwrap().file_name()), files);
        }
    } else if metadata.is_file() {
        files.push(relative.to_path_buf());
    }
}

/// Cargo compares the modification time of the path it is given, so a symlink is named by
/// what it points at.
fn rerun_if_changed(path: &Path) {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    println!("cargo:rerun-if-changed={}", target.display());
}

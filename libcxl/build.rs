//! Gives libcxl.so libcxl's soname and symbol versions. rustc exports a cdylib's
//! `#[no_mangle]` functions with a version script of its own, without versions, and a
//! symbol it lists cannot be given one; so the C functions are plain Rust functions, and
//! each name in symver.map gets an entry written here in assembly (to OUT_DIR, included by
//! src/lib.rs): a jump to the Rust function, bound to the name's node with `.symver`.
//! symver.map itself goes to the linker, which defines the nodes.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let map = dir.join("symver.map");
    println!("cargo:rerun-if-changed={}", map.display());
    let text = std::fs::read_to_string(&map).expect("symver.map beside Cargo.toml");
    let (jump, function) = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => ("jmp", "@function"),
        Ok("aarch64") => ("b", "%function"),
        other => panic!("libcxl's entries are written for x86_64 and aarch64, not {other:?}"),
    };
    let names = versioned_names(&text);
    let mut code = String::from("std::arch::global_asm!(\n    \".pushsection .text\",\n");
    for (node, name) in &names {
        for line in [
            format!(".globl {name}"),
            format!(".type {name}, {function}"),
            format!("{name}:"),
            format!("{jump} {{{name}}}"),
            format!(".symver {name}, {name}@@@{node}"),
        ] {
            writeln!(code, "    \"{line}\",").unwrap();
        }
    }
    code.push_str("    \".popsection\",\n");
    for (_, name) in &names {
        writeln!(code, "    {name} = sym {name},").unwrap();
    }
    code.push_str(");\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    std::fs::write(out.join("exports.rs"), code).unwrap();
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcxl.so.1");
}

/// Every (node, name) of a version script: the names listed under `global:` in each node.
fn versioned_names(text: &str) -> Vec<(String, String)> {
    let mut names = Vec::new();
    let mut node = None;
    let mut global = false;
    // After a node's `}`: its parent's name, up to the `;`.
    let mut in_parent = false;
    let without_comments = text
        .split("/*")
        .map(|part| part.split_once("*/").map_or(part, |(_, after)| after))
        .collect::<Vec<_>>()
        .join(" ");
    for token in without_comments.split_whitespace() {
        if in_parent {
            in_parent = !token.ends_with(';');
            continue;
        }
        match token {
            "global:" => global = true,
            "local:" => global = false,
            "{" => {}
            _ if token.starts_with('}') => {
                node = None;
                global = false;
                in_parent = !token.ends_with(';');
            }
            _ if node.is_none() => node = Some(token.to_string()),
            _ if global => {
                let name = token.trim_end_matches(';');
                names.push((node.clone().unwrap(), name.to_string()));
            }
            _ => {}
        }
    }
    assert!(!names.is_empty(), "symver.map lists no names");
    names
}

//! `accelhost xclbin build` with kernels of the program's own, as a Vitis user runs it: C++
//! sources with HLS pragmas built with the system's clang, the image shown and programmed
//! onto the emulated card; the same kernels from the prebuilt module; and each input the card
//! could not run refused at build, naming why. A missing clang is reported ignored (failed
//! under `ACCELHOST_REQUIRE_TOOLCHAINS=1`, as in CI).

use crate::support;

use std::path::{Path, PathBuf};

use support::harness::{Outcome, Trial};

/// This file's trials, run by tests/suite_cli_trials.rs.
pub fn trials() -> Vec<Trial> {
    vec![Trial {
        name: "xclbin_build_takes_kernel_sources_or_a_module_and_refuses_what_the_card_cannot_run",
        run: xclbin_build_takes_kernel_sources_or_a_module,
    }]
}

fn accelhost(dir: &Path, args: &[&str]) -> std::process::Output {
    support::run_accelhost(env!("CARGO_BIN_EXE_accelhost"), dir, args, &[])
}

fn mmult_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/kernels/mmult.cpp")
}

/// Runs a build expected to fail; its stderr.
fn refused(dir: &Path, args: &[&str]) -> String {
    let out = accelhost(dir, args);
    assert!(!out.status.success(), "{}", support::report(&out));
    support::text(&out.stderr)
}

fn xclbin_build_takes_kernel_sources_or_a_module() -> Outcome {
    if let Some(why) = support::tool_missing(
        "clang",
        "--version",
        "no clang to build kernels with (apt-get install clang lld wasi-libc)".into(),
    ) {
        return Outcome::Skipped(why);
    }
    let dir = support::scratch_dir("xclbin-kernels");
    let source = mmult_source();
    let source = source.to_str().unwrap();
    let out = accelhost(
        &dir,
        &[
            "xclbin",
            "build",
            "mm.xclbin",
            source,
            "-k",
            "mmult",
            "-k",
            "forever",
            "--cus",
            "2",
        ],
    );
    let report = support::report(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("of kernel(s) mmult, forever, 2 compute unit(s) each"),
        "{report}"
    );
    let out = accelhost(&dir, &["xclbin", "show", "mm.xclbin"]);
    let shown = support::report(&out);
    assert!(out.status.success(), "{shown}");
    for line in [
        "compute unit 1: mmult:mmult_2",
        "kernel mmult(a@0x10, b@0x1c, c@0x28, size@0x34)",
        "kernel forever(flag@0x10)",
        "kernel module: ",
    ] {
        assert!(shown.contains(line), "{line}: {shown}");
    }
    let out = accelhost(&dir, &["program", "xocl/emu:xocl0", "mm.xclbin"]);
    assert!(out.status.success(), "{}", support::report(&out));

    // The same kernels from the module the image carries, their signatures given.
    let image = std::fs::read(dir.join("mm.xclbin")).unwrap();
    let module = accelhost::xclbin::parse(&image)
        .unwrap()
        .kernel_module
        .expect("the image carries its kernels");
    std::fs::write(dir.join("mm.wasm"), &module[..]).unwrap();
    let out = accelhost(
        &dir,
        &[
            "xclbin",
            "build",
            "again.xclbin",
            "mm.wasm",
            "-k",
            "mmult(a: ptr, b: ptr, c: ptr, size: i32)",
            "-k",
            "forever(flag: ptr)",
        ],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    let again =
        accelhost::xclbin::parse(&std::fs::read(dir.join("again.xclbin")).unwrap()).unwrap();
    let first = accelhost::xclbin::parse(&image).unwrap();
    assert_eq!(again.kernels, first.kernels, "the same metadata either way");

    // What the card could not run is refused at build, naming why.
    std::fs::write(
        dir.join("stream.cpp"),
        "#include \"hls_stream.h\"\nvoid k() {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("print.c"),
        "#include <stdio.h>\nvoid k(int *x) { printf(\"%d\", *x); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("pair.c"),
        "struct pair { int a, b; };\nvoid k(struct pair p, int *x) { *x = p.a; }\n",
    )
    .unwrap();
    std::fs::write(dir.join("typo.c"), "void k(int *x) { *x = 1 }\n").unwrap();
    std::fs::write(dir.join("mangled.cpp"), "void k(int *x) { *x = 1; }\n").unwrap();
    std::fs::write(dir.join("text.wasm"), "not a module").unwrap();
    for (args, says) in [
        (vec![source], "name the kernels to build"),
        (
            vec![source, "-k", "nothere"],
            "kernel 'nothere': no function of that name",
        ),
        (
            vec!["stream.cpp", "-k", "k"],
            "stream.cpp:1: hls::stream (streaming kernel ports) is not supported",
        ),
        (
            vec!["print.c", "-k", "k"],
            "imports wasi_snapshot_preview1.",
        ),
        (
            vec!["pair.c", "-k", "k"],
            "argument 'p' has type 'struct pair'",
        ),
        (
            vec!["typo.c", "-k", "k"],
            "typo.c:1:24: error: expected ';'",
        ),
        (
            vec!["mangled.cpp", "-k", "k"],
            "kernel 'k': no function of that name in the sources (a C++ kernel needs extern \"C\")",
        ),
        (vec!["text.wasm", "-k", "k(x: ptr)"], "not WebAssembly"),
        (
            vec!["mm.wasm", "-k", "mmult(a: ptr, b: ptr)"],
            "takes 4 parameter(s) in the module but has 2 argument(s)",
        ),
        (
            vec!["mm.wasm", "-k", "mmult(a: ptr, b: ptr, c: ptr, size: f64)"],
            "argument 'size' (Scalar, 8 bytes) is a i32",
        ),
        (
            vec!["mm.wasm", source, "-k", "mmult"],
            "mm.wasm is a built module",
        ),
    ] {
        let mut full = vec!["xclbin", "build", "out.xclbin"];
        full.extend(args.iter().copied());
        let stderr = refused(&dir, &full);
        assert!(
            stderr.contains(says),
            "{args:?}: expected '{says}' in:\n{stderr}"
        );
    }
    assert!(
        !dir.join("out.xclbin").exists(),
        "a refused build wrote an image"
    );
    Outcome::Passed
}

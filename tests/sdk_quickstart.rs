//! The SDK quickstart as a new plugin author runs it, per language (Rust, C, JavaScript,
//! Python), outside the checkout: a
//! temporary directory holding only the two installed binaries (`accelhost-sdk` and
//! `accelhost`), then `new` → `build` → `accelhost list` → `accelhost poke` (open, MMIO read
//! and write, reset) through the plugin, and a rebuild that keeps the component; in C, the
//! template made by `new` without `--from` is built and listed too. The
//! toolchains are the per-user ones `accelhost-sdk toolchains --install` put in place; a
//! language whose toolchain is missing is reported `ignored` with the reason (failed under
//! `ACCELHOST_REQUIRE_TOOLCHAINS=1`, as in CI).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::harness::{Outcome, Trial};

/// Set to `1` to make a missing toolchain fail the test instead of skipping it.
const REQUIRE_ENV: &str = "ACCELHOST_REQUIRE_TOOLCHAINS";

/// This file's trials, run by tests/suite_cli_trials.rs.
pub fn trials() -> Vec<Trial> {
    vec![
        Trial {
            name: "rust_quickstart_runs_outside_the_checkout",
            run: || quickstart("rust", "src/lib.rs"),
        },
        Trial {
            name: "c_quickstart_runs_outside_the_checkout",
            run: || quickstart("c", "plugin.c"),
        },
        Trial {
            name: "javascript_quickstart_runs_outside_the_checkout",
            run: || quickstart("js", "plugin.js"),
        },
        Trial {
            name: "python_quickstart_runs_outside_the_checkout",
            run: || quickstart("python", "app.py"),
        },
    ]
}

/// The beginnings of the variables cargo sets for a test process from its package.
const PACKAGE_VARIABLES: &[&str] = &[
    "CARGO_MANIFEST_",
    "CARGO_PKG_",
    "CARGO_CRATE_",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
];

/// The `accelhost-sdk` binary of this checkout: another package's binary, which cargo builds
/// for this test only when the whole workspace is tested, so it is brought up to date here
/// (a no-op when it is).
pub fn sdk_tool() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    // Cargo gives a test the environment of its package; a build script that reruns when one
    // of those variables changes (ring's reads CARGO_MANIFEST_DIR) would otherwise rebuild,
    // here and again in the next `cargo test`, everything above it in the shared target.
    for (name, _) in std::env::vars_os() {
        if PACKAGE_VARIABLES
            .iter()
            .any(|prefix| name.to_string_lossy().starts_with(prefix))
        {
            build.env_remove(name);
        }
    }
    build
        .args(["build", "--quiet", "-p", "accelhost-sdk-tool"])
        .args(["--bin", "accelhost-sdk", "--target-dir"])
        .arg(profile_dir.parent().unwrap());
    if profile_dir.ends_with("release") {
        build.arg("--release");
    }
    let status = build.status().expect("running cargo build");
    assert!(status.success(), "building accelhost-sdk failed");
    profile_dir.join("accelhost-sdk")
}

/// Runs `program` in `dir` with `bin` first on the PATH and no config of the user's; Rust
/// plugins build in one `CARGO_TARGET_DIR` beside `bin` (as a user who sets it has them), so
/// the second plugin reuses the first one's dependencies.
fn run(bin: &Path, dir: &Path, program: &str, args: &[&str]) -> Output {
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    Command::new(bin.join(program))
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("ACCELHOST_CONFIG")
        .env_remove("ACCELHOST_ENDPOINT")
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .env("ACCELHOST_CACHE_DIR", support::cache_dir())
        .env("CARGO_TARGET_DIR", bin.with_file_name("cargo-target"))
        .output()
        .unwrap_or_else(|err| panic!("running {program}: {err}"))
}

fn quickstart(language: &str, entry: &str) -> Outcome {
    let root = std::env::temp_dir().join(format!(
        "accelhost-quickstart-{language}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(sdk_tool(), bin.join("accelhost-sdk")).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_accelhost"), bin.join("accelhost")).unwrap();

    // 1. The toolchain (installed per user, once).
    let toolchain = run(&bin, &root, "accelhost-sdk", &["toolchains", language]);
    if !toolchain.status.success() {
        let why = String::from_utf8_lossy(&toolchain.stdout)
            .trim()
            .to_string();
        if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
            panic!("{REQUIRE_ENV}=1 but the {language} toolchain is missing: {why}");
        }
        let _ = std::fs::remove_dir_all(&root);
        return Outcome::Skipped(format!("the {language} toolchain is missing: {why}"));
    }

    // 2. A new plugin from the NLB0 example, and one from the template.
    let out = run(
        &bin,
        &root,
        "accelhost-sdk",
        &["new", language, "my-nlb0", "--from", "nlb0"],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    let plugin = root.join("my-nlb0");
    assert!(plugin.join(entry).is_file(), "{}", support::report(&out));
    let out = run(
        &bin,
        &root,
        "accelhost-sdk",
        &["new", language, "my-template"],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    let out = run(&bin, &root, "accelhost-sdk", &["new", language, "my-nlb0"]);
    assert!(
        !out.status.success(),
        "new over a plugin: {}",
        support::report(&out)
    );
    assert!(
        support::report(&out).contains("is not empty"),
        "{}",
        support::report(&out)
    );

    // 3. Build: the component lands next to the sources, with the entry that loads it.
    let out = run(&bin, &plugin, "accelhost-sdk", &["build"]);
    assert!(out.status.success(), "{}", support::report(&out));
    let component = plugin.join("my-nlb0.wasm");
    assert!(component.is_file(), "{}", support::report(&out));
    assert!(
        support::report(&out).contains("precompiled into the host's compile cache"),
        "{}",
        support::report(&out)
    );
    let entry_line = format!(
        "{{ \"name\": \"my-nlb0\", \"module\": \"{}\" }}",
        component.display()
    );
    assert!(
        support::report(&out).contains(&entry_line),
        "{}",
        support::report(&out)
    );
    // The config `new` writes beside a template is the same in every language, and the
    // templates build and load in tests/sdk_languages.rs: built here in C alone, where a build
    // takes a second (a JavaScript or Python one takes ten and another to compile).
    let template_too = language == "c";
    if template_too {
        let out = run(&bin, &root.join("my-template"), "accelhost-sdk", &["build"]);
        assert!(out.status.success(), "{}", support::report(&out));
    }

    // A build told to write two plugins into one file is refused before it builds anything.
    let out = run(
        &bin,
        &root,
        "accelhost-sdk",
        &["build", "my-nlb0", "my-template", "--out", "both.wasm"],
    );
    assert!(!out.status.success(), "{}", support::report(&out));
    assert!(
        support::report(&out).contains("--out names one component: give one directory with it"),
        "{}",
        support::report(&out)
    );
    assert!(!root.join("both.wasm").exists());

    // 4. Load: `accelhost` finds ./accelhost.json in the plugin's directory.
    let out = run(&bin, &plugin, "accelhost", &["list"]);
    assert!(out.status.success(), "{}", support::report(&out));
    assert!(
        support::report(&out).contains("my-nlb0/emu:card0"),
        "{}",
        support::report(&out)
    );
    if template_too {
        let out = run(&bin, &root.join("my-template"), "accelhost", &["list"]);
        assert!(out.status.success(), "{}", support::report(&out));
        assert!(
            support::report(&out).contains("my-template/template0"),
            "{}",
            support::report(&out)
        );
    }

    // 5. Poke: open, MMIO through the plugin's region, reset.
    let out = run(
        &bin,
        &plugin,
        "accelhost",
        &[
            "poke",
            "--exclusive",
            "my-nlb0/emu:card0",
            "read64:0x0",
            "write64:0x108=0x5a5a",
            "read64:0x108",
            "reset",
        ],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    let report = support::report(&out);
    let result = |step: &str| -> Vec<&str> {
        report
            .lines()
            .find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some(step)).then(|| words.collect())
            })
            .unwrap_or_else(|| panic!("no {step} line in {report}"))
    };
    assert_eq!(result("read64:0x108"), ["0x0000000000005a5a"], "{report}");
    assert_eq!(result("reset"), ["ok"], "{report}");

    // 6. Rebuilding unchanged sources keeps the component: the same bytes, still cached.
    let before = std::fs::read(&component).unwrap();
    let out = run(&bin, &plugin, "accelhost-sdk", &["build"]);
    assert!(out.status.success(), "{}", support::report(&out));
    assert!(
        support::report(&out).contains("kept"),
        "{}",
        support::report(&out)
    );
    assert_eq!(std::fs::read(&component).unwrap(), before);

    std::fs::remove_dir_all(&root).unwrap();
    Outcome::Passed
}

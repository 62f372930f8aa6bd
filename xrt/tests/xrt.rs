//! XRT's native API end to end: the library, headers and pkg-config file installed into a
//! prefix with `xrt/install.sh`, programs of the hello-world flow in C and C++ built with
//! only `pkg-config --cflags --libs xrt`, run on the embedded default against the vadd
//! xclbin, and a faulting plugin under a C program. A missing compiler or pkg-config is
//! reported ignored with the reason, or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1` (CI).

#[path = "../../tests/support/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::SystemTime;

use accelhost::workloads::vadd::vadd_image;
use harness::{Outcome, Trial};

fn main() -> std::process::ExitCode {
    let outcome = harness::run(&[
        Trial {
            name: "a_c_program_of_the_hello_world_flow_runs_vadd",
            run: a_c_program_of_the_hello_world_flow_runs_vadd,
        },
        Trial {
            name: "a_cpp_program_of_the_hello_world_flow_runs_vadd",
            run: a_cpp_program_of_the_hello_world_flow_runs_vadd,
        },
        Trial {
            name: "a_faulting_plugin_is_an_xrt_error_and_the_program_goes_on",
            run: a_faulting_plugin_is_an_xrt_error_and_the_program_goes_on,
        },
        Trial {
            name: "the_install_script_explains_itself_and_refuses_bad_input",
            run: the_install_script_explains_itself_and_refuses_bad_input,
        },
    ]);
    let _ = std::fs::remove_dir_all(scratch_root());
    outcome
}

/// Skips with `why`, or fails where CI requires the tools.
fn missing(why: String) -> Outcome {
    if std::env::var_os("ACCELHOST_REQUIRE_TOOLCHAINS").is_some_and(|v| v == "1") {
        panic!("{why}, and ACCELHOST_REQUIRE_TOOLCHAINS=1");
    }
    Outcome::Skipped(why)
}

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scratch_root() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("xrt-{}", std::process::id()))
}

fn scratch(label: &str) -> PathBuf {
    let dir = scratch_root().join(label);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The freshest libxrt_coreutil.so of this profile: `cargo test` builds it in
/// target/<profile>/deps, `cargo build` in target/<profile>.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    let profile_dir = deps.parent().unwrap().to_path_buf();
    [deps, profile_dir]
        .into_iter()
        .filter_map(|dir| {
            let modified = std::fs::metadata(dir.join("libxrt_coreutil.so"))
                .and_then(|m| m.modified())
                .ok()?;
            Some((modified, dir))
        })
        .max_by_key(|(modified, _): &(SystemTime, PathBuf)| *modified)
        .map(|(_, dir)| dir)
        .expect("cargo builds libxrt_coreutil.so with this test")
}

/// The prefix the library is installed into (once per run).
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let prefix = scratch("prefix");
        let out = run(Command::new("sh")
            .arg(crate_dir().join("install.sh"))
            .arg("--lib-dir")
            .arg(library_dir())
            .arg("--link")
            .arg(&prefix));
        assert!(out.status.success(), "install.sh failed:\n{}", text(&out));
        prefix
    })
}

/// `pkg-config --cflags --libs xrt` against the prefix: only -I and -L/-l.
fn pkg_config_flags() -> Result<Vec<String>, Outcome> {
    let out = match Command::new("pkg-config")
        .args(["--cflags", "--libs", "xrt"])
        .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig"))
        .output()
    {
        Ok(out) => out,
        Err(err) => return Err(missing(format!("no pkg-config: {err}"))),
    };
    assert!(out.status.success(), "pkg-config failed:\n{}", text(&out));
    let flags: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert!(
        flags
            .iter()
            .all(|f| f.starts_with("-I") || f.starts_with("-L") || f.starts_with("-l")),
        "{flags:?}"
    );
    Ok(flags)
}

/// Compiles `tests/<source>` with `compiler` and only pkg-config's flags.
fn build(compiler: &str, standard: &str, source: &str, dir: &Path) -> Result<PathBuf, Outcome> {
    let flags = pkg_config_flags()?;
    let exe = dir.join(Path::new(source).file_stem().unwrap());
    let out = match Command::new(compiler)
        .args([standard, "-pthread", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(crate_dir().join("tests").join(source))
        .args(&flags)
        .output()
    {
        Ok(out) => out,
        Err(err) => return Err(missing(format!("no {compiler}: {err}"))),
    };
    assert!(
        out.status.success(),
        "{source} does not build:\n{}",
        text(&out)
    );
    Ok(exe)
}

/// Runs a built program in `dir` with the xclbin, on the embedded default config (or
/// `config`), the library found through the prefix.
fn run_program(exe: &Path, dir: &Path, config: Option<&Path>) -> Output {
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let mut command = Command::new(exe);
    command
        .arg("vadd.xclbin")
        .current_dir(dir)
        .env("LD_LIBRARY_PATH", prefix().join("lib"))
        .env_remove("ACCELHOST_CONFIG")
        .env_remove("ACCELHOST_ENDPOINT")
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("HOME", dir);
    if let Some(config) = config {
        command.env("ACCELHOST_CONFIG", config);
    }
    run(&mut command)
}

/// tests/c/hello_vadd.c: vadd exact through a run with every argument, then through one
/// set argument by argument with a completion callback, then from four threads at once, and
/// each bad call refused with its errno.
fn a_c_program_of_the_hello_world_flow_runs_vadd() -> Outcome {
    let dir = scratch("c");
    let exe = match build("cc", "-std=c11", "c/hello_vadd.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let out = run_program(&exe, &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("vadd of 4096 elements: 0 mismatches"),
        "{report}"
    );
    assert!(
        report.contains("second run of 2048 elements: 0 mismatches, 0 beyond it changed"),
        "{report}"
    );
    assert!(
        report.contains("4 threads x 25 runs at once: 0 mismatches"),
        "{report}"
    );
    assert!(report.contains("\n0 failed"), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    // Each refusal names its call on stderr.
    assert!(
        report.contains(
            "accelhost XRT: xrtDeviceOpen: no device 99: the library lists 1 XRT card(s)"
        ),
        "{report}"
    );
    Outcome::Passed
}

/// tests/cpp/hello_vadd.cpp: the C++ classes, inline over the C API, in the same flow.
fn a_cpp_program_of_the_hello_world_flow_runs_vadd() -> Outcome {
    let dir = scratch("cpp");
    let exe = match build("c++", "-std=c++17", "cpp/hello_vadd.cpp", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let out = run_program(&exe, &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("C++ vadd of 4096 elements: exact"),
        "{report}"
    );
    assert!(report.contains("\n0 failed"), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    Outcome::Passed
}

/// The chaos plugin, dressed as an XRT card, traps in mem-alloc: xrtBOAlloc returns NULL
/// with errno set (the plugin is stopped, not the program), and a copy through the emulated
/// card then comes back exact. The plugin's texts carry terminal attacks, which stay inert.
fn a_faulting_plugin_is_an_xrt_error_and_the_program_goes_on() -> Outcome {
    let dir = scratch("fault");
    let exe = match build("cc", "-std=c11", "c/fault.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let mut config: serde_json::Value =
        serde_json::from_str(accelhost::builtin::embedded_default_text()).unwrap();
    config["plugins"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "name": "chaos",
            "module": "builtin:chaos",
            "config": {"interface": "xocl", "trap_in": "mem-alloc", "evil_text": true},
            "load_policy": {"on_fault": "disable"}
        }));
    let path = dir.join("accelhost.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let out = run_program(&exe, &dir, Some(&path));
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("xrtBOAlloc on the faulting plugin: NULL, errno Input/output error"),
        "{report}"
    );
    assert!(
        report.contains("then a copy through card 0: exact"),
        "{report}"
    );
    assert!(
        report.contains("accelhost XRT: xrtBOAlloc: plugin 'chaos' faulted in mem-alloc"),
        "{report}"
    );
    let errors = String::from_utf8_lossy(&out.stderr);
    let active: Vec<char> = errors
        .chars()
        .filter(|&c| (c.is_control() && c != '\n') || ('\u{80}'..='\u{9f}').contains(&c))
        .collect();
    assert!(active.is_empty(), "{active:?} on stderr: {report}");
    Outcome::Passed
}

fn the_install_script_explains_itself_and_refuses_bad_input() -> Outcome {
    let script = crate_dir().join("install.sh");
    let help = run(Command::new("sh").arg(&script).arg("--help"));
    assert!(help.status.success(), "{}", text(&help));
    assert!(
        text(&help).contains("pkg-config --cflags --libs xrt"),
        "{}",
        text(&help)
    );
    let dir = scratch("install");
    std::fs::write(dir.join("a-file"), "").unwrap();
    for (args, says) in [
        (vec![], "no PREFIX given"),
        (vec!["--bogus", "p"], "unknown option '--bogus'"),
        (vec!["--lib-dir"], "--lib-dir needs a directory"),
        (vec!["a", "b"], "one PREFIX, not 'a' and 'b'"),
        (
            vec!["a-file"],
            "PREFIX 'a-file' exists and is not a directory",
        ),
    ] {
        let out = run(Command::new("sh")
            .arg(&script)
            .args(&args)
            .current_dir(&dir));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
    }
    let out = run(Command::new("sh")
        .arg(&script)
        .args(["--lib-dir", "nowhere", "p"])
        .current_dir(&dir));
    assert!(!out.status.success() && text(&out).contains("nowhere/libxrt_coreutil.so not found"));
    Outcome::Passed
}

//! The C side, end to end: install the library, headers and pkg-config file into a prefix
//! with capi/install.sh, build examples/opae-hello-fpga and tests/c/api_check.c with `cc`
//! and only the flags `pkg-config --cflags --libs opae` gives, and run them on the embedded
//! default config; then the sample again, built with AddressSanitizer (and its leak check),
//! and tests/c/devices_check.c under it too, compared with `accelhost info`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::SystemTime;

#[path = "../../tests/support/door.rs"]
#[allow(dead_code)]
mod door;
#[path = "../../tests/support/harness.rs"]
#[allow(dead_code)]
mod harness;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The freshest libopae_c.so of this profile: `cargo test` builds it in target/<profile>/deps
/// (next to this test), `cargo build` in target/<profile>. Built here if neither has it.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    let profile_dir = deps.parent().unwrap().to_path_buf();
    let modified = |dir: &Path| -> Option<SystemTime> {
        std::fs::metadata(dir.join("libopae_c.so"))
            .and_then(|m| m.modified())
            .ok()
    };
    let candidates = [deps, profile_dir.clone()];
    let newest = candidates
        .iter()
        .filter_map(|d| modified(d).map(|t| (t, d.clone())))
        .max_by_key(|(t, _)| *t);
    if let Some((_, dir)) = newest {
        return dir;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-p", "accelhost-opae"])
        .current_dir(crate_dir())
        .status()
        .expect("running cargo build");
    assert!(status.success(), "cargo build -p accelhost-opae failed");
    assert!(
        modified(&profile_dir).is_some(),
        "no libopae_c.so in {}",
        profile_dir.display()
    );
    profile_dir
}

/// The prefix the library is installed into (once per test run, removed when the process
/// exits).
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    extern "C" fn remove_prefix() {
        if let Some(prefix) = PREFIX.get() {
            let _ = std::fs::remove_dir_all(prefix);
        }
    }
    PREFIX.get_or_init(|| {
        let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("opae-prefix");
        let _ = std::fs::remove_dir_all(&prefix);
        // SAFETY: registers a function that takes no arguments and only removes files.
        unsafe { libc::atexit(remove_prefix) };
        let out = run(Command::new("sh")
            .arg(crate_dir().join("install.sh"))
            .arg("--lib-dir")
            .arg(library_dir())
            .arg("--link")
            .arg(&prefix));
        assert!(out.status.success(), "install.sh failed:\n{}", text(&out));
        for file in [
            "include/opae/fpga.h",
            "include/opae/accelhost.h",
            "lib/libopae_c.so",
            "lib/libopae-c.so",
            "lib/pkgconfig/opae.pc",
            "lib/pkgconfig/accelhost-opae.pc",
        ] {
            assert!(prefix.join(file).exists(), "{file} was not installed");
        }
        prefix
    })
}

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"))
}

fn text(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `pkg-config --cflags --libs opae` against the prefix: only -I and -L/-l.
fn pkg_config_flags() -> Vec<String> {
    let out = run(Command::new("pkg-config")
        .args(["--cflags", "--libs", "opae"])
        .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig")));
    assert!(
        out.status.success(),
        "pkg-config failed (is it installed?):\n{}",
        text(&out)
    );
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
    flags
}

/// Compiles `source` into the prefix as `name` with `extra` flags.
fn build(source: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let binary = prefix().join(name);
    let out = run(
        Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args([
                "-std=c11",
                "-D_POSIX_C_SOURCE=200809L",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-g",
            ])
            .args(extra)
            .arg(source)
            .args(pkg_config_flags())
            .arg("-o")
            .arg(&binary),
    );
    assert!(out.status.success(), "cc failed:\n{}", text(&out));
    binary
}

/// Runs a built program on the embedded default config (no config file around it).
fn run_program(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let workdir = prefix().join("run");
    std::fs::create_dir_all(&workdir).unwrap();
    run(Command::new(binary)
        .args(args)
        .current_dir(&workdir)
        .env("LD_LIBRARY_PATH", prefix().join("lib"))
        .env_remove("ACCELHOST_CONFIG")
        .env_remove(opae_c::families::FAMILIES_ENV)
        .env("XDG_CONFIG_HOME", &workdir)
        .env("ACCELHOST_CACHE_DIR", door::cache_dir())
        .envs(env.iter().copied()))
}

/// Set to `1` to make a missing `pkg-config` or C compiler fail the tests instead of skipping
/// them (CI sets it).
const REQUIRE_ENV: &str = "ACCELHOST_REQUIRE_TOOLCHAINS";

/// Whether `pkg-config` and the C compiler run; when one does not, says so and skips the test
/// (or fails it, with `ACCELHOST_REQUIRE_TOOLCHAINS=1`).
fn c_tools_present() -> bool {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let missing: Vec<String> = ["pkg-config", compiler.as_str()]
        .into_iter()
        .filter(|tool| {
            Command::new(tool)
                .arg("--version")
                .output()
                .map_or(true, |out| !out.status.success())
        })
        .map(str::to_string)
        .collect();
    if missing.is_empty() {
        return true;
    }
    let why = format!(
        "{} not found (Debian: apt-get install pkgconf gcc)",
        missing.join(" and ")
    );
    if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
        panic!("{REQUIRE_ENV}=1 but {why}");
    }
    println!("skipped: {why}");
    false
}

fn sample() -> PathBuf {
    crate_dir().join("../examples/opae-hello-fpga/hello_fpga.c")
}

#[test]
fn hello_fpga_builds_with_pkg_config_and_passes() {
    if !c_tools_present() {
        return;
    }
    let binary = build(&sample(), "hello_fpga", &[]);
    for bytes in ["65536", "4194304"] {
        let out = run_program(&binary, &[bytes], &[]);
        let report = text(&out);
        assert!(out.status.success(), "{report}");
        assert!(
            report.contains(&format!("verified {bytes} bytes")),
            "{report}"
        );
        assert!(report.contains("hello_fpga: PASS"), "{report}");
    }
    let out = run_program(&binary, &["100"], &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a size that is not whole lines is refused"
    );
}

/// A node serving this process's uid in a runtime of its own, until dropped (its folder goes
/// with it).
struct LocalNode {
    dir: PathBuf,
    socket: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    runtime: tokio::runtime::Runtime,
}

impl LocalNode {
    fn start() -> LocalNode {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("c-node-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let socket = dir.join("node.sock");
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        let config = dir.join("serve.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"node_name": "c-node", "listen": {{"unix": {{"path": "{}", "mode": "0600"}}}},
                    "clients": [{{"name": "c", "unix_uid": {uid}, "grants": {{"devices": ["dfl/*"]}}}}]}}"#,
                socket.display()
            ),
        )
        .unwrap();
        let serve = std::sync::Arc::new(accelhost_node::ServeConfig::load(&config).unwrap());
        let host = std::sync::Arc::new(
            accelhost::Host::builder()
                .config(accelhost::Config::embedded_default())
                .cache_dir(door::cache_dir())
                .build()
                .unwrap(),
        );
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        runtime.block_on(async {
            let node = accelhost_node::BoundNode::bind(serve, host).await.unwrap();
            tokio::spawn(node.run(async {
                let _ = stopped.await;
            }));
        });
        LocalNode {
            dir,
            socket,
            stop: Some(stop),
            runtime,
        }
    }
}

impl Drop for LocalNode {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|stop| stop.send(()));
        self.runtime
            .block_on(async { tokio::time::sleep(std::time::Duration::from_millis(100)).await });
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn hello_fpga_runs_on_a_remote_port_through_accelhost_endpoint() {
    if !c_tools_present() {
        return;
    }
    let binary = build(&sample(), "hello_fpga_remote", &[]);
    let node = LocalNode::start();
    let endpoint = format!("unix://{}", node.socket.display());
    // The program's own process has no device: the embedded default is not loaded when
    // ACCELHOST_ENDPOINT names a node, so a pass is the node's NLB0 port.
    let out = run_program(&binary, &["4194304"], &[("ACCELHOST_ENDPOINT", &endpoint)]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("verified 4194304 bytes"), "{report}");
    assert!(report.contains("hello_fpga: PASS"), "{report}");
    drop(node);
    let gone = format!(
        "unix://{}",
        PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("no-node.sock")
            .display()
    );
    let out = run_program(&binary, &["65536"], &[("ACCELHOST_ENDPOINT", &gone)]);
    assert!(!out.status.success(), "no node, no device: {}", text(&out));
}

#[test]
fn every_function_answers_bad_arguments_from_c() {
    if !c_tools_present() {
        return;
    }
    let source = crate_dir().join("tests/c/api_check.c");
    let binary = build(&source, "api_check", &["-pedantic"]);
    let out = run_program(&binary, &[], &[]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("api_check: PASS"), "{report}");
}

#[test]
fn utils_h_brings_stdio_as_opae_s_does() {
    if !c_tools_present() {
        return;
    }
    let source = crate_dir().join("tests/c/utils_header_check.c");
    let binary = build(&source, "utils_header_check", &["-pedantic"]);
    let out = run_program(&binary, &[], &[]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("utils_header_check: stderr is declared"),
        "{report}"
    );
    assert!(
        report.contains("utils_header_check: FPGA_OK is \"success\""),
        "{report}"
    );
}

#[test]
fn opae_hash_map_works_from_c_without_leaks() {
    if !c_tools_present() {
        return;
    }
    run_sanitized_check("hash_map_check", &[]);
}

/// Builds `tests/c/<name>.c` with `-pedantic` under AddressSanitizer (leak check on), runs
/// it, and checks it passed with the sanitizer silent; returns what it printed.
fn run_sanitized_check(name: &str, env: &[(&str, &str)]) -> String {
    let source = crate_dir().join(format!("tests/c/{name}.c"));
    let binary = build(
        &source,
        name,
        &["-pedantic", "-fsanitize=address", "-fno-omit-frame-pointer"],
    );
    let mut env = env.to_vec();
    env.push((
        "ASAN_OPTIONS",
        "detect_leaks=1:abort_on_error=0:exitcode=23",
    ));
    let out = run_program(&binary, &[], &env);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains(&format!("{name}: PASS")), "{report}");
    assert!(!report.contains("Sanitizer"), "{report}");
    report
}

/// The functions `include/opae/*.h` declare (a line that starts with a return type and
/// names a function of the API).
fn declared_functions() -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(crate_dir().join("include/opae")).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            let starts_with_type = line.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && !["static", "typedef", "enum", "struct", "union", "extern"]
                    .iter()
                    .any(|word| line.starts_with(word));
            let Some((head, _)) = line.split_once('(').filter(|_| starts_with_type) else {
                continue;
            };
            let name = head.rsplit([' ', '*']).next().unwrap_or("");
            if ["fpga", "accelhost", "opae_"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    names
}

#[test]
fn the_readme_has_a_row_for_every_function_of_the_opae_headers() {
    let readme = std::fs::read_to_string(crate_dir().join("README.md")).unwrap();
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Every function of OPAE 2.14"))
        .expect("README.md has the section 'Every function of OPAE 2.14's public headers'");
    let rows: Vec<(String, String)> = section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells.get(2)?.strip_prefix('`')?.strip_suffix('`')?;
            let status = cells.get(3)?;
            Some((name.to_string(), status.to_string()))
        })
        .collect();
    let declared: Vec<String> = declared_functions()
        .into_iter()
        .filter(|name| !name.starts_with("accelhost"))
        .collect();
    let listed: Vec<String> = rows.iter().map(|(name, _)| name.clone()).collect();
    let mut sorted = listed.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), listed.len(), "a function has two rows");
    assert_eq!(
        sorted, declared,
        "README rows and declared functions differ"
    );
    for (name, status) in &rows {
        assert!(
            status == "implemented" || status == "not supported",
            "{name}: status {status:?}"
        );
    }
}

#[test]
fn every_function_the_headers_declare_is_exported() {
    if !c_tools_present() {
        return;
    }
    let out = run(Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library_dir().join("libopae_c.so")));
    assert!(out.status.success(), "nm: {}", text(&out));
    let exported: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let declared = declared_functions();
    assert!(declared.len() > 100, "the header scan found {declared:?}");
    for name in [
        "fpgaGetOPAECVersion",
        "opae_print",
        "fpgaTokenGetObject",
        "fpgaErrStr",
    ] {
        assert!(
            declared.iter().any(|d| d == name),
            "{name} not found by the scan"
        );
    }
    let missing: Vec<&String> = declared.iter().filter(|d| !exported.contains(*d)).collect();
    assert!(missing.is_empty(), "declared but not exported: {missing:?}");
}

#[test]
fn opae_logging_honours_libopae_log_and_logfile() {
    if !c_tools_present() {
        return;
    }
    let binary = build(
        &crate_dir().join("tests/c/log_check.c"),
        "log_check",
        &["-pedantic"],
    );
    let lines = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let quiet = run_program(&binary, &[], &[("LIBOPAE_LOG", "")]);
    assert!(quiet.status.success(), "{}", text(&quiet));
    let stderr = lines(&quiet.stderr);
    assert!(
        stderr.contains("log_check.c:12:main() **ERROR** : an error with 42 and text\n"),
        "an error always prints, with file, line and function: {stderr}"
    );
    assert!(lines(&quiet.stdout).is_empty(), "{}", lines(&quiet.stdout));

    let messages = run_program(&binary, &[], &[("LIBOPAE_LOG", "1")]);
    let stdout = lines(&messages.stdout);
    assert!(
        stdout.contains("log_check.c:13:main() : a message with 2.50\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("debug"), "{stdout}");

    let debug = run_program(&binary, &[], &[("LIBOPAE_LOG", "2")]);
    let stdout = lines(&debug.stdout);
    assert!(
        stdout.contains("a debug line 1 2 3 4 5 6 7\n"),
        "every argument of a long variadic call arrives: {stdout}"
    );
    assert!(!stdout.contains("never"), "{stdout}");

    let logged = run_program(
        &binary,
        &[],
        &[("LIBOPAE_LOG", "1"), ("LIBOPAE_LOGFILE", "opae.log")],
    );
    assert!(
        lines(&logged.stdout).is_empty(),
        "{}",
        lines(&logged.stdout)
    );
    let file = std::fs::read_to_string(prefix().join("run/opae.log")).unwrap();
    assert!(file.contains("a message with 2.50"), "{file}");
    assert!(
        lines(&logged.stderr).contains("**ERROR**"),
        "errors stay on stderr"
    );
}

#[test]
fn every_header_compiles_as_cpp_and_a_cpp_program_runs() {
    if !c_tools_present() {
        return;
    }
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let found = Command::new(&compiler)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        let why = format!("{compiler} not found (Debian: apt-get install g++)");
        if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") {
            panic!("{REQUIRE_ENV}=1 but {why}");
        }
        println!("skipped: {why}");
        return;
    }
    let binary = prefix().join("headers_check");
    let out = run(Command::new(&compiler)
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-g",
        ])
        .arg(crate_dir().join("tests/c/headers_check.cpp"))
        .args(pkg_config_flags())
        .arg("-o")
        .arg(&binary));
    assert!(out.status.success(), "c++ failed:\n{}", text(&out));
    let out = run_program(&binary, &[], &[]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("headers_check: C++ sees OPAE API 2."),
        "{report}"
    );
}

#[test]
fn hello_fpga_is_clean_under_address_sanitizer() {
    if !c_tools_present() {
        return;
    }
    let binary = build(
        &sample(),
        "hello_fpga_asan",
        &["-fsanitize=address", "-fno-omit-frame-pointer"],
    );
    let out = run_program(
        &binary,
        &["1048576"],
        &[(
            "ASAN_OPTIONS",
            "detect_leaks=1:abort_on_error=0:exitcode=23",
        )],
    );
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("hello_fpga: PASS"), "{report}");
    assert!(!report.contains("AddressSanitizer"), "{report}");
    assert!(!report.contains("LeakSanitizer"), "{report}");
}

#[test]
fn install_sh_explains_itself_and_refuses_bad_arguments() {
    let install = || {
        let mut command = Command::new("sh");
        command.arg(crate_dir().join("install.sh"));
        command
    };
    let out = run(install().arg("--help"));
    assert!(out.status.success(), "{}", text(&out));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("usage: capi/install.sh") && help.contains("--lib-dir DIR"));
    assert!(
        !Path::new("--help").exists(),
        "--help was not taken for a prefix"
    );

    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("install-bad-input");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let a_file = scratch.join("a-file");
    std::fs::write(&a_file, b"").unwrap();
    let unbuilt = scratch.join("no-library-here");
    let fresh_prefix = scratch.join("fresh-prefix");
    let cases: [(Vec<&std::ffi::OsStr>, &str); 5] = [
        (vec![], "no PREFIX given"),
        (
            vec!["--bogus".as_ref(), "p".as_ref()],
            "unknown option '--bogus'",
        ),
        (vec!["--lib-dir".as_ref()], "--lib-dir needs a directory"),
        (
            vec!["a".as_ref(), "b".as_ref()],
            "one PREFIX, not 'a' and 'b'",
        ),
        (vec![a_file.as_os_str()], "exists and is not a directory"),
    ];
    for (args, message) in cases {
        let out = run(install().args(&args).current_dir(&scratch));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(message),
            "{args:?} says {message}: {stderr}"
        );
    }
    let out = run(install().arg("--lib-dir").arg(&unbuilt).arg(&fresh_prefix));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("libopae_c.so not found"));
    assert!(
        !fresh_prefix.exists(),
        "a failed install leaves no prefix behind"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// The `accelhost` binary of this profile, built here if the workspace build did not.
fn accelhost_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let binary = profile_dir.join("accelhost");
    if !binary.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "accelhost-cli"])
            .current_dir(crate_dir())
            .status()
            .expect("running cargo build");
        assert!(status.success(), "cargo build -p accelhost-cli failed");
    }
    binary
}

/// `accelhost info DEVICE`'s attributes, as name → value.
fn info_attributes(device: &str) -> (String, std::collections::BTreeMap<String, String>) {
    let workdir = prefix().join("run");
    std::fs::create_dir_all(&workdir).unwrap();
    let out = run(Command::new(accelhost_binary())
        .args(["info", device])
        .current_dir(&workdir)
        .env_remove("ACCELHOST_CONFIG")
        .env("XDG_CONFIG_HOME", &workdir)
        .env("ACCELHOST_CACHE_DIR", door::cache_dir()));
    let report = text(&out);
    assert!(out.status.success(), "accelhost info {device}: {report}");
    let attributes = report
        .lines()
        .filter_map(|line| line.strip_prefix("  ")?.split_once(" = "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (report, attributes)
}

#[test]
fn opae_2_devices_errors_metrics_and_clocks_from_c_agree_with_accelhost_info() {
    if !c_tools_present() {
        return;
    }
    // Every family's cards, each device object the parent of its accelerators.
    let report = run_sanitized_check("devices_check", &[(opae_c::families::FAMILIES_ENV, "all")]);

    // What C saw through OPAE calls is what `accelhost info` shows.
    let line = |prefix: &str| -> String {
        report
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}' in {report}"))
            .trim()
            .to_string()
    };
    let (fme_info, fme) = info_attributes("dfl/fme.0000:3b:00.0");
    let (port_info, port) = info_attributes("dfl/emu:dfl0");
    let pcie = line("device pcie ");
    assert!(
        fme_info.contains(&format!("bus address    {pcie}")),
        "{fme_info}"
    );
    assert!(
        port_info.contains(&format!("bus address    {pcie}")),
        "{port_info}"
    );
    assert!(
        port_info.contains("parent         dfl/fme.0000:3b:00.0"),
        "{port_info}"
    );
    assert_eq!(line("device slots "), fme["ports_num"]);
    assert_eq!(line("device bbs id "), fme["bitstream_id"]);
    let bbs = u64::from_str_radix(fme["bitstream_id"].trim_start_matches("0x"), 16).unwrap();
    assert_eq!(
        line("device bbs version "),
        format!(
            "{}.{}.{}",
            (bbs >> 56) & 0xF,
            (bbs >> 52) & 0xF,
            (bbs >> 48) & 0xF
        )
    );
    assert_eq!(line("device subsystem vendor "), fme["subsystem_vendor"]);
    assert_eq!(line("device subsystem device "), fme["subsystem_device"]);
    for (name, value) in &fme {
        if let Some(register) = name.strip_prefix("errors/")
            && register != "inject_errors"
        {
            assert!(
                report.contains(&format!("device error {register} = {value}")),
                "{name} = {value} in {report}"
            );
        }
    }
    // The port's errors were cleared at the end of the C run; both show them clear.
    assert_eq!(port["errors/errors"], "0x0");
    assert!(
        report.contains("accelerator error errors = 0x0"),
        "{report}"
    );
    assert!(
        report.contains("accelerator error first_error = 0x1"),
        "{report}"
    );
    let temp: f64 = fme["hwmon/hwmon0/temp1_input"].parse::<f64>().unwrap() / 1000.0;
    let power: f64 = fme["hwmon/hwmon1/power1_input"].parse::<f64>().unwrap() / 1e6;
    assert!(
        report.contains(&format!(
            "metric thermal_mgmt:{} = {temp:.2} Centigrade",
            fme["hwmon/hwmon0/temp1_label"]
        )),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "metric power_mgmt:{} = {power:.2} Watts",
            fme["hwmon/hwmon1/power1_label"]
        )),
        "{report}"
    );
    let khz: u64 = port["userclk/frequency"].parse().unwrap();
    assert!(
        report.contains(&format!("user clock {}/{} MHz", khz / 1000, khz / 2000)),
        "{report}"
    );
}

/// Runs tests/c/liar.c in `mode` over the chaos plugin telling `lies`: its report, once it
/// exited by itself (no signal) with every check held.
fn liar(mode: &str, lies: &[&str]) -> Option<String> {
    if !c_tools_present() {
        return None;
    }
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    let binary = BINARY.get_or_init(|| build(&crate_dir().join("tests/c/liar.c"), "liar", &[]));
    let dir = prefix().join(format!("liar-{mode}"));
    std::fs::create_dir_all(&dir).unwrap();
    let (config, _) = door::config_with_liar(&dir, lies, serde_json::json!({}));
    let out = run_program(
        binary,
        &[mode],
        &[("ACCELHOST_CONFIG", config.to_str().unwrap())],
    );
    let report = text(&out);
    assert!(
        out.status.code().is_some(),
        "{mode}: ended by a signal: {report}"
    );
    assert!(out.status.success(), "{mode}: {report}");
    assert!(report.contains("\n0 failed"), "{mode}: {report}");
    Some(report)
}

/// A plugin that answers fpgaPrepareBuffer of 2 MiB with 4 KiB: the call fails, with no
/// address handed out, the plugin is faulted for the lie, and NLB0 goes on.
#[test]
fn a_buffer_shorter_than_asked_is_an_opae_error() {
    let Some(report) = liar("short", &["short-buffer"]) else {
        return;
    };
    assert!(report.contains("2 MiB from the liar: "), "{report}");
}

/// A plugin that gives one workspace id to two buffers: the second fails, and the first
/// stays prepared at its address (OPAE promises it until fpgaReleaseBuffer).
#[test]
fn a_workspace_id_given_twice_is_an_opae_error_and_the_first_buffer_stays() {
    let Some(report) = liar("repeat", &["repeat-id"]) else {
        return;
    };
    assert!(
        report.contains("ok: the first buffer stays whole and writable"),
        "{report}"
    );
}

/// An interrupt event and a launch whose completions never come: the event's file
/// descriptor becomes readable, and accelhostEventWait returns an error naming the event
/// deadline, within the deadline plus 5 s.
#[test]
fn events_that_never_complete_end_by_the_event_deadline_through_opae() {
    let Some(report) = liar("pending", &["pending-events"]) else {
        return;
    };
    let waited: f64 = report
        .lines()
        .find_map(|l| l.strip_prefix("the event's fd became readable after "))
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no wait time in:\n{report}"));
    assert!(
        waited < (door::LIAR_EVENT_DEADLINE_MS + 5000) as f64,
        "waited {waited} ms:\n{report}"
    );
}

/// NLB0 closed, then opened until a handle could land on the old value: none does, the old
/// handle is FPGA_INVALID_PARAM, and the newest is untouched.
#[test]
fn a_closed_handle_stays_an_error_whatever_is_opened_after() {
    let Some(report) = liar("stale", &[]) else {
        return;
    };
    assert!(report.contains("one has its value: no"), "{report}");
}

/// tests/c/object_walk.c, built once.
fn object_walk() -> Option<&'static Path> {
    if !c_tools_present() {
        return None;
    }
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    Some(BINARY.get_or_init(|| {
        build(
            &crate_dir().join("tests/c/object_walk.c"),
            "object_walk",
            &["-pedantic", "-pthread"],
        )
    }))
}

/// OPAE's samples that walk every device object, with no filter, pass unchanged on the
/// embedded default: object_api reads the perf counters of each device object it finds (the
/// DFL card's FME, the only one OPAE would list) three times; hello_events takes the first
/// device object and gets the error event it injects. The CAPI AFUs and the XRT card are
/// not OPAE's objects: two objects in all (the FME and its port).
#[test]
fn opae_samples_that_walk_every_device_object_pass_unmodified() {
    let Some(binary) = object_walk() else {
        return;
    };
    let out = run_program(binary, &["object_api", "50", "3"], &[]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("device objects: 1\nobjects: 2\n"),
        "{report}"
    );
    let rounds: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("device: "))
        .collect();
    assert_eq!(rounds.len(), 3, "{report}");
    assert!(
        rounds
            .iter()
            .all(|l| l.starts_with("device: 3b:00.0 clock ") && l.ends_with(": counters 2")),
        "{report}"
    );
    let out = run_program(binary, &["hello_events"], &[]);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("FME Interrupt occurred"), "{report}");
    assert!(
        report.contains("Successfully tested Register/Unregister for FME events!"),
        "{report}"
    );
}

/// ACCELHOST_OPAE_FAMILIES shows the other families to OPAE programs: `cxl` adds the CAPI
/// adapter and its three AFU nodes, `xocl` the XRT card's two functions, `all` both. Their
/// device objects have no FME `perf/` tree, so object_api stops at the first of them with
/// -1, as it does on OPAE with such a device: the opt-in is what the default leaves out.
#[test]
fn the_other_families_are_shown_to_opae_programs_only_when_asked() {
    let Some(binary) = object_walk() else {
        return;
    };
    for (families, devices, objects, stops_at) in [
        ("cxl", 2, 6, Some("3c:00.0")),
        ("xocl", 2, 4, Some("3d:00.0")),
        ("cxl,xocl", 3, 8, Some("3c:00.0")),
        ("all", 3, 8, Some("3c:00.0")),
        ("dfl", 1, 2, None),
        ("", 1, 2, None),
        ("nosuchfamily", 1, 2, None),
    ] {
        let out = run_program(
            binary,
            &["object_api", "10", "1"],
            &[(opae_c::families::FAMILIES_ENV, families)],
        );
        let report = text(&out);
        let counts = format!("device objects: {devices}\nobjects: {objects}\n");
        assert!(report.contains(&counts), "{families:?}: {report}");
        match stops_at {
            Some(bus) => {
                assert_eq!(out.status.code(), Some(255), "{families:?}: {report}");
                assert!(
                    report.contains(&format!("device 1 ({bus}) has no perf/fabric")),
                    "{families:?}: {report}"
                );
            }
            None => assert!(out.status.success(), "{families:?}: {report}"),
        }
    }
}

/// A value of ACCELHOST_OPAE_FAMILIES that names no family is FPGA_INVALID_PARAM from
/// fpgaEnumerate, said on stderr with the variable and what is wrong, never read as "show
/// nothing more".
#[test]
fn a_families_value_that_names_no_family_is_an_opae_error() {
    let Some(binary) = object_walk() else {
        return;
    };
    for (value, says) in [
        ("cxl,,xocl", "\"\" is no family name"),
        ("cxl, xocl", "\" xocl\" is no family name"),
        ("CXL", "\"CXL\" is no family name"),
        ("all,cxl", "`all` stands alone"),
        ("../dfl", "\"../dfl\" is no family name"),
    ] {
        let out = run_program(
            binary,
            &["object_api", "10", "1"],
            &[(opae_c::families::FAMILIES_ENV, value)],
        );
        let report = text(&out);
        assert_eq!(out.status.code(), Some(255), "{value:?}: {report}");
        assert!(
            report.contains("Error Enumerating for properties: invalid parameter"),
            "{value:?}: {report}"
        );
        assert!(
            report.contains(&format!(
                "accelhost OPAE: fpgaEnumerate: invalid parameter: ACCELHOST_OPAE_FAMILIES={value:?}: {says}"
            )),
            "{value:?}: {report}"
        );
        assert!(!report.contains("device: "), "{value:?}: {report}");
    }
}

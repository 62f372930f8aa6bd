//! The `accelhost` binary as an operator runs it: in an empty directory with no config, on
//! config files with mistakes, and with tracing on.

use crate::crafted;
use crate::support;

use support::{scratch_dir, text, write_config};

/// Runs the `accelhost` binary of this package (see [`support::run_accelhost`]).
fn accelhost(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    support::run_accelhost(env!("CARGO_BIN_EXE_accelhost"), dir, args, env)
}

#[test]
fn demo_fault_contains_a_crash_and_a_hang_in_the_same_table() {
    let args = [
        "demo",
        "--fault",
        "--sizes",
        "64KiB",
        "--elements",
        "1Ki",
        "--launches",
        "10",
    ];
    let out = accelhost(&scratch_dir("empty"), &args, &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let row = |workload: &str| {
        stdout
            .lines()
            .find(|l| l.contains(workload))
            .unwrap_or_else(|| panic!("no {workload} row: {stdout}"))
            .to_string()
    };
    assert!(row("nlb0 loopback").contains("verified"), "{stdout}");
    assert!(row("vadd 1 Ki").contains("verified"), "{stdout}");
    let crash = row("fault: trap in reset");
    assert!(
        crash.starts_with("chaos/chaos0") && crash.contains("contained at +"),
        "{crash}"
    );
    assert!(
        crash.contains("restarted in") && crash.contains("old token refused"),
        "{crash}"
    );
    let hang = row("fault: infinite loop in describe");
    assert!(
        hang.contains("cancelled from another thread") && hang.contains("restarted in"),
        "{hang}"
    );
    assert!(stdout.contains("alongside the faults"), "{stdout}");

    let dir = scratch_dir("chaos-twice");
    std::fs::write(
        dir.join("accelhost.json"),
        r#"{"plugins": [{"name": "chaos", "module": "builtin:chaos"}]}"#,
    )
    .unwrap();
    let out = accelhost(&dir, &["demo", "--fault"], &[]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("the config already has one"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn demo_runs_on_the_embedded_default_and_verifies() {
    let out = accelhost(&scratch_dir("empty"), &["demo"], &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let rows: Vec<&str> = stdout.lines().collect();
    assert!(
        rows[0].starts_with("DEVICE") && rows[0].contains("GB/s"),
        "{stdout}"
    );
    assert_eq!(
        rows.len(),
        9,
        "NLB0 x2, the CAPI master node skipped, CAPI x2, XRT x3: {stdout}"
    );
    assert!(
        rows[1].contains("dfl/emu:dfl0") && rows[1].contains("1 MiB"),
        "{stdout}"
    );
    assert!(rows[2].contains("64 MiB"), "{stdout}");
    assert!(
        rows[3].starts_with("cxl/emu:capi0.0m") && rows[3].contains("skipped: a CAPI master node"),
        "a device without a workload gets a row saying why: {stdout}"
    );
    assert!(
        rows[4].contains("cxl/emu:capi0.0s") && rows[4].contains("memcpy"),
        "{stdout}"
    );
    assert!(
        rows[5].contains("cxl/emu:capi0.1d") && rows[5].contains("vadd"),
        "{stdout}"
    );
    assert!(
        rows[6].contains("xocl/emu:xocl0") && rows[6].contains("vadd 1 Ki"),
        "{stdout}"
    );
    assert!(rows[7].contains("vadd 16 Mi elements"), "{stdout}");
    assert!(rows[8].contains("launches/s"), "{stdout}");
    assert!(
        rows[1..]
            .iter()
            .all(|r| r.contains("verified") || r.contains("skipped")),
        "{stdout}"
    );
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("running the hello_fpga loopback"),
        "progress: {stderr}"
    );
    assert!(
        stderr.contains("running vadd on 16 Mi elements"),
        "progress: {stderr}"
    );
}

#[test]
fn list_json_in_an_empty_directory_shows_the_emulated_port() {
    let out = accelhost(&scratch_dir("empty"), &["list", "--json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let devices: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let devices = devices.as_array().unwrap();
    let ids: Vec<&str> = devices.iter().map(|d| d["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "dfl/emu:dfl0",
            "cxl/emu:capi0.0m",
            "cxl/emu:capi0.0s",
            "cxl/emu:capi0.1d",
            "xocl/emu:xocl0"
        ]
    );
    assert_eq!(devices[4]["extras"]["interface"], "xocl");
    assert_eq!(devices[2]["extras"]["function"], "memcpy");
    assert_eq!(devices[0]["guid"], "D8424DC4-A4A3-C413-F89E-433683F9040B");
    assert_eq!(devices[0]["plugin"], "dfl");
    assert_eq!(devices[0]["extras"]["emulated"], "true");
}

#[test]
fn list_filters_and_info() {
    let dir = scratch_dir("empty");
    let out = accelhost(
        &dir,
        &["list", "--guid", "00000000-0000-0000-0000-000000000001"],
        &[],
    );
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("no devices found"),
        "{}",
        text(&out.stderr)
    );
    let out = accelhost(&dir, &["list", "--guid", "not-a-guid"], &[]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("is not a GUID"),
        "{}",
        text(&out.stderr)
    );

    let out = accelhost(&dir, &["info", "dfl/emu:dfl0"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("D8424DC4-A4A3-C413-F89E-433683F9040B"),
        "{stdout}"
    );
    assert!(
        stdout.contains("emulated") && stdout.contains("true"),
        "{stdout}"
    );
    let out = accelhost(&dir, &["info", "emu:dfl0", "--json"], &[]);
    assert!(out.status.success());
    let out = accelhost(&dir, &["info", "nope"], &[]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no device 'nope'") && stderr.contains("dfl/emu:dfl0"),
        "{stderr}"
    );
}

#[test]
fn plugins_shows_module_version_state_grants_and_policy() {
    let out = accelhost(&scratch_dir("empty"), &["plugins"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("(no config file found: the embedded default)"),
        "how the config was found: {stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("dfl "))
        .expect(&stdout);
    let version = format!("accel:plugin@{}", accelhost::WIT_VERSION);
    for part in [
        "builtin:dfl",
        &version,
        "running",
        "emu:dfl0",
        "on fault restart (at most 3)",
    ] {
        assert!(row.contains(part), "{part} in {row}");
    }
}

#[test]
fn plugins_states_the_worst_case_and_who_counts_host_memory() {
    let dir = scratch_dir("ledger");
    let out = accelhost(&dir, &["plugins"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("holds at most: {}", accelhost::WORST_CASE_FORMULA)),
        "{stdout}"
    );
    assert!(stdout.contains("counted by the ledger"), "{stdout}");
    assert!(
        stdout.contains("compiling: plugin files in a worker process"),
        "the binary is its own compile worker: {stdout}"
    );
    // The binary installs the ledger: a running plugin's instance is charged to it.
    let out = accelhost(&dir, &["plugins", "--json"], &[]);
    let plugins: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let dfl = &plugins.as_array().unwrap()[0];
    let held = dfl["memory"]["host_bytes"].as_u64().unwrap();
    assert!(held > 0, "its store and instance are counted: {dfl}");
    let out = accelhost(&dir, &["plugins"], &[("ACCELHOST_LEDGER", "off")]);
    assert!(
        text(&out.stdout).contains("the ledger is off"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn the_instance_allocator_follows_accelhost_pool_instances() {
    let dir = scratch_dir("pool");
    let out = accelhost(&dir, &["plugins"], &[("ACCELHOST_POOL_INSTANCES", "off")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("instances: on-demand (ACCELHOST_POOL_INSTANCES=off)"),
        "{}",
        text(&out.stdout)
    );
    let out = accelhost(&dir, &["plugins"], &[("ACCELHOST_POOL_INSTANCES", "lots")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("ACCELHOST_POOL_INSTANCES=\"lots\" is not a number"),
        "a bad value is named: {}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("instances: pooling (2048 instance slots)"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_config_in_the_working_directory_is_found() {
    let dir = scratch_dir("cwd");
    std::fs::write(
        dir.join("accelhost.json"),
        r#"{"devices": [{"id": "here", "family": "dfl"}],
            "plugins": [{"name": "dfl", "module": "builtin:dfl", "grants": {"devices": ["emu:here"]}}]}"#,
    )
    .unwrap();
    let out = accelhost(&dir, &["list"], &[]);
    assert!(
        text(&out.stdout).contains("dfl/emu:here"),
        "{}",
        text(&out.stdout)
    );
    // ACCELHOST_CONFIG wins over ./accelhost.json, and a missing file is an error.
    let out = accelhost(
        &dir,
        &["list"],
        &[("ACCELHOST_CONFIG", "/nonexistent/a.json")],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("ACCELHOST_CONFIG"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_config_names_the_field_of_each_mistake() {
    let cases = [
        ("{\"plugins\": [", "accelhost.json:1", "EOF"),
        (
            r#"{"plugins": [], "extra": 1}"#,
            ": extra:",
            "unknown field `extra`",
        ),
        (
            r#"{"plugins": [{"name": "a", "module": "builtin:dfl", "load_policy": {"memory_mib": -1}}]}"#,
            "plugins[0].load_policy.memory_mib",
            "expected u64",
        ),
        (
            r#"{"plugins": [{"name": "a", "module": "builtin:dfl", "grants": {"devices": ["emu:ghost"]}}]}"#,
            "plugins[0].grants.devices[0]",
            "no emulated device 'ghost'",
        ),
        (
            r#"{"plugins": [{"name": "a", "module": "missing.wasm"}]}"#,
            "plugins[0].module",
            "not found",
        ),
        (
            r#"{"devices": [{"id": "x", "family": "dfl", "colour": "red"}], "plugins": []}"#,
            "devices[0].colour",
            "unknown field `colour`",
        ),
    ];
    for (json, path, message) in cases {
        let file = write_config(json);
        let out = accelhost(
            &scratch_dir("empty"),
            &["check-config", file.to_str().unwrap()],
            &[],
        );
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{json} should be refused");
        assert!(
            stderr.contains(file.to_str().unwrap()),
            "names the file: {stderr}"
        );
        assert!(stderr.contains(path), "names {path}: {stderr}");
        assert!(stderr.contains(message), "says {message}: {stderr}");
    }
}

#[test]
fn check_config_loads_each_module_without_running_it() {
    let dir = scratch_dir("check");
    std::fs::write(dir.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let file = dir.join("accelhost.json");
    std::fs::write(
        &file,
        r#"{"plugins": [{"name": "dfl", "module": "builtin:dfl"}, {"name": "core", "module": "core.wasm"}]}"#,
    )
    .unwrap();
    let out = accelhost(&dir, &["check-config", "accelhost.json"], &[]);
    assert!(!out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "plugin 'dfl' (builtin:dfl): ok, built for accel:plugin@{}, built in",
            accelhost::WIT_VERSION
        )),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("plugin 'core'") && stderr.contains("not a component"),
        "{stderr}"
    );
}

#[test]
fn the_printed_default_config_checks_clean_as_a_file() {
    let dir = scratch_dir("print-default");
    let out = accelhost(&dir, &["check-config", "--print-default"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    std::fs::write(dir.join("copy.json"), &out.stdout).unwrap();
    let out = accelhost(&dir, &["check-config", "copy.json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for family in ["dfl", "cxl", "xocl"] {
        assert!(
            stdout.contains(&format!("(builtin:{family}): ok")),
            "{family}: {stdout}"
        );
    }
    let out = accelhost(&dir, &["check-config", "copy.json", "--print-default"], &[]);
    assert!(
        !out.status.success(),
        "a file and --print-default are exclusive"
    );
}

#[test]
fn plugin_path_env_finds_modules() {
    let dir = scratch_dir("plugin-path");
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::copy(
        support::guest("accelhost_plugin_dfl"),
        modules.join("dfl.wasm"),
    )
    .unwrap();
    std::fs::write(
        dir.join("accelhost.json"),
        r#"{"devices": [{"id": "p", "family": "dfl"}],
            "plugins": [{"name": "dfl", "module": "dfl.wasm", "grants": {"devices": ["emu:p"]}}]}"#,
    )
    .unwrap();
    let out = accelhost(&dir, &["list"], &[]);
    assert!(!out.status.success(), "dfl.wasm is not next to the config");
    let out = accelhost(
        &dir,
        &["list"],
        &[("ACCELHOST_PLUGIN_PATH", modules.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("dfl/emu:p"));
}

#[test]
fn trace_shows_calls_across_the_boundary() {
    let out = accelhost(
        &scratch_dir("empty"),
        &["list"],
        &[("ACCELHOST_TRACE", "1")],
    );
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(r#"call{plugin="dfl" call="enumerate""#) && stderr.contains("returned"),
        "every call into a plugin, with its plugin: {stderr}"
    );
    assert!(
        stderr.contains(r#"wit-bindgen import{module="dfl" function="probe-ports"}"#),
        "every import, inside the call that made it: {stderr}"
    );
    let quiet = accelhost(&scratch_dir("empty"), &["list"], &[]);
    assert!(!text(&quiet.stderr).contains("call{plugin"));
}

#[test]
fn help_explains_the_lookup_order_and_environment() {
    let out = accelhost(&scratch_dir("empty"), &["--help"], &[]);
    let stdout = text(&out.stdout);
    for part in [
        "ACCELHOST_ENDPOINT",
        "ACCELHOST_CONFIG",
        "ACCELHOST_PLUGIN_PATH",
        "ACCELHOST_COMPILE_WORKER",
        "ACCELHOST_TRACE",
        "demo",
        "check-config",
    ] {
        assert!(stdout.contains(part), "{part}: {stdout}");
    }
}

#[test]
fn xclbin_build_show_and_program() {
    let dir = scratch_dir("xclbin");
    let out = accelhost(&dir, &["xclbin", "build", "vadd.xclbin", "--cus", "3"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = accelhost(&dir, &["xclbin", "show", "vadd.xclbin"], &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("compute unit 2: vadd:vadd_3"), "{stdout}");
    assert!(
        stdout.contains("kernel vadd(in1@0x10, in2@0x1c, out_r@0x28, size@0x34)"),
        "{stdout}"
    );

    let image = std::fs::read(dir.join("vadd.xclbin")).unwrap();
    std::fs::write(dir.join("cut.xclbin"), &image[..image.len() / 2]).unwrap();
    let out = accelhost(&dir, &["xclbin", "show", "cut.xclbin"], &[]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cut.xclbin"),
        "{}",
        text(&out.stderr)
    );

    let out = accelhost(&dir, &["program", "xocl/emu:xocl0", "vadd.xclbin"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("loaded vadd.xclbin"),
        "{}",
        text(&out.stdout)
    );
    let out = accelhost(&dir, &["program", "xocl/emu:xocl0", "cut.xclbin"], &[]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("malformed"),
        "{}",
        text(&out.stderr)
    );
}

/// The exit status `list`, `info`, `plugins` and `demo` give for partial results.
const PARTIAL: i32 = 3;

/// A config with the shipped dfl plugin on port `dfl0`, and `others` (JSON plugin entries).
fn dfl_and(others: &[&str]) -> std::path::PathBuf {
    let mut plugins = vec![support::dfl_plugin(&["dfl0"])];
    plugins.extend(others.iter().map(|p| p.to_string()));
    write_config(&format!(
        r#"{{"devices": {}, "plugins": [{}]}}"#,
        support::dfl_devices(&["dfl0"]),
        plugins.join(", ")
    ))
}

#[test]
fn demo_gives_a_device_without_a_workload_a_row_and_still_succeeds() {
    let config = dfl_and(&[&support::chaos_plugin("chaos", "{}")]);
    let out = accelhost(config.parent().unwrap(), &["demo", "--sizes", "64KiB"], &[]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("chaos/chaos0"))
        .unwrap_or_else(|| panic!("no row for the chaos device: {stdout}"));
    assert!(
        row.contains("skipped: no canonical workload for GUID"),
        "says why: {row}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("dfl/emu:dfl0") && l.contains("verified")),
        "{stdout}"
    );
}

#[test]
fn a_plugin_that_fails_to_load_or_faults_makes_results_partial() {
    let config = dfl_and(&[
        r#"{"name": "core", "module": "core.wasm", "load_policy": {"on_error": "skip"}}"#,
    ]);
    let dir = config.parent().unwrap();
    std::fs::write(dir.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let out = accelhost(dir, &["list"], &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(PARTIAL), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("dfl/emu:dfl0"),
        "the other devices: {stdout}"
    );
    assert!(
        stderr.contains("partial results (exit status 3): plugin 'core' failed to load"),
        "{stderr}"
    );
    for args in [
        &["list", "--json"][..],
        &["info", "dfl/emu:dfl0"],
        &["plugins"],
        &["demo", "--sizes", "64KiB"],
    ] {
        let out = accelhost(dir, args, &[]);
        assert_eq!(
            out.status.code(),
            Some(PARTIAL),
            "accelhost {}: {}\n{}",
            args.join(" "),
            text(&out.stdout),
            text(&out.stderr)
        );
        assert!(!out.stdout.is_empty(), "accelhost {}", args.join(" "));
    }
    let plugins = text(&accelhost(dir, &["plugins"], &[]).stdout);
    assert!(plugins.contains("failed to load"), "{plugins}");

    // A plugin that faults in enumerate: its failure is warned about, the rest is listed.
    let faulting = support::chaos_plugin("crasher", r#"{"trap_in": "enumerate"}"#);
    let config = dfl_and(&[&faulting]);
    let out = accelhost(config.parent().unwrap(), &["list"], &[]);
    assert_eq!(out.status.code(), Some(PARTIAL), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("dfl/emu:dfl0"));
    assert!(
        text(&out.stderr).contains("plugin 'crasher' failed to enumerate"),
        "{}",
        text(&out.stderr)
    );

    // A disabled plugin is the config's choice, not a partial result.
    let disabled = r#"{"name": "off", "module": "builtin:chaos", "enabled": false}"#;
    let config = dfl_and(&[disabled]);
    let out = accelhost(config.parent().unwrap(), &["list"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // A module path that does not exist is a config error, whatever on_error says.
    let config = dfl_and(&[
        r#"{"name": "gone", "module": "gone.wasm", "load_policy": {"on_error": "skip"}}"#,
    ]);
    let out = accelhost(config.parent().unwrap(), &["list"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

#[test]
fn help_documents_the_exit_statuses() {
    let out = accelhost(&scratch_dir("empty"), &["--help"], &[]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("Exit status:") && stdout.contains("3  partial results"),
        "{stdout}"
    );
    let out = accelhost(&scratch_dir("empty"), &["poke", "--help"], &[]);
    let stdout = text(&out.stdout);
    for part in [
        "read64:OFF",
        "poll64:OFF:MASK=WANT",
        "alloc:SIZE",
        "Examples:",
    ] {
        assert!(stdout.contains(part), "{part}: {stdout}");
    }
}

/// The line of `stdout` that step `step` printed.
fn step_line<'a>(stdout: &'a str, step: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(step))
        .unwrap_or_else(|| panic!("no line for {step}: {stdout}"))
}

#[test]
fn poke_writes_the_nlb0_scratchpad_and_reads_it_back() {
    let scratchpad = accelhost::families::dfl::abi::nlb0::CSR_SCRATCHPAD2;
    let write = format!("write64:{scratchpad:#x}=0x0123456789abcdef");
    let read = format!("read64:{scratchpad:#x}");
    let out = accelhost(
        &scratch_dir("empty"),
        &["poke", "emu:dfl0", &write, &read],
        &[],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 2, "one line per step: {stdout}");
    assert!(step_line(&stdout, &write).ends_with("ok"), "{stdout}");
    assert!(
        step_line(&stdout, &read).ends_with("0x0123456789abcdef"),
        "{stdout}"
    );
    let poll = format!("poll64:{scratchpad:#x}:0xff=0xef");
    let out = accelhost(
        &scratch_dir("empty"),
        &["poke", "dfl/emu:dfl0", &write, &poll],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        step_line(&text(&out.stdout), &poll).contains("0x0123456789abcdef after"),
        "{}",
        text(&out.stdout)
    );
}

/// Events through the plugin path: the dfl plugin has none (the NLB0 port raises no
/// interrupts), and a CAPI slave context registers an interrupt that no work raises, so the
/// wait ends at its timeout, naming the event.
#[test]
fn poke_registers_events_and_waits_for_them() {
    let out = accelhost(
        &scratch_dir("empty"),
        &["poke", "emu:dfl0", "event:interrupt", "wait"],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("step 1 'event:interrupt' failed") && stderr.contains("register-event"),
        "{stderr}"
    );

    let out = accelhost(
        &scratch_dir("empty"),
        &[
            "poke",
            "--timeout-ms",
            "50",
            "cxl/emu:capi0.0s",
            "event@1:interrupt",
            "wait",
        ],
        &[],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        step_line(&stdout, "event@1:interrupt").ends_with("event 1 registered"),
        "{stdout}"
    );
    assert!(
        stderr.contains("step 2 'wait' failed")
            && stderr.contains("Interrupt 1 on cxl/emu:capi0.0s"),
        "{stderr}"
    );
}

#[test]
fn poke_with_trace_shows_each_call_through_the_plugin() {
    let out = accelhost(
        &scratch_dir("empty"),
        &["poke", "--trace", "emu:dfl0", "read64:0x0", "reset"],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for call in [
        "call=\"open\"",
        "call=\"map-mmio\"",
        "call=\"reset\"",
        "call=\"close\"",
    ] {
        assert!(
            stderr.lines().any(|l| l.contains("plugin=\"dfl\"")
                && l.contains(call)
                && l.contains("returned")),
            "no traced {call}: {stderr}"
        );
    }
    assert!(
        stderr.contains("port.open"),
        "the plugin's import: {stderr}"
    );
    // Without it, nothing is traced.
    let out = accelhost(
        &scratch_dir("empty"),
        &["poke", "emu:dfl0", "read64:0x0"],
        &[],
    );
    assert!(
        !text(&out.stderr).contains("TRACE"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn poke_resets_the_port() {
    let scratchpad = accelhost::families::dfl::abi::nlb0::CSR_SCRATCHPAD2;
    let write = format!("write64:{scratchpad:#x}=7");
    let read = format!("read64:{scratchpad:#x}");
    let out = accelhost(
        &scratch_dir("empty"),
        &["poke", "emu:dfl0", &write, "reset", &read],
        &[],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(step_line(&stdout, "reset").ends_with("ok"), "{stdout}");
    assert!(
        step_line(&stdout, &read).ends_with("0x0000000000000000"),
        "the reset cleared the scratchpad: {stdout}"
    );
}

#[test]
fn poke_fills_and_dumps_a_buffer() {
    let out = accelhost(
        &scratch_dir("empty"),
        &[
            "poke",
            "emu:dfl0",
            "alloc:4096",
            "fill:0x5a",
            "put:0x8=c0ffee",
            "dump:0:20",
        ],
        &[],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        step_line(&stdout, "alloc:4096").contains("bytes, I/O address 0x"),
        "{stdout}"
    );
    assert!(
        step_line(&stdout, "fill:0x5a").contains("set to 0x5a"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "00000000: 5a5a 5a5a 5a5a 5a5a c0ff ee5a 5a5a 5a5a  ZZZZZZZZ...ZZZZZ\n\
             00000010: 5a5a 5a5a                                ZZZZ\n"
        ),
        "{stdout}"
    );
}

#[test]
fn poke_refuses_a_malformed_step_before_opening_anything() {
    let trace = [("ACCELHOST_TRACE", "1")];
    let dir = scratch_dir("empty");
    for (step, says) in [
        ("writ64:0=1", "unknown step 'writ64'"),
        ("write32:0x100=0x100000000", "wider than 32 bits"),
        ("read64:0x1g", "offset '0x1g' is not a number"),
        ("dump:0:16", "no alloc:SIZE step comes before it"),
    ] {
        let out = accelhost(&dir, &["poke", "emu:dfl0", "reset", step], &trace);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{step}: {stderr}");
        assert!(
            stderr.contains(&format!("step 2 '{step}'")) && stderr.contains(says),
            "{step}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "no step ran: {}", text(&out.stdout));
        assert!(
            !stderr.contains("call{plugin"),
            "nothing was opened: {stderr}"
        );
    }
    let out = accelhost(
        &dir,
        &["poke", "emu:dfl0", "reconfigure:missing.xclbin"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("step 1 'reconfigure:missing.xclbin': cannot read"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn poke_names_an_unknown_or_ambiguous_device() {
    let out = accelhost(
        &scratch_dir("empty"),
        &["poke", "emu:nowhere", "reset"],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no device 'emu:nowhere'") && stderr.contains("dfl/emu:dfl0"),
        "{stderr}"
    );
    let impostor = r#"{"name": "impostor", "module": "builtin:chaos",
        "config": {"impersonate": true, "impersonate_count": 1, "impersonate_name": "emu:dfl0"}}"#;
    let config = dfl_and(&[impostor]);
    let out = accelhost(
        config.parent().unwrap(),
        &["poke", "emu:dfl0", "reset"],
        &[],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("'emu:dfl0' names 2 devices")
            && stderr.contains("  dfl/emu:dfl0")
            && stderr.contains("  impostor/emu:dfl0"),
        "{stderr}"
    );
}

#[test]
fn poke_names_the_step_an_out_of_range_offset_failed_in_and_closes() {
    let out = accelhost(
        &scratch_dir("empty"),
        &[
            "poke",
            "emu:dfl0",
            "read64:0x108",
            "read64:0x40000",
            "reset",
        ],
        &[("ACCELHOST_TRACE", "1")],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        step_line(&stdout, "read64:0x108").contains("0x"),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().count(),
        1,
        "the steps after it do not run: {stdout}"
    );
    assert!(
        stderr.contains("error: step 2 'read64:0x40000' failed: MMIO on emu:dfl0")
            && stderr.contains("outside the 0x40000-byte MMIO region"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"call{plugin="dfl" call="close""#),
        "the handle is closed after the failure: {stderr}"
    );
    assert!(!stderr.contains(r#"call="reset""#), "{stderr}");
}

#[test]
fn trace_shows_the_calls_of_poke() {
    let dir = scratch_dir("empty");
    let out = accelhost(
        &dir,
        &["poke", "emu:dfl0", "read64:0x108", "reset", "alloc:64"],
        &[("ACCELHOST_TRACE", "1")],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for call in [
        "open\" args=token=0 mode=Shared",
        "map-mmio\" args=handle=1 index=0",
        "reset",
        "prepare-buffer",
        "release-buffer",
        "close",
    ] {
        assert!(
            stderr.contains(&format!(r#"call{{plugin="dfl" call="{call}"#)),
            "{call}: {stderr}"
        );
    }
    let out = accelhost(
        &dir,
        &["poke", "--exclusive", "emu:dfl0", "reset"],
        &[("ACCELHOST_TRACE", "1")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(r#"call="open" args=token=0 mode=Exclusive"#),
        "--exclusive opens exclusively: {}",
        text(&out.stderr)
    );
}

#[test]
fn poke_reconfigures_through_the_plugin() {
    let dir = scratch_dir("poke-xclbin");
    let out = accelhost(&dir, &["xclbin", "build", "vadd.xclbin"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = accelhost(
        &dir,
        &["poke", "xocl/emu:xocl0", "reconfigure:vadd.xclbin"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("loaded vadd.xclbin"),
        "{}",
        text(&out.stdout)
    );
    let out = accelhost(
        &dir,
        &["poke", "xocl/emu:xocl0", "reconfigure@1:vadd.xclbin"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("step 1 'reconfigure@1:vadd.xclbin' failed: plugin 'xocl'"),
        "{}",
        text(&out.stderr)
    );
}

/// A directory with the crafted component `wasm` as `name`, a config loading it as plugin
/// `crafted` (with `load_policy` members `policy`) beside the dfl plugin, and a compile
/// cache of its own (a refusal remembered there is this test's alone).
fn crafted_beside_dfl(name: &str, wasm: &[u8], policy: &str) -> (std::path::PathBuf, String) {
    let entry =
        format!(r#"{{"name": "crafted", "module": "{name}", "load_policy": {{{policy}}}}}"#);
    let config = dfl_and(&[&entry]);
    let dir = config.parent().unwrap().to_path_buf();
    std::fs::write(dir.join(name), wasm).unwrap();
    let cache = dir.join("cache").display().to_string();
    (dir, cache)
}

/// Waits until `file` last changed long enough ago (two seconds, and a margin) for a start
/// to remember its digest instead of hashing it again.
fn settle(file: &std::path::Path) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(file).unwrap();
    let changed = std::time::UNIX_EPOCH
        + std::time::Duration::new(meta.ctime() as u64, meta.ctime_nsec() as u32);
    let settled = changed + std::time::Duration::from_millis(2_200);
    if let Ok(wait) = settled.duration_since(std::time::SystemTime::now()) {
        std::thread::sleep(wait);
    }
}

/// A tag for the environment of the `accelhost` runs of one test, which its compile workers
/// inherit: the processes carrying it are that test's.
fn process_tag(test: &str) -> String {
    format!("{test}-{}", std::process::id())
}

/// The processes whose environment carries `tag` (as ACCELHOST_TEST_TAG).
fn tagged_processes(tag: &str) -> Vec<String> {
    let wanted = format!("ACCELHOST_TEST_TAG={tag}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|entry| {
            std::fs::read(entry.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn list_shows_the_other_plugins_devices_within_the_compile_limit() {
    let policy = r#""compile_timeout_ms": 1500"#;
    let (dir, cache) = crafted_beside_dfl("huge.wasm", &crafted::one_huge_function(), policy);
    let tag = process_tag("list-compile-limit");
    let env = [
        ("ACCELHOST_CACHE_DIR", cache.as_str()),
        ("ACCELHOST_TEST_TAG", tag.as_str()),
    ];
    let began = std::time::Instant::now();
    let out = accelhost(&dir, &["list"], &env);
    let took = began.elapsed();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(PARTIAL), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("dfl/emu:dfl0"),
        "the other devices: {stdout}"
    );
    assert!(
        stderr.contains("plugin 'crafted'")
            && stderr.contains("compile ran past 1500 ms (load_policy.compile_timeout_ms)"),
        "{stderr}"
    );
    assert!(
        took >= std::time::Duration::from_millis(1500),
        "the limit ended it: {took:?}"
    );
    assert!(
        took < std::time::Duration::from_secs(60),
        "the host did not wait for the compile: {took:?}"
    );
    assert_eq!(
        tagged_processes(&tag),
        Vec::<String>::new(),
        "no worker is left"
    );

    // Another process learns it from the cache, without compiling.
    let out = accelhost(&dir, &["plugins"], &env);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "failed to load: compile ran past 1500 ms (load_policy.compile_timeout_ms) \
             (remembered from an earlier attempt"
        ),
        "{stdout}"
    );
    assert!(tagged_processes(&tag).is_empty());
}

#[test]
fn check_config_names_the_plugin_whose_compile_failed() {
    let (dir, cache) = crafted_beside_dfl("many.wasm", &crafted::tiny_functions(200_000), {
        r#""compile_memory_mib": 256"#
    });
    let out = accelhost(
        &dir,
        &["check-config", "accelhost.json"],
        &[("ACCELHOST_CACHE_DIR", cache.as_str())],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("plugin 'dfl' (builtin:dfl): ok"),
        "{stdout}"
    );
    assert!(
        stderr.contains("plugin 'crafted' (many.wasm) cannot be loaded: compile needed more than 256 MiB (load_policy.compile_memory_mib)"),
        "{stderr}"
    );
}

#[test]
fn a_host_killed_while_compiling_leaves_no_worker() {
    let policy = r#""compile_timeout_ms": 600000"#;
    let (dir, cache) = crafted_beside_dfl("huge.wasm", &crafted::one_huge_function(), policy);
    let tag = process_tag("killed-host");
    let home = scratch_dir("home");
    let mut host = std::process::Command::new(env!("CARGO_BIN_EXE_accelhost"))
        .arg("list")
        .current_dir(&dir)
        .env_remove("ACCELHOST_CONFIG")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("ACCELHOST_CACHE_DIR", &cache)
        .env("ACCELHOST_TEST_TAG", &tag)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let bounded = |what: &str, done: &dyn Fn() -> bool| {
        let began = std::time::Instant::now();
        while !done() {
            assert!(
                began.elapsed() < std::time::Duration::from_secs(60),
                "{what} within 60 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let host_pid = host.id().to_string();
    bounded("the worker starts", &|| {
        tagged_processes(&tag).iter().any(|pid| *pid != host_pid)
    });
    host.kill().unwrap();
    host.wait().unwrap();
    bounded("the worker ends with its host", &|| {
        tagged_processes(&tag).is_empty()
    });
}

#[test]
fn a_short_command_leaves_the_optimized_code_of_a_large_plugin_for_the_next() {
    let chaos = std::fs::read(support::guest("accelhost_plugin_chaos")).unwrap();
    let tag = process_tag("baseline-first");
    let (dir, cache) = crafted_beside_dfl(
        "large.wasm",
        &crafted::tagged(chaos, &tag),
        r#""baseline_first_mib": 0"#,
    );
    // A worker that takes its time: the command ends while the optimized compile still runs.
    let slow_worker = dir.join("slow-worker.sh");
    std::fs::write(
        &slow_worker,
        format!(
            "#!/bin/sh\nsleep 2\nexec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_accelhost")
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &slow_worker,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let slow_worker = slow_worker.display().to_string();
    let env = [
        ("ACCELHOST_CACHE_DIR", cache.as_str()),
        ("ACCELHOST_TEST_TAG", tag.as_str()),
        ("ACCELHOST_COMPILE_WORKER", slow_worker.as_str()),
    ];
    let compiled = || {
        std::fs::read_dir(&cache)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".cwasm"))
                    .count()
            })
            .unwrap_or(0)
    };
    let out = accelhost(&dir, &["plugins"], &env);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("running (baseline code)"), "{stdout}");
    assert_eq!(compiled(), 1, "only the dfl plugin's code is cached yet");
    // The command has ended; its optimized compile goes on and lands in the cache beside the
    // dfl plugin's code, and then its worker ends too.
    let began = std::time::Instant::now();
    while (compiled() < 2 || !tagged_processes(&tag).is_empty())
        && began.elapsed() < std::time::Duration::from_secs(90)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(compiled(), 2, "the optimized code is cached");
    assert!(tagged_processes(&tag).is_empty(), "the worker ended");
    let out = accelhost(&dir, &["plugins"], &env);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("running"), "{stdout}");
    assert!(!stdout.contains("baseline code)"), "{stdout}");
}

#[test]
fn an_optimized_compile_that_failed_is_not_paid_for_again() {
    let chaos = std::fs::read(support::guest("accelhost_plugin_chaos")).unwrap();
    let (dir, cache) = crafted_beside_dfl(
        "large.wasm",
        &crafted::tagged(chaos, "optimized-compile-fails"),
        r#""baseline_first_mib": 0"#,
    );
    // A worker whose optimized compiles run out of time at once (as a crafted component that
    // only Cranelift cannot compile within the limits would), logging each start.
    let log = dir.join("worker.log");
    let worker = dir.join("worker.sh");
    std::fs::write(
        &worker,
        format!(
            "#!/bin/sh\necho \"$2 $3\" >> '{}'\n\
             case \"$2\" in plain|metered) kill -ALRM $$;; esac\n\
             exec '{}' \"$@\"\n",
            log.display(),
            env!("CARGO_BIN_EXE_accelhost")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&worker, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let worker = worker.display().to_string();
    let env = [
        ("ACCELHOST_CACHE_DIR", cache.as_str()),
        ("ACCELHOST_COMPILE_WORKER", worker.as_str()),
    ];
    let compiles = |kinds: &[&str]| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|line| kinds.contains(&line.split(' ').next().unwrap_or_default()))
            .count()
    };
    let optimized_compiles = || compiles(&["plain", "metered"]);
    // A plugin file unchanged for a while has its digest remembered, and a start then looks
    // for its compiled code before it reads the file: every run below takes that path.
    settle(&dir.join("large.wasm"));
    // The check compiles the optimized code at once, and fails with it.
    let out = accelhost(&dir, &["check-config", "accelhost.json"], &env);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("crafted") && said.contains("time"), "{said}");
    assert_eq!(optimized_compiles(), 1, "{said}");
    assert_eq!(
        compiles(&["plain-baseline", "metered-baseline"]),
        0,
        "a check compiles no baseline code it would throw away: {said}"
    );
    // Remembered: the plugin still runs on its baseline code, and no start pays for the
    // optimized compile again, nor does a check.
    for _ in 0..2 {
        let out = accelhost(&dir, &["plugins"], &env);
        let stdout = text(&out.stdout);
        // What every compile worker was asked, and what the check said, for a failure here.
        let history = format!(
            "--- worker log\n{}--- the check said\n{said}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        assert!(
            out.status.success(),
            "{stdout}{}{history}",
            text(&out.stderr)
        );
        assert!(
            stdout.contains("running (baseline code)"),
            "{stdout}{history}"
        );
        assert!(
            text(&out.stderr).contains("its optimized compile failed before"),
            "{}",
            text(&out.stderr)
        );
    }
    let out = accelhost(&dir, &["check-config", "accelhost.json"], &env);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        !out.status.success() && said.contains("remembered"),
        "{said}"
    );
    assert_eq!(optimized_compiles(), 1, "{said}");
}

#[test]
fn the_compile_worker_can_be_named_by_the_environment() {
    let (dir, cache) = crafted_beside_dfl("other.wasm", &crafted::exporting_something_else(), "");
    let env = |worker: &'static str| {
        [
            ("ACCELHOST_CACHE_DIR", cache.clone()),
            ("ACCELHOST_COMPILE_WORKER", worker.to_string()),
        ]
    };
    let plugins = |worker| {
        let env = env(worker);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        text(&accelhost(&dir, &["plugins"], &env).stdout)
    };
    // A worker that cannot run is the machine's fault: said, and not remembered.
    for _ in 0..2 {
        let stdout = plugins("/nonexistent/accelhost-worker");
        assert!(
            stdout.contains(
                "failed to load: cannot run the compile worker /nonexistent/accelhost-worker"
            ) && !stdout.contains("remembered"),
            "{stdout}"
        );
    }
    let stdout = plugins(env!("CARGO_BIN_EXE_accelhost"));
    assert!(
        stdout.contains("failed to load: it is not an accelhost plugin: it exports no accel:plugin interface (exports: f)"),
        "{stdout}"
    );
}

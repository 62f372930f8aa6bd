//! The `accelhost` binary as an operator runs it: in an empty directory with no config, on
//! config files with mistakes, and with tracing on.

mod support;

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
    assert_eq!(rows.len(), 8, "NLB0 x2, CAPI x2, XRT x3: {stdout}");
    assert!(
        rows[1].contains("dfl/emu:dfl0") && rows[1].contains("1 MiB"),
        "{stdout}"
    );
    assert!(rows[2].contains("64 MiB"), "{stdout}");
    assert!(
        rows[3].contains("cxl/emu:capi0.0s") && rows[3].contains("memcpy"),
        "{stdout}"
    );
    assert!(
        rows[4].contains("cxl/emu:capi0.1d") && rows[4].contains("vadd"),
        "{stdout}"
    );
    assert!(
        rows[5].contains("xocl/emu:xocl0") && rows[5].contains("vadd 1 Ki"),
        "{stdout}"
    );
    assert!(rows[6].contains("vadd 16 Mi elements"), "{stdout}");
    assert!(rows[7].contains("launches/s"), "{stdout}");
    assert!(rows[1..].iter().all(|r| r.contains("verified")), "{stdout}");
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
            "plugin 'dfl' (builtin:dfl): ok, built for accel:plugin@{}",
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
        "ACCELHOST_CONFIG",
        "ACCELHOST_PLUGIN_PATH",
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

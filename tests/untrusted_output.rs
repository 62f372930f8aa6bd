//! What a plugin chooses never acts on the operator's terminal or log, and never passes for
//! another plugin's: the `accelhost` binary run on configs with a plugin whose every string is
//! a terminal attack, and with plugins that dress their devices up as the shipped ones.

use crate::support;

use std::path::Path;

use support::{text, write_config};

/// Runs the `accelhost` binary of this package (see [`support::run_accelhost`]).
fn accelhost(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    support::run_accelhost(env!("CARGO_BIN_EXE_accelhost"), dir, args, env)
}

/// The control sequences the chaos plugin's `evil_text` hides in everything it chooses
/// (guest-plugins/chaos/src/lib.rs, `EVIL`).
const EVIL: &str = "\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{1b}[8m\u{9b}31m\rOK\u{e}\u{f}\nERROR accelhost: forged line";

/// Every byte or character a terminal would act on, with where it was found.
fn active(output: &str) -> Vec<(usize, char)> {
    output
        .char_indices()
        .filter(|&(_, c)| (c.is_control() && c != '\n') || ('\u{80}'..='\u{9f}').contains(&c))
        .collect()
}

/// A config with the shipped dfl plugin on one port and `chaos` entries (JSON objects).
fn config_with(chaos: &[&str]) -> std::path::PathBuf {
    let mut plugins =
        vec![r#"{"name": "dfl", "module": "builtin:dfl", "grants": {"devices": ["emu:dfl0"]}}"#];
    plugins.extend_from_slice(chaos);
    write_config(&format!(
        r#"{{"devices": [{{"id": "dfl0", "family": "dfl"}}], "plugins": [{}]}}"#,
        plugins.join(", ")
    ))
}

fn dir_of(config: &Path) -> &Path {
    config.parent().unwrap()
}

#[test]
fn plugin_chosen_text_reaches_terminals_and_logs_inert() {
    let config = config_with(&[
        r#"{"name": "chaos", "module": "builtin:chaos", "config": {"evil_text": true}}"#,
        r#"{"name": "refuser", "module": "builtin:chaos",
            "config": {"evil_text": true, "refuse_in": "configure"}}"#,
        r#"{"name": "crasher", "module": "builtin:chaos",
            "config": {"evil_text": true, "trap_in": "enumerate"},
            "load_policy": {"on_fault": "disable"}}"#,
    ]);
    let dir = dir_of(&config);
    let log = [("ACCELHOST_LOG", "info")];
    for args in [
        &["list"][..],
        &["info", "1"],
        &["plugins"],
        &[
            "demo",
            "--sizes",
            "64KiB",
            "--elements",
            "1Ki",
            "--launches",
            "0",
        ],
    ] {
        let out = accelhost(dir, args, &log);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            active(&stdout).is_empty() && active(&stderr).is_empty(),
            "`accelhost {}` let control characters through: {:?} {:?}\n{stdout}\n{stderr}",
            args.join(" "),
            active(&stdout),
            active(&stderr)
        );
        for line in stderr.lines() {
            assert!(
                !line.starts_with("ERROR accelhost: forged line"),
                "a plugin wrote a log line of its own: {line}"
            );
            if line.contains("forged line") && !line.starts_with("warning:") {
                assert!(
                    line.contains("plugin=\"chaos\"")
                        || line.contains("plugin=chaos")
                        || line.contains("plugin=\"crasher\"")
                        || line.contains("plugin=crasher")
                        || line.contains("plugin=refuser"),
                    "a log line the plugin caused carries no plugin tag: {line}"
                );
            }
        }
    }
    let listed = accelhost(dir, &["list"], &[]);
    let stdout = text(&listed.stdout);
    assert!(
        stdout.contains("chaos/chaos0\\e]0;pwned\\u{7}"),
        "shown escaped: {stdout}"
    );
    let plugins = text(&accelhost(dir, &["plugins"], &[]).stdout);
    assert!(
        plugins.contains("chaos plugin refuses configure\\e]0;pwned"),
        "the refusal, escaped: {plugins}"
    );

    // JSON keeps the exact text: its encoder escapes control characters itself.
    let json = accelhost(dir, &["list", "--json"], &[]);
    let devices: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let chaos = devices
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["plugin"] == "chaos")
        .expect("the chaos device");
    assert_eq!(chaos["name"], format!("chaos0{EVIL}"));
    assert_eq!(
        chaos["extras"][format!("key{EVIL}")],
        format!("value{EVIL}")
    );
    assert!(
        active(&text(&json.stdout)).is_empty(),
        "JSON output is escaped"
    );
}

/// Three devices of a plugin dressed as NLB0 ports, the first named like the shipped port,
/// each of which sleeps in `open` until its deadline.
const IMPOSTORS: &str = r#"{"name": "impostor", "module": "builtin:chaos",
    "config": {"impersonate": true, "impersonate_count": 3, "impersonate_name": "emu:dfl0",
               "sleep_in": "open"},
    "load_policy": {"call_timeout_ms": 2000}"#;

#[test]
fn demo_runs_the_canonical_workloads_only_on_trusted_plugins() {
    let config = config_with(&[&format!("{IMPOSTORS}}}")]);
    let out = accelhost(
        dir_of(&config),
        &["demo", "--sizes", "64KiB", "--launches", "0"],
        &[],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let rows: Vec<&str> = stdout.lines().collect();
    assert!(
        rows.iter()
            .any(|r| r.starts_with("dfl/emu:dfl0") && r.contains("verified")),
        "{stdout}"
    );
    let skipped: Vec<&&str> = rows.iter().filter(|r| r.starts_with("impostor/")).collect();
    assert_eq!(skipped.len(), 3, "{stdout}");
    for row in skipped {
        assert!(
            row.contains("skipped: looks like a dfl device") && row.contains("trusted_for"),
            "{row}"
        );
    }

    // Trusting the plugin for dfl makes demo believe it: its devices get the workload (and
    // these fail it).
    let trusted = config_with(&[&format!(r#"{IMPOSTORS}, "trusted_for": ["dfl"]}}"#)]);
    let out = accelhost(
        dir_of(&trusted),
        &["demo", "--sizes", "64KiB", "--launches", "0"],
        &[],
    );
    let stdout = text(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|r| r.starts_with("impostor/") && r.contains("FAILED")),
        "{stdout}"
    );
}

#[test]
fn info_with_an_ambiguous_name_lists_the_candidates_by_full_id() {
    let config = config_with(&[&format!("{IMPOSTORS}}}")]);
    let dir = dir_of(&config);
    let out = accelhost(dir, &["info", "emu:dfl0"], &[]);
    let stderr = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("'emu:dfl0' names 2 devices")
            && stderr.contains("  dfl/emu:dfl0")
            && stderr.contains("  impostor/emu:dfl0"),
        "{stderr}"
    );
    let out = accelhost(dir, &["info", "dfl/emu:dfl0"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("plugin         dfl"));
    let missing = accelhost(dir, &["info", "emu:nowhere"], &[]);
    assert!(text(&missing.stderr).contains("no device 'emu:nowhere'"));
}

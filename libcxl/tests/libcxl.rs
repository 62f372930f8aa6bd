//! libcxl's API end to end: the library, header and pkg-config file installed into a prefix
//! with `libcxl/install.sh`, C programs built with only `pkg-config --cflags --libs libcxl`
//! and run on the embedded default's emulated AFUs (the memcpy AFU's master and slave flow,
//! the vadd AFU's dedicated flow), the AFUs a config declares, and the library's symbol
//! versions. A missing compiler, pkg-config or readelf is reported ignored with the reason,
//! or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1` (CI).

// libcxl's programs use no plugin, so the door helpers for a faulting plugin go unused.
#[allow(dead_code)]
#[path = "../../tests/support/door.rs"]
mod door;
#[path = "../../tests/support/harness.rs"]
mod harness;

use std::process::Command;
use std::sync::OnceLock;

use door::{Door, inert, missing, text};
use harness::{Outcome, Trial};

static LIBCXL: Door = Door {
    name: "libcxl",
    library: "libcxl.so",
    crate_dir: env!("CARGO_MANIFEST_DIR"),
    tmp: env!("CARGO_TARGET_TMPDIR"),
    prefix: OnceLock::new(),
};

fn main() -> std::process::ExitCode {
    let outcome = harness::run(
        &[
            Trial {
                name: "a_program_of_the_memcpy_afu_flow_copies_through_process_memory",
                run: a_program_of_the_memcpy_afu_flow_copies_through_process_memory,
            },
            Trial {
                name: "a_program_of_the_vadd_afu_flow_adds_in_dedicated_mode",
                run: a_program_of_the_vadd_afu_flow_adds_in_dedicated_mode,
            },
            Trial {
                name: "the_afus_are_the_configs_and_a_bad_config_is_named",
                run: the_afus_are_the_configs_and_a_bad_config_is_named,
            },
            Trial {
                name: "enumeration_leaves_errno_as_libcxl_does",
                run: enumeration_leaves_errno_as_libcxl_does,
            },
            Trial {
                name: "a_freed_handle_stays_an_error_whatever_is_opened_after",
                run: a_freed_handle_stays_an_error_whatever_is_opened_after,
            },
            Trial {
                name: "every_libcxl_name_has_its_version_node",
                run: every_libcxl_name_has_its_version_node,
            },
            Trial {
                name: "the_install_script_explains_itself_and_refuses_bad_input",
                run: || {
                    LIBCXL.check_install_script();
                    Outcome::Passed
                },
            },
        ],
        harness::Overlap::OneAtATime,
    );
    LIBCXL.clean();
    outcome
}

/// Builds and runs the C program `source` with `args`, on the embedded default or `config`.
fn program(source: &str, args: &[&str], config: Option<&str>) -> Result<String, Outcome> {
    let dir = LIBCXL.scratch(&source.replace(['/', '.'], "-"));
    let exe = LIBCXL.build("cc", "-std=gnu11", source, &dir)?;
    let config = config.map(|text| {
        let path = dir.join("accelhost.json");
        std::fs::write(&path, text).unwrap();
        path
    });
    let out = LIBCXL.run_program(&exe, args, &dir, config.as_deref());
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        inert(&String::from_utf8_lossy(&out.stderr)),
        "active characters on stderr: {report}"
    );
    Ok(report)
}

/// tests/c/memcpy.c: a master sets the AFU's CFG; four slave contexts on four threads each
/// run 25 copies of random lengths, interrupts waited for with select() on the context's
/// fd, INCR and compare-and-swap, all on the program's own malloc'd memory; a copy from a
/// page it may not read is a data-storage event with its address; bad calls answer their errno;
/// a read of all ones raises SIGBUS, or gives EIO once libcxl's handler is installed.
fn a_program_of_the_memcpy_afu_flow_copies_through_process_memory() -> Outcome {
    let report = match program("c/memcpy.c", &[], None) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    for line in [
        "enumerate: adapter card0",
        "enumerate: card0 afu afu0.0",
        "enumerate: card0 afu afu0.1",
        "enumerate: ok",
        "master: ok",
        "slaves: ok (distinct process elements, INCR and compare-and-swap)",
        "fault: ok (data-storage fault at",
        "bad call cxl_read_expected_event(irq 2) given irq 1: ok",
        "all ones without a handler: ok (SIGBUS)",
        "all ones with the handler: ok (EIO)",
        "memcpy: PASSED",
    ] {
        assert!(report.contains(line), "no '{line}' in:\n{report}");
    }
    let slaves: Vec<&str> = report
        .lines()
        .filter(|line| line.starts_with("slave pe "))
        .collect();
    assert_eq!(slaves.len(), 4, "{report}");
    for line in slaves {
        assert!(line.ends_with(": 25 copies, 0 mismatches"), "{report}");
    }
    let refusals = report.matches("bad call ").count();
    assert!(refusals >= 15, "{refusals} bad calls checked:\n{report}");
    // Each refusal names its call on stderr.
    assert!(
        report.contains("accelhost libcxl: cxl_afu_open_dev: '/dev/cxl/afu9.9s' is no AFU device node (there are /dev/cxl/afu0.0m, /dev/cxl/afu0.0s, /dev/cxl/afu0.1d)"),
        "{report}"
    );
    assert!(
        report.lines().any(|line| line
            .starts_with("accelhost libcxl: cxl_afu_get_process_element: 0x")
            && line.ends_with("is not a live cxl_afu_h (released, or never made)")),
        "{report}"
    );
    Outcome::Passed
}

/// tests/c/vadd.c: the control block and both vectors are the program's memory, the AFU adds
/// a million elements exactly, and the one dedicated context is given back by free.
fn a_program_of_the_vadd_afu_flow_adds_in_dedicated_mode() -> Outcome {
    let report = match program("c/vadd.c", &[], None) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    for line in [
        "open: ok (pe 0)",
        "vadd: 1048576 elements, 0 mismatches",
        "second open while the first is open: ok (ENOSPC)",
        "open after free: ok",
        "vadd: PASSED",
    ] {
        assert!(report.contains(line), "no '{line}' in:\n{report}");
    }
    Outcome::Passed
}

/// A config with one memcpy AFU on card 2: that is all a program finds, under that card's
/// names. A config that cannot be read fails every open with ENODEV, naming the file.
fn the_afus_are_the_configs_and_a_bad_config_is_named() -> Outcome {
    let config = r#"{"devices": [{"id": "far", "family": "cxl", "card": 2, "slice": 0}],
                     "plugins": []}"#;
    let report = match program("c/names.c", &["/dev/cxl/afu2.0s"], Some(config)) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(
        report.contains("adapter card2 (CAIA 1.2): afu2.0\n"),
        "{report}"
    );
    assert!(
        report.contains("open /dev/cxl/afu2.0s: process element 0"),
        "{report}"
    );
    assert!(!report.contains("card0"), "{report}");
    // The program checks errno after the enumeration, as libcxl's programs do: no error.
    assert!(!report.contains("enumeration:"), "{report}");

    let report = match program("c/names.c", &["/dev/cxl/afu0.0s"], Some("{ not json")) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(
        report.contains("open /dev/cxl/afu0.0s: NULL, errno No such device"),
        "{report}"
    );
    assert!(
        report.contains(
            "accelhost libcxl: cxl_afu_open_dev: no CAPI AFUs: the config could not be read:"
        ),
        "{report}"
    );
    assert!(report.contains("accelhost.json"), "{report}");
    Outcome::Passed
}

/// tests/c/enumerate_errno.c: every step of `cxl_for_each_adapter`, `cxl_for_each_adapter_afu`
/// and `cxl_for_each_afu` that succeeds, the end of the list included, leaves errno 0 over
/// an error the program left in it; handles never given, an opened context, no adapter and a
/// finished enumeration are NULL with EINVAL; and a config without CAPI AFUs is NULL with
/// ENODEV at the first step, as libcxl is without /sys/class/cxl.
fn enumeration_leaves_errno_as_libcxl_does() -> Outcome {
    let report = match program("c/enumerate_errno.c", &[], None) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(report.contains("\n0 failed"), "{report}");
    assert_eq!(report.matches("\nok: ").count(), 26, "{report}");
    let report = match program(
        "c/enumerate_errno.c",
        &["none"],
        Some(r#"{"devices": [], "plugins": []}"#),
    ) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(report.contains("\n0 failed"), "{report}");
    assert_eq!(report.matches("\nok: ").count(), 4, "{report}");
    assert!(
        report.contains("accelhost libcxl: cxl_adapter_next: the config (from ACCELHOST_CONFIG) has no CAPI AFUs"),
        "{report}"
    );
    Outcome::Passed
}

/// The library exports every name of libcxl's symver.map at its node, as a program built
/// against IBM's libcxl asks for it (`name@LIBCXL_1.2`), and its soname is libcxl.so.1.
fn every_libcxl_name_has_its_version_node() -> Outcome {
    let library = LIBCXL.prefix().join("lib/libcxl.so");
    let out = match Command::new("readelf")
        .args(["--dyn-syms", "--dynamic", "-W"])
        .arg(&library)
        .output()
    {
        Ok(out) => out,
        Err(err) => return missing(format!("no readelf: {err}")),
    };
    assert!(out.status.success(), "{}", text(&out));
    let listing = String::from_utf8(out.stdout).unwrap();
    assert!(
        listing.contains("Library soname: [libcxl.so.1]"),
        "{listing}"
    );
    let map = std::fs::read_to_string(LIBCXL.dir().join("symver.map")).unwrap();
    let mut node = "";
    let mut checked = 0;
    for line in map.lines().map(str::trim) {
        if let Some(name) = line.strip_suffix(" {") {
            node = name;
        } else if let Some(name) = line.strip_suffix(';')
            && name.starts_with("cxl_")
        {
            let versioned = format!(" {name}@@{node}");
            assert!(
                listing.lines().any(|l| l.ends_with(&versioned)
                    && l.contains(" FUNC ")
                    && l.contains(" GLOBAL ")),
                "{name} is not exported at {node}:\n{listing}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 66, "libcxl 1.7 has 66 functions");
    // Nothing else of the library's is exported as a function.
    let functions = listing
        .lines()
        .filter(|l| l.contains(" FUNC ") && l.contains(" GLOBAL ") && !l.contains(" UND "))
        .count();
    assert_eq!(functions, 66, "{listing}");
    Outcome::Passed
}

/// tests/c/stale.c: a context freed, then contexts opened until one could land on its
/// handle: none does, the old handle is EINVAL, and the newest context is untouched.
fn a_freed_handle_stays_an_error_whatever_is_opened_after() -> Outcome {
    let report = match program("c/stale.c", &[], None) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(report.contains("one has its handle: no"), "{report}");
    assert!(report.contains("\n0 failed"), "{report}");
    Outcome::Passed
}

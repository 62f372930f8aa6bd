//! LLVM's Offload API end to end: the library, `OffloadAPI.h` and the pkg-config file
//! installed into a prefix with `offload/install.sh`, a C program of the API's canonical
//! flow built with only `pkg-config --cflags --libs offload` and run on the embedded
//! default against the vadd xclbin, and a faulting plugin under a C program. A missing
//! compiler or pkg-config is reported ignored with the reason, or fails under
//! `ACCELHOST_REQUIRE_TOOLCHAINS=1` (CI).

#[path = "../../tests/support/door.rs"]
mod door;
#[path = "../../tests/support/harness.rs"]
mod harness;

use std::sync::OnceLock;

use accelhost::workloads::vadd::vadd_image;
use door::{Door, config_with_chaos, inert, text};
use harness::{Outcome, Trial};

static OFFLOAD: Door = Door {
    name: "offload",
    library: "libLLVMOffload.so",
    crate_dir: env!("CARGO_MANIFEST_DIR"),
    tmp: env!("CARGO_TARGET_TMPDIR"),
    prefix: OnceLock::new(),
};

fn main() -> std::process::ExitCode {
    let outcome = harness::run(
        &[
            Trial {
                name: "a_c_program_of_the_canonical_flow_runs_vadd",
                run: a_c_program_of_the_canonical_flow_runs_vadd,
            },
            Trial {
                name: "a_faulting_plugin_is_an_offload_error_and_the_program_goes_on",
                run: a_faulting_plugin_is_an_offload_error_and_the_program_goes_on,
            },
            Trial {
                name: "the_install_script_explains_itself_and_refuses_bad_input",
                run: || {
                    OFFLOAD.check_install_script();
                    Outcome::Passed
                },
            },
        ],
        harness::Overlap::OneAtATime,
    );
    OFFLOAD.clean();
    outcome
}

/// tests/c/flow.c: init, platform and devices, allocations, a queue, memcpy in, the xclbin's
/// program and kernel, a launch, its event, memcpy out (vadd exact); shared and host memory,
/// reference counts, threads, code locations, and every bad call's code.
fn a_c_program_of_the_canonical_flow_runs_vadd() -> Outcome {
    let dir = OFFLOAD.scratch("flow");
    let exe = match OFFLOAD.build("cc", "-std=c11", "c/flow.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let out = OFFLOAD.run_program(&exe, &["vadd.xclbin"], &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("vadd of 8192 elements: 0 mismatches"),
        "{report}"
    );
    assert!(
        report.contains("4 threads x 20 launches at once: 0 mismatches"),
        "{report}"
    );
    assert!(report.contains("device 0: "), "{report}");
    assert!(report.contains("\n0 failed"), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    Outcome::Passed
}

/// The chaos plugin traps in mem-alloc: olMemAlloc returns OL_ERRC_UNKNOWN with details
/// that name the fault (the plugin is stopped, not the program), and a copy through the XRT
/// card then comes back exact. The plugin's texts carry terminal attacks, which stay inert.
fn a_faulting_plugin_is_an_offload_error_and_the_program_goes_on() -> Outcome {
    let dir = OFFLOAD.scratch("fault");
    let exe = match OFFLOAD.build("cc", "-std=c11", "c/fault.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let config = config_with_chaos(
        &dir,
        serde_json::json!({"trap_in": "mem-alloc", "evil_text": true}),
    );
    let out = OFFLOAD.run_program(&exe, &[], &dir, Some(&config));
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        report.contains("olMemAlloc on the faulting plugin: an error"),
        "{report}"
    );
    assert!(
        report.contains("code 15, details: olMemAlloc: plugin 'chaos' faulted in mem-alloc"),
        "{report}"
    );
    assert!(
        report.contains("then a copy through the XRT card: exact"),
        "{report}"
    );
    assert!(inert(&String::from_utf8_lossy(&out.stdout)), "{report}");
    Outcome::Passed
}

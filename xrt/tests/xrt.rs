//! XRT's native API end to end: the library, headers and pkg-config file installed into a
//! prefix with `xrt/install.sh`, programs of the hello-world flow in C and C++ built with
//! only `pkg-config --cflags --libs xrt`, run on the embedded default against the vadd
//! xclbin, and a faulting plugin under a C program. A missing compiler or pkg-config is
//! reported ignored with the reason, or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1` (CI).

#[path = "../../tests/support/door.rs"]
mod door;
#[path = "../../tests/support/harness.rs"]
mod harness;

use std::sync::OnceLock;

use accelhost::workloads::vadd::vadd_image;
use door::{Door, config_with_chaos, inert, text};
use harness::{Outcome, Trial};

static XRT: Door = Door {
    name: "xrt",
    library: "libxrt_coreutil.so",
    crate_dir: env!("CARGO_MANIFEST_DIR"),
    tmp: env!("CARGO_TARGET_TMPDIR"),
    prefix: OnceLock::new(),
};

fn main() -> std::process::ExitCode {
    let outcome = harness::run(
        &[
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
                run: || {
                    XRT.check_install_script();
                    Outcome::Passed
                },
            },
        ],
        harness::Overlap::OneAtATime,
    );
    XRT.clean();
    outcome
}

/// Builds `source` with `compiler` and runs it with the vadd xclbin as its argument.
fn vadd_program(
    compiler: &str,
    standard: &str,
    source: &str,
    config: Option<serde_json::Value>,
) -> Result<String, Outcome> {
    let dir = XRT.scratch(&source.replace(['/', '.'], "-"));
    let exe = XRT.build(compiler, standard, source, &dir)?;
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let config = config.map(|settings| config_with_chaos(&dir, settings));
    let out = XRT.run_program(&exe, &["vadd.xclbin"], &dir, config.as_deref());
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    assert!(
        inert(&String::from_utf8_lossy(&out.stderr)),
        "active characters on stderr: {report}"
    );
    Ok(report)
}

/// tests/c/hello_vadd.c: vadd exact through a run with every argument, then through one
/// set argument by argument with a completion callback, then from four threads at once, and
/// each bad call refused with its errno.
fn a_c_program_of_the_hello_world_flow_runs_vadd() -> Outcome {
    let report = match vadd_program("cc", "-std=c11", "c/hello_vadd.c", None) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
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
    let report = match vadd_program("c++", "-std=c++17", "cpp/hello_vadd.cpp", None) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
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
    let chaos = serde_json::json!({"interface": "xocl", "trap_in": "mem-alloc", "evil_text": true});
    let report = match vadd_program("cc", "-std=c11", "c/fault.c", Some(chaos)) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
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
    Outcome::Passed
}

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
use door::{Door, config_with_chaos, config_with_liar, inert, text};
use harness::{Outcome, Trial};

static OFFLOAD: Door = Door {
    name: "offload",
    library: "libLLVMOffload.so",
    crate_dir: env!("CARGO_MANIFEST_DIR"),
    tmp: env!("CARGO_TARGET_TMPDIR"),
    prefix: OnceLock::new(),
};

fn main() -> std::process::ExitCode {
    // Side by side: each trial builds and runs programs of its own, in its own scratch
    // folder. The longest comes first, so that the lanes end together.
    let outcome = harness::run(
        &[
            Trial {
                name: "a_lying_plugin_is_an_offload_error_and_the_program_goes_on",
                run: a_lying_plugin_is_an_offload_error_and_the_program_goes_on,
            },
            Trial {
                name: "a_c_program_of_the_canonical_flow_runs_vadd",
                run: a_c_program_of_the_canonical_flow_runs_vadd,
            },
            Trial {
                name: "a_c_program_runs_a_kernel_of_its_own_from_a_device_image",
                run: a_c_program_runs_a_kernel_of_its_own_from_a_device_image,
            },
            Trial {
                name: "a_c_program_runs_spirv_over_its_work_items",
                run: a_c_program_runs_spirv_over_its_work_items,
            },
            Trial {
                name: "a_faulting_plugin_is_an_offload_error_and_the_program_goes_on",
                run: a_faulting_plugin_is_an_offload_error_and_the_program_goes_on,
            },
            Trial {
                name: "a_released_handle_stays_an_error_whatever_is_made_after",
                run: a_released_handle_stays_an_error_whatever_is_made_after,
            },
            Trial {
                name: "the_install_script_explains_itself_and_refuses_bad_input",
                run: || {
                    OFFLOAD.check_install_script();
                    Outcome::Passed
                },
            },
        ],
        harness::Overlap::AsLibtest,
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

/// tests/c/mmult.c with an image built from tests/kernels/mmult.cpp: olCreateProgram takes
/// the kernels of the program's own, a Vitis-style matrix multiply is exact at three sizes,
/// and an endless kernel's event fails at the card's deadline in between.
fn a_c_program_runs_a_kernel_of_its_own_from_a_device_image() -> Outcome {
    let image = match door::kernel_image("mmult.cpp", &["mmult", "forever"]) {
        Ok(image) => image,
        Err(outcome) => return outcome,
    };
    let dir = OFFLOAD.scratch("mmult");
    let exe = match OFFLOAD.build("cc", "-std=c11", "c/mmult.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    std::fs::write(dir.join("mmult.xclbin"), image).unwrap();
    let config = door::config_with_kernel_deadline(&dir, 300);
    let out = OFFLOAD.run_program(&exe, &["mmult.xclbin"], &dir, Some(&config));
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for line in [
        "mmult 64x64: 0 mismatches",
        "mmult 17x17: 0 mismatches",
        "its event fails at the card's deadline: ok",
        "the kernel ran past its deadline",
        "mmult 33x33 after it: 0 mismatches",
        "\n0 failed",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
    Outcome::Passed
}

/// tests/c/spirv.c with SPIR-V of tests/kernels/spirv_kernels.cl: olCreateProgram builds it,
/// kernels run over their work-items with the launch's sizes (scaled_add exact over 4,096,
/// group sums through local memory and barriers), a kernel writing through a pointer made
/// from an integer fails its event and the card goes on, a struct by value holding device
/// pointers (tests/kernels/struct_view.ll) reaches what they point to and one holding an
/// address of no allocation is refused at its launch, a later SPIR-V version is refused.
fn a_c_program_runs_spirv_over_its_work_items() -> Outcome {
    let (il, view) = match (
        door::spirv_of("spirv_kernels.cl"),
        door::spirv_of("struct_view.ll"),
    ) {
        (Ok(il), Ok(view)) => (il, view),
        (Err(outcome), _) | (_, Err(outcome)) => return outcome,
    };
    let dir = OFFLOAD.scratch("spirv");
    let exe = match OFFLOAD.build("cc", "-std=c11", "c/spirv.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    std::fs::write(dir.join("kernels.spv"), il).unwrap();
    std::fs::write(dir.join("view.spv"), view).unwrap();
    let config = door::config_with_kernel_deadline(&dir, 300);
    let out = OFFLOAD.run_program(&exe, &["kernels.spv", "view.spv"], &dir, Some(&config));
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for line in [
        "scaled_add of 4096 elements: 0 mismatches",
        "group_sums through local memory and barriers: ok",
        "the stray kernel: ",
        "out of bounds memory access",
        "scaled_add after it: 0 mismatches",
        "through_a_view of 256 elements: 0 mismatches",
        "the struct's stray pointer: ",
        "is 0x12345000, not in an allocation of the device",
        "\n0 failed",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
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

/// Runs `tests/c/liar.c` (built once into `dir`) in `mode` over the chaos plugin telling
/// `lies`; its report once it exited by itself (no signal) with every check held, and the
/// plugin's worst case.
fn liar(exe: &std::path::Path, mode: &str, args: &[&str], lies: &[&str]) -> (String, u64) {
    let dir = OFFLOAD.scratch(&format!("liar-{mode}-{}", lies.join("-")));
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let (config, worst_case) = config_with_liar(&dir, lies, serde_json::json!({}));
    let mut all = vec![mode, "vadd.xclbin"];
    all.extend_from_slice(args);
    let out = OFFLOAD.run_program(exe, &all, &dir, Some(&config));
    let report = text(&out);
    assert!(
        out.status.code().is_some(),
        "{mode}: ended by a signal: {report}"
    );
    assert!(out.status.success(), "{mode}: {report}");
    assert!(report.contains("\n0 failed"), "{mode}: {report}");
    (report, worst_case)
}

/// A plugin that lies about memory, ids and time under an Offload program: a host
/// allocation shorter than asked and an id given twice are errors (the first allocation
/// stays whole), a launch whose event never completes makes olWaitEvent an error within the
/// event deadline plus 5 s, 200,000 kept events that the plugin failed with messages of their
/// own hold no more than its worst case plus 32 MiB beyond honest ones, and a copy through
/// the XRT card in the same process is exact after each.
fn a_lying_plugin_is_an_offload_error_and_the_program_goes_on() -> Outcome {
    let dir = OFFLOAD.scratch("liar");
    let exe = match OFFLOAD.build("cc", "-std=c11", "c/liar.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let (report, _) = liar(&exe, "short", &[], &["short-buffer"]);
    assert!(report.contains("a lie about memory"), "{report}");
    let (report, _) = liar(&exe, "repeat", &[], &["repeat-id"]);
    assert!(report.contains("a lie about id"), "{report}");
    let (report, _) = liar(&exe, "pending", &[], &["pending-events"]);
    let waited: f64 = report
        .lines()
        .find_map(|l| l.strip_prefix("olWaitEvent returned an error after "))
        .and_then(|rest| rest.split(" ms").next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no wait time in:\n{report}"));
    assert!(
        waited < (door::LIAR_EVENT_DEADLINE_MS + 5000) as f64,
        "waited {waited} ms:\n{report}"
    );
    assert!(report.contains("load_policy.event_deadline_ms"), "{report}");
    let count = door::KEPT_EVENTS.to_string();
    let (lied, worst_case) = liar(&exe, "kept", &[&count], &["failed-events"]);
    let (honest, _) = liar(&exe, "kept", &[&count], &[]);
    door::check_kept(&lied, &honest, worst_case);
    Outcome::Passed
}

/// A queue released, then queues made until one could land on its handle: none does, the
/// old handle is OL_ERRC_INVALID_QUEUE, and the newest queue is untouched.
fn a_released_handle_stays_an_error_whatever_is_made_after() -> Outcome {
    let dir = OFFLOAD.scratch("stale");
    let exe = match OFFLOAD.build("cc", "-std=c11", "c/liar.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let (report, _) = liar(&exe, "stale", &[], &[]);
    assert!(report.contains("one has its handle: no"), "{report}");
    Outcome::Passed
}

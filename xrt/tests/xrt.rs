//! XRT's native API end to end: the library, headers and pkg-config file installed into a
//! prefix with `xrt/install.sh`, programs of the hello-world flow in C and C++ built with
//! only `pkg-config --cflags --libs xrt`, run on the embedded default against the vadd
//! xclbin, a host of asynchronous_xrt's kind on `xrt::queue`, programs built against
//! `CL/cl_ext_xilinx.h` as Vitis OpenCL hosts are, and a faulting plugin under a C program. A missing compiler or pkg-config is
//! reported ignored with the reason, or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1` (CI).

// The RSS check of kept events is the OpenCL and Offload doors' (a run's events are XRT's
// only through a run handle, which the program closes).
#[allow(dead_code)]
#[path = "../../tests/support/door.rs"]
mod door;
#[path = "../../tests/support/harness.rs"]
mod harness;

use std::sync::OnceLock;

use accelhost::workloads::vadd::{VADD_UUID, vadd_image};
use accelhost::xclbin::XclbinBuilder;
use door::{
    Door, config_with_chaos, config_with_kernel_deadline, config_with_liar, inert, kernel_image,
    text,
};
use harness::{Outcome, Trial};

static XRT: Door = Door {
    name: "xrt",
    library: "libxrt_coreutil.so",
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
                name: "a_lying_plugin_is_an_xrt_error_and_the_program_goes_on",
                run: a_lying_plugin_is_an_xrt_error_and_the_program_goes_on,
            },
            Trial {
                name: "a_cpp_host_queues_its_syncs_and_runs_on_xrt_queues",
                run: a_cpp_host_queues_its_syncs_and_runs_on_xrt_queues,
            },
            Trial {
                name: "a_c_program_of_the_hello_world_flow_runs_vadd",
                run: a_c_program_of_the_hello_world_flow_runs_vadd,
            },
            Trial {
                name: "a_cpp_program_of_the_hello_world_flow_runs_vadd",
                run: a_cpp_program_of_the_hello_world_flow_runs_vadd,
            },
            Trial {
                name: "compute_units_by_name_answer_their_own_banks",
                run: compute_units_by_name_answer_their_own_banks,
            },
            Trial {
                name: "a_cpp_host_executes_run_lists_in_a_hardware_context",
                run: a_cpp_host_executes_run_lists_in_a_hardware_context,
            },
            Trial {
                name: "cl_ext_xilinx_builds_in_c_and_cpp_with_the_opencl_headers",
                run: cl_ext_xilinx_builds_in_c_and_cpp_with_the_opencl_headers,
            },
            Trial {
                name: "a_c_program_runs_its_own_kernel_and_an_endless_one_ends_at_the_deadline",
                run: a_c_program_runs_its_own_kernel_and_an_endless_one_ends_at_the_deadline,
            },
            Trial {
                name: "a_faulting_plugin_is_an_xrt_error_and_the_program_goes_on",
                run: a_faulting_plugin_is_an_xrt_error_and_the_program_goes_on,
            },
            Trial {
                name: "xclbin_paths_that_are_no_files_are_refused_at_once",
                run: xclbin_paths_that_are_no_files_are_refused_at_once,
            },
            Trial {
                name: "a_freed_handle_stays_an_error_whatever_is_made_after",
                run: a_freed_handle_stays_an_error_whatever_is_made_after,
            },
            Trial {
                name: "the_install_script_explains_itself_and_refuses_bad_input",
                run: the_install_script_explains_itself_and_refuses_bad_input,
            },
        ],
        harness::Overlap::AsLibtest,
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

/// tests/c/mmult.c with an xclbin built from tests/kernels/mmult.cpp: a Vitis-style matrix
/// multiply with local buffers, exact at two sizes; an endless kernel's run fails at the
/// card's deadline, and the card multiplies again after it.
fn a_c_program_runs_its_own_kernel_and_an_endless_one_ends_at_the_deadline() -> Outcome {
    let image = match kernel_image("mmult.cpp", &["mmult", "forever"]) {
        Ok(image) => image,
        Err(outcome) => return outcome,
    };
    let dir = XRT.scratch("mmult");
    let exe = match XRT.build("cc", "-std=c11", "c/mmult.c", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    std::fs::write(dir.join("mmult.xclbin"), image).unwrap();
    let config = config_with_kernel_deadline(&dir, 300);
    let started = std::time::Instant::now();
    let out = XRT.run_program(&exe, &["mmult.xclbin"], &dir, Some(&config));
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for line in [
        "mmult 64x64: 0 mismatches",
        "mmult 17x17: 0 mismatches",
        "an endless kernel fails its run: ok",
        "mmult 33x33 after it: 0 mismatches",
        "\n0 failed",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "the endless kernel held the program for {:?}",
        started.elapsed()
    );
    Outcome::Passed
}

/// tests/cpp/hello_vadd.cpp: the C++ classes, inline over the C API, in the same flow, and
/// compute units chosen by name (`vadd:{vadd_1}`) as Vitis' hosts do: a unit the xclbin
/// lacks is ENOENT naming those it has.
fn a_cpp_program_of_the_hello_world_flow_runs_vadd() -> Outcome {
    let report = match vadd_program("c++", "-std=c++17", "cpp/hello_vadd.cpp", None) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(
        report.contains("the run set argument by argument is exact: ok"),
        "{report}"
    );
    assert!(
        report.contains("a compute unit the xclbin lacks: ok"),
        "{report}"
    );
    assert!(
        report.contains(
            "xrtPLKernelOpen: the xclbin has no compute unit 'vadd_9' of kernel 'vadd' (its units: vadd_1, vadd_2)"
        ),
        "{report}"
    );
    assert!(
        report.contains("C++ vadd of 4096 elements: exact"),
        "{report}"
    );
    assert!(report.contains("\n0 failed"), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    Outcome::Passed
}

/// tests/cpp/asymmetric_cus.cpp, on a vadd xclbin of four compute units each wired to a bank
/// of its own: a kernel opened on one unit by name answers that unit's bank for every buffer
/// argument (of several named, the first's), and a run per unit with its buffers there is
/// exact.
fn compute_units_by_name_answer_their_own_banks() -> Outcome {
    let dir = XRT.scratch("asymmetric-cus");
    let exe = match XRT.build("c++", "-std=c++17", "cpp/asymmetric_cus.cpp", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    let image = XclbinBuilder::vadd(VADD_UUID, 4, 4).build();
    std::fs::write(dir.join("vadd4.xclbin"), image).unwrap();
    let out = XRT.run_program(&exe, &["vadd4.xclbin"], &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for line in [
        "vadd:{vadd_2} answers its own bank: ok",
        "vadd:{vadd_4} answers its own bank: ok",
        "of several units, the first named: ok",
        "4 compute units by name, each on its own bank: 0 mismatches",
        "\n0 failed",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
    Outcome::Passed
}

/// tests/cpp/queue.cpp: asynchronous_xrt's flow (syncs, a run's start and wait, the sync
/// back, on two xrt::queues joined by an event) exact over 512 Ki elements, eight vadds
/// pipelined through two queues exact, and the queue's own promises: order, its own thread,
/// enqueue returning at once, values and exceptions in futures, waits across queues, a
/// failed sync's EINVAL in its future, and destructors that run what is left.
fn a_cpp_host_queues_its_syncs_and_runs_on_xrt_queues() -> Outcome {
    let report = match vadd_program("c++", "-std=c++17", "cpp/queue.cpp", None) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    for line in [
        "queued vadd of 262144 elements: exact",
        "8 pipelined vadds through two queues: 0 mismatches",
        "1000 tasks ran in the order enqueued: ok",
        "all on the queue's one thread, not the caller's: ok",
        "enqueue returned before its task ran: ok",
        "a task's exception in its future: ok",
        "a queue waits for another queue's event: ok",
        "a sync past the end in a task is EINVAL in its future: ok",
        "tasks run before the destructor returned: 50 of 50",
        "a queue whose last copy its own task held runs the rest: ok",
        "\n0 failed",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
    assert!(!report.contains("FAILED"), "{report}");
    // The failed sync's refusal names its call on stderr.
    assert!(
        report.contains("accelhost XRT: xrtBOSync: 4096 bytes at 4096 do not fit"),
        "{report}"
    );
    Outcome::Passed
}

/// tests/cpp/runlist.cpp: XRT's hardware-context flow (register_xclbin, xrt::hw_context, a
/// kernel made in it) and 64 vadds on one xrt::runlist, exact, twice; a failed run in the
/// middle of a list is the list's command_error and the program goes on; and the list's rules,
/// each refusal with its errno.
fn a_cpp_host_executes_run_lists_in_a_hardware_context() -> Outcome {
    let dir = XRT.scratch("cpp-runlist");
    let exe = match XRT.build("c++", "-std=c++17", "cpp/runlist.cpp", &dir) {
        Ok(exe) => exe,
        Err(outcome) => return outcome,
    };
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let out = XRT.run_program(&exe, &["vadd.xclbin", "64"], &dir, None);
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for line in [
        "the context is the device's and the xclbin's: ok",
        "a context of an xclbin the device does not run: ENOENT: ok",
        "an empty list is completed: ok",
        "a list never executed is new: ok",
        "64 runs of one list: 0 mismatches",
        "the same list executed again on new inputs: 0 mismatches",
        "a listed run started on its own: EBUSY: ok",
        "a run in two lists: EBUSY: ok",
        "a run without its arguments: EINVAL at execute: ok",
        "an add while the list executes: EBUSY: ok",
        "a reset while the list executes: EBUSY: ok",
        "a failed run in the middle: command_error with the list's last run: ok",
        "the run before the failed one: exact: ok",
        "a run freed from its list starts on its own: exact: ok",
        "\n0 failed",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
    assert!(!report.contains("FAILED"), "{report}");
    // Each refusal names its call on stderr, and the failed run's reason is there too.
    for said in [
        "accelhost XRT: xrt::runlist::add: the run is already in a runlist",
        "accelhost XRT: xrt::runlist::execute: run 0 of the list was refused",
        "accelhost XRT: xrt::runlist::wait:",
    ] {
        assert!(report.contains(said), "{said}: {report}");
    }
    assert!(
        inert(&String::from_utf8_lossy(&out.stderr)),
        "active characters on stderr: {report}"
    );
    Outcome::Passed
}

/// Whether `compiler` finds `header` on its own include path (the OpenCL headers the
/// distribution packages: Debian's opencl-c-headers, opencl-clhpp-headers).
fn has_header(compiler: &str, language: &str, header: &str) -> Result<(), Outcome> {
    let probe = std::process::Command::new(compiler)
        .args(["-fsyntax-only", "-x", language, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let mut probe = match probe {
        Ok(probe) => probe,
        Err(err) => return Err(door::missing(format!("no {compiler}: {err}"))),
    };
    {
        use std::io::Write;
        let mut stdin = probe.stdin.take().unwrap();
        writeln!(
            stdin,
            "#if !__has_include(<{header}>)\n#error no {header}\n#endif"
        )
        .unwrap();
    }
    if probe.wait().unwrap().success() {
        Ok(())
    } else {
        Err(door::missing(format!(
            "{compiler} finds no <{header}> (the OpenCL headers: opencl-c-headers, opencl-clhpp-headers)"
        )))
    }
}

/// tests/c/cl_ext_xilinx.c and tests/cpp/cl_ext_xilinx.cpp, built with only pkg-config's
/// flags and the system's OpenCL headers: cl_mem_ext_ptr_t's three views are the same three
/// words, and every name is XRT's number (CL_MEM_EXT_PTR_XILINX widened in cl_mem_flags as
/// XRT's int is), and the C++ one types pointers to the extension functions from their
/// prototypes as `xcl2` does. It also compiles with the includes and settings of Vitis'
/// `xcl2` helper (the C++ bindings first).
fn cl_ext_xilinx_builds_in_c_and_cpp_with_the_opencl_headers() -> Outcome {
    if let Err(outcome) =
        has_header("cc", "c", "CL/cl_ext.h").and_then(|()| has_header("c++", "c++", "CL/cl2.hpp"))
    {
        return outcome;
    }
    let dir = XRT.scratch("cl-ext-xilinx");
    for (compiler, standard, source) in [
        ("cc", "-std=c11", "c/cl_ext_xilinx.c"),
        ("c++", "-std=c++17", "cpp/cl_ext_xilinx.cpp"),
    ] {
        let exe = match XRT.build(compiler, standard, source, &dir) {
            Ok(exe) => exe,
            Err(outcome) => return outcome,
        };
        let out = XRT.run_program(&exe, &[], &dir, None);
        let report = text(&out);
        assert!(out.status.success(), "{source}: {report}");
        assert!(report.contains("\n0 failed"), "{source}: {report}");
        assert!(!report.contains("FAILED"), "{source}: {report}");
    }
    let cflags = std::process::Command::new("pkg-config")
        .args(["--cflags", "xrt"])
        .env("PKG_CONFIG_PATH", XRT.prefix().join("lib/pkgconfig"))
        .output()
        .unwrap();
    assert!(cflags.status.success(), "{}", text(&cflags));
    let cflags = String::from_utf8(cflags.stdout).unwrap();
    let out = door::run(
        std::process::Command::new("c++")
            .args([
                "-std=c++17",
                "-fsyntax-only",
                "-DACCELHOST_XCL2",
                "-Wall",
                "-Wextra",
                "-Werror",
            ])
            .arg(XRT.dir().join("tests/cpp/cl_ext_xilinx.cpp"))
            .args(cflags.split_whitespace()),
    );
    assert!(out.status.success(), "as xcl2 includes it: {}", text(&out));
    Outcome::Passed
}

/// The install script's help and refusals, and what it installs beside XRT's API.
fn the_install_script_explains_itself_and_refuses_bad_input() -> Outcome {
    XRT.check_install_script();
    let help = door::run(
        std::process::Command::new("sh")
            .arg(XRT.dir().join("install.sh"))
            .arg("--help"),
    );
    assert!(
        text(&help).contains("PREFIX/include/CL/cl_ext_xilinx.h"),
        "{}",
        text(&help)
    );
    let include = XRT.prefix().join("include");
    for header in [
        "CL/cl_ext_xilinx.h",
        "xrt/experimental/xrt_queue.h",
        "experimental/xrt_queue.h",
    ] {
        assert!(include.join(header).is_file(), "{header} is not installed");
    }
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

/// Runs `tests/c/liar.c` in `mode` over the chaos plugin, dressed as an XRT card, telling
/// `lies`; its report once it exited by itself (no signal) with every check held.
fn liar(mode: &str, lies: &[&str], extra: &[&str]) -> Result<String, Outcome> {
    let dir = XRT.scratch(&format!("liar-{mode}"));
    let exe = XRT.build("cc", "-std=c11", "c/liar.c", &dir)?;
    std::fs::write(dir.join("vadd.xclbin"), vadd_image(2)).unwrap();
    let (config, _) = config_with_liar(&dir, lies, serde_json::json!({"interface": "xocl"}));
    let mut args = vec![mode, "vadd.xclbin"];
    args.extend_from_slice(extra);
    let out = XRT.run_program(&exe, &args, &dir, Some(&config));
    let report = text(&out);
    assert!(
        out.status.code().is_some(),
        "{mode}: ended by a signal: {report}"
    );
    assert!(out.status.success(), "{mode}: {report}");
    assert!(report.contains("\n0 failed"), "{mode}: {report}");
    Ok(report)
}

/// A plugin that lies about memory, ids and time under an XRT program: a buffer shorter
/// than asked and an id given twice are errors (no pointer past the memory is handed out,
/// the first buffer stays whole), a run whose event never completes ends in
/// ERT_CMD_STATE_ERROR within the event deadline plus 5 s, and vadd on the emulated card in
/// the same process is exact after each.
fn a_lying_plugin_is_an_xrt_error_and_the_program_goes_on() -> Outcome {
    let report = match liar("short", &["short-buffer"], &[]) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(
        report.contains("a 2 MiB buffer of the liar: NULL"),
        "{report}"
    );
    assert!(report.contains("a lie about memory"), "{report}");
    let report = liar("repeat", &["repeat-id"], &[]).unwrap_or_else(|_| unreachable!());
    assert!(report.contains("a lie about id"), "{report}");
    let report = liar("pending", &["pending-events"], &[]).unwrap_or_else(|_| unreachable!());
    let waited: f64 = report
        .lines()
        .find_map(|l| l.strip_prefix("xrtRunWait returned 5 after "))
        .and_then(|rest| rest.trim_end_matches(" ms").parse().ok())
        .unwrap_or_else(|| panic!("no wait time in:\n{report}"));
    assert!(
        waited < (door::LIAR_EVENT_DEADLINE_MS + 5000) as f64,
        "waited {waited} ms:\n{report}"
    );
    assert!(report.contains("load_policy.event_deadline_ms"), "{report}");
    Outcome::Passed
}

/// xclbin paths a program names that are no files: /dev/zero, a FIFO nobody writes and a
/// directory are refused at once by xrtDeviceLoadXclbinFile and xrtXclbinAllocFilename,
/// neither read (a GiB from /dev/zero) nor waited on (the FIFO).
fn xclbin_paths_that_are_no_files_are_refused_at_once() -> Outcome {
    let dir = XRT.scratch("fifo");
    let fifo = dir.join("image.xclbin");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let report = match liar("path", &[], &[fifo.to_str().unwrap()]) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(
        report.contains("/dev/zero is a character device, not an xclbin file"),
        "{report}"
    );
    assert!(
        report.contains("is a FIFO (named pipe), not an xclbin file"),
        "{report}"
    );
    Outcome::Passed
}

/// A buffer freed, then buffers made until one could land on its handle: none does, the old
/// handle is EINVAL, and the newest buffer is untouched.
fn a_freed_handle_stays_an_error_whatever_is_made_after() -> Outcome {
    let report = match liar("stale", &[], &[]) {
        Ok(report) => report,
        Err(outcome) => return outcome,
    };
    assert!(report.contains("one has its handle: no"), "{report}");
    Outcome::Passed
}

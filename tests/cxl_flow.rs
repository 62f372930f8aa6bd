//! The cxl family end to end: the shipped cxl plugin (compiled to wasm) on emulated CAPI AFUs,
//! through the public embedding API.

use crate::support;

use std::time::Duration;

use accelhost::families::cxl::abi::memcpy;
use accelhost::workloads::capi::{self, WorkQueue, copy, interrupt};
use accelhost::{Arg, ErrorCode, EventKind, Filter, Handle, Host, MemoryKind, OpenMode, Token};
use support::{default_host, host};

/// A host with one memcpy AFU (`contexts` at most) and one vadd AFU.
fn capi_host(contexts: u32) -> Host {
    host(&format!(
        r#"{{"devices": [
               {{"id": "m", "family": "cxl", "accelerator": "memcpy", "max_contexts": {contexts}}},
               {{"id": "v", "family": "cxl", "accelerator": "vadd"}}],
            "plugins": [{{"name": "cxl", "module": "builtin:cxl",
                          "grants": {{"devices": ["emu:m", "emu:v"]}}}}]}}"#
    ))
    .unwrap()
}

fn node(host: &Host, kind: char) -> Token {
    host.enumerate(&[])
        .tokens
        .into_iter()
        .find(|t| capi::node_kind(t) == Some(kind))
        .unwrap_or_else(|| panic!("no '{kind}' node"))
}

fn open(host: &Host, kind: char) -> Handle {
    host.open(&node(host, kind), OpenMode::Shared).unwrap()
}

#[test]
fn afus_are_listed_once_per_node() {
    let host = default_host();
    let ids: Vec<String> = host
        .enumerate(&[])
        .tokens
        .iter()
        .filter(|t| capi::is_cxl(t))
        .map(|t| t.id())
        .collect();
    assert_eq!(
        ids,
        ["cxl/emu:capi0.0m", "cxl/emu:capi0.0s", "cxl/emu:capi0.1d"]
    );
    let slave = node(&host, 's');
    let p = slave.properties();
    assert_eq!((p.vendor_id, p.device_id), (0x1014, 0x0477));
    assert_eq!(capi::function(&slave), Some("memcpy"));
    let by_guid = host.enumerate(&[Filter::new().guid(p.guid)]);
    assert_eq!(by_guid.tokens.len(), 1, "the guid names one node");
    let dedicated = host.enumerate(&[Filter::new().device_type("fpga").vendor_id(0x1014)]);
    assert_eq!(dedicated.tokens.len(), 3);
}

#[test]
fn many_contexts_each_with_its_own_queue() {
    let host = capi_host(64);
    std::thread::scope(|scope| {
        for t in 0..16u64 {
            let host = &host;
            scope.spawn(move || {
                let handle = open(host, 's');
                let report = capi::memcpy_run(&handle, 8 + t, 4096 + 64 * t as u16).unwrap();
                assert!(report.verified(), "context {t}: {report:?}");
            });
        }
    });
}

#[test]
fn opening_past_the_limit_is_no_space_and_leaves_the_others_alone() {
    let host = capi_host(4);
    let handles: Vec<Handle> = (0..4).map(|_| open(&host, 's')).collect();
    let err = host.open(&node(&host, 'm'), OpenMode::Shared).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoSpace, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("emu:m") && text.contains("4 at most"),
        "{text}"
    );
    for handle in &handles {
        assert!(capi::memcpy_run(handle, 4, 1024).unwrap().verified());
    }
}

#[test]
fn mmio_needs_started_work_and_a_slave_stays_in_its_slice() {
    let host = capi_host(8);
    let other = open(&host, 's');
    let handle = open(&host, 's');
    let err = handle.map_mmio(0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("after start-work"), "{err}");
    assert!(capi::memcpy_run(&other, 1, 64).unwrap().verified());
    assert!(capi::memcpy_run(&handle, 1, 64).unwrap().verified());
    let mmio = handle.map_mmio(0).unwrap();
    // The host swaps the AFU's big-endian registers: the process handle reads as a number.
    let ph = mmio.read64(memcpy::PSA_PH).unwrap();
    let pe = ph >> memcpy::PH_SHIFT;
    assert!(pe < 8, "{ph:#x}");
    let err = mmio.read64(mmio.size()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("outside"), "{err}");
    let master = open(&host, 'm');
    assert!(capi::memcpy_run(&master, 1, 64).unwrap().verified());
    let whole = master.map_mmio(0).unwrap();
    let slice = memcpy::GLOBAL_AREA_SIZE + pe * mmio.size();
    assert_eq!(
        whole.read64(slice + memcpy::PSA_PH).unwrap(),
        ph,
        "the master sees every slice"
    );
}

#[test]
fn a_bad_element_faults_its_context_only_and_the_context_restarts() {
    let host = capi_host(8);
    let good = open(&host, 's');
    let bad = open(&host, 's');
    let data = bad.alloc(MemoryKind::Host, 4096).unwrap();
    let mut queue = WorkQueue::new(&bad, 3).unwrap();
    queue.push(copy(0x10, data.device_address(), 64)).unwrap();
    queue.push(interrupt(1)).unwrap();
    let kernel = bad.builtin_program().unwrap().kernel("memcpy").unwrap();
    let work = bad.create_queue().unwrap();
    let launch = work
        .enqueue_launch(
            &kernel,
            &[Arg::Memory(&queue.memory), Arg::U32(1), Arg::U32(1)],
        )
        .unwrap();
    // The other context completes its whole workload meanwhile.
    assert!(capi::memcpy_run(&good, 32, 8192).unwrap().verified());
    let err = launch.wait_timeout(Duration::from_secs(10)).unwrap_err();
    assert!(err.to_string().contains("data storage fault"), "{err}");
    assert!(err.to_string().contains("0x10"), "{err}");
    assert_eq!(
        queue.status(0).unwrap(),
        memcpy::STATUS_COMPLETE | memcpy::TRANS_FAULT
    );
    // Restart: the AFU goes past the faulting element and raises the interrupt.
    let irq = bad.register_event(EventKind::Interrupt, 1).unwrap();
    let mmio = bad.map_mmio(0).unwrap();
    mmio.write64(memcpy::PSA_PCTRL, memcpy::PCTRL_RESTART)
        .unwrap();
    irq.wait_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(queue.status(1).unwrap(), memcpy::STATUS_COMPLETE);
}

#[test]
fn closing_a_context_frees_its_slot() {
    let host = capi_host(1);
    let handle = open(&host, 's');
    assert!(capi::memcpy_run(&handle, 1, 64).unwrap().verified());
    let pe = handle.map_mmio(0).unwrap().read64(memcpy::PSA_PH).unwrap() >> 48;
    let err = host.open(&node(&host, 's'), OpenMode::Shared).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoSpace, "{err}");
    handle.close().unwrap();
    let again = open(&host, 's');
    assert!(capi::memcpy_run(&again, 1, 64).unwrap().verified());
    let reused = again.map_mmio(0).unwrap().read64(memcpy::PSA_PH).unwrap() >> 48;
    assert_eq!(pe, reused, "the new context reuses the slot");
}

#[test]
fn vadd_on_the_dedicated_afu() {
    let host = capi_host(2);
    let handle = open(&host, 'd');
    let report = capi::vadd_run(&handle, 100_000).unwrap();
    assert!(report.verified(), "{report:?}");
    let err = host.open(&node(&host, 'd'), OpenMode::Shared).unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::NoSpace,
        "a dedicated AFU has one context: {err}"
    );
    let err = capi::vadd_run(&handle, 10).unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::Busy,
        "work starts once per context: {err}"
    );
}

#[test]
fn a_vadd_larger_than_its_vectors_is_refused_before_it_starts() {
    let host = capi_host(2);
    let handle = open(&host, 'd');
    let kernel = handle.builtin_program().unwrap().kernel("vadd").unwrap();
    let queue = handle.create_queue().unwrap();
    let vectors: Vec<_> = (0..3)
        .map(|_| handle.alloc(MemoryKind::Host, 4096).unwrap())
        .collect();
    let launch = |elements: u32| {
        queue.enqueue_launch(
            &kernel,
            &[
                Arg::Memory(&vectors[0]),
                Arg::Memory(&vectors[1]),
                Arg::Memory(&vectors[2]),
                Arg::U32(elements),
            ],
        )
    };
    let err = launch(1025).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(
        err.to_string()
            .contains("argument 0 ('in1'): 1025 elements of 4 bytes do not fit in the 4096 bytes"),
        "{err}"
    );
    let report = capi::vadd_run(&handle, 1000).unwrap();
    assert!(
        report.verified(),
        "the refused launch left the context unstarted: {report:?}"
    );
}

#[test]
fn launches_check_their_arguments() {
    let host = capi_host(2);
    let handle = open(&host, 's');
    let program = handle.builtin_program().unwrap();
    let err = program.kernel("vadd").unwrap_err();
    assert!(err.to_string().contains("function is 'memcpy'"), "{err}");
    let kernel = program.kernel("memcpy").unwrap();
    let queue = handle.create_queue().unwrap();
    let err = queue.enqueue_launch(&kernel, &[Arg::U32(1)]).unwrap_err();
    assert!(
        err.to_string()
            .contains("takes 3 argument(s) (queue, depth, irq)"),
        "{err}"
    );
    let memory = handle.alloc(MemoryKind::Host, 4096).unwrap();
    let err = queue
        .enqueue_launch(&kernel, &[Arg::U32(1), Arg::U32(1), Arg::U32(1)])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("argument 0 ('queue') takes memory"),
        "{err}"
    );
    let err = queue
        .enqueue_launch(&kernel, &[Arg::Memory(&memory), Arg::U32(0), Arg::U32(1)])
        .unwrap_err();
    assert!(err.to_string().contains("1 to 4095 lines"), "{err}");
    let err = handle.alloc(MemoryKind::Device, 64).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    let err = handle.create_program(b"bitstream").unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
}

//! The worst-case host memory of one plugin, as `accelhost::worst_case_host_memory` states it
//! and the README's threat model writes it out: a plugin that takes every term at once (its
//! linear memory, its DMA grant, WASI resources, then memory watches until the host-memory
//! ledger stops it) makes the process's resident memory peak no higher than the formula,
//! and once its instance ends everything comes back. One test in its own binary, so that
//! nothing else moves the process's resident memory meanwhile.

mod support;

use std::time::{Duration, Instant};

use accelhost::perf::{peak_resident_bytes, restart_peak, trimmed_resident_bytes};
use accelhost::workloads::nlb0::loopback;
use accelhost::{Error, FaultCause, Filter, OpenMode, worst_case_host_memory};
use support::host;

/// Memory the process may grow by beyond the formula: the neighbour's loopback, the host's own
/// bookkeeping, the allocator's slack.
const SLACK: u64 = 24 << 20;

/// A chaos script (see guest-plugins/chaos/src/script.rs) that takes every term at once.
fn greedy_script() -> Vec<u8> {
    let repeat = |times: u32| {
        let mut op = vec![0xff];
        op.extend_from_slice(&(times - 1).to_le_bytes());
        op
    };
    let size = |bytes: u32| {
        let mut arg = vec![2];
        arg.extend_from_slice(&bytes.to_le_bytes());
        arg
    };
    let mut script = Vec::new();
    // 10 MiB of linear memory, touched.
    script.extend([24 + 23, 4]);
    script.extend(size(10 << 20));
    // 8 DMA buffers of 1 MiB, populated as DMA memory is: the grant of 9 MiB, nearly.
    script.extend(repeat(8));
    script.push(0);
    script.extend(size(1 << 20));
    // 2048 hour-long timers: 4096 table entries (a timer and its pollable), and host memory
    // that no import checks before taking it.
    script.extend(repeat(2048));
    script.push(24);
    script.push(3);
    script.extend(3_600_000_000_000u64.to_le_bytes());
    // A 4 KiB buffer (the ninth), and watches on it until the host budget is full.
    script.push(0);
    script.extend(size(4096));
    for _ in 0..4 {
        script.extend(repeat(4096));
        script.extend([4, 8, 0, 0]);
        script.extend(1u64.to_le_bytes());
        script.extend(1u64.to_le_bytes());
    }
    script
}

#[test]
fn one_plugin_holds_no_more_than_the_formula_and_gives_it_all_back() {
    let hex: String = greedy_script().iter().map(|b| format!("{b:02x}")).collect();
    let config = format!(
        r#"{{"devices": [{{"id": "w0", "family": "dfl"}}],
            "plugins": [
              {{"name": "dfl", "module": "builtin:dfl", "grants": {{"devices": ["emu:w0"]}}}},
              {{"name": "greedy", "module": "builtin:chaos",
                "config": {{"script_in": "open", "script": "{hex}"}},
                "grants": {{"dma_memory_mib": 9}},
                "load_policy": {{"memory_mib": 16, "host_memory_mib": 4, "max_resources": 32768,
                                 "call_timeout_ms": 20000, "on_fault": "disable"}}}}]}}"#
    );
    // A first host warms what a process starts once (the runtime, WASI's timers, the watch
    // thread), so that the figures below count only the plugin.
    drop(host(&config).unwrap());
    let before = restart_peak().expect("the kernel resets the peak resident memory");
    let host = host(&config).unwrap();
    let entry = host
        .config()
        .plugins
        .iter()
        .find(|p| p.name == "greedy")
        .unwrap();
    let formula = worst_case_host_memory(entry);
    let token = host
        .enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .remove(0);
    // The watches go on until the plugin holds more host memory than its budget: the ledger
    // finds that at the next import's exit, and the instance ends with that cause.
    match host.open(&token, OpenMode::Shared) {
        Err(Error::Faulted {
            cause: FaultCause::ResourceLimit { field, limit },
            reason,
            ..
        }) => {
            assert_eq!(field, "load_policy.host_memory_mib", "{reason}");
            assert_eq!(limit, 4 << 20);
        }
        other => panic!("the host-memory ledger must end the greedy plugin: {other:?}"),
    }
    let peak = peak_resident_bytes().saturating_sub(before);
    assert!(
        peak > (10 + 8) << 20,
        "the plugin took its linear memory and DMA grant at once: the peak grew by {} MiB",
        peak >> 20
    );
    assert!(
        peak <= formula + SLACK,
        "the plugin made the host peak at {} MiB; the formula allows {} MiB (+ {} MiB slack)",
        peak >> 20,
        formula >> 20,
        SLACK >> 20
    );
    eprintln!(
        "peaked at {} MiB of a worst case of {} MiB",
        peak >> 20,
        formula >> 20
    );
    let port = host
        .enumerate(&[Filter::new().vendor_id(0x8086)])
        .tokens
        .into_iter()
        .find(|t| t.plugin() == "dfl")
        .expect("the dfl plugin lists its port");
    let neighbour = host.open(&port, OpenMode::Exclusive).unwrap();
    assert!(loopback(&neighbour, 1 << 20).unwrap().verified());
    neighbour.close().unwrap();

    drop(host);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut after = trimmed_resident_bytes();
    while after.saturating_sub(before) > SLACK && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        after = trimmed_resident_bytes();
    }
    assert!(
        after.saturating_sub(before) <= SLACK,
        "{} MiB stayed after the host was dropped",
        (after - before) >> 20
    );
}

//! The xocl family and the offload API end to end: the shipped xocl plugin (compiled to wasm)
//! on the emulated XRT card, through the public embedding API.

use crate::support;

use std::time::Duration;

use accelhost::families::xocl::xclbin::{self, MemKind, XclbinBuilder};
use accelhost::workloads::vadd::{self, VADD_UUID, is_xocl};
use accelhost::{
    Arg, ErrorCode, EventStatus, Guid, Handle, Host, Kernel, Memory, MemoryKind, OpenMode,
};
use support::default_host;

fn open_card(host: &Host) -> Handle {
    let token = host
        .enumerate(&[])
        .tokens
        .into_iter()
        .find(is_xocl)
        .expect("the embedded default has an XRT card");
    host.open(&token, OpenMode::Exclusive).unwrap()
}

fn le_words(values: impl Iterator<Item = u32>) -> Vec<u8> {
    values.flat_map(u32::to_le_bytes).collect()
}

fn read_words(memory: &Memory, count: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; count * 4];
    memory.read(0, &mut bytes).unwrap();
    bytes
        .as_chunks::<4>()
        .0
        .iter()
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// vadd's arguments for link `i` of a chain of launches: chain[i + 1] = chain[i] + 1, right
/// only if launch `i` ran after launch `i - 1`. `one` holds 1.
fn chain_link<'a>(chain: &'a Memory, one: &'a Memory, i: u32) -> [Arg<'a>; 4] {
    [
        Arg::MemoryAt(chain, u64::from(i) * 4),
        Arg::Memory(one),
        Arg::MemoryAt(chain, u64::from(i + 1) * 4),
        Arg::U32(1),
    ]
}

/// A zeroed chain of `launches` links on `handle`, and the word 1 its launches add.
fn chain_of(handle: &Handle, launches: u32) -> (Memory, Memory) {
    let chain = handle
        .alloc(MemoryKind::Host, u64::from(launches + 1) * 4)
        .unwrap();
    chain.write(0, &0u32.to_le_bytes()).unwrap();
    let one = handle.alloc(MemoryKind::Host, 4).unwrap();
    one.write(0, &1u32.to_le_bytes()).unwrap();
    (chain, one)
}

/// Checks that every one of the chain's `launches` ran, in order; `what` names the chain.
fn assert_chain_ran(chain: &Memory, launches: u32, what: &str) {
    let values = read_words(chain, launches as usize + 1);
    for (i, value) in values.iter().enumerate() {
        assert_eq!(
            *value,
            i as u32,
            "{what}: launch {} ran out of order or not at all",
            i.max(1) - 1
        );
    }
}

#[test]
fn the_card_is_listed_with_its_loaded_xclbin() {
    let host = default_host();
    let handle = open_card(&host);
    let before = handle.token().properties().clone();
    assert_eq!((before.vendor_id, before.device_id), (0x10EE, 0x5001));
    assert_eq!(handle.token().id(), "xocl/emu:xocl0");
    vadd::load(&handle, 2).unwrap();
    let after = handle.token().refresh().unwrap();
    assert_eq!(
        after.guid, VADD_UUID,
        "the guid is the loaded xclbin's uuid"
    );
}

#[test]
fn vadd_is_exact_for_small_and_odd_sizes() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 2).unwrap();
    for n in [1, 1000, 1024, 65_537] {
        let report = vadd::run(&handle, &kernel, n).unwrap();
        assert!(report.verified(), "{n}: {report:?}");
    }
}

#[test]
fn vadd_runs_on_several_compute_units_at_once() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 4).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            let (handle, kernel) = (&handle, &kernel);
            scope.spawn(move || {
                let n = 50_000 + t * 1000;
                let a = handle.alloc(MemoryKind::Host, u64::from(n) * 4).unwrap();
                let b = handle.alloc(MemoryKind::Shared, u64::from(n) * 4).unwrap();
                let c = handle.alloc(MemoryKind::Host, u64::from(n) * 4).unwrap();
                a.write(0, &le_words((0..n).map(|i| i * t))).unwrap();
                b.write(0, &le_words((0..n).map(|i| i + t))).unwrap();
                let queue = handle.create_queue().unwrap();
                for _ in 0..5 {
                    queue
                        .enqueue_launch(
                            kernel,
                            &[
                                Arg::Memory(&a),
                                Arg::Memory(&b),
                                Arg::Memory(&c),
                                Arg::U32(n),
                            ],
                        )
                        .unwrap();
                }
                queue.finish().unwrap();
                let out = read_words(&c, n as usize);
                for (i, got) in out.iter().enumerate() {
                    let i = i as u32;
                    assert_eq!(*got, (i * t).wrapping_add(i + t), "thread {t} element {i}");
                }
            });
        }
    });
}

#[test]
fn ten_thousand_in_order_launches_each_checked() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 4).unwrap();
    const LAUNCHES: u32 = 10_000;
    let (chain, one) = chain_of(&handle, LAUNCHES);
    let queue = handle.create_queue().unwrap();
    let mut events = Vec::new();
    for i in 0..LAUNCHES {
        let event = queue
            .enqueue_launch(&kernel, &chain_link(&chain, &one, i))
            .unwrap();
        if i % 1000 == 999 {
            events.push(event);
        }
    }
    for event in &events {
        event.wait().unwrap();
        assert_eq!(event.status(), EventStatus::Complete);
    }
    queue.finish().unwrap();
    assert_chain_ran(&chain, LAUNCHES, "in-order launches");
}

/// How many calls of `call` the plugin behind `handle` answered so far.
fn calls_of(host: &Host, handle: &Handle, call: &str) -> u64 {
    let info = host.plugin(handle.token().plugin()).unwrap();
    info.calls
        .iter()
        .find(|figures| figures.call == call)
        .map_or(0, |figures| figures.calls)
}

#[test]
fn deferred_launches_run_in_order_in_batches_and_a_refused_one_is_the_finish_error() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 4).unwrap();
    const LAUNCHES: u32 = 1_000;
    const REFUSED_AFTER: u32 = 600;
    let (chain, one) = chain_of(&handle, LAUNCHES);
    let queue = handle.create_queue().unwrap();
    let batches_before = calls_of(&host, &handle, "enqueue-launches");
    let singles_before = calls_of(&host, &handle, "enqueue-launch");
    for i in 0..LAUNCHES {
        queue
            .defer_launch(&kernel, &chain_link(&chain, &one, i))
            .unwrap();
        if i == REFUSED_AFTER {
            // The plugin refuses this one when it is handed on, not here.
            queue
                .defer_launch(&kernel, &[Arg::Memory(&one), Arg::Memory(&one)])
                .unwrap();
        }
    }
    let err = queue.finish().unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(
        err.to_string()
            .contains("launch of vadd: kernel 'vadd' takes 4 argument(s)"),
        "{err}"
    );
    queue.finish().expect("a refusal is reported once");
    assert_chain_ran(&chain, LAUNCHES, "held-back launches");
    let batches = calls_of(&host, &handle, "enqueue-launches") - batches_before;
    assert!(
        (4..=6).contains(&batches),
        "1,001 launches held back 256 at most went in {batches} batch call(s)"
    );
    assert_eq!(calls_of(&host, &handle, "enqueue-launch"), singles_before);
}

#[test]
fn a_batch_of_launches_is_one_call_with_one_event_and_its_own_refusal() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 4).unwrap();
    const LAUNCHES: u32 = 12;
    let (chain, one) = chain_of(&handle, LAUNCHES);
    let queue = handle.create_queue().unwrap();
    let batches_before = calls_of(&host, &handle, "enqueue-launches");
    // Two held back first, the second refused when handed on: that refusal stays the next
    // flush's, not the batch's.
    queue
        .defer_launch(&kernel, &chain_link(&chain, &one, 0))
        .unwrap();
    queue
        .defer_launch(&kernel, &[Arg::Memory(&one), Arg::Memory(&one)])
        .unwrap();
    let links: Vec<[Arg<'_>; 4]> = (1..6).map(|i| chain_link(&chain, &one, i)).collect();
    let batch: Vec<(&Kernel, &[Arg<'_>])> = links.iter().map(|args| (&kernel, &args[..])).collect();
    let last = queue.enqueue_launches(&batch).unwrap();
    last.wait().unwrap();
    assert_eq!(read_words(&chain, 7)[..7], [0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(
        calls_of(&host, &handle, "enqueue-launches") - batches_before,
        2,
        "what was held back, then the batch, each in one call"
    );
    let held_back = queue.flush().unwrap_err();
    assert!(
        held_back.to_string().contains("takes 4 argument(s)"),
        "{held_back}"
    );

    // A launch the plugin refuses in a batch is the batch's error; the ones around it run.
    let refused = [Arg::Memory(&one), Arg::Memory(&one)];
    let (before, after) = (chain_link(&chain, &one, 6), chain_link(&chain, &one, 7));
    let batch: Vec<(&Kernel, &[Arg<'_>])> =
        vec![(&kernel, &before), (&kernel, &refused), (&kernel, &after)];
    let err = queue.enqueue_launches(&batch).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("launch of vadd"), "{err}");
    queue
        .finish()
        .expect("the refusal was reported once, by the batch");
    assert_eq!(read_words(&chain, 9)[6..], [6, 7, 8]);

    // No launch at all is refused before the plugin is asked.
    let err = queue.enqueue_launches(&[]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
}

/// A caller's batch longer than `LAUNCHES_PER_BATCH` (an XRT run list of 600 runs) reaches the
/// plugin in calls of at most that many, so that no one call runs past the plugin's deadline,
/// and its launches still run in order, the last one's event the batch's.
#[test]
fn a_long_batch_reaches_the_plugin_a_batchs_worth_at_a_time() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 4).unwrap();
    const LAUNCHES: u32 = 600;
    let (chain, one) = chain_of(&handle, LAUNCHES);
    let queue = handle.create_queue().unwrap();
    let links: Vec<[Arg<'_>; 4]> = (0..LAUNCHES).map(|i| chain_link(&chain, &one, i)).collect();
    let batch: Vec<(&Kernel, &[Arg<'_>])> = links.iter().map(|args| (&kernel, &args[..])).collect();
    let batches_before = calls_of(&host, &handle, "enqueue-launches");
    let last = queue.enqueue_launches(&batch).unwrap();
    last.wait().unwrap();
    assert_chain_ran(&chain, LAUNCHES, "a batch of 600");
    assert_eq!(
        calls_of(&host, &handle, "enqueue-launches") - batches_before,
        LAUNCHES.div_ceil(accelhost::LAUNCHES_PER_BATCH as u32) as u64,
        "600 launches, at most {} a call",
        accelhost::LAUNCHES_PER_BATCH
    );
}

/// A batch is answered by its last launch's event, so a launch failing on the card fails the
/// launches after it in the batch, however soon it failed; the queue's next command does not
/// wait on the failure.
#[test]
fn a_launch_failing_in_a_batch_fails_the_rest_of_the_batch() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 4).unwrap();
    let queue = handle.create_queue().unwrap();
    const LAUNCHES: u32 = 8;
    for round in 0..20 {
        let (chain, one) = chain_of(&handle, LAUNCHES);
        let mut links: Vec<[Arg<'_>; 4]> =
            (0..LAUNCHES).map(|i| chain_link(&chain, &one, i)).collect();
        // Past the end of its buffers: the card fails it.
        links[1][3] = Arg::U32(1 << 20);
        let batch: Vec<(&Kernel, &[Arg<'_>])> =
            links.iter().map(|args| (&kernel, &args[..])).collect();
        let last = queue.enqueue_launches(&batch).unwrap();
        assert!(
            last.wait().is_err(),
            "round {round}: the batch's event failed"
        );
        let values = read_words(&chain, LAUNCHES as usize + 1);
        assert_eq!(
            values[1], 1,
            "round {round}: the launch before the failed one ran"
        );
        assert!(
            values[3..].iter().all(|&v| v == 0),
            "round {round}: no launch after the failed one ran: {values:?}"
        );
    }
    // Past a call's worth: the calls after the one with the failed launch do not run theirs.
    const LONG: u32 = 600;
    let (chain, one) = chain_of(&handle, LONG);
    let mut links: Vec<[Arg<'_>; 4]> = (0..LONG).map(|i| chain_link(&chain, &one, i)).collect();
    links[1][3] = Arg::U32(1 << 20);
    let batch: Vec<(&Kernel, &[Arg<'_>])> = links.iter().map(|args| (&kernel, &args[..])).collect();
    assert!(queue.enqueue_launches(&batch).unwrap().wait().is_err());
    let values = read_words(&chain, LONG as usize + 1);
    let ran: Vec<usize> = (3..values.len()).filter(|&i| values[i] != 0).collect();
    assert!(
        ran.is_empty(),
        "launches after the failed one ran, writing {ran:?}"
    );

    let (chain, one) = chain_of(&handle, 1);
    queue
        .enqueue_launch(&kernel, &chain_link(&chain, &one, 0))
        .unwrap()
        .wait()
        .unwrap();
    assert_chain_ran(&chain, 1, "a launch after the failed batches");
}

#[test]
fn threads_holding_back_launches_on_one_queue_keep_each_ones_order() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 4).unwrap();
    let queue = handle.create_queue().unwrap();
    const THREADS: usize = 4;
    const LAUNCHES: u32 = 700;
    let chains: Vec<_> = (0..THREADS).map(|_| chain_of(&handle, LAUNCHES)).collect();
    std::thread::scope(|scope| {
        for (chain, one) in &chains {
            let (queue, kernel) = (&queue, &kernel);
            scope.spawn(move || {
                for i in 0..LAUNCHES {
                    queue
                        .defer_launch(kernel, &chain_link(chain, one, i))
                        .unwrap();
                    if i % 97 == 0 {
                        queue.flush().unwrap();
                    }
                }
            });
        }
        // Another thread finishes the queue while they hold launches back.
        scope.spawn(|| {
            for _ in 0..20 {
                queue.finish().unwrap();
            }
        });
    });
    queue.finish().unwrap();
    for (t, (chain, _)) in chains.iter().enumerate() {
        assert_chain_ran(chain, LAUNCHES, &format!("thread {t}"));
    }
}

#[test]
fn launches_held_back_go_before_any_later_command_and_with_the_queue() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 1).unwrap();
    let a = handle.alloc(MemoryKind::Host, 4).unwrap();
    let b = handle.alloc(MemoryKind::Host, 4).unwrap();
    let sum = handle.alloc(MemoryKind::Device, 4).unwrap();
    let out = handle.alloc(MemoryKind::Host, 4).unwrap();
    a.write(0, &40u32.to_le_bytes()).unwrap();
    b.write(0, &2u32.to_le_bytes()).unwrap();
    let queue = handle.create_queue().unwrap();
    let args = [
        Arg::Memory(&a),
        Arg::Memory(&b),
        Arg::Memory(&sum),
        Arg::U32(1),
    ];
    // A copy after a held-back launch sees what the launch wrote.
    queue.defer_launch(&kernel, &args).unwrap();
    queue
        .enqueue_memcpy(&out, 0, &sum, 0, 4)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(read_words(&out, 1), [42]);
    // A read of device memory through the queue, too.
    b.write(0, &3u32.to_le_bytes()).unwrap();
    queue.defer_launch(&kernel, &args).unwrap();
    let mut bytes = [0u8; 4];
    queue.read(&sum, 0, &mut bytes).unwrap();
    assert_eq!(u32::from_le_bytes(bytes), 43);
    // The queue's events include the batch's once it is handed on.
    b.write(0, &4u32.to_le_bytes()).unwrap();
    queue.defer_launch(&kernel, &args).unwrap();
    for event in queue.pending_events() {
        event.wait().unwrap();
    }
    queue
        .enqueue_memcpy(&out, 0, &sum, 0, 4)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(read_words(&out, 1), [44]);
    // Dropping the queue runs what it held back before the queue goes.
    b.write(0, &5u32.to_le_bytes()).unwrap();
    queue.defer_launch(&kernel, &args).unwrap();
    drop(queue);
    let queue = handle.create_queue().unwrap();
    queue
        .enqueue_memcpy(&out, 0, &sum, 0, 4)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(read_words(&out, 1), [45]);
}

#[test]
fn memcpy_in_every_direction() {
    let host = default_host();
    let handle = open_card(&host);
    vadd::load(&handle, 1).unwrap();
    let size = 256 * 1024;
    let pattern: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
    let host_a = handle.alloc(MemoryKind::Host, size as u64).unwrap();
    let host_b = handle.alloc(MemoryKind::Host, size as u64).unwrap();
    let shared = handle.alloc(MemoryKind::Shared, size as u64).unwrap();
    let dev_a = handle.alloc(MemoryKind::Device, size as u64).unwrap();
    let dev_b = handle.alloc(MemoryKind::Device, size as u64).unwrap();
    host_a.write(0, &pattern).unwrap();
    let queue = handle.create_queue().unwrap();
    let n = size as u64;
    queue.enqueue_memcpy(&dev_a, 0, &host_a, 0, n).unwrap(); // host → device
    queue.enqueue_memcpy(&dev_b, 0, &dev_a, 0, n).unwrap(); // device → device
    queue.enqueue_memcpy(&shared, 0, &dev_b, 0, n).unwrap(); // device → shared
    queue
        .enqueue_memcpy(&host_b, 4096, &shared, 0, n - 4096)
        .unwrap(); // shared → host, offset
    queue.finish().unwrap();
    let mut out = vec![0u8; size];
    shared.read(0, &mut out).unwrap();
    assert!(out == pattern, "host→device→device→shared");
    host_b.read(0, &mut out).unwrap();
    assert!(out[..4096].iter().all(|&b| b == 0));
    assert!(
        out[4096..] == pattern[..size - 4096],
        "shared→host at an offset"
    );
    let err = dev_a.read(0, &mut out).unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::InvalidArgument,
        "device memory is not host-visible"
    );
    let err = queue.enqueue_memcpy(&dev_a, 1, &host_a, 0, n).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("run past"), "{err}");
}

/// The DMA memory the xocl plugin holds now.
fn xocl_dma_bytes(host: &Host) -> u64 {
    host.plugin("xocl")
        .expect("the embedded default has the xocl plugin")
        .memory
        .dma_bytes
}

#[test]
fn queue_transfers_stage_through_a_few_reused_buffers_whatever_their_size() {
    let host = default_host();
    let handle = open_card(&host);
    vadd::load(&handle, 1).unwrap();
    let size: usize = 40 << 20;
    let device = handle.alloc(MemoryKind::Device, size as u64).unwrap();
    let queue = handle.create_queue().unwrap();
    let before = xocl_dma_bytes(&host);
    let pattern: Vec<u8> = (0..size).map(|i| (i * 31 % 253) as u8).collect();
    queue.write(&device, 0, &pattern).unwrap().wait().unwrap();
    let mut back = vec![0u8; size];
    queue.read(&device, 0, &mut back).unwrap();
    assert!(
        back == pattern,
        "40 MiB written and read back through staging"
    );
    // Two buffers of one 8 MiB piece each, kept for the next transfers: not 40 MiB twice.
    let staged = xocl_dma_bytes(&host) - before;
    assert!(
        staged > 0 && staged <= 16 << 20,
        "{staged} bytes of staging kept"
    );

    // Pieces that end anywhere, at odd offsets, read and written in both orders.
    let piece = 8 << 20;
    for (offset, len) in [
        (0, 0),
        (1, 1),
        (3, piece - 1),
        (5, piece),
        (7, piece + 1),
        (11, 2 * piece + 3),
    ] {
        let data: Vec<u8> = (0..len).map(|i| (i % 241) as u8 ^ offset as u8).collect();
        queue.write(&device, offset as u64, &data).unwrap();
        let mut out = vec![0u8; len];
        queue.read(&device, offset as u64, &mut out).unwrap();
        assert!(out == data, "{len} bytes at {offset}");
    }
    assert!(
        xocl_dma_bytes(&host) - before <= 16 << 20,
        "still two buffers"
    );

    // Host-visible memory is written and read directly, in the queue's order.
    let host_memory = handle.alloc(MemoryKind::Host, 4096).unwrap();
    queue
        .write(&host_memory, 8, b"direct")
        .unwrap()
        .wait()
        .unwrap();
    let mut out = [0u8; 6];
    queue.read(&host_memory, 8, &mut out).unwrap();
    assert_eq!(&out, b"direct");

    // Out of range: refused before anything moves, naming the call.
    let err = queue.write(&device, size as u64 - 1, b"xy").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("queue-write"), "{err}");
    let err = queue.read(&device, u64::MAX, &mut out).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("queue-read"), "{err}");
}

#[test]
fn threads_sharing_a_queue_transfer_their_own_regions_at_once() {
    let host = default_host();
    let handle = open_card(&host);
    vadd::load(&handle, 1).unwrap();
    let region: usize = 12 << 20;
    let threads = 4;
    let device = handle
        .alloc(MemoryKind::Device, (region * threads) as u64)
        .unwrap();
    let queue = handle.create_queue().unwrap();
    let before = xocl_dma_bytes(&host);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (queue, device) = (queue.clone(), device.clone());
            scope.spawn(move || {
                let at = (t * region) as u64;
                for round in 0..3u8 {
                    let data: Vec<u8> = (0..region)
                        .map(|i| (i as u8) ^ (t as u8 * 16 + round))
                        .collect();
                    queue.write(&device, at, &data).unwrap();
                    let mut back = vec![0u8; region];
                    queue.read(&device, at, &mut back).unwrap();
                    assert!(back == data, "thread {t}, round {round}");
                }
            });
        }
    });
    // Each thread holds at most two buffers at a time; the queue keeps two afterwards.
    let kept = xocl_dma_bytes(&host) - before;
    assert!(kept <= 16 << 20, "{kept} bytes of staging kept");
}

#[test]
fn a_transfer_larger_than_what_the_grant_leaves_goes_through_in_pieces() {
    // 48 MiB of device memory under a 64 MiB grant: a staging copy of the whole transfer
    // would not fit beside it; two pieces of 8 MiB do.
    let host = support::host(
        r#"{"devices": [{"id": "x0", "family": "xocl"}],
            "plugins": [{"name": "xocl", "module": "builtin:xocl",
                         "grants": {"devices": ["emu:x0"], "dma_memory_mib": 64}}]}"#,
    )
    .unwrap();
    let handle = open_card(&host);
    vadd::load(&handle, 1).unwrap();
    let size: usize = 48 << 20;
    let device = handle.alloc(MemoryKind::Device, size as u64).unwrap();
    let whole = handle.alloc(MemoryKind::Host, size as u64).unwrap_err();
    assert_eq!(whole.code(), ErrorCode::OutOfMemory, "{whole}");
    let queue = handle.create_queue().unwrap();
    let pattern: Vec<u8> = (0..size).map(|i| (i % 249) as u8).collect();
    queue.write(&device, 0, &pattern).unwrap().wait().unwrap();
    let mut back = vec![0u8; size];
    queue.read(&device, 0, &mut back).unwrap();
    assert!(back == pattern, "48 MiB through 16 MiB of staging");
}

#[test]
fn events_are_waited_one_by_one_and_by_queue() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 2).unwrap();
    let n = 1 << 16;
    let a = handle.alloc(MemoryKind::Host, n * 4).unwrap();
    let c = handle.alloc(MemoryKind::Host, n * 4).unwrap();
    let queue = handle.create_queue().unwrap();
    let first = queue
        .enqueue_launch(
            &kernel,
            &[
                Arg::Memory(&a),
                Arg::Memory(&a),
                Arg::Memory(&c),
                Arg::U32(n as u32),
            ],
        )
        .unwrap();
    let copy = queue.enqueue_memcpy(&a, 0, &c, 0, n * 4).unwrap();
    first.wait_timeout(Duration::from_secs(10)).unwrap();
    copy.wait().unwrap();
    let events: Vec<_> = (0..8)
        .map(|_| {
            queue
                .enqueue_launch(
                    &kernel,
                    &[
                        Arg::Memory(&a),
                        Arg::Memory(&a),
                        Arg::Memory(&a),
                        Arg::U32(n as u32),
                    ],
                )
                .unwrap()
        })
        .collect();
    queue.finish().unwrap();
    assert!(events.iter().all(|e| e.status() == EventStatus::Complete));
}

#[test]
fn objects_live_until_their_last_release() {
    let host = default_host();
    let handle = open_card(&host);
    let program = handle.create_program(&vadd::vadd_image(1)).unwrap();
    let kernel = program.kernel("vadd").unwrap();
    drop(program);
    let memory = handle.alloc(MemoryKind::Host, 64).unwrap();
    let retained = memory.clone();
    drop(memory);
    retained
        .write(0, &le_words([1u32, 2, 3].into_iter()))
        .unwrap();
    let queue = handle.create_queue().unwrap();
    // The kernel keeps its program alive, the clone keeps the memory alive.
    queue
        .enqueue_launch(
            &kernel,
            &[
                Arg::Memory(&retained),
                Arg::Memory(&retained),
                Arg::Memory(&retained),
                Arg::U32(3),
            ],
        )
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(read_words(&retained, 3), [2, 4, 6]);
    // Closing the handle ends everything made through it.
    let queue2 = queue.clone();
    drop(queue);
    handle.clone().close().unwrap();
    let err = queue2
        .enqueue_launch(
            &kernel,
            &[
                Arg::Memory(&retained),
                Arg::Memory(&retained),
                Arg::Memory(&retained),
                Arg::U32(3),
            ],
        )
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::Stale, "{err}");
    assert_eq!(
        retained.write(0, &[0]).unwrap_err().code(),
        ErrorCode::Stale
    );
}

#[test]
fn launches_with_wrong_arguments_name_the_argument() {
    let host = default_host();
    let handle = open_card(&host);
    let kernel = vadd::load(&handle, 1).unwrap();
    let m = handle.alloc(MemoryKind::Host, 64).unwrap();
    let queue = handle.create_queue().unwrap();
    let err = queue
        .enqueue_launch(&kernel, &[Arg::Memory(&m), Arg::Memory(&m)])
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(
        err.to_string()
            .contains("takes 4 argument(s) (in1, in2, out_r, size), got 2"),
        "{err}"
    );
    let err = queue
        .enqueue_launch(
            &kernel,
            &[Arg::Memory(&m), Arg::U32(5), Arg::Memory(&m), Arg::U32(1)],
        )
        .unwrap_err();
    assert!(err.to_string().contains("argument 1 ('in2')"), "{err}");
    assert!(
        err.to_string()
            .contains("takes memory, got a 32-bit scalar"),
        "{err}"
    );
    let err = queue
        .enqueue_launch(
            &kernel,
            &[
                Arg::Memory(&m),
                Arg::Memory(&m),
                Arg::Memory(&m),
                Arg::U64(1),
            ],
        )
        .unwrap_err();
    assert!(err.to_string().contains("argument 3 ('size')"), "{err}");
    let err = queue
        .enqueue_launch(
            &kernel,
            &[
                Arg::Memory(&m),
                Arg::Memory(&m),
                Arg::Memory(&m),
                Arg::U32(2000),
            ],
        )
        .unwrap()
        .wait()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("outside this client's buffer objects"),
        "{err}"
    );
    // The queue goes on after a failed command.
    queue
        .enqueue_launch(
            &kernel,
            &[
                Arg::Memory(&m),
                Arg::Memory(&m),
                Arg::Memory(&m),
                Arg::U32(16),
            ],
        )
        .unwrap()
        .wait()
        .expect("a launch after a failed one runs");
    let err = handle
        .create_program(&vadd::vadd_image(1))
        .unwrap()
        .kernel("vmul")
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound, "{err}");
    assert!(err.to_string().contains("no kernel 'vmul'"), "{err}");
}

#[test]
fn malformed_images_are_refused_before_the_plugin() {
    let host = default_host();
    let handle = open_card(&host);
    let good = vadd::vadd_image(1);
    let mut bad_magic = good.clone();
    bad_magic[..7].copy_from_slice(b"xclbin9");
    let truncated = good[..good.len() - 10].to_vec();
    let mut out_of_bounds = good.clone();
    // The first section header's offset (at 456 + 24) moved past the end of the file.
    out_of_bounds[480..488].copy_from_slice(&(good.len() as u64 * 2).to_le_bytes());
    for (image, expect) in [
        (&truncated, "malformed"),
        (&out_of_bounds, "runs past the end"),
    ] {
        let err = handle.create_program(image).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        assert!(err.to_string().contains(expect), "{expect}: {err}");
    }
    let err = handle.create_program(&bad_magic).unwrap_err();
    assert!(
        err.to_string().contains("magic") || err.to_string().contains("xclbin"),
        "{err}"
    );

    let unknown = XclbinBuilder::new(Guid::new(9, 9))
        .bank(MemKind::Ddr4, "bank0", 0, 1 << 30)
        .kernel(xclbin::KernelMeta {
            name: "vmul".into(),
            args: vec![xclbin::KernelArg {
                name: "a".into(),
                index: 0,
                offset: 0x10,
                size: 8,
                kind: xclbin::ArgKind::Global,
            }],
        })
        .compute_unit("vmul", "vmul_1", 0x180_0000)
        .connect("vmul_1", 0, 0)
        .build();
    let err = handle.create_program(&unknown).unwrap_err();
    assert!(err.to_string().contains("unknown kernel 'vmul'"), "{err}");
}

#[test]
fn an_xclbin_of_other_banks_cannot_replace_one_in_use_and_one_of_the_same_loads_beside_it() {
    let host = default_host();
    let handle = open_card(&host);
    let first = vadd::load(&handle, 2).unwrap();
    let other_banks = XclbinBuilder::vadd(Guid::new(1, 1), 1, 2).build();
    let err = handle.create_program(&other_banks).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Busy, "{err}");
    let same_banks = XclbinBuilder::vadd(Guid::new(2, 2), 3, 1).build();
    let second = handle
        .create_program(&same_banks)
        .unwrap()
        .kernel("vadd")
        .unwrap();
    for kernel in [&first, &second, &first] {
        let report = vadd::run(&handle, kernel, 4096).unwrap();
        assert!(report.verified(), "{report:?}");
    }
}

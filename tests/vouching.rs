//! The host vouches for what it hands on: a plugin that lies about memory, ids or time is
//! faulted with the lie named, and the caller gets an error, never a buffer shorter than it
//! asked for, an id that names another caller's object, or an event that never ends.

use std::time::{Duration, Instant};

use accelhost::{
    Arg, ErrorCode, EventStatus, Falsehood, FaultCause, Filter, Handle, Host, Kernel, MemoryKind,
    OpenMode, Queue,
};

use crate::support;

const TWO_MIB: u64 = 2 << 20;

/// A host with one chaos plugin telling `lies`, with `policy` (JSON members) for its
/// `load_policy`, opened on its device.
fn lying(lies: &[&str], policy: &str) -> (Host, Handle) {
    let lies: Vec<String> = lies.iter().map(|l| format!("\"{l}\"")).collect();
    chaos_alone(
        "liar",
        &format!(r#"{{"lie": [{}]}}"#, lies.join(", ")),
        policy,
    )
}

/// The chaos plugin `name`, told `config`, alone on a host with `policy`; its device open.
fn chaos_alone(name: &str, config: &str, policy: &str) -> (Host, Handle) {
    let plugin = support::chaos_plugin_with(name, config, &[], policy);
    let host = support::host(&format!(r#"{{"plugins": [{plugin}]}}"#)).unwrap();
    let token = host
        .enumerate(&[Filter::new()])
        .tokens
        .into_iter()
        .find(|t| t.plugin() == name)
        .unwrap_or_else(|| panic!("{name} lists its device"));
    let handle = host.open(&token, OpenMode::Shared).unwrap();
    (host, handle)
}

/// The chaos plugin's kernel `k` on `handle`, and a new queue.
fn chaos_kernel_and_queue(handle: &Handle) -> (Kernel, Queue) {
    let kernel = handle
        .create_program(b"chaos")
        .unwrap()
        .kernel("k")
        .unwrap();
    (kernel, handle.create_queue().unwrap())
}

/// Holds back three launches of `kernel` on `queue`.
fn hold_back_three(queue: &Queue, kernel: &Kernel) {
    for n in 0..3 {
        queue.defer_launch(kernel, &[Arg::U32(n)]).unwrap();
    }
}

/// How many calls of `call` the plugin `plugin` answered, and how many of them faulted.
fn calls_of(host: &Host, plugin: &str, call: &str) -> (u64, u64) {
    let info = host.plugin(plugin).unwrap();
    info.calls
        .iter()
        .find(|c| c.call == call)
        .map_or((0, 0), |c| (c.calls, c.faults))
}

fn lie_about(err: &accelhost::Error) -> Option<Falsehood> {
    match err.fault_cause() {
        Some(FaultCause::Lie { about }) => Some(*about),
        _ => None,
    }
}

#[test]
fn a_buffer_shorter_than_asked_is_refused_and_faults_the_plugin() {
    let (host, handle) = lying(&["short-buffer"], r#""on_fault": "disable""#);
    let err = handle.prepare_buffer(TWO_MIB).unwrap_err();
    assert_eq!(lie_about(&err), Some(Falsehood::Memory), "{err}");
    assert_eq!(err.code(), ErrorCode::PluginFaulted);
    assert!(
        err.to_string()
            .contains("prepare-buffer of 2097152 bytes with a buffer of 4096 bytes"),
        "{err}"
    );
    let info = host.plugin("liar").unwrap();
    assert!(
        info.status.to_string().contains("lie about memory"),
        "{}",
        info.status
    );

    let (_host, handle) = lying(&["short-buffer"], r#""on_fault": "disable""#);
    let err = handle.alloc(MemoryKind::Host, TWO_MIB).unwrap_err();
    assert_eq!(lie_about(&err), Some(Falsehood::Memory), "{err}");
    let (_host, handle) = lying(&["short-buffer"], "");
    // A request the short buffer covers is no lie.
    let buffer = handle.prepare_buffer(4096).unwrap();
    assert!(buffer.size() >= 4096);
}

#[test]
fn host_memory_answered_without_a_buffer_is_a_lie() {
    let (_host, handle) = lying(&["no-host-memory"], "");
    let err = handle.alloc(MemoryKind::Shared, 4096).unwrap_err();
    assert_eq!(lie_about(&err), Some(Falsehood::Memory), "{err}");
    let (_host, handle) = lying(&["no-host-memory"], "");
    handle
        .alloc(MemoryKind::Device, 4096)
        .expect("device memory needs no host buffer");
}

#[test]
fn an_id_given_twice_is_refused_and_the_first_object_stays_whole() {
    let (_host, handle) = lying(&["repeat-id"], "");
    let first = handle.prepare_buffer(8192).unwrap();
    first.write(0, b"kept").unwrap();
    let pointer = first.host_ptr();
    let err = handle.prepare_buffer(8192).unwrap_err();
    assert_eq!(lie_about(&err), Some(Falsehood::Id), "{err}");
    assert!(err.to_string().contains("buffer id 1 again"), "{err}");
    // The first buffer's memory is the program's until it drops the buffer, as OPAE promises
    // for a prepared buffer's address: the fault cut the device off, not the program.
    // SAFETY: the buffer is 8192 bytes and lives until the end of the test.
    unsafe {
        assert_eq!(std::slice::from_raw_parts(pointer, 4), b"kept");
        pointer.add(8191).write(1);
    }
    drop(first);

    for what in ["allocation", "queue", "program"] {
        let (_host, handle) = lying(&["repeat-id"], "");
        let err = hold_two(&handle, what);
        assert_eq!(lie_about(&err), Some(Falsehood::Id), "{what}: {err}");
        assert!(
            err.to_string().contains(&format!("{what} id 1 again")),
            "{err}"
        );
    }
}

/// Makes two live objects of `what` on `handle`; returns the second one's error.
fn hold_two(handle: &Handle, what: &str) -> accelhost::Error {
    match what {
        "allocation" => {
            let _first = handle.alloc(MemoryKind::Device, 64).unwrap();
            handle.alloc(MemoryKind::Device, 64).unwrap_err()
        }
        "queue" => {
            let _first = handle.create_queue().unwrap();
            handle.create_queue().unwrap_err()
        }
        _ => {
            let _first = handle.create_program(&[]).unwrap();
            handle.create_program(&[]).unwrap_err()
        }
    }
}

#[test]
fn honest_ids_are_taken_again_once_released() {
    let (_host, handle) = lying(&[], "");
    for _ in 0..3 {
        let a = handle.prepare_buffer(4096).unwrap();
        let b = handle.prepare_buffer(4096).unwrap();
        assert_ne!(a.id(), b.id(), "the host's ids are its own");
        drop((a, b));
    }
}

#[test]
fn workspace_ids_are_the_hosts_and_never_repeat() {
    let (_host, handle) = lying(&[], "");
    let mut seen = std::collections::HashSet::new();
    for _ in 0..100 {
        let buffer = handle.prepare_buffer(4096).unwrap();
        assert!(seen.insert(buffer.id()), "id {} given twice", buffer.id());
    }
}

#[test]
fn an_event_that_never_completes_fails_at_the_event_deadline() {
    let deadline_ms = 400;
    let (host, handle) = lying(
        &["pending-events"],
        &format!(r#""event_deadline_ms": {deadline_ms}, "on_fault": "disable""#),
    );
    let queue = handle.create_queue().unwrap();
    let program = handle.create_program(&[]).unwrap();
    let kernel = program.kernel("any").unwrap();
    let events: Vec<_> = (0..3)
        .map(|_| queue.enqueue_launch(&kernel, &[]).unwrap())
        .collect();
    let started = Instant::now();
    // Bounded here so that the test fails, rather than hangs, without the deadline.
    let err = events[0]
        .wait_timeout(Duration::from_millis(deadline_ms + 5000))
        .unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.code(), ErrorCode::Timeout, "{err}");
    assert!(
        err.to_string().contains("load_policy.event_deadline_ms"),
        "{err}"
    );
    assert!(
        waited < Duration::from_millis(deadline_ms + 5000),
        "waited {waited:?}"
    );
    assert!(queue.finish().is_err(), "the queue's wait returns too");
    for event in &events {
        assert!(matches!(event.status(), EventStatus::Failed(_)));
    }
    // The plugin was faulted for it, as its policy says.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let info = host.plugin("liar").unwrap();
        if let accelhost::PluginStatus::Faulted { cause, .. } = &info.status {
            assert_eq!(*cause, FaultCause::EventDeadline { deadline_ms });
            break;
        }
        assert!(Instant::now() < until, "not faulted: {}", info.status);
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_plugins_failure_messages_are_kept_once_however_many_events_a_program_keeps() {
    let (_host, handle) = lying(&["failed-events"], r#""host_memory_mib": 64"#);
    let queue = handle.create_queue().unwrap();
    let program = handle.create_program(&[]).unwrap();
    let kernel = program.kernel("any").unwrap();
    let kept: Vec<_> = (0..2000)
        .map(|_| queue.enqueue_launch(&kernel, &[]).unwrap())
        .collect();
    let mut messages = std::collections::HashSet::new();
    for event in &kept {
        match event.status() {
            EventStatus::Failed(why) => {
                messages.insert(why);
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        messages.len() <= 257,
        "{} different messages held (256 kept, and the one that says the rest was dropped)",
        messages.len()
    );
    assert!(messages.iter().any(|m| m.contains("was dropped")));
    assert!(messages.iter().any(|m| m.contains("chaos command")));
}

#[test]
fn an_mmio_region_the_device_did_not_declare_is_refused_before_the_plugin() {
    let (_host, handle) = lying(&[], r#""on_fault": "disable""#);
    let err = handle.map_mmio(1).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("has 1 MMIO region(s)"), "{err}");
    // The plugin was not asked: it is still running.
    assert!(handle.is_open());
}

#[test]
fn a_port_enumerated_while_another_holds_it_keeps_its_regions() {
    let host = support::default_host();
    let find = || {
        host.enumerate(&[Filter::new()])
            .tokens
            .into_iter()
            .find(|t| t.id() == "dfl/emu:dfl0")
            .expect("the default lists dfl0")
    };
    let holder = host.open(&find(), OpenMode::Exclusive).unwrap();
    // Enumerated while held: still one region, the AFU's.
    let seen_busy = find();
    assert_eq!(seen_busy.properties().num_mmio, 1);
    holder.close().unwrap();
    let handle = host.open(&seen_busy, OpenMode::Exclusive).unwrap();
    handle.map_mmio(0).unwrap();
    handle.close().unwrap();
}

#[test]
fn a_batch_answer_that_does_not_add_up_is_refused_and_faults_the_plugin() {
    for (lie, says) in [
        (
            "batch-count",
            "enqueue-launches of 3 launch(es) with 4 enqueued",
        ),
        (
            "batch-no-event",
            "it enqueued 3 of 3 launch(es) and gave no event",
        ),
        (
            "batch-silent",
            "it enqueued 1 of 3 launch(es) and said nothing of the rest",
        ),
    ] {
        let (host, handle) = lying(&[lie], r#""on_fault": "disable""#);
        let (kernel, queue) = chaos_kernel_and_queue(&handle);
        hold_back_three(&queue, &kernel);
        let err = queue.finish().unwrap_err();
        assert_eq!(lie_about(&err), Some(Falsehood::Count), "{lie}: {err}");
        assert!(err.to_string().contains(says), "{lie}: {err}");
        let info = host.plugin("liar").unwrap();
        assert!(
            info.status.to_string().contains("lie about count"),
            "{lie}: {}",
            info.status
        );
    }
    // The same plugin telling no lie: three launches, one call.
    let (host, handle) = lying(&[], "");
    let (kernel, queue) = chaos_kernel_and_queue(&handle);
    hold_back_three(&queue, &kernel);
    queue.finish().unwrap();
    assert_eq!(calls_of(&host, "liar", "enqueue-launches"), (1, 0));
}

#[test]
fn launches_held_back_go_one_by_one_to_a_plugin_without_batches() {
    let (host, handle) = chaos_alone("single", r#"{"no_batch": true}"#, "");
    let (kernel, queue) = chaos_kernel_and_queue(&handle);
    for round in 1..=2 {
        hold_back_three(&queue, &kernel);
        queue.finish().unwrap();
        // Asked once whether it takes batches; every launch went on its own.
        let calls = |call| calls_of(&host, "single", call).0;
        assert_eq!(calls("enqueue-launches"), 1, "round {round}");
        assert_eq!(calls("enqueue-launch"), 3 * round, "round {round}");
    }
}

#[test]
fn a_plugin_that_traps_in_a_batch_is_the_finish_error_and_the_queue_holds_nothing_back() {
    let (host, handle) = chaos_alone(
        "trapper",
        r#"{"trap_in": "enqueue-launches"}"#,
        r#""on_fault": "disable""#,
    );
    let (kernel, queue) = chaos_kernel_and_queue(&handle);
    hold_back_three(&queue, &kernel);
    let err = queue.finish().unwrap_err();
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    assert_eq!(
        calls_of(&host, "trapper", "enqueue-launches"),
        (1, 1),
        "one call, not one per launch"
    );
    // Nothing is left to hand on: finishing again asks the plugin nothing.
    queue.finish().unwrap();
}

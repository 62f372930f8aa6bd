use super::*;
use crate::devices::Owner;
use memcpy::WorkElement;

fn afu(model: Accelerator, max_contexts: Option<u32>) -> EmulatedAfu {
    let card = CxlCard {
        accelerator: model,
        max_contexts,
        ..CxlCard::default()
    };
    EmulatedAfu::new(&crate::families::cxl::card::decl("c0", card))
}

fn buffer(owner: &Owner, len: u64) -> Arc<DmaMemory> {
    DmaMemory::allocate(len, owner.id, &owner.dma, false).unwrap()
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

/// Writes `element` at `index` of `queue`, the command byte last.
fn put(queue: &DmaMemory, index: u64, mut element: WorkElement, wrap: bool) {
    let cmd = element.cmd | memcpy::CMD_VALID | if wrap { memcpy::CMD_WRAP } else { 0 };
    element.cmd = 0;
    queue.write(index * 32, &element.encode()).unwrap();
    queue.write(index * 32, &[cmd]).unwrap();
}

/// A slave context of a fresh memcpy AFU with a 4 KiB queue and 8 KiB of data attached.
struct Attached {
    afu: EmulatedAfu,
    _owner: Owner,
    ctx: Box<dyn CxlContext>,
    queue: Arc<DmaMemory>,
    data: Arc<DmaMemory>,
    /// The queue's effective address.
    q: u64,
    /// The data's effective address.
    d: u64,
}

fn attached() -> Attached {
    let afu = afu(Accelerator::Memcpy, None);
    let owner = Owner::unlimited();
    let ctx = afu
        .open(ContextKind::Slave, &owner, AddressSpace::AttachedBuffers)
        .unwrap();
    let queue = buffer(&owner, 4096);
    let data = buffer(&owner, 8192);
    let q = ctx.attach_buffer(&queue).unwrap();
    let d = ctx.attach_buffer(&data).unwrap();
    Attached {
        afu,
        _owner: owner,
        ctx,
        queue,
        data,
        q,
        d,
    }
}

/// Starts the one-line queue at `q`.
fn start_queue(ctx: &dyn CxlContext, q: u64) {
    ctx.start_work(&Work {
        wed: memcpy::wed(q, 1),
        amr: None,
        num_interrupts: None,
    })
    .unwrap();
}

fn status(queue: &DmaMemory, index: u64) -> u8 {
    let mut byte = [0u8];
    queue.read(index * 32 + 1, &mut byte).unwrap();
    byte[0]
}

fn wait_status(queue: &DmaMemory, index: u64) -> u8 {
    let deadline = soon();
    loop {
        let s = status(queue, index);
        if s != 0 || Instant::now() > deadline {
            return s;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

#[test]
fn contexts_are_limited_and_slots_reused() {
    let afu = afu(Accelerator::Memcpy, Some(3));
    let owner = Owner::unlimited();
    let contexts: Vec<_> = (0..3)
        .map(|_| {
            afu.open(ContextKind::Slave, &owner, AddressSpace::AttachedBuffers)
                .unwrap()
        })
        .collect();
    let pes: Vec<u32> = contexts.iter().map(|c| c.process_element()).collect();
    assert_eq!(pes, [0, 1, 2]);
    let err = afu
        .open(ContextKind::Master, &owner, AddressSpace::AttachedBuffers)
        .err()
        .unwrap();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    let mut contexts = contexts;
    drop(contexts.remove(1));
    assert_eq!(
        afu.open(ContextKind::Slave, &owner, AddressSpace::AttachedBuffers)
            .unwrap()
            .process_element(),
        1
    );
    let err = afu
        .open(
            ContextKind::Dedicated,
            &owner,
            AddressSpace::AttachedBuffers,
        )
        .err()
        .unwrap();
    assert_eq!(
        err.raw_os_error(),
        Some(libc::ENODEV),
        "a directed AFU has no d node"
    );
}

#[test]
fn a_dedicated_afu_has_one_context() {
    let afu = afu(Accelerator::Vadd, None);
    let owner = Owner::unlimited();
    let first = afu
        .open(
            ContextKind::Dedicated,
            &owner,
            AddressSpace::AttachedBuffers,
        )
        .unwrap();
    let err = afu
        .open(
            ContextKind::Dedicated,
            &owner,
            AddressSpace::AttachedBuffers,
        )
        .err()
        .unwrap();
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC));
    drop(first);
    afu.open(
        ContextKind::Dedicated,
        &owner,
        AddressSpace::AttachedBuffers,
    )
    .unwrap();
}

#[test]
fn start_work_rules() {
    let afu = afu(Accelerator::Memcpy, None);
    let ctx = afu
        .open(
            ContextKind::Slave,
            &Owner::unlimited(),
            AddressSpace::AttachedBuffers,
        )
        .unwrap();
    assert_eq!(
        ctx.map_mmio().err().unwrap().raw_os_error(),
        Some(libc::EIO)
    );
    let bad = Work {
        wed: 0,
        amr: None,
        num_interrupts: Some(5000),
    };
    assert_eq!(
        ctx.start_work(&bad).unwrap_err().raw_os_error(),
        Some(libc::EINVAL)
    );
    let work = Work {
        wed: 0x1000 | 1,
        amr: None,
        num_interrupts: None,
    };
    ctx.start_work(&work).unwrap();
    assert_eq!(
        ctx.start_work(&work).unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    let window = ctx.map_mmio().unwrap();
    assert_eq!(window.size(), PP_SIZE, "a slave maps its slice");
    assert_eq!(window.read64(memcpy::PSA_WED).unwrap().swap_bytes(), 0x1001);
}

#[test]
fn the_memcpy_queue_runs_copies_incr_atomic_and_irq() {
    let Attached {
        afu: _afu,
        ctx,
        queue,
        data,
        q,
        d,
        _owner,
    } = attached();
    data.write(0, b"hello, capi").unwrap();
    data.write(100, &41u32.to_be_bytes()).unwrap();
    data.write(200, &7u64.to_be_bytes()).unwrap();
    put(&queue, 0, WorkElement::copy(d, d + 4096, 11), false);
    put(
        &queue,
        1,
        WorkElement {
            cmd: memcpy::CMD_INCR,
            length: 4,
            ..WorkElement::copy(d + 100, d + 104, 4)
        },
        false,
    );
    put(
        &queue,
        2,
        WorkElement {
            cmd: memcpy::CMD_ATOMIC,
            cmd_extra: memcpy::CAS_EQUAL_8,
            atomic_op1: 7,
            ..WorkElement::copy(99, d + 200, 8)
        },
        false,
    );
    put(&queue, 3, WorkElement::interrupt(1), false);
    let done = ctx.interrupt_completion(1).unwrap();
    start_queue(&*ctx, q);
    assert_eq!(done.wait(soon()), CompletionState::Complete);
    for index in 0..4 {
        assert_eq!(
            status(&queue, index),
            memcpy::STATUS_COMPLETE,
            "element {index}"
        );
    }
    let mut out = [0u8; 11];
    data.read(4096, &mut out).unwrap();
    assert_eq!(&out, b"hello, capi");
    let mut word = [0u8; 4];
    data.read(104, &mut word).unwrap();
    assert_eq!(u32::from_be_bytes(word), 42);
    let mut swapped = [0u8; 8];
    data.read(200, &mut swapped).unwrap();
    assert_eq!(u64::from_be_bytes(swapped), 99);
    assert_eq!(
        ctx.read_event(soon()).unwrap(),
        Some(AfuEvent::Interrupt(1))
    );
    // Stopped after the interrupt until PCTRL.Restart; the queue wraps to its second lap.
    let window = ctx.map_mmio().unwrap();
    let status_reg = window.read64(memcpy::PSA_STATUS).unwrap().swap_bytes();
    assert_eq!(status_reg, memcpy::STATUS_STOPPED);
    let ph = window.read64(memcpy::PSA_PH).unwrap().swap_bytes();
    assert_eq!(ph >> 48, u64::from(ctx.process_element()));
    put(&queue, 0, WorkElement::copy(d, d + 5000, 5), true);
    put(&queue, 1, WorkElement::interrupt(2), true);
    let second = ctx.interrupt_completion(2).unwrap();
    window
        .write64(memcpy::PSA_PCTRL, memcpy::PCTRL_RESTART.swap_bytes())
        .unwrap();
    assert_eq!(second.wait(soon()), CompletionState::Complete);
    let mut five = [0u8; 5];
    data.read(5000, &mut five).unwrap();
    assert_eq!(&five, b"hello");
}

/// The device thread's looks at its contexts so far.
fn scans(afu: &EmulatedAfu) -> u64 {
    lock(&afu.afu.state).scans
}

/// How many times the device thread looks at its contexts in 200 ms, from 20 ms on.
fn scans_in_a_while(afu: &EmulatedAfu) -> u64 {
    std::thread::sleep(Duration::from_millis(20));
    let before = scans(afu);
    std::thread::sleep(Duration::from_millis(200));
    scans(afu) - before
}

#[test]
fn an_idle_afu_sleeps_and_a_running_queue_is_polled_for_late_elements() {
    let Attached {
        afu,
        ctx,
        queue,
        data,
        q,
        d,
        _owner,
    } = attached();
    // No queue runs: the thread sleeps until it is given work.
    let idle = scans_in_a_while(&afu);
    assert!(idle <= 1, "an idle AFU looked {idle} times in 200 ms");

    // A queue runs with no element yet: the thread polls it, and finds an element written
    // after the start without any call.
    let done = ctx.interrupt_completion(1).unwrap();
    start_queue(&*ctx, q);
    let polled = scans_in_a_while(&afu);
    assert!(
        polled >= 10,
        "a running queue was looked at {polled} times in 200 ms"
    );
    data.write(0, b"late").unwrap();
    put(&queue, 0, WorkElement::copy(d, d + 4096, 4), false);
    put(&queue, 1, WorkElement::interrupt(1), false);
    assert_eq!(done.wait(soon()), CompletionState::Complete);
    let mut out = [0u8; 4];
    data.read(4096, &mut out).unwrap();
    assert_eq!(&out, b"late");

    // Stopped by its interrupt, until a restart: asleep again.
    let stopped = scans_in_a_while(&afu);
    assert!(
        stopped <= 1,
        "a stopped queue was looked at {stopped} times in 200 ms"
    );
}

#[test]
fn a_bad_address_faults_only_its_context_which_can_restart() {
    let afu = afu(Accelerator::Memcpy, None);
    let owner = Owner::unlimited();
    let bad = afu
        .open(ContextKind::Slave, &owner, AddressSpace::AttachedBuffers)
        .unwrap();
    let good = afu
        .open(ContextKind::Slave, &owner, AddressSpace::AttachedBuffers)
        .unwrap();
    let (bq, gq, data) = (
        buffer(&owner, 4096),
        buffer(&owner, 4096),
        buffer(&owner, 4096),
    );
    let bq_ea = bad.attach_buffer(&bq).unwrap();
    let gq_ea = good.attach_buffer(&gq).unwrap();
    let bd = bad.attach_buffer(&data).unwrap();
    let gd = good.attach_buffer(&data).unwrap();
    put(&bq, 0, WorkElement::copy(0xdead_0000, bd, 16), false);
    put(&bq, 1, WorkElement::interrupt(1), false);
    put(&gq, 0, WorkElement::copy(gd, gd + 64, 16), false);
    put(&gq, 1, WorkElement::interrupt(1), false);
    let bad_done = bad.interrupt_completion(1).unwrap();
    let good_done = good.interrupt_completion(1).unwrap();
    for (ctx, q) in [(&bad, bq_ea), (&good, gq_ea)] {
        start_queue(&**ctx, q);
    }
    assert_eq!(good_done.wait(soon()), CompletionState::Complete);
    let CompletionState::Failed(why) = bad_done.wait(soon()) else {
        panic!("the faulting context's wait fails")
    };
    assert!(why.contains("0xdead0000"), "{why}");
    assert_eq!(
        wait_status(&bq, 0),
        memcpy::STATUS_COMPLETE | memcpy::TRANS_FAULT
    );
    // The fault is there once the status shows it, and waiting for it leaves it there.
    assert!(bad.wait_event(Instant::now()).unwrap());
    assert!(bad.wait_event(Instant::now()).unwrap());
    assert_eq!(
        bad.read_event(soon()).unwrap(),
        Some(AfuEvent::DataStorage {
            address: 0xdead_0000,
            dsisr: DSISR_NOT_MAPPED
        })
    );
    assert!(!bad.wait_event(Instant::now()).unwrap(), "taken");
    assert_eq!(
        good.read_event(soon()).unwrap(),
        Some(AfuEvent::Interrupt(1))
    );
    // Restart: the AFU goes on past the faulting element.
    let again = bad.interrupt_completion(1).unwrap();
    let window = bad.map_mmio().unwrap();
    window
        .write64(memcpy::PSA_PCTRL, memcpy::PCTRL_RESTART.swap_bytes())
        .unwrap();
    assert_eq!(again.wait(soon()), CompletionState::Complete);
}

#[test]
fn foreign_buffers_are_refused() {
    let afu = afu(Accelerator::Memcpy, None);
    let ctx = afu
        .open(
            ContextKind::Slave,
            &Owner::unlimited(),
            AddressSpace::AttachedBuffers,
        )
        .unwrap();
    let theirs = buffer(&Owner::unlimited(), 4096);
    assert_eq!(
        ctx.attach_buffer(&theirs).unwrap_err().raw_os_error(),
        Some(libc::EFAULT)
    );
}

#[test]
fn the_master_sees_every_slice() {
    let afu = afu(Accelerator::Memcpy, Some(4));
    let owner = Owner::unlimited();
    let master = afu
        .open(ContextKind::Master, &owner, AddressSpace::AttachedBuffers)
        .unwrap();
    let slave = afu
        .open(ContextKind::Slave, &owner, AddressSpace::AttachedBuffers)
        .unwrap();
    let work = |wed| Work {
        wed,
        amr: None,
        num_interrupts: None,
    };
    master.start_work(&work(0x2000)).unwrap();
    slave.start_work(&work(0x3000)).unwrap();
    let window = master.map_mmio().unwrap();
    assert_eq!(window.size(), memcpy::GLOBAL_AREA_SIZE + 4 * PP_SIZE);
    let slice = memcpy::GLOBAL_AREA_SIZE + u64::from(slave.process_element()) * PP_SIZE;
    assert_eq!(
        window.read64(slice + memcpy::PSA_WED).unwrap().swap_bytes(),
        0x3000
    );
    window.write64(memcpy::CFG, 5u64.swap_bytes()).unwrap();
    assert_eq!(window.read64(memcpy::CFG).unwrap().swap_bytes(), 5);
    assert_eq!(
        window.read32(slice + memcpy::PSA_PH).unwrap().swap_bytes(),
        slave.process_element() << 16
    );
}

#[test]
fn vadd_reads_its_control_block_and_sets_done() {
    let afu = afu(Accelerator::Vadd, None);
    let owner = Owner::unlimited();
    let ctx = afu
        .open(
            ContextKind::Dedicated,
            &owner,
            AddressSpace::AttachedBuffers,
        )
        .unwrap();
    let block = buffer(&owner, 4096);
    let data = buffer(&owner, 3 * 4096);
    let b = ctx.attach_buffer(&block).unwrap();
    let d = ctx.attach_buffer(&data).unwrap();
    let n = 1000u64;
    for i in 0..n {
        data.write(i * 4, &((i as u32) << 8).to_be_bytes()).unwrap();
        data.write(4096 + i * 4, &((i as u32) << 8).to_be_bytes())
            .unwrap();
    }
    for (offset, value) in [
        (vadd::SIZE, n),
        (vadd::INPUT1, d),
        (vadd::INPUT2, d + 4096),
        (vadd::OUTPUT, d + 8192),
    ] {
        block.write(offset, &value.to_be_bytes()).unwrap();
    }
    ctx.start_work(&Work {
        wed: b,
        amr: None,
        num_interrupts: None,
    })
    .unwrap();
    let done =
        crate::devices::watch::watch(&block, vadd::DONE, u64::MAX, 1u64.swap_bytes(), &owner.host)
            .unwrap();
    assert_eq!(done.wait(soon()), CompletionState::Complete);
    for i in 0..n {
        let mut word = [0u8; 4];
        data.read(8192 + i * 4, &mut word).unwrap();
        assert_eq!(
            u32::from_be_bytes(word),
            2 * ((i as u32) << 8),
            "element {i}"
        );
    }
    let mut clocks = [0u8; 8];
    block.read(vadd::CLOCK_COUNT, &mut clocks).unwrap();
    assert!(u64::from_be_bytes(clocks) > 0);
    let window = ctx.map_mmio().unwrap();
    assert_eq!(window.read64(0).unwrap().swap_bytes(), vadd::AFU_DESC);
}

/// A context of this process's program (libcxl's) reaches the process's memory at its own
/// addresses, and an address it may not touch is a fault, not a crash; a plugin's context given the
/// very same addresses reaches none of it.
#[test]
fn only_a_program_context_reaches_process_memory() {
    let afu = afu(Accelerator::Memcpy, None);
    let owner = Owner::unlimited();
    let secret = vec![0x5au8; 64];
    let mut stolen = vec![0u8; 64];
    let secret_at = secret.as_ptr() as u64;
    let stolen_at = stolen.as_mut_ptr() as u64;

    // A plugin attaches its queue and aims a copy at memory it never attached.
    let plugin = afu
        .open(ContextKind::Slave, &owner, AddressSpace::AttachedBuffers)
        .unwrap();
    let queue = buffer(&owner, 4096);
    let q = plugin.attach_buffer(&queue).unwrap();
    plugin
        .start_work(&Work {
            wed: q | 1,
            amr: None,
            num_interrupts: None,
        })
        .unwrap();
    put(
        &queue,
        0,
        WorkElement::copy(secret_at, stolen_at, 64),
        false,
    );
    assert_eq!(
        wait_status(&queue, 0),
        memcpy::STATUS_COMPLETE | memcpy::TRANS_FAULT
    );
    assert_eq!(
        plugin.read_event(soon()).unwrap(),
        Some(AfuEvent::DataStorage {
            address: secret_at,
            dsisr: DSISR_NOT_MAPPED
        })
    );
    assert!(stolen.iter().all(|&b| b == 0), "nothing reached the plugin");

    // The program's context: its queue is plain process memory, never attached.
    let program = afu
        .open(ContextKind::Slave, &owner, AddressSpace::ThisProcess)
        .unwrap();
    let own_queue = buffer(&owner, 4096);
    program
        .start_work(&Work {
            wed: own_queue.user_address() | 1,
            amr: None,
            num_interrupts: None,
        })
        .unwrap();
    put(
        &own_queue,
        0,
        WorkElement::copy(secret_at, stolen_at, 64),
        false,
    );
    assert_eq!(wait_status(&own_queue, 0), memcpy::STATUS_COMPLETE);
    assert_eq!(stolen, secret);

    let page = span::NoAccessPage::new();
    let gone = page.address();
    put(&own_queue, 1, WorkElement::copy(gone, stolen_at, 8), false);
    assert_eq!(
        wait_status(&own_queue, 1),
        memcpy::STATUS_COMPLETE | memcpy::TRANS_FAULT
    );
    assert_eq!(
        program.read_event(soon()).unwrap(),
        Some(AfuEvent::DataStorage {
            address: gone,
            dsisr: DSISR_NOT_MAPPED
        })
    );
}

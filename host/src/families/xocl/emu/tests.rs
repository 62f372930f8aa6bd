use std::time::{Duration, Instant};

mod kernels;

use super::*;
use crate::families::xocl::abi::vadd;
use crate::families::xocl::xclbin::{XclbinBuilder, parse};

const UUID: Guid = Guid::new(0x1234, 0x5678);

fn card() -> EmulatedCard {
    EmulatedCard::new(&crate::families::xocl::card::decl("x0"))
}

fn client(card: &EmulatedCard) -> Box<dyn XoclClient> {
    card.open(&crate::devices::Owner::unlimited()).unwrap()
}

/// A client with the vadd xclbin (`cus` units, one bank) loaded and contexts on every CU.
fn loaded(card: &EmulatedCard, cus: u32) -> Box<dyn XoclClient> {
    let client = client(card);
    let image = XclbinBuilder::vadd(UUID, cus, 1).build();
    client.load_xclbin(&image, &parse(&image).unwrap()).unwrap();
    for cu in 0..cus {
        client.open_context(UUID, cu, false).unwrap();
    }
    client
}

fn wait(done: &Completion) -> CompletionState {
    done.wait(Instant::now() + Duration::from_secs(10))
}

fn words(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn launch_packet(masks: Vec<u32>, a: &BoInfo, b: &BoInfo, c: &BoInfo, n: u32) -> Vec<u32> {
    StartCu {
        cu_masks: masks,
        regmap: vadd::regmap(a.device_address, b.device_address, c.device_address, n),
    }
    .encode()
}

#[test]
fn range_allocator_reuses_and_coalesces() {
    let mut ranges = RangeAllocator::new(0x1000, 0x4000);
    let a = ranges.allocate(0x1000).unwrap();
    let b = ranges.allocate(0x1000).unwrap();
    let c = ranges.allocate(0x2000).unwrap();
    assert_eq!((a, b, c), (0x1000, 0x2000, 0x3000));
    assert_eq!(ranges.allocate(1), None);
    ranges.release(b, 0x1000);
    ranges.release(a, 0x1000);
    assert_eq!(ranges.allocate(0x2000), Some(0x1000), "a and b coalesced");
    ranges.release(0x1000, 0x2000);
    ranges.release(c, 0x2000);
    assert_eq!(ranges.allocate(0x4000), Some(0x1000));
}

#[test]
fn vadd_runs_through_the_scheduler_with_syncs() {
    let card = card();
    let client = loaded(&card, 2);
    let n = 1000u32;
    let bytes = u64::from(n) * 4;
    let a = client.create_bo(bytes, Some(0)).unwrap();
    let b = client.create_bo(bytes, Some(0)).unwrap();
    let c = client.create_bo(bytes, Some(0)).unwrap();
    a.host
        .write(0, &words(&(0..n).collect::<Vec<_>>()))
        .unwrap();
    b.host
        .write(0, &words(&(0..n).map(|i| i * 3).collect::<Vec<_>>()))
        .unwrap();
    let sync = |bo: &BoInfo, direction, after: Vec<Arc<Completion>>| {
        client
            .submit(
                Command::Sync {
                    bo: bo.handle,
                    direction,
                    offset: 0,
                    size: bytes,
                },
                after,
            )
            .unwrap()
    };
    let s1 = sync(&a, SyncDirection::ToDevice, vec![]);
    let s2 = sync(&b, SyncDirection::ToDevice, vec![]);
    let run = client
        .submit(
            Command::Exec(launch_packet(vec![0b11], &a, &b, &c, n)),
            vec![s1, s2],
        )
        .unwrap();
    let back = sync(&c, SyncDirection::FromDevice, vec![run.clone()]);
    assert_eq!(wait(&back), CompletionState::Complete);
    assert_eq!(run.state(), CompletionState::Complete);
    let mut out = vec![0u8; bytes as usize];
    c.host.read(0, &mut out).unwrap();
    assert_eq!(out, words(&(0..n).map(|i| i * 4).collect::<Vec<_>>()));
}

#[test]
fn a_missing_sync_shows_stale_data() {
    let card = card();
    let client = loaded(&card, 1);
    let a = client.create_bo(4096, Some(0)).unwrap();
    let c = client.create_bo(4096, Some(0)).unwrap();
    a.host.write(0, &words(&[5, 6, 7])).unwrap();
    // No sync to the device: the kernel reads device memory, still zero.
    let run = client
        .submit(Command::Exec(launch_packet(vec![1], &a, &a, &c, 3)), vec![])
        .unwrap();
    let back = client
        .submit(
            Command::Sync {
                bo: c.handle,
                direction: SyncDirection::FromDevice,
                offset: 0,
                size: 12,
            },
            vec![run],
        )
        .unwrap();
    assert_eq!(wait(&back), CompletionState::Complete);
    let mut out = [0u8; 12];
    c.host.read(0, &mut out).unwrap();
    assert_eq!(out, [0; 12]);
}

#[test]
fn cu_mask_picks_the_compute_unit() {
    let card = card();
    let client = loaded(&card, 3);
    let a = client.create_bo(4096, None).unwrap();
    let done = client
        .submit(
            Command::Exec(launch_packet(vec![0b100], &a, &a, &a, 1)),
            vec![],
        )
        .unwrap();
    assert_eq!(wait(&done), CompletionState::Complete);
    let state = lock(&card.card.state);
    assert_eq!(
        state.cus[2].as_ref().unwrap().read(vadd::SIZE),
        1,
        "CU 2 got the arguments"
    );
    assert_eq!(
        state.cus[0].as_ref().unwrap().read(vadd::SIZE),
        0,
        "CU 0 did not"
    );
    assert_eq!(
        state.cus[2].as_ref().unwrap().read(abi::AP_CTRL),
        abi::AP_IDLE,
        "done was cleared on read"
    );
}

#[test]
fn compute_unit_registers_follow_the_hls_protocol() {
    let card = card();
    let _client = loaded(&card, 1);
    let state = lock(&card.card.state);
    let cu = state.cus[0].clone().unwrap();
    drop(state);
    assert_eq!(cu.read(abi::AP_CTRL), abi::AP_IDLE);
    lock(&cu.regs).write(abi::GIE, 1);
    lock(&cu.regs).write(abi::IER, 1);
    lock(&cu.regs).write(vadd::IN1, 0xdead_beef);
    assert_eq!(cu.read(vadd::IN1), 0xdead_beef);
    lock(&cu.regs).ap_ctrl = abi::AP_DONE | abi::AP_IDLE;
    lock(&cu.regs).isr = 1;
    assert_eq!(cu.read(abi::AP_CTRL), abi::AP_DONE | abi::AP_IDLE);
    assert_eq!(
        cu.read(abi::AP_CTRL),
        abi::AP_IDLE,
        "ap_done is clear-on-read"
    );
    lock(&cu.regs).write(abi::ISR, 1);
    assert_eq!(cu.read(abi::ISR), 0, "ISR bits toggle on write");
}

#[test]
fn launches_spread_over_free_compute_units() {
    let card = card();
    let client = loaded(&card, 4);
    let n = 1 << 16;
    let bo = client.create_bo(u64::from(n) * 4, None).unwrap();
    let runs: Vec<_> = (0..16)
        .map(|_| {
            client
                .submit(
                    Command::Exec(launch_packet(vec![0b1111], &bo, &bo, &bo, n)),
                    vec![],
                )
                .unwrap()
        })
        .collect();
    for run in &runs {
        assert_eq!(wait(run), CompletionState::Complete);
    }
}

#[test]
fn bad_commands_are_refused_or_fail() {
    let card = card();
    let client = loaded(&card, 1);
    let a = client.create_bo(4096, None).unwrap();
    let err = client
        .submit(
            Command::Exec(launch_packet(vec![0b10], &a, &a, &a, 1)),
            vec![],
        )
        .unwrap_err();
    assert!(err.to_string().contains("compute unit 1"), "{err}");
    let other = self::client(&card);
    let err = other
        .submit(Command::Exec(launch_packet(vec![1], &a, &a, &a, 1)), vec![])
        .unwrap_err();
    assert!(err.to_string().contains("no context"), "{err}");
    let run = client
        .submit(
            Command::Exec(launch_packet(vec![1], &a, &a, &a, 2048)),
            vec![],
        )
        .unwrap();
    let CompletionState::Failed(why) = wait(&run) else {
        panic!("a launch past its buffer fails")
    };
    assert!(
        why.contains("outside this client's buffer objects"),
        "{why}"
    );
    let after = client
        .submit(
            Command::Copy {
                dst: a.handle,
                dst_offset: 0,
                src: a.handle,
                src_offset: 0,
                size: 8,
            },
            vec![run],
        )
        .unwrap();
    let CompletionState::Failed(why) = wait(&after) else {
        panic!("a command after a failed one fails")
    };
    assert!(why.contains("dependency failed"), "{why}");
    let err = client
        .submit(
            Command::Sync {
                bo: 999,
                direction: SyncDirection::ToDevice,
                offset: 0,
                size: 1,
            },
            vec![],
        )
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
}

#[test]
fn a_bo_of_another_client_is_out_of_reach() {
    let card = card();
    let mine = loaded(&card, 1);
    let theirs = client(&card);
    let secret = theirs.create_bo(4096, None).unwrap();
    let own = mine.create_bo(4096, None).unwrap();
    let run = mine
        .submit(
            Command::Exec(launch_packet(vec![1], &secret, &own, &own, 1)),
            vec![],
        )
        .unwrap();
    assert!(matches!(wait(&run), CompletionState::Failed(_)));
}

#[test]
fn loading_rules() {
    let card = card();
    let client = loaded(&card, 1);
    let image = XclbinBuilder::vadd(UUID, 1, 1).build();
    assert_eq!(
        client.load_xclbin(&image, &parse(&image).unwrap()).unwrap(),
        0,
        "loading the same image again is a no-op"
    );
    let other_banks = XclbinBuilder::vadd(Guid::new(7, 7), 1, 2).build();
    let err = client
        .load_xclbin(&other_banks, &parse(&other_banks).unwrap())
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::ResourceBusy, "{err}");
    client.close_context(UUID, 0).unwrap();
    client
        .load_xclbin(&other_banks, &parse(&other_banks).unwrap())
        .unwrap();
    let err = client.open_context(UUID, 0, false).unwrap_err();
    assert_eq!(
        err.kind(),
        io::ErrorKind::ResourceBusy,
        "an image of other banks replaced the old one: {err}"
    );
    client.open_context(Guid::new(7, 7), 0, true).unwrap();
    let second = self::client(&card);
    let err = second.open_context(Guid::new(7, 7), 0, false).unwrap_err();
    assert_eq!(
        err.kind(),
        io::ErrorKind::ResourceBusy,
        "held exclusively: {err}"
    );
    let err = second.create_bo(4096, Some(5)).unwrap_err();
    assert!(err.to_string().contains("no memory bank 5"), "{err}");
}

/// Loads a vadd image of `cus` units over one bank, with contexts on each; its first unit.
fn load_beside(client: &dyn XoclClient, uuid: Guid, cus: u32) -> u32 {
    let image = XclbinBuilder::vadd(uuid, cus, 1).build();
    let first = client.load_xclbin(&image, &parse(&image).unwrap()).unwrap();
    for cu in first..first + cus {
        client.open_context(uuid, cu, false).unwrap();
    }
    first
}

#[test]
fn images_of_one_topology_run_side_by_side_on_units_numbered_after_each_other() {
    let card = card();
    let client = loaded(&card, 2);
    let second = Guid::new(2, 2);
    assert_eq!(load_beside(&*client, second, 3), 2);
    let loaded = client.loaded_xclbin().unwrap();
    assert_eq!(
        (loaded.xclbin.uuid, loaded.first_cu),
        (second, 2),
        "the last image loaded"
    );
    let err = client.open_context(UUID, 2, false).unwrap_err();
    assert!(
        err.to_string().contains("no compute unit 2 in xclbin"),
        "a unit of another image: {err}"
    );

    let n = 64u32;
    let bo = |values: Vec<u32>| {
        let bo = client.create_bo(u64::from(n) * 4, Some(0)).unwrap();
        bo.host.write(0, &words(&values)).unwrap();
        let done = client
            .submit(
                Command::Sync {
                    bo: bo.handle,
                    direction: SyncDirection::ToDevice,
                    offset: 0,
                    size: u64::from(n) * 4,
                },
                vec![],
            )
            .unwrap();
        assert_eq!(wait(&done), CompletionState::Complete);
        bo
    };
    let a = bo((0..n).collect());
    let b = bo((0..n).map(|i| i * 10).collect());
    for (mask, unit) in [(0b1, 0), (0b1_0000, 4)] {
        let c = bo(vec![0; n as usize]);
        let ran = client
            .submit(
                Command::Exec(launch_packet(vec![mask], &a, &b, &c, n)),
                vec![],
            )
            .unwrap();
        assert_eq!(wait(&ran), CompletionState::Complete, "unit {unit}");
        let back = client
            .submit(
                Command::Sync {
                    bo: c.handle,
                    direction: SyncDirection::FromDevice,
                    offset: 0,
                    size: u64::from(n) * 4,
                },
                vec![],
            )
            .unwrap();
        assert_eq!(wait(&back), CompletionState::Complete);
        let mut sum = vec![0u8; n as usize * 4];
        c.host.read(0, &mut sum).unwrap();
        assert_eq!(
            sum,
            words(&(0..n).map(|i| i * 11).collect::<Vec<_>>()),
            "unit {unit}"
        );
    }
    let c = bo(vec![0; n as usize]);
    let err = client
        .submit(
            Command::Exec(launch_packet(vec![0b101], &a, &b, &c, n)),
            vec![],
        )
        .unwrap_err();
    assert!(err.to_string().contains("two xclbins"), "{err}");
    let err = client
        .submit(
            Command::Exec(launch_packet(vec![1 << 9], &a, &b, &c, n)),
            vec![],
        )
        .unwrap_err();
    assert!(err.to_string().contains("no loaded xclbin has"), "{err}");
}

#[test]
fn a_full_card_unloads_images_no_context_holds_and_refuses_past_that() {
    let card = card();
    let client = client(&card);
    // 120 units held, then an image of 8 nobody holds: the card is full.
    assert_eq!(load_beside(&*client, Guid::new(1, 1), 120), 0);
    let idle = XclbinBuilder::vadd(Guid::new(2, 2), 8, 1).build();
    assert_eq!(
        client.load_xclbin(&idle, &parse(&idle).unwrap()).unwrap(),
        120
    );
    // The next image takes the unheld image's units; the held ones stay.
    assert_eq!(load_beside(&*client, Guid::new(3, 3), 4), 120);
    let err = client
        .open_context(Guid::new(2, 2), 120, false)
        .unwrap_err();
    assert!(err.to_string().contains("not loaded"), "{err}");
    client.open_context(Guid::new(1, 1), 119, false).unwrap();
    // 4 units free; 5 do not fit while contexts hold the rest.
    let five = XclbinBuilder::vadd(Guid::new(4, 4), 5, 1).build();
    let err = client
        .load_xclbin(&five, &parse(&five).unwrap())
        .unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::ResourceBusy, "{err}");
    assert!(
        err.to_string().contains("at most 128 compute units"),
        "{err}"
    );
    assert_eq!(load_beside(&*client, Guid::new(5, 5), 4), 124);
    // Once a client's contexts are gone, its images make room.
    drop(client);
    let other = self::client(&card);
    assert_eq!(load_beside(&*other, Guid::new(4, 4), 5), 0);
}

#[test]
fn an_image_of_the_same_banks_keeps_the_buffers_and_another_waits_for_them() {
    let card = card();
    let client = loaded(&card, 1);
    client.close_context(UUID, 0).unwrap();
    let kept = client.create_bo(4096, Some(0)).unwrap();
    kept.host.write(0, &words(&[1, 2, 3])).unwrap();
    let sync = |direction| {
        let done = client
            .submit(
                Command::Sync {
                    bo: kept.handle,
                    direction,
                    offset: 0,
                    size: 4096,
                },
                vec![],
            )
            .unwrap();
        assert_eq!(wait(&done), CompletionState::Complete);
    };
    sync(SyncDirection::ToDevice);
    let two_banks = XclbinBuilder::vadd(Guid::new(8, 8), 1, 2).build();
    let err = client
        .load_xclbin(&two_banks, &parse(&two_banks).unwrap())
        .unwrap_err();
    assert!(
        err.to_string().contains("buffer objects still live"),
        "{err}"
    );
    let same_banks = XclbinBuilder::vadd(Guid::new(9, 9), 2, 1).build();
    client
        .load_xclbin(&same_banks, &parse(&same_banks).unwrap())
        .unwrap();
    kept.host.write(0, &[0; 12]).unwrap();
    sync(SyncDirection::FromDevice);
    let mut back = vec![0u8; 12];
    kept.host.read(0, &mut back).unwrap();
    assert_eq!(
        back,
        words(&[1, 2, 3]),
        "the buffer's device memory survived the load"
    );
}

#[test]
fn closing_a_client_fails_its_pending_commands_and_frees_its_bos() {
    let card = card();
    let client = loaded(&card, 1);
    let a = client.create_bo(1 << 20, None).unwrap();
    let gate = Arc::new(Completion::default());
    let waiting = client
        .submit(
            Command::Exec(launch_packet(vec![1], &a, &a, &a, 16)),
            vec![gate.clone()],
        )
        .unwrap();
    drop(client);
    let CompletionState::Failed(why) = wait(&waiting) else {
        panic!("pending work of a closed client fails")
    };
    assert!(why.contains("closed"), "{why}");
    assert!(lock(&card.card.state).bos.is_empty());
    assert!(lock(&card.card.state).contexts.iter().all(|h| h.is_empty()));
    gate.finish(CompletionState::Complete);
}

#[test]
fn unloading_an_image_fails_the_launches_queued_on_its_units() {
    let card = card();
    let client = client(&card);
    assert_eq!(load_beside(&*client, Guid::new(1, 1), 128), 0);
    let a = client.create_bo(4096, None).unwrap();
    let gate = Arc::new(Completion::default());
    let queued = client
        .submit(
            Command::Exec(launch_packet(vec![1], &a, &a, &a, 1)),
            vec![gate.clone()],
        )
        .unwrap();
    for cu in 0..128 {
        client.close_context(Guid::new(1, 1), cu).unwrap();
    }
    // The card is full: this load unloads the first image, whose unit the launch waits for.
    assert_eq!(load_beside(&*client, Guid::new(2, 2), 1), 0);
    let CompletionState::Failed(why) = wait(&queued) else {
        panic!("a launch queued on unloaded units fails")
    };
    assert!(why.contains("unloaded"), "{why}");
    gate.finish(CompletionState::Complete);
}

#[test]
fn reset_fails_pending_commands() {
    let card = card();
    let client = loaded(&card, 1);
    let a = client.create_bo(4096, None).unwrap();
    let gate = Arc::new(Completion::default());
    let waiting = client
        .submit(
            Command::Exec(launch_packet(vec![1], &a, &a, &a, 1)),
            vec![gate.clone()],
        )
        .unwrap();
    client.reset().unwrap();
    assert!(matches!(wait(&waiting), CompletionState::Failed(_)));
    let done = client
        .submit(Command::Exec(launch_packet(vec![1], &a, &a, &a, 1)), vec![])
        .unwrap();
    assert_eq!(
        wait(&done),
        CompletionState::Complete,
        "the card works after a reset"
    );
}

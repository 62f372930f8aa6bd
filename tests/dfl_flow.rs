//! The DFL family end to end: the shipped dfl plugin (compiled to wasm) on emulated NLB0
//! ports, through the public embedding API.

use crate::support;

use std::time::Duration;

use accelhost::families::dfl::abi::nlb0;
use accelhost::workloads::nlb0::{fill_source, loopback};
use accelhost::{ErrorCode, Filter, Guid, ObjectType, OpenMode};
use support::{default_host, dfl_devices, dfl_plugin, host};

#[test]
fn the_embedded_default_lists_the_emulated_port() {
    let host = default_host();
    let found = host.enumerate(&[]);
    assert!(found.failures.is_empty(), "{:?}", found.failures);
    let ids: Vec<String> = found.tokens.iter().map(|t| t.id()).collect();
    assert_eq!(
        ids,
        [
            "dfl/emu:dfl0",
            "cxl/emu:capi0.0m",
            "cxl/emu:capi0.0s",
            "cxl/emu:capi0.1d",
            "xocl/emu:xocl0"
        ]
    );
    let p = found.tokens[0].properties();
    assert_eq!(p.guid, nlb0::AFU_ID);
    assert_eq!(p.object_type, ObjectType::Accelerator);
    assert_eq!(p.device_type, "fpga");
    assert_eq!(p.host, "localhost");
    assert_eq!(p.num_mmio, 1);
    assert_eq!((p.vendor_id, p.device_id), (0x8086, 0x0A5E));
}

#[test]
fn every_emulated_card_has_an_address_and_a_device_object_as_its_accelerators_parent() {
    let host = default_host();
    let devices = host.enumerate(&[Filter::new().object_type(ObjectType::Device)]);
    assert!(devices.failures.is_empty(), "{:?}", devices.failures);
    let names: Vec<String> = devices.tokens.iter().map(|t| t.id()).collect();
    assert_eq!(
        names,
        [
            "dfl/fme.0000:3b:00.0",
            "cxl/emu:card0",
            "xocl/mgmt.0000:3d:00.0"
        ]
    );
    let accelerators = host.enumerate(&[]);
    assert!(
        accelerators.failures.is_empty(),
        "{:?}",
        accelerators.failures
    );
    for accelerator in &accelerators.tokens {
        let p = accelerator.properties();
        assert_eq!(p.object_type, ObjectType::Accelerator);
        let address = p.bus_address.expect("every emulated card has an address");
        let parent = accelerator
            .parent()
            .unwrap()
            .unwrap_or_else(|| panic!("{} has no parent", accelerator.id()));
        assert!(parent.is_parent_of(accelerator), "{}", accelerator.id());
        assert_eq!(parent.properties().object_type, ObjectType::Device);
        assert_eq!(parent.properties().bus_address, Some(address));
        assert!(
            names.contains(&parent.id()),
            "{} -> {}",
            accelerator.id(),
            parent.id()
        );
        // A device object does not open.
        let err = host.open(&parent, OpenMode::Shared).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    }
    // The CAPI card's three nodes share one adapter, its address and its parent.
    let cxl: Vec<_> = accelerators
        .tokens
        .iter()
        .filter(|t| t.id().starts_with("cxl/"))
        .collect();
    assert_eq!(cxl.len(), 3);
    assert!(
        cxl.iter()
            .all(|t| t.parent().unwrap().unwrap().id() == "cxl/emu:card0")
    );
}

#[test]
fn filters_select_by_guid_host_and_device_type() {
    // Two plugins, one device each: the NLB0 port and an XRT card.
    let host = host(&format!(
        r#"{{"devices": [{{"id": "d0", "family": "dfl"}}, {{"id": "x0", "family": "xocl"}}],
            "plugins": [{},
                        {{"name": "xocl", "module": "builtin:xocl", "grants": {{"devices": ["emu:x0"]}}}}]}}"#,
        dfl_plugin(&["d0"])
    ))
    .unwrap();
    let count = |filters: &[Filter]| {
        let found = host.enumerate(filters);
        assert!(found.failures.is_empty(), "{:?}", found.failures);
        found.tokens.len()
    };
    assert_eq!(count(&[Filter::new().guid(nlb0::AFU_ID)]), 1);
    assert_eq!(count(&[Filter::new().guid(Guid::new(1, 2))]), 0);
    assert_eq!(count(&[Filter::new().host("localhost")]), 2);
    assert_eq!(count(&[Filter::new().host("*")]), 2);
    assert_eq!(count(&[Filter::new().host("^localhost")]), 0);
    assert_eq!(count(&[Filter::new().host("elsewhere.example")]), 0);
    if let Some(me) = accelhost::local_hostname() {
        assert_eq!(count(&[Filter::new().host(me)]), 2);
    }
    assert_eq!(count(&[Filter::new().device_type("fpga")]), 2);
    assert_eq!(
        count(&[Filter::new().device_type("fpga").vendor_id(0x10EE)]),
        1
    );
    assert_eq!(count(&[Filter::new().device_type("gpu")]), 0);
    // Each card's device object (the FME, the XRT management function), listed only to a
    // filter that asks for device objects.
    assert_eq!(count(&[Filter::new().object_type(ObjectType::Device)]), 2);
    assert_eq!(
        count(&[
            Filter::new().device_type("gpu"),
            Filter::new().guid(nlb0::AFU_ID)
        ]),
        1,
        "filters are OR-ed"
    );
}

#[test]
fn grants_decide_which_ports_a_plugin_sees() {
    let host = host(&format!(
        r#"{{"devices": {}, "plugins": [{}]}}"#,
        dfl_devices(&["a", "b", "c"]),
        dfl_plugin(&["a", "c"])
    ))
    .unwrap();
    let mut names: Vec<String> = host
        .enumerate(&[])
        .tokens
        .iter()
        .map(|t| t.properties().name.to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["emu:a", "emu:c"]);
}

#[test]
fn exclusive_open_twice_is_busy() {
    let host = default_host();
    let token = host.enumerate(&[]).tokens.remove(0);
    let first = host.open(&token, OpenMode::Exclusive).unwrap();
    let err = host.open(&token, OpenMode::Exclusive).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Busy, "{err}");
    assert!(err.to_string().contains("plugin 'dfl'"), "{err}");
    assert!(err.to_string().contains("emu:dfl0"), "{err}");
    let err = host.open(&token, OpenMode::Shared).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Busy, "{err}");
    first.close().unwrap();
    let shared_a = host.open(&token, OpenMode::Shared).unwrap();
    let shared_b = host.open(&token, OpenMode::Shared).unwrap();
    let err = host.open(&token, OpenMode::Exclusive).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Busy);
    drop((shared_a, shared_b));
    host.open(&token, OpenMode::Exclusive).unwrap();
}

#[test]
fn hello_fpga_flow_is_byte_exact() {
    let host = default_host();
    let token = host
        .enumerate(&[Filter::new().guid(nlb0::AFU_ID)])
        .tokens
        .remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    for bytes in [64, 1 << 20, (33 << 20) + 4096] {
        let report = loopback(&handle, bytes).unwrap();
        assert!(report.verified(), "{bytes}: {report:?}");
        assert_eq!(report.bytes, bytes);
        assert_eq!(report.runs, bytes.div_ceil(32 << 20) as u32);
    }
    handle.close().unwrap();
}

#[test]
fn hello_fpga_by_hand_checks_the_dsm_counters() {
    let host = default_host();
    let token = host.enumerate(&[]).tokens.remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    let mmio = handle.map_mmio(0).unwrap();
    assert_eq!(mmio.read64(nlb0::CSR_AFU_ID_H).unwrap(), nlb0::AFU_ID.high);
    let dsm = handle.prepare_buffer(4096).unwrap();
    let src = handle.prepare_buffer(1 << 20).unwrap();
    let dst = handle.prepare_buffer(1 << 20).unwrap();
    fill_source(&src, 1 << 20).unwrap();
    dst.fill(0, 1 << 20, 0xBE).unwrap();
    handle.reset().unwrap();
    mmio.write64(nlb0::CSR_DSM_BASEL, dsm.iova()).unwrap();
    mmio.write32(nlb0::CSR_CTL, 0).unwrap();
    mmio.write32(nlb0::CSR_CTL, 1).unwrap();
    mmio.write64(nlb0::CSR_SRC_ADDR, src.iova() >> 6).unwrap();
    mmio.write64(nlb0::CSR_DST_ADDR, dst.iova() >> 6).unwrap();
    mmio.write32(nlb0::CSR_NUM_LINES, (1 << 20) / 64).unwrap();
    mmio.write32(nlb0::CSR_CFG, 0x42000).unwrap();
    mmio.write32(nlb0::CSR_CTL, 3).unwrap();
    let status = dsm
        .poll_u64(nlb0::DSM_STATUS, 1, 1, Duration::from_secs(10))
        .unwrap();
    assert_eq!(status >> 32, 0, "test_error");
    mmio.write32(nlb0::CSR_CTL, 7).unwrap();
    let mut counts = [0u8; 8];
    dsm.read(nlb0::DSM_NUM_READS, &mut counts).unwrap();
    assert_eq!(
        counts,
        [0x00, 0x40, 0, 0, 0x00, 0x40, 0, 0],
        "16384 reads and writes"
    );
    let (mut a, mut b) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    src.read(0, &mut a).unwrap();
    dst.read(0, &mut b).unwrap();
    assert!(a == b, "the copy is byte-exact");
    assert_eq!(&a[60..64], &1u32.to_le_bytes(), "line 0 carries its number");
    assert_eq!(a[0], 0xAF);
}

#[test]
fn mmio_outside_the_region_is_an_error() {
    let host = default_host();
    let token = host.enumerate(&[]).tokens.remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    let mmio = handle.map_mmio(0).unwrap();
    let size = mmio.size();
    for err in [
        mmio.read64(size).unwrap_err(),
        mmio.write32(size, 1).unwrap_err(),
        mmio.read64(u64::MAX - 7).unwrap_err(),
    ] {
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        assert!(err.to_string().contains("outside"), "{err}");
    }
    let err = mmio.read64(0x104).unwrap_err();
    assert!(err.to_string().contains("aligned"), "{err}");
    let err = handle.map_mmio(1).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(mmio.read64(size - 8).is_ok(), "the last register is inside");
}

#[test]
fn a_plugin_reading_past_its_region_gets_an_error() {
    let host = host(&format!(
        r#"{{"devices": {}, "plugins": [{}]}}"#,
        dfl_devices(&["p0"]),
        support::chaos_plugin_granted(
            "prober",
            r#"{"attack_in": "open", "attack": "mmio-out-of-range", "target": "emu:p0"}"#,
            &["emu:p0"]
        )
    ))
    .unwrap();
    let token = host.enumerate(&[]).tokens.remove(0);
    let err = host.open(&token, OpenMode::Exclusive).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("mmio read64 on emu:p0"), "{err}");
    assert!(err.to_string().contains("outside"), "{err}");
}

#[test]
fn a_plugin_cannot_open_a_port_it_was_not_granted() {
    let host = host(&format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["mine", "theirs"]),
        dfl_plugin(&["theirs"]),
        support::chaos_plugin_granted(
            "prober",
            r#"{"attack_in": "open", "attack": "open-not-granted", "target": "emu:theirs"}"#,
            &["emu:mine"]
        )
    ))
    .unwrap();
    let token = host
        .enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .remove(0);
    let err = host.open(&token, OpenMode::Exclusive).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PermissionDenied, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("plugin 'prober'") && text.contains("emu:theirs"),
        "{text}"
    );
}

#[test]
fn closing_a_handle_cuts_off_its_regions_and_buffers() {
    let host = default_host();
    let token = host.enumerate(&[]).tokens.remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    let mmio = handle.map_mmio(0).unwrap();
    let buffer = handle.prepare_buffer(4096).unwrap();
    buffer.write(0, b"hello").unwrap();
    handle.clone().close().unwrap();
    assert!(!handle.is_open());
    assert_eq!(mmio.read64(0).unwrap_err().code(), ErrorCode::Stale);
    assert_eq!(buffer.write(0, b"x").unwrap_err().code(), ErrorCode::Stale);
    assert_eq!(handle.reset().unwrap_err().code(), ErrorCode::Stale);
    handle.clone().close().unwrap();
    // The port was really closed: it opens exclusively again, with fresh state.
    let again = host.open(&token, OpenMode::Exclusive).unwrap();
    let mmio = again.map_mmio(0).unwrap();
    assert_eq!(mmio.read64(nlb0::CSR_SCRATCHPAD2).unwrap(), 0);
}

#[test]
fn buffers_are_released_and_bounded() {
    let host = default_host();
    let token = host.enumerate(&[]).tokens.remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    let buffer = handle.prepare_buffer(10).unwrap();
    assert_eq!(buffer.size(), 4096, "rounded up to a page");
    assert!(buffer.iova() != 0);
    let err = buffer.write(4090, &[0; 8]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    buffer.release().unwrap();
    let err = handle.prepare_buffer(0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    // The embedded default grants 512 MiB of DMA memory.
    let err = handle.prepare_buffer(1 << 30).unwrap_err();
    assert_eq!(err.code(), ErrorCode::OutOfMemory, "{err}");
    assert!(err.to_string().contains("grant"), "{err}");
}

#[test]
fn properties_never_need_the_plugin_but_can_be_refreshed() {
    let host = default_host();
    let token = host.enumerate(&[]).tokens.remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    let fresh = token.refresh().unwrap();
    assert_eq!(
        fresh.accelerator_state,
        Some(accelhost::AcceleratorState::Assigned),
        "held exclusively"
    );
    assert_eq!(
        token.properties().accelerator_state,
        Some(accelhost::AcceleratorState::Unassigned),
        "the cached properties are from enumeration"
    );
    drop(handle);
}

#[test]
fn the_embedding_api_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<accelhost::Host>();
    shareable::<accelhost::Token>();
    shareable::<accelhost::Handle>();
    shareable::<accelhost::MmioRegion>();
    shareable::<accelhost::DmaBuffer>();
    shareable::<accelhost::Error>();
}

#[test]
fn the_example_configs_are_valid() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/configs");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let config = accelhost::Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(!config.plugins.is_empty(), "{}", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 2, "found {checked} example configs");
}

#[test]
fn reconfigure_reaches_the_plugin_with_the_image() {
    let host = default_host();
    let token = host.enumerate(&[]).tokens.remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    let err = handle.reconfigure(0, &[0u8; 4096]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    assert!(err.to_string().contains("reconfigure"), "{err}");
    assert!(handle.is_open(), "an unsupported call is not a fault");
}

#[test]
fn a_token_only_opens_on_the_host_that_enumerated_it() {
    let first = default_host();
    let second = default_host();
    let token = first.enumerate(&[]).tokens.remove(0);
    let err = second.open(&token, OpenMode::Shared).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("another Host"), "{err}");
}

//! The host behind the C API over time: a plugin that faults gives FPGA_EXCEPTION and the
//! others go on; fpgaFinalize releases everything; configs load and fail cleanly; and
//! several threads use the API at once.

use std::ffi::{CStr, CString, c_void};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use crate::support::*;
use opae_c::buffer::*;
use opae_c::event::*;
use opae_c::handle::*;
use opae_c::mmio::*;
use opae_c::offload::*;
use opae_c::plugins::*;
use opae_c::properties::*;
use opae_c::state::*;
use opae_c::token::*;
use opae_c::*;

const WITH_CHAOS: &str = r#"{
    "devices": [{"id": "d0", "family": "dfl"}],
    "plugins": [
        {"name": "dfl", "module": "builtin:dfl", "grants": {"devices": ["emu:d0"]}},
        {"name": "faulty", "module": "builtin:chaos", "config": {"trap_in": "reset"},
         "grants": {"devices": []},
         "load_policy": {"on_fault": "disable", "call_timeout_ms": 2000, "memory_mib": 32}}
    ]
}"#;

fn plugin_state(name: &str) -> (accelhost_plugin_state, String) {
    let mut infos = vec![
        accelhost_plugin_info {
            name: [0; 64],
            module: [0; 256],
            state: -1,
            restarts: 0,
            log_lines_dropped: 0,
            reason: [0; 256]
        };
        8
    ];
    let mut count = 0;
    assert_eq!(
        // SAFETY: `infos` has room for 8.
        unsafe { accelhostGetPlugins(infos.as_mut_ptr(), 8, &mut count) },
        FPGA_OK
    );
    for info in &infos[..count as usize] {
        // SAFETY: NUL-terminated by accelhostGetPlugins.
        let (n, reason) = unsafe {
            (
                CStr::from_ptr(info.name.as_ptr())
                    .to_string_lossy()
                    .into_owned(),
                CStr::from_ptr(info.reason.as_ptr())
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        if n == name {
            return (info.state, reason);
        }
    }
    panic!("no plugin {name}");
}

#[test]
fn a_faulted_plugin_is_an_exception_and_the_others_go_on() {
    let _serial = serial();
    load_json(WITH_CHAOS);
    let chaos = open("faulty/chaos0");
    let dfl = open("dfl/emu:d0");
    assert_eq!(fpgaReset(chaos), FPGA_EXCEPTION, "the trap is contained");
    let message = last_error();
    assert!(
        message.contains("faulty") && message.contains("reset"),
        "{message}"
    );
    assert_eq!(
        accelhostGetLastErrorCode(),
        accelhost::ErrorCode::PluginFaulted as i32
    );
    let (state, reason) = plugin_state("faulty");
    assert_eq!(state, ACCELHOST_PLUGIN_FAULTED);
    assert!(reason.contains("reset"), "{reason}");
    // The handle is dead: an OPAE code, never a crash.
    assert_eq!(fpgaReset(chaos), FPGA_INVALID_PARAM, "{}", last_error());
    assert!(last_error().contains("no longer valid"), "{}", last_error());
    let mut value = 0u64;
    // SAFETY: a valid out-pointer.
    let rc = unsafe { fpgaReadMMIO64(chaos, 0, 0, &mut value) };
    assert_ne!(rc, FPGA_OK);
    assert_eq!(
        fpgaClose(chaos),
        FPGA_OK,
        "closing a faulted plugin's handle is fine"
    );
    // The dfl plugin still runs the hello_fpga flow byte for byte.
    hello_fpga(dfl, 128 << 10);
    assert_eq!(fpgaClose(dfl), FPGA_OK);
    // The faulted plugin's device is no longer enumerated.
    let ids: Vec<String> = enumerate(None)
        .into_iter()
        .map(|t| {
            let id = token_id(t);
            destroy_token(t);
            id
        })
        .collect();
    assert_eq!(ids, ["dfl/fme.0000:3b:00.0", "dfl/emu:d0"]);
    load_json(accelhost::builtin::embedded_default_text());
}

/// The accelhost code of the last error, without its message.
#[allow(non_snake_case)]
fn accelhostGetLastErrorCode() -> i32 {
    // SAFETY: NULL is allowed.
    unsafe { opae_c::errors::accelhostGetLastError(null_mut(), 0) }
}

#[test]
fn finalize_releases_everything_and_a_later_call_starts_again() {
    let _serial = serial();
    load_json(accelhost::builtin::embedded_default_text());
    let handle = open(DFL);
    let token = token_by_id(XOCL);
    let prop = new_filter();
    // SAFETY: for the whole test, valid pointers, or deliberately stale ones.
    unsafe {
        let (mut addr, mut wsid) = (null_mut::<c_void>(), 0u64);
        assert_eq!(
            fpgaPrepareBuffer(handle, 4096, &mut addr, &mut wsid, 0),
            FPGA_OK
        );
        let mut event = null_mut();
        assert_eq!(fpgaCreateEventHandle(&mut event), FPGA_OK);
        let mut queue = null_mut();
        let xocl = open(XOCL);
        assert_eq!(accelhostQueueCreate(xocl, &mut queue), FPGA_OK);
        assert!(live_objects() >= 6);

        assert_eq!(fpgaFinalize(), FPGA_OK);
        assert_eq!(live_objects(), 0);
        let mut value = 0u64;
        assert_eq!(fpgaReadMMIO64(handle, 0, 0, &mut value), FPGA_INVALID_PARAM);
        assert_eq!(fpgaReleaseBuffer(handle, wsid), FPGA_INVALID_PARAM);
        assert_eq!(fpgaClose(handle), FPGA_INVALID_PARAM);
        let mut stale = token;
        assert_eq!(fpgaDestroyToken(&mut stale), FPGA_INVALID_PARAM);
        let mut stale = prop;
        assert_eq!(fpgaDestroyProperties(&mut stale), FPGA_INVALID_PARAM);
        assert_eq!(fpgaDestroyEventHandle(&mut event), FPGA_INVALID_PARAM);
        assert_eq!(accelhostQueueRelease(queue), FPGA_INVALID_PARAM);
        assert_eq!(fpgaFinalize(), FPGA_OK, "finalizing twice is fine");

        // A bad config file is refused; a missing one too.
        let missing = CString::new("/nonexistent/accelhost.json").unwrap();
        assert_eq!(fpgaInitialize(missing.as_ptr()), FPGA_INVALID_PARAM);
        assert!(
            last_error().contains("/nonexistent/accelhost.json"),
            "{}",
            last_error()
        );
        assert_eq!(accelhostLoadConfig(missing.as_ptr()), FPGA_INVALID_PARAM);
        let broken = CString::new(r#"{"plugins": [{"name": "x"}]}"#).unwrap();
        assert_eq!(accelhostLoadConfigJson(broken.as_ptr()), FPGA_INVALID_PARAM);
        assert!(last_error().contains("plugins[0]"), "{}", last_error());
        // A config file on disk.
        let path = std::env::temp_dir().join(format!("accelhost-capi-{}.json", std::process::id()));
        std::fs::write(&path, accelhost::builtin::embedded_default_text()).unwrap();
        let text = CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(fpgaInitialize(text.as_ptr()), FPGA_OK, "{}", last_error());
        assert_eq!(
            accelhostLoadConfig(text.as_ptr()),
            FPGA_OK,
            "{}",
            last_error()
        );
        std::fs::remove_file(&path).unwrap();
        assert_eq!(fpgaFinalize(), FPGA_OK);
        assert_eq!(fpgaInitialize(null()), FPGA_OK, "{}", last_error());
        assert_eq!(fpgaFinalize(), FPGA_OK);
    }
    // Any call starts the host again, on the lookup order.
    let tokens = enumerate(None);
    assert!(!tokens.is_empty());
    tokens.into_iter().for_each(destroy_token);
    load_json(accelhost::builtin::embedded_default_text());
}

#[test]
fn several_threads_use_the_api_at_once() {
    let _serial = serial();
    load_json(accelhost::builtin::embedded_default_text());
    let threads = 8;
    let start = Arc::new(Barrier::new(threads));
    let shared_token = token_by_id(XOCL) as usize;
    let shared_destroyed = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for n in 0..threads {
        let start = start.clone();
        let shared_destroyed = shared_destroyed.clone();
        workers.push(std::thread::spawn(move || {
            start.wait();
            match n {
                // One thread runs hello_fpga on NLB0 again and again.
                0 => {
                    for _ in 0..4 {
                        let handle = open(DFL);
                        hello_fpga(handle, 64 << 10);
                        assert_eq!(fpgaClose(handle), FPGA_OK);
                    }
                }
                // One runs offload work on the XRT card.
                1 => {
                    let handle = open(XOCL);
                    let image = accelhost::workloads::vadd::vadd_image(1);
                    // SAFETY: valid pointers.
                    unsafe {
                        // Device memory exists once an xclbin is loaded.
                        let mut program = null_mut();
                        assert_eq!(
                            accelhostProgramCreate(
                                handle,
                                image.as_ptr(),
                                image.len(),
                                &mut program
                            ),
                            FPGA_OK,
                            "{}",
                            last_error()
                        );
                        for _ in 0..4 {
                            let (mut a, mut b, mut q, mut e) =
                                (null_mut(), null_mut(), null_mut(), null_mut());
                            assert_eq!(
                                accelhostMemAlloc(handle, ACCELHOST_MEMORY_HOST, 4096, &mut a),
                                FPGA_OK
                            );
                            assert_eq!(
                                accelhostMemAlloc(handle, ACCELHOST_MEMORY_DEVICE, 4096, &mut b),
                                FPGA_OK,
                                "{}",
                                last_error()
                            );
                            assert_eq!(accelhostQueueCreate(handle, &mut q), FPGA_OK);
                            let data = [7u8; 4096];
                            assert_eq!(
                                accelhostMemWrite(a, 0, data.as_ptr().cast(), 4096),
                                FPGA_OK
                            );
                            assert_eq!(
                                accelhostEnqueueMemcpy(q, b, 0, a, 0, 4096, null_mut()),
                                FPGA_OK
                            );
                            assert_eq!(
                                accelhostEnqueueMemcpy(q, a, 0, b, 0, 4096, &mut e),
                                FPGA_OK
                            );
                            assert_eq!(accelhostEventWait(e, 30_000), FPGA_OK);
                            for object in [a, b] {
                                assert_eq!(accelhostMemRelease(object), FPGA_OK);
                            }
                            assert_eq!(accelhostEventRelease(e), FPGA_OK);
                            assert_eq!(accelhostQueueRelease(q), FPGA_OK);
                        }
                        assert_eq!(accelhostProgramRelease(program), FPGA_OK);
                    }
                    assert_eq!(fpgaClose(handle), FPGA_OK);
                }
                // One destroys a token the others are using.
                2 => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    let mut token = shared_token as fpga_token;
                    // Announced first: from here on the others may find it gone.
                    shared_destroyed.store(true, Ordering::SeqCst);
                    // SAFETY: a valid pointer to the value.
                    assert_eq!(unsafe { fpgaDestroyToken(&mut token) }, FPGA_OK);
                }
                // The rest enumerate, read properties, clone and destroy tokens, use the
                // shared token until it is gone, and throw bad handles at the API.
                _ => {
                    for _ in 0..40 {
                        for token in enumerate(None) {
                            let mut prop = null_mut();
                            let mut vendor = 0u16;
                            let mut copy = null_mut();
                            // SAFETY: valid pointers.
                            unsafe {
                                assert_eq!(fpgaGetProperties(token, &mut prop), FPGA_OK);
                                assert_eq!(fpgaPropertiesGetVendorID(prop, &mut vendor), FPGA_OK);
                                assert_eq!(fpgaCloneToken(token, &mut copy), FPGA_OK);
                            }
                            destroy_props(prop);
                            destroy_token(copy);
                            destroy_token(token);
                        }
                        let mut copy = null_mut();
                        // SAFETY: a possibly destroyed token is looked up, never dereferenced.
                        let rc = unsafe { fpgaCloneToken(shared_token as fpga_token, &mut copy) };
                        match rc {
                            FPGA_OK => destroy_token(copy),
                            FPGA_INVALID_PARAM => assert!(shared_destroyed.load(Ordering::SeqCst)),
                            other => panic!("cloning the shared token: {other}"),
                        }
                        let mut value = 0u64;
                        // SAFETY: forged handles are refused without being dereferenced.
                        unsafe {
                            assert_eq!(
                                fpgaReadMMIO64(forged(), 0, 0, &mut value),
                                FPGA_INVALID_PARAM
                            );
                            assert_eq!(fpgaClose(shared_token as fpga_handle), FPGA_INVALID_PARAM);
                        }
                    }
                }
            }
        }));
    }
    for worker in workers {
        worker.join().expect("a thread panicked");
    }
    assert!(shared_destroyed.load(Ordering::SeqCst));
}

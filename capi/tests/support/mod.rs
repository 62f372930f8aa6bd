//! Helpers of the C API tests: the embedded default host, and short forms of common calls.

#![allow(dead_code)]

use std::ffi::{CString, c_void};
use std::ptr::null_mut;
use std::sync::{Mutex, MutexGuard};

use opae_c::enumerate::*;
use opae_c::properties::*;
use opae_c::state::accelhostLoadConfigJson;
use opae_c::token::*;
use opae_c::*;

/// The tests of one binary share the process-wide host: they take turns.
static SERIAL: Mutex<()> = Mutex::new(());

/// Takes the test lock and makes sure the host runs on the embedded default config.
pub fn serial() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    static STARTED: Mutex<bool> = Mutex::new(false);
    let mut started = STARTED.lock().unwrap();
    if !*started {
        // The process's host compiles into the tests' cache under the target, not the user's.
        // SAFETY: no host has started in this process yet and every test that starts one takes
        // this lock first: the other tests' threads read the environment only through std.
        unsafe { std::env::set_var("ACCELHOST_CACHE_DIR", tests_cache_dir()) };
        // These tests drive every family's devices through the C API; OPAE programs see the
        // dfl family's only unless asked (c_sample.rs runs programs without the variable).
        // SAFETY: as above.
        unsafe { std::env::set_var(opae_c::families::FAMILIES_ENV, "all") };
        load_json(accelhost::builtin::embedded_default_text());
        *started = true;
    }
    guard
}

/// The compile cache of the C API's tests, under the target's temporary directory.
pub fn tests_cache_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("accelhost-cache")
}

/// Replaces the host with one on `json`.
pub fn load_json(json: &str) {
    let text = CString::new(json).unwrap();
    // SAFETY: a NUL-terminated string.
    let rc = unsafe { accelhostLoadConfigJson(text.as_ptr()) };
    assert_eq!(rc, FPGA_OK, "{}", last_error());
}

/// This thread's last error message.
pub fn last_error() -> String {
    let mut buf = [0 as std::ffi::c_char; 1024];
    // SAFETY: the buffer is valid for its length.
    unsafe { opae_c::errors::accelhostGetLastError(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: accelhostGetLastError NUL-terminates.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// An empty properties object.
pub fn new_filter() -> fpga_properties {
    let mut prop = null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { fpgaGetProperties(null_mut(), &mut prop) }, FPGA_OK);
    prop
}

/// Destroys a properties object, expecting success.
pub fn destroy_props(mut prop: fpga_properties) {
    // SAFETY: a valid pointer to the value.
    assert_eq!(unsafe { fpgaDestroyProperties(&mut prop) }, FPGA_OK);
    assert!(prop.is_null());
}

/// Tokens matching one filter (empty filter: every device).
pub fn enumerate(filter: Option<fpga_properties>) -> Vec<fpga_token> {
    let mut count = 0;
    let filters: Vec<fpga_properties> = filter.into_iter().collect();
    let fptr = if filters.is_empty() {
        std::ptr::null()
    } else {
        filters.as_ptr()
    };
    // SAFETY: valid pointers and counts.
    let rc = unsafe { fpgaEnumerate(fptr, filters.len() as u32, null_mut(), 0, &mut count) };
    assert_eq!(rc, FPGA_OK, "{}", last_error());
    let mut tokens = vec![null_mut(); count as usize];
    let mut again = 0;
    // SAFETY: `tokens` has room for `count`.
    let rc = unsafe {
        fpgaEnumerate(
            fptr,
            filters.len() as u32,
            tokens.as_mut_ptr(),
            count,
            &mut again,
        )
    };
    assert_eq!(rc, FPGA_OK, "{}", last_error());
    tokens.truncate(again.min(count) as usize);
    tokens
}

/// The token of the one device whose id (`plugin/name`) is `id`; the others are destroyed.
pub fn token_by_id(id: &str) -> fpga_token {
    let mut found: fpga_token = null_mut();
    for mut token in enumerate(None) {
        if token_id(token) == id && found.is_null() {
            found = token;
        } else {
            // SAFETY: a valid pointer to the value.
            assert_eq!(unsafe { fpgaDestroyToken(&mut token) }, FPGA_OK);
        }
    }
    assert!(!found.is_null(), "no device {id}");
    found
}

/// The id of a token.
pub fn token_id(token: fpga_token) -> String {
    let mut buf = [0 as std::ffi::c_char; 128];
    // SAFETY: the buffer is valid for its length.
    let rc = unsafe { accelhostTokenGetId(token, buf.as_mut_ptr(), buf.len()) };
    assert_eq!(rc, FPGA_OK);
    // SAFETY: NUL-terminated by the call.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Destroys a token, expecting success.
pub fn destroy_token(mut token: fpga_token) {
    // SAFETY: a valid pointer to the value.
    assert_eq!(unsafe { fpgaDestroyToken(&mut token) }, FPGA_OK);
}

/// Opens the device `id` exclusively; returns the handle (the token is destroyed).
pub fn open(id: &str) -> fpga_handle {
    let token = token_by_id(id);
    let mut handle = null_mut();
    // SAFETY: a valid out-pointer.
    let rc = unsafe { opae_c::handle::fpgaOpen(token, &mut handle, 0) };
    assert_eq!(rc, FPGA_OK, "opening {id}: {}", last_error());
    destroy_token(token);
    handle
}

/// An address that was never handed out by the library.
pub fn forged() -> *mut c_void {
    0xDEAD_BEE0usize as *mut c_void
}

/// The NLB0 device of the embedded default.
pub const DFL: &str = "dfl/emu:dfl0";
/// The XRT card of the embedded default.
pub const XOCL: &str = "xocl/emu:xocl0";
/// The CAPI memcpy AFU of the embedded default.
pub const CXL_MEMCPY: &str = "cxl/emu:capi0.0s";

/// The hello_fpga flow through the C API, as examples/opae-hello-fpga does it in C.
pub fn hello_fpga(handle: fpga_handle, bytes: u64) {
    use accelhost::families::dfl::abi::nlb0;
    use opae_c::buffer::{fpgaGetIOAddress, fpgaPrepareBuffer, fpgaReleaseBuffer};
    use opae_c::mmio::{fpgaWriteMMIO32, fpgaWriteMMIO64};

    // Each prepares a buffer of `len` bytes: its address, workspace id and IO address.
    let prepare = |len: u64| {
        let (mut ptr, mut id, mut io) = (null_mut::<c_void>(), 0, 0);
        // SAFETY: valid out-pointers.
        unsafe {
            assert_eq!(
                fpgaPrepareBuffer(handle, len, &mut ptr, &mut id, 0),
                FPGA_OK
            );
            assert_eq!(fpgaGetIOAddress(handle, id, &mut io), FPGA_OK);
        }
        (ptr, id, io)
    };
    let write32 = |offset, value| assert_eq!(fpgaWriteMMIO32(handle, 0, offset, value), FPGA_OK);
    let write64 = |offset, value| assert_eq!(fpgaWriteMMIO64(handle, 0, offset, value), FPGA_OK);

    let (dsm, dsm_id, dsm_io) = prepare(4096);
    let (src, src_id, src_io) = prepare(bytes);
    let (dst, dst_id, dst_io) = prepare(bytes);
    // SAFETY: the buffers are `bytes` (or 4096) long and live until released below.
    unsafe {
        let src_bytes = std::slice::from_raw_parts_mut(src.cast::<u8>(), bytes as usize);
        for (i, b) in src_bytes.iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        std::ptr::write_bytes(dst.cast::<u8>(), 0xBE, bytes as usize);
        std::ptr::write_bytes(dsm.cast::<u8>(), 0, 4096);
        write64(nlb0::CSR_DSM_BASEL, dsm_io);
        write32(nlb0::CSR_CTL, 0);
        write32(nlb0::CSR_CTL, nlb0::CTL_RESET_N);
        write64(nlb0::CSR_SRC_ADDR, src_io / 64);
        write64(nlb0::CSR_DST_ADDR, dst_io / 64);
        write32(nlb0::CSR_NUM_LINES, (bytes / 64) as u32);
        write32(nlb0::CSR_CFG, nlb0::CFG_HELLO_FPGA as u32);
        write32(nlb0::CSR_CTL, nlb0::CTL_RESET_N | nlb0::CTL_START);
        let status = &*(dsm.cast::<u8>().add(nlb0::DSM_STATUS as usize)
            as *const std::sync::atomic::AtomicU32);
        let started = std::time::Instant::now();
        while status.load(std::sync::atomic::Ordering::Acquire) & 1 == 0 {
            assert!(started.elapsed().as_secs() < 30, "NLB0 did not complete");
            std::thread::yield_now();
        }
        write32(
            nlb0::CSR_CTL,
            nlb0::CTL_RESET_N | nlb0::CTL_START | nlb0::CTL_STOP,
        );
        let dst_bytes = std::slice::from_raw_parts(dst.cast::<u8>(), bytes as usize);
        assert!(src_bytes == dst_bytes, "the copy differs");
    }
    for id in [dst_id, src_id, dsm_id] {
        assert_eq!(fpgaReleaseBuffer(handle, id), FPGA_OK);
    }
}

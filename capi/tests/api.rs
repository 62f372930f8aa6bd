//! Every exported function of the C API, called as C calls it, on the embedded default
//! config: what works, and NULL arguments, unknown and destroyed objects, double destroys
//! and objects of the wrong type, each answered with its OPAE code.

use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr::{null, null_mut};

use crate::support::*;
use accelhost::families::dfl::abi::nlb0;
use opae_c::buffer::*;
use opae_c::enumerate::*;
use opae_c::errors::*;
use opae_c::event::*;
use opae_c::handle::*;
use opae_c::metrics::*;
use opae_c::mmio::*;
use opae_c::offload::*;
use opae_c::plugins::*;
use opae_c::properties::*;
use opae_c::state::*;
use opae_c::sysobject::*;
use opae_c::token::*;
use opae_c::*;

#[test]
fn properties_get_set_clone_clear_destroy() {
    let _serial = serial();
    let prop = new_filter();
    let mut u8v = 0u8;
    let mut u16v = 0u16;
    let mut u32v = 0u32;
    let mut objtype = -1;
    // SAFETY: for the whole test, every pointer passed is valid or deliberately NULL/forged.
    unsafe {
        // Unset fields are FPGA_NOT_FOUND.
        assert_eq!(
            fpgaPropertiesGetObjectType(prop, &mut objtype),
            FPGA_NOT_FOUND
        );
        assert_eq!(fpgaPropertiesGetVendorID(prop, &mut u16v), FPGA_NOT_FOUND);
        assert_eq!(fpgaPropertiesGetBus(prop, &mut u8v), FPGA_NOT_FOUND);

        assert_eq!(fpgaPropertiesSetObjectType(prop, FPGA_ACCELERATOR), FPGA_OK);
        assert_eq!(fpgaPropertiesGetObjectType(prop, &mut objtype), FPGA_OK);
        assert_eq!(objtype, FPGA_ACCELERATOR);
        assert_eq!(fpgaPropertiesSetObjectType(prop, 7), FPGA_INVALID_PARAM);

        let setters_u16: [(
            unsafe extern "C" fn(fpga_properties, *mut u16) -> fpga_result,
            extern "C" fn(fpga_properties, u16) -> fpga_result,
        ); 3] = [
            (fpgaPropertiesGetVendorID, fpgaPropertiesSetVendorID),
            (fpgaPropertiesGetDeviceID, fpgaPropertiesSetDeviceID),
            (fpgaPropertiesGetSegment, fpgaPropertiesSetSegment),
        ];
        for (i, (get, set)) in setters_u16.iter().enumerate() {
            assert_eq!(set(prop, 0x1000 + i as u16), FPGA_OK);
            assert_eq!(get(prop, &mut u16v), FPGA_OK);
            assert_eq!(u16v, 0x1000 + i as u16);
            assert_eq!(get(prop, null_mut()), FPGA_INVALID_PARAM);
            assert_eq!(get(null_mut(), &mut u16v), FPGA_INVALID_PARAM);
            assert_eq!(set(forged(), 1), FPGA_INVALID_PARAM);
        }
        let setters_u8: [(
            unsafe extern "C" fn(fpga_properties, *mut u8) -> fpga_result,
            extern "C" fn(fpga_properties, u8) -> fpga_result,
        ); 4] = [
            (fpgaPropertiesGetBus, fpgaPropertiesSetBus),
            (fpgaPropertiesGetDevice, fpgaPropertiesSetDevice),
            (fpgaPropertiesGetFunction, fpgaPropertiesSetFunction),
            (fpgaPropertiesGetSocketID, fpgaPropertiesSetSocketID),
        ];
        for (i, (get, set)) in setters_u8.iter().enumerate() {
            assert_eq!(set(prop, 3 + i as u8), FPGA_OK);
            assert_eq!(get(prop, &mut u8v), FPGA_OK);
            assert_eq!(u8v, 3 + i as u8);
            assert_eq!(get(prop, null_mut()), FPGA_INVALID_PARAM);
            assert_eq!(set(null_mut(), 1), FPGA_INVALID_PARAM);
        }
        let setters_u32: [(
            unsafe extern "C" fn(fpga_properties, *mut u32) -> fpga_result,
            extern "C" fn(fpga_properties, u32) -> fpga_result,
        ); 2] = [
            (fpgaPropertiesGetNumMMIO, fpgaPropertiesSetNumMMIO),
            (
                fpgaPropertiesGetNumInterrupts,
                fpgaPropertiesSetNumInterrupts,
            ),
        ];
        for (get, set) in setters_u32 {
            assert_eq!(set(prop, 5), FPGA_OK);
            assert_eq!(get(prop, &mut u32v), FPGA_OK);
            assert_eq!(u32v, 5);
            assert_eq!(get(prop, null_mut()), FPGA_INVALID_PARAM);
        }

        // GUID round trip, in text byte order.
        let guid = nlb0::AFU_ID.to_bytes();
        assert_eq!(fpgaPropertiesSetGUID(prop, guid.as_ptr()), FPGA_OK);
        let mut back = [0u8; 16];
        assert_eq!(fpgaPropertiesGetGUID(prop, &mut back), FPGA_OK);
        assert_eq!(back, guid);
        assert_eq!(back[0], 0xD8);
        assert_eq!(fpgaPropertiesSetGUID(prop, null()), FPGA_INVALID_PARAM);
        assert_eq!(fpgaPropertiesGetGUID(prop, null_mut()), FPGA_INVALID_PARAM);

        // Accelerator state: accelerators only.
        let mut state = -1;
        assert_eq!(
            fpgaPropertiesSetAcceleratorState(prop, FPGA_ACCELERATOR_UNASSIGNED),
            FPGA_OK
        );
        assert_eq!(fpgaPropertiesGetAcceleratorState(prop, &mut state), FPGA_OK);
        assert_eq!(state, FPGA_ACCELERATOR_UNASSIGNED);
        assert_eq!(
            fpgaPropertiesSetAcceleratorState(prop, 9),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaPropertiesGetAcceleratorState(prop, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(fpgaPropertiesSetObjectType(prop, FPGA_DEVICE), FPGA_OK);
        assert_eq!(
            fpgaPropertiesGetAcceleratorState(prop, &mut state),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaPropertiesGetNumMMIO(prop, &mut u32v),
            FPGA_INVALID_PARAM
        );
        assert_eq!(fpgaPropertiesSetNumInterrupts(prop, 1), FPGA_INVALID_PARAM);

        // Host and device type (the OPAE plugin design's additions).
        let mut name = [0 as c_char; 64];
        assert_eq!(
            fpgaPropertiesGetHostname(prop, name.as_mut_ptr(), name.len()),
            FPGA_NOT_FOUND
        );
        let host = CString::new("^localhost").unwrap();
        assert_eq!(fpgaPropertiesSetHostname(prop, host.as_ptr()), FPGA_OK);
        assert_eq!(
            fpgaPropertiesGetHostname(prop, name.as_mut_ptr(), name.len()),
            FPGA_OK
        );
        assert_eq!(
            CStr::from_ptr(name.as_ptr()).to_str().unwrap(),
            "^localhost"
        );
        assert_eq!(
            fpgaPropertiesGetHostname(prop, name.as_mut_ptr(), 4),
            FPGA_OK
        );
        assert_eq!(
            CStr::from_ptr(name.as_ptr()).to_str().unwrap(),
            "^lo",
            "cut to fit"
        );
        assert_eq!(
            fpgaPropertiesGetHostname(prop, null_mut(), 8),
            FPGA_INVALID_PARAM
        );
        assert_eq!(fpgaPropertiesSetHostname(prop, null()), FPGA_INVALID_PARAM);
        let mut device_type = -1;
        assert_eq!(
            fpgaPropertiesGetDeviceType(prop, &mut device_type),
            FPGA_NOT_FOUND
        );
        assert_eq!(
            fpgaPropertiesSetDeviceType(prop, FPGA_DEVICE_TYPE_FPGA),
            FPGA_OK
        );
        assert_eq!(fpgaPropertiesGetDeviceType(prop, &mut device_type), FPGA_OK);
        assert_eq!(device_type, FPGA_DEVICE_TYPE_FPGA);
        assert_eq!(
            fpgaPropertiesSetDeviceType(prop, FPGA_DEVICE_TYPE_OTHER),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaPropertiesGetDeviceType(prop, null_mut()),
            FPGA_INVALID_PARAM
        );
        let gpu = CString::new("gpu").unwrap();
        assert_eq!(
            accelhostPropertiesSetDeviceTypeName(prop, gpu.as_ptr()),
            FPGA_OK
        );
        assert_eq!(fpgaPropertiesGetDeviceType(prop, &mut device_type), FPGA_OK);
        assert_eq!(device_type, FPGA_DEVICE_TYPE_OTHER);
        assert_eq!(
            accelhostPropertiesGetDeviceTypeName(prop, name.as_mut_ptr(), name.len()),
            FPGA_OK
        );
        assert_eq!(CStr::from_ptr(name.as_ptr()).to_str().unwrap(), "gpu");
        assert_eq!(
            accelhostPropertiesSetDeviceTypeName(prop, null()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostPropertiesGetDeviceTypeName(prop, null_mut(), 4),
            FPGA_INVALID_PARAM
        );

        // Parent: unset, then set to a token, then read back as a new token.
        let mut parent = null_mut();
        assert_eq!(fpgaPropertiesGetParent(prop, &mut parent), FPGA_NOT_FOUND);
        let token = token_by_id(DFL);
        assert_eq!(fpgaPropertiesSetParent(prop, token), FPGA_OK);
        assert_eq!(fpgaPropertiesGetParent(prop, &mut parent), FPGA_OK);
        assert_eq!(token_id(parent), DFL);
        assert_ne!(parent, token, "a new token");
        destroy_token(parent);
        assert_eq!(
            fpgaPropertiesGetParent(prop, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaPropertiesSetParent(prop, prop),
            FPGA_INVALID_PARAM,
            "a properties object is not a token"
        );
        assert_eq!(
            fpgaPropertiesSetParent(prop, null_mut()),
            FPGA_INVALID_PARAM
        );

        // Clone, clear, destroy.
        let mut copy = null_mut();
        assert_eq!(fpgaCloneProperties(prop, &mut copy), FPGA_OK);
        assert_ne!(copy, prop);
        assert_eq!(fpgaPropertiesGetSegment(copy, &mut u16v), FPGA_OK);
        assert_eq!(u16v, 0x1002);
        assert_eq!(fpgaClearProperties(copy), FPGA_OK);
        assert_eq!(fpgaPropertiesGetSegment(copy, &mut u16v), FPGA_NOT_FOUND);
        assert_eq!(
            fpgaPropertiesGetSegment(prop, &mut u16v),
            FPGA_OK,
            "the original is untouched"
        );
        assert_eq!(fpgaCloneProperties(prop, null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaCloneProperties(token, &mut copy),
            FPGA_INVALID_PARAM,
            "a token is not properties"
        );
        assert_eq!(fpgaClearProperties(null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(fpgaClearProperties(token), FPGA_INVALID_PARAM);

        // Wrong types: a token where properties are expected, and the other way round.
        assert_eq!(
            fpgaPropertiesGetObjectType(token, &mut objtype),
            FPGA_INVALID_PARAM
        );
        let mut as_token = prop;
        assert_eq!(fpgaDestroyToken(&mut as_token), FPGA_INVALID_PARAM);
        let mut as_props = token;
        assert_eq!(fpgaDestroyProperties(&mut as_props), FPGA_INVALID_PARAM);
        destroy_token(token);

        // Destroy: sets NULL; a second destroy (NULL, or the old value) is refused.
        let kept = copy;
        destroy_props(copy);
        let mut again = kept;
        assert_eq!(
            fpgaDestroyProperties(&mut again),
            FPGA_INVALID_PARAM,
            "double destroy"
        );
        let mut null_value: fpga_properties = null_mut();
        assert_eq!(fpgaDestroyProperties(&mut null_value), FPGA_INVALID_PARAM);
        assert_eq!(fpgaDestroyProperties(null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaPropertiesGetSegment(kept, &mut u16v),
            FPGA_INVALID_PARAM,
            "use after destroy"
        );
        let mut forged_value = forged();
        assert_eq!(fpgaDestroyProperties(&mut forged_value), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaGetProperties(null_mut(), null_mut()),
            FPGA_INVALID_PARAM
        );
        destroy_props(prop);
    }
}

#[test]
fn devices_without_error_registers_count_zero_errors() {
    let _serial = serial();
    for id in [XOCL, CXL_MEMCPY] {
        let token = token_by_id(id);
        let mut prop = null_mut();
        let mut count = u32::MAX;
        // SAFETY: a live token, and pointers to locals.
        unsafe {
            assert_eq!(fpgaGetProperties(token, &mut prop), FPGA_OK);
            assert_eq!(
                fpgaPropertiesGetNumErrors(prop, &mut count),
                FPGA_OK,
                "{id}: {}",
                last_error()
            );
        }
        assert_eq!(count, 0, "{id}");
        destroy_props(prop);
        destroy_token(token);
    }
}

#[test]
fn enumerate_filters_and_tokens() {
    let _serial = serial();
    let all = enumerate(None);
    let ids: Vec<String> = all.iter().map(|&t| token_id(t)).collect();
    for id in [DFL, XOCL, CXL_MEMCPY] {
        assert!(ids.iter().any(|i| i == id), "{id} in {ids:?}");
    }
    for token in all {
        destroy_token(token);
    }

    // SAFETY: for the whole test, every pointer passed is valid or deliberately NULL/forged.
    unsafe {
        // By AFU id: only NLB0.
        let filter = new_filter();
        let guid = nlb0::AFU_ID.to_bytes();
        assert_eq!(fpgaPropertiesSetGUID(filter, guid.as_ptr()), FPGA_OK);
        assert_eq!(
            fpgaPropertiesSetObjectType(filter, FPGA_ACCELERATOR),
            FPGA_OK
        );
        let tokens = enumerate(Some(filter));
        assert_eq!(tokens.len(), 1);
        let token = tokens[0];
        assert_eq!(token_id(token), DFL);

        // Its properties.
        let mut prop = null_mut();
        assert_eq!(fpgaGetProperties(token, &mut prop), FPGA_OK);
        let (mut objtype, mut vendor, mut device, mut mmio) = (0, 0u16, 0u16, 0u32);
        assert_eq!(fpgaPropertiesGetObjectType(prop, &mut objtype), FPGA_OK);
        assert_eq!(objtype, FPGA_ACCELERATOR);
        assert_eq!(fpgaPropertiesGetVendorID(prop, &mut vendor), FPGA_OK);
        assert_eq!(fpgaPropertiesGetDeviceID(prop, &mut device), FPGA_OK);
        assert_eq!((vendor, device), (0x8086, 0x0a5e));
        assert_eq!(fpgaPropertiesGetNumMMIO(prop, &mut mmio), FPGA_OK);
        assert!(mmio >= 1);
        let mut state = -1;
        assert_eq!(fpgaPropertiesGetAcceleratorState(prop, &mut state), FPGA_OK);
        assert_eq!(state, FPGA_ACCELERATOR_UNASSIGNED);
        let mut back = [0u8; 16];
        assert_eq!(fpgaPropertiesGetGUID(prop, &mut back), FPGA_OK);
        assert_eq!(back, guid);
        let mut host = [0 as c_char; 64];
        assert_eq!(
            fpgaPropertiesGetHostname(prop, host.as_mut_ptr(), 64),
            FPGA_OK
        );
        assert_eq!(CStr::from_ptr(host.as_ptr()).to_str().unwrap(), "localhost");
        let mut device_type = -1;
        assert_eq!(fpgaPropertiesGetDeviceType(prop, &mut device_type), FPGA_OK);
        assert_eq!(device_type, FPGA_DEVICE_TYPE_FPGA);
        let (mut bus, mut dev, mut function, mut segment) = (0u8, 9u8, 9u8, 9u16);
        assert_eq!(fpgaPropertiesGetBus(prop, &mut bus), FPGA_OK);
        assert_eq!(fpgaPropertiesGetDevice(prop, &mut dev), FPGA_OK);
        assert_eq!(fpgaPropertiesGetFunction(prop, &mut function), FPGA_OK);
        assert_eq!(fpgaPropertiesGetSegment(prop, &mut segment), FPGA_OK);
        assert_eq!(
            (segment, bus, dev, function),
            (0, 0x3b, 0, 0),
            "the embedded default's first card has the first emulated PCI address"
        );
        let by_bus = new_filter();
        assert_eq!(fpgaPropertiesSetBus(by_bus, 0x3b), FPGA_OK);
        let found = enumerate(Some(by_bus));
        let ids: Vec<String> = found.iter().map(|&t| token_id(t)).collect();
        assert_eq!(
            ids,
            ["dfl/fme.0000:3b:00.0", DFL],
            "a bus filter finds the card: its device object, then its accelerator"
        );
        // The port's parent is its card's device object.
        let mut parent = null_mut();
        assert_eq!(fpgaPropertiesGetParent(prop, &mut parent), FPGA_OK);
        assert_eq!(token_id(parent), "dfl/fme.0000:3b:00.0");
        destroy_token(parent);
        assert_eq!(fpgaClearProperties(prop), FPGA_OK);
        assert_eq!(
            fpgaUpdateProperties(token, prop),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(fpgaPropertiesGetVendorID(prop, &mut vendor), FPGA_OK);
        assert_eq!(vendor, 0x8086);
        assert_eq!(
            fpgaUpdateProperties(prop, prop),
            FPGA_INVALID_PARAM,
            "properties are not a token"
        );
        assert_eq!(
            fpgaUpdateProperties(token, token),
            FPGA_INVALID_PARAM,
            "a token is not properties"
        );
        assert_eq!(
            fpgaGetProperties(prop, &mut parent),
            FPGA_INVALID_PARAM,
            "properties are not a token"
        );
        destroy_props(prop);

        // A filter on a field the host applies itself (bus) matches nothing here.
        assert_eq!(fpgaPropertiesSetBus(filter, 0x5e), FPGA_OK);
        assert!(enumerate(Some(filter)).is_empty());
        // Host filters: "^localhost" finds nothing, "*" finds NLB0.
        let far = CString::new("^localhost").unwrap();
        assert_eq!(fpgaClearProperties(filter), FPGA_OK);
        assert_eq!(fpgaPropertiesSetHostname(filter, far.as_ptr()), FPGA_OK);
        assert!(enumerate(Some(filter)).is_empty());
        let any = CString::new("*").unwrap();
        assert_eq!(fpgaPropertiesSetHostname(filter, any.as_ptr()), FPGA_OK);
        let found = enumerate(Some(filter));
        assert!(found.len() >= 3);
        found.into_iter().for_each(destroy_token);

        // Argument checks.
        let mut count = 0;
        let mut slot = null_mut();
        let filters = [filter];
        assert_eq!(
            fpgaEnumerate(filters.as_ptr(), 1, &mut slot, 1, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaEnumerate(null(), 1, &mut slot, 1, &mut count),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaEnumerate(filters.as_ptr(), 0, &mut slot, 1, &mut count),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaEnumerate(null(), 0, null_mut(), 1, &mut count),
            FPGA_INVALID_PARAM
        );
        let bad = [forged()];
        assert_eq!(
            fpgaEnumerate(bad.as_ptr(), 1, &mut slot, 1, &mut count),
            FPGA_INVALID_PARAM
        );
        let wrong = [token];
        assert_eq!(
            fpgaEnumerate(wrong.as_ptr(), 1, &mut slot, 1, &mut count),
            FPGA_INVALID_PARAM,
            "a token is not a filter"
        );
        // max_tokens smaller than the matches: count all, store some.
        assert_eq!(fpgaEnumerate(null(), 0, &mut slot, 1, &mut count), FPGA_OK);
        assert!(count >= 4);
        assert!(!slot.is_null());
        destroy_token(slot);
        destroy_props(filter);

        // Clone and destroy.
        let mut copy = null_mut();
        assert_eq!(fpgaCloneToken(token, &mut copy), FPGA_OK);
        assert_ne!(copy, token);
        assert_eq!(token_id(copy), DFL);
        assert_eq!(fpgaCloneToken(token, null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(fpgaCloneToken(null_mut(), &mut copy), FPGA_INVALID_PARAM);
        assert_eq!(fpgaCloneToken(forged(), &mut copy), FPGA_INVALID_PARAM);
        destroy_token(copy);
        let kept = token;
        destroy_token(token);
        let mut again = kept;
        assert_eq!(
            fpgaDestroyToken(&mut again),
            FPGA_INVALID_PARAM,
            "double destroy"
        );
        assert_eq!(fpgaDestroyToken(null_mut()), FPGA_INVALID_PARAM);
        let mut id = [0 as c_char; 32];
        assert_eq!(
            accelhostTokenGetId(kept, id.as_mut_ptr(), 32),
            FPGA_INVALID_PARAM,
            "use after destroy"
        );
        let mut handle = null_mut();
        assert_eq!(
            fpgaOpen(kept, &mut handle, 0),
            FPGA_INVALID_PARAM,
            "open with a destroyed token"
        );
        assert_eq!(
            accelhostTokenGetId(null_mut(), id.as_mut_ptr(), 32),
            FPGA_INVALID_PARAM
        );
    }
}

#[test]
fn open_mmio_reset_close() {
    let _serial = serial();
    // SAFETY: for the whole test, every pointer passed is valid or deliberately NULL/forged.
    unsafe {
        let token = token_by_id(DFL);
        let mut handle = null_mut();
        assert_eq!(fpgaOpen(token, null_mut(), 0), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaOpen(token, &mut handle, 0x40),
            FPGA_INVALID_PARAM,
            "unknown flags"
        );
        assert_eq!(fpgaOpen(null_mut(), &mut handle, 0), FPGA_INVALID_PARAM);
        assert_eq!(fpgaOpen(token, &mut handle, 0), FPGA_OK, "{}", last_error());
        let mut second = null_mut();
        assert_eq!(
            fpgaOpen(token, &mut second, 0),
            FPGA_BUSY,
            "NLB0 is held exclusively"
        );
        assert_eq!(
            fpgaOpen(handle, &mut second, 0),
            FPGA_INVALID_PARAM,
            "a handle is not a token"
        );

        // MMIO: map without a pointer; a pointer is not handed out.
        assert_eq!(fpgaMapMMIO(handle, 0, null_mut()), FPGA_OK);
        let mut ptr: *mut u64 = std::ptr::dangling_mut::<u64>();
        assert_eq!(fpgaMapMMIO(handle, 0, &mut ptr), FPGA_NOT_SUPPORTED);
        assert!(ptr.is_null());
        assert_eq!(
            fpgaMapMMIO(token, 0, null_mut()),
            FPGA_INVALID_PARAM,
            "a token is not a handle"
        );
        assert_ne!(fpgaMapMMIO(handle, 9, null_mut()), FPGA_OK, "no region 9");
        let (mut low, mut high) = (0u64, 0u64);
        assert_eq!(
            fpgaReadMMIO64(handle, 0, nlb0::CSR_AFU_ID_L, &mut low),
            FPGA_OK
        );
        assert_eq!(
            fpgaReadMMIO64(handle, 0, nlb0::CSR_AFU_ID_H, &mut high),
            FPGA_OK
        );
        assert_eq!(accelhost::Guid::new(high, low), nlb0::AFU_ID);
        assert_eq!(
            fpgaWriteMMIO64(handle, 0, nlb0::CSR_SCRATCHPAD2, 0x0123_4567_89AB_CDEF),
            FPGA_OK
        );
        let mut value = 0u64;
        assert_eq!(
            fpgaReadMMIO64(handle, 0, nlb0::CSR_SCRATCHPAD2, &mut value),
            FPGA_OK
        );
        assert_eq!(value, 0x0123_4567_89AB_CDEF);
        assert_eq!(
            fpgaWriteMMIO32(handle, 0, nlb0::CSR_SCRATCHPAD0, 0xCAFE_F00D),
            FPGA_OK
        );
        let mut word = 0u32;
        assert_eq!(
            fpgaReadMMIO32(handle, 0, nlb0::CSR_SCRATCHPAD0, &mut word),
            FPGA_OK
        );
        assert_eq!(word, 0xCAFE_F00D);
        assert_eq!(
            fpgaReadMMIO64(handle, 0, 0x4, &mut value),
            FPGA_INVALID_PARAM,
            "misaligned"
        );
        assert_eq!(
            fpgaWriteMMIO32(handle, 0, 0x2, 1),
            FPGA_INVALID_PARAM,
            "misaligned"
        );
        assert_eq!(
            fpgaReadMMIO32(handle, 0, 1 << 40, &mut word),
            FPGA_INVALID_PARAM,
            "out of range"
        );
        assert_eq!(
            fpgaWriteMMIO64(handle, 0, 1 << 40, 1),
            FPGA_INVALID_PARAM,
            "out of range"
        );
        assert_eq!(fpgaReadMMIO64(handle, 0, 0, null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(fpgaReadMMIO32(handle, 0, 0, null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaReadMMIO64(forged(), 0, 0, &mut value),
            FPGA_INVALID_PARAM
        );
        assert_eq!(fpgaWriteMMIO64(null_mut(), 0, 0, 0), FPGA_INVALID_PARAM);
        assert_eq!(fpgaWriteMMIO32(token, 0, 0, 0), FPGA_INVALID_PARAM);
        assert_eq!(fpgaReadMMIO32(token, 0, 0, &mut word), FPGA_INVALID_PARAM);
        assert_eq!(fpgaUnmapMMIO(handle, 0), FPGA_OK);
        assert_eq!(
            fpgaUnmapMMIO(handle, 0),
            FPGA_INVALID_PARAM,
            "not mapped any more"
        );
        assert_eq!(fpgaUnmapMMIO(token, 0), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaReadMMIO64(handle, 0, nlb0::CSR_AFU_ID_L, &mut low),
            FPGA_OK,
            "mapped again on use"
        );

        // Properties from the handle; reset.
        let mut prop = null_mut();
        assert_eq!(fpgaGetPropertiesFromHandle(handle, &mut prop), FPGA_OK);
        let mut vendor = 0u16;
        assert_eq!(fpgaPropertiesGetVendorID(prop, &mut vendor), FPGA_OK);
        assert_eq!(vendor, 0x8086);
        destroy_props(prop);
        assert_eq!(
            fpgaGetPropertiesFromHandle(handle, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaGetPropertiesFromHandle(token, &mut prop),
            FPGA_INVALID_PARAM
        );
        assert_eq!(fpgaReset(handle), FPGA_OK);
        assert_eq!(fpgaReset(token), FPGA_INVALID_PARAM);
        assert_eq!(fpgaReset(null_mut()), FPGA_INVALID_PARAM);

        // Close; then the handle is gone and the device free again.
        assert_eq!(fpgaClose(handle), FPGA_OK);
        assert_eq!(fpgaClose(handle), FPGA_INVALID_PARAM, "double close");
        assert_eq!(
            fpgaClose(token),
            FPGA_INVALID_PARAM,
            "a token is not a handle"
        );
        assert_eq!(fpgaClose(null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaReadMMIO64(handle, 0, 0, &mut value),
            FPGA_INVALID_PARAM,
            "use after close"
        );
        assert_eq!(fpgaReset(handle), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaOpen(token, &mut second, FPGA_OPEN_SHARED),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(fpgaClose(second), FPGA_OK);
        destroy_token(token);
    }
}

#[test]
fn buffers_prepare_address_release() {
    let _serial = serial();
    let handle = open(DFL);
    // SAFETY: for the whole test, every pointer passed is valid or deliberately NULL/forged.
    unsafe {
        let mut addr: *mut c_void = null_mut();
        let mut wsid = 0u64;
        assert_eq!(
            fpgaPrepareBuffer(handle, 8192, &mut addr, &mut wsid, 0),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert!(!addr.is_null());
        // The application writes the memory directly.
        std::ptr::write_bytes(addr.cast::<u8>(), 0x5A, 8192);
        let mut iova = 0u64;
        assert_eq!(fpgaGetIOAddress(handle, wsid, &mut iova), FPGA_OK);
        assert_ne!(iova, 0);
        assert_eq!(
            fpgaGetIOAddress(handle, wsid, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaGetIOAddress(handle, wsid ^ 0xFFFF, &mut iova),
            FPGA_NOT_FOUND
        );
        assert_eq!(
            fpgaGetIOAddress(forged(), wsid, &mut iova),
            FPGA_INVALID_PARAM
        );

        let mut ro_addr = null_mut();
        let mut ro = 0u64;
        assert_eq!(
            fpgaPrepareBuffer(
                handle,
                4096,
                &mut ro_addr,
                &mut ro,
                FPGA_BUF_READ_ONLY | FPGA_BUF_QUIET
            ),
            FPGA_OK
        );
        assert_ne!(ro, wsid);
        assert_eq!(fpgaReleaseBuffer(handle, ro), FPGA_OK);

        // Refused: preallocated, unknown flags, zero length, NULL outputs, wrong handle.
        assert_eq!(
            fpgaPrepareBuffer(handle, 0, null_mut(), null_mut(), FPGA_BUF_PREALLOCATED),
            FPGA_NOT_SUPPORTED
        );
        assert_eq!(
            fpgaPrepareBuffer(handle, 4096, &mut addr, &mut wsid, FPGA_BUF_PREALLOCATED),
            FPGA_NOT_SUPPORTED
        );
        let mut other = 0u64;
        assert_eq!(
            fpgaPrepareBuffer(handle, 4096, &mut addr, &mut other, 0x100),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaPrepareBuffer(handle, 0, &mut addr, &mut other, 0),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaPrepareBuffer(handle, 4096, null_mut(), &mut other, 0),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaPrepareBuffer(handle, 4096, &mut addr, null_mut(), 0),
            FPGA_INVALID_PARAM
        );
        let token = token_by_id(XOCL);
        assert_eq!(
            fpgaPrepareBuffer(token, 4096, &mut addr, &mut other, 0),
            FPGA_INVALID_PARAM,
            "a token is not a handle"
        );
        assert_eq!(
            fpgaPrepareBuffer(null_mut(), 4096, &mut addr, &mut other, 0),
            FPGA_INVALID_PARAM
        );
        // Over the plugin's DMA grant (512 MiB).
        assert_eq!(
            fpgaPrepareBuffer(handle, 1 << 40, &mut addr, &mut other, 0),
            FPGA_NO_MEMORY,
            "{}",
            last_error()
        );

        assert_eq!(fpgaReleaseBuffer(handle, wsid), FPGA_OK);
        assert_eq!(
            fpgaReleaseBuffer(handle, wsid),
            FPGA_INVALID_PARAM,
            "double release"
        );
        assert_eq!(fpgaGetIOAddress(handle, wsid, &mut iova), FPGA_NOT_FOUND);
        assert_eq!(fpgaReleaseBuffer(token, wsid), FPGA_INVALID_PARAM);
        assert_eq!(fpgaReleaseBuffer(null_mut(), wsid), FPGA_INVALID_PARAM);
        destroy_token(token);

        // Buffers still prepared at close are released by it.
        assert_eq!(
            fpgaPrepareBuffer(handle, 4096, &mut addr, &mut wsid, 0),
            FPGA_OK
        );
        assert_eq!(fpgaClose(handle), FPGA_OK);
        assert_eq!(fpgaReleaseBuffer(handle, wsid), FPGA_INVALID_PARAM);
    }
}

#[test]
fn hello_fpga_through_the_c_api() {
    let _serial = serial();
    let handle = open(DFL);
    hello_fpga(handle, 256 << 10);
    assert_eq!(fpgaClose(handle), FPGA_OK);
}

#[test]
fn events_create_register_unregister_destroy() {
    let _serial = serial();
    // SAFETY: for the whole test, every pointer passed is valid or deliberately NULL/forged.
    unsafe {
        let mut event = null_mut();
        assert_eq!(fpgaCreateEventHandle(&mut event), FPGA_OK);
        assert_eq!(fpgaCreateEventHandle(null_mut()), FPGA_INVALID_PARAM);
        let mut fd = -1;
        assert_eq!(fpgaGetOSObjectFromEventHandle(event, &mut fd), FPGA_OK);
        assert!(fd >= 0);
        assert_eq!(
            fpgaGetOSObjectFromEventHandle(event, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaGetOSObjectFromEventHandle(null_mut(), &mut fd),
            FPGA_INVALID_PARAM
        );

        // DFL devices raise no events: the plugin says so, with an OPAE code.
        let dfl = open(DFL);
        let rc = fpgaRegisterEvent(dfl, FPGA_EVENT_INTERRUPT, event, 0);
        assert!(
            rc == FPGA_NOT_SUPPORTED || rc == FPGA_INVALID_PARAM,
            "{rc}: {}",
            last_error()
        );
        assert_eq!(
            fpgaRegisterEvent(dfl, 42, event, 0),
            FPGA_INVALID_PARAM,
            "unknown event type"
        );
        assert_eq!(
            fpgaRegisterEvent(dfl, FPGA_EVENT_INTERRUPT, dfl, 0),
            FPGA_INVALID_PARAM,
            "a handle is not an event"
        );
        assert_eq!(
            fpgaRegisterEvent(event, FPGA_EVENT_INTERRUPT, event, 0),
            FPGA_INVALID_PARAM,
            "an event is not a handle"
        );
        assert_eq!(
            fpgaRegisterEvent(dfl, FPGA_EVENT_INTERRUPT, null_mut(), 0),
            FPGA_INVALID_PARAM
        );

        // The CAPI memcpy AFU has interrupts (1-based).
        let capi = open(CXL_MEMCPY);
        assert_eq!(
            fpgaRegisterEvent(capi, FPGA_EVENT_INTERRUPT, event, 1),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            fpgaRegisterEvent(capi, FPGA_EVENT_INTERRUPT, event, 1),
            FPGA_BUSY,
            "already registered"
        );
        let mut ready = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        assert_eq!(libc::poll(&mut ready, 1, 0), 0, "nothing raised yet");
        assert_eq!(
            fpgaUnregisterEvent(capi, FPGA_EVENT_ERROR, event),
            FPGA_INVALID_PARAM,
            "another type"
        );
        assert_eq!(
            fpgaUnregisterEvent(dfl, FPGA_EVENT_INTERRUPT, event),
            FPGA_INVALID_PARAM,
            "another handle"
        );
        assert_eq!(fpgaUnregisterEvent(capi, 42, event), FPGA_INVALID_PARAM);
        assert_eq!(
            fpgaUnregisterEvent(capi, FPGA_EVENT_INTERRUPT, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaUnregisterEvent(null_mut(), FPGA_EVENT_INTERRUPT, event),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaUnregisterEvent(capi, FPGA_EVENT_INTERRUPT, event),
            FPGA_OK
        );
        assert_eq!(
            fpgaUnregisterEvent(capi, FPGA_EVENT_INTERRUPT, event),
            FPGA_INVALID_PARAM,
            "not registered"
        );
        // Registered again, then destroyed while registered.
        assert_eq!(
            fpgaRegisterEvent(capi, FPGA_EVENT_INTERRUPT, event, 1),
            FPGA_OK
        );
        let kept = event;
        assert_eq!(fpgaDestroyEventHandle(&mut event), FPGA_OK);
        assert!(event.is_null());
        let mut again = kept;
        assert_eq!(
            fpgaDestroyEventHandle(&mut again),
            FPGA_INVALID_PARAM,
            "double destroy"
        );
        assert_eq!(fpgaDestroyEventHandle(null_mut()), FPGA_INVALID_PARAM);
        let mut wrong = capi;
        assert_eq!(
            fpgaDestroyEventHandle(&mut wrong),
            FPGA_INVALID_PARAM,
            "a handle is not an event"
        );
        assert_eq!(
            fpgaGetOSObjectFromEventHandle(kept, &mut fd),
            FPGA_INVALID_PARAM
        );
        assert_eq!(fpgaClose(capi), FPGA_OK);
        assert_eq!(fpgaClose(dfl), FPGA_OK);
    }
}

#[test]
fn reconfigure_slot() {
    let _serial = serial();
    let xocl = open(XOCL);
    let image = accelhost::workloads::vadd::vadd_image(1);
    // SAFETY: for the whole test, every pointer passed is valid or deliberately NULL/forged.
    unsafe {
        assert_eq!(
            fpgaReconfigureSlot(xocl, 0, image.as_ptr(), image.len(), 0),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            fpgaReconfigureSlot(xocl, 0, image.as_ptr(), image.len(), FPGA_RECONF_FORCE),
            FPGA_OK
        );
        assert_eq!(
            fpgaReconfigureSlot(xocl, 0, null(), 16, 0),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaReconfigureSlot(xocl, 0, image.as_ptr(), 0, 0),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaReconfigureSlot(xocl, 0, image.as_ptr(), image.len(), 0x80),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            fpgaReconfigureSlot(xocl, 3, image.as_ptr(), image.len(), 0),
            FPGA_INVALID_PARAM,
            "one slot"
        );
        let mut broken = image.clone();
        broken.truncate(100);
        assert_eq!(
            fpgaReconfigureSlot(xocl, 0, broken.as_ptr(), broken.len(), 0),
            FPGA_INVALID_PARAM,
            "a truncated xclbin"
        );
        assert_eq!(
            fpgaReconfigureSlot(forged(), 0, image.as_ptr(), image.len(), 0),
            FPGA_INVALID_PARAM
        );
        let dfl = open(DFL);
        let rc = fpgaReconfigureSlot(dfl, 0, b"bits".as_ptr(), 4, 0);
        assert_ne!(rc, FPGA_OK);
        assert!(!last_error().is_empty());
        assert_eq!(fpgaClose(dfl), FPGA_OK);
    }
    assert_eq!(fpgaClose(xocl), FPGA_OK);
}

/// The device objects of the embedded default, by id.
fn device_objects() -> Vec<(String, fpga_token)> {
    let filter = new_filter();
    // SAFETY: a live properties object.
    assert_eq!(fpgaPropertiesSetObjectType(filter, FPGA_DEVICE), FPGA_OK);
    let tokens = enumerate(Some(filter));
    destroy_props(filter);
    tokens.into_iter().map(|t| (token_id(t), t)).collect()
}

/// Whether `fd` becomes readable within `ms` milliseconds.
fn readable_within(fd: i32, ms: i32) -> bool {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut pollfd, 1, ms) == 1 }
}

#[test]
fn every_device_object_reports_an_interface_of_its_kind() {
    let _serial = serial();
    let mut seen = Vec::new();
    for (id, token) in device_objects() {
        let mut prop = null_mut();
        let mut interface = -1;
        // SAFETY: a live token and pointers to locals.
        unsafe {
            assert_eq!(fpgaGetProperties(token, &mut prop), FPGA_OK);
            assert_eq!(
                fpgaPropertiesGetInterface(prop, &mut interface),
                FPGA_OK,
                "{id}: {}",
                last_error()
            );
        }
        destroy_props(prop);
        destroy_token(token);
        seen.push((id.split('/').next().unwrap().to_string(), interface));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("cxl".to_string(), ACCELHOST_IFC_SIM_CXL),
            ("dfl".to_string(), FPGA_IFC_SIM_DFL),
            ("xocl".to_string(), ACCELHOST_IFC_SIM_XOCL),
        ]
    );
}

#[test]
fn an_fme_opens_for_its_sensors_error_registers_and_error_events() {
    let _serial = serial();
    let (_, fme) = device_objects()
        .into_iter()
        .find(|(id, _)| id.starts_with("dfl/"))
        .expect("the DFL card's FME");
    // SAFETY: for the whole test, every pointer passed is valid or deliberately NULL.
    unsafe {
        let mut handle = null_mut();
        assert_eq!(
            fpgaOpen(fme, &mut handle, FPGA_OPEN_SHARED),
            FPGA_OK,
            "{}",
            last_error()
        );
        let mut second = null_mut();
        assert_eq!(fpgaOpen(fme, &mut second, FPGA_OPEN_SHARED), FPGA_OK);

        // What OPAE's fpgainfo reads through it.
        let mut count = 0;
        assert_eq!(fpgaGetNumMetrics(handle, &mut count), FPGA_OK);
        assert_eq!(count, 2, "temperature and power");
        let mut prop = null_mut();
        let mut objtype = FPGA_ACCELERATOR;
        assert_eq!(fpgaGetPropertiesFromHandle(handle, &mut prop), FPGA_OK);
        assert_eq!(fpgaPropertiesGetObjectType(prop, &mut objtype), FPGA_OK);
        assert_eq!(objtype, FPGA_DEVICE);
        destroy_props(prop);

        // What only an accelerator has.
        assert_eq!(fpgaMapMMIO(handle, 0, null_mut()), FPGA_NOT_SUPPORTED);
        assert!(last_error().contains("device object"), "{}", last_error());
        assert_eq!(fpgaReset(handle), FPGA_NOT_SUPPORTED);
        let (mut addr, mut wsid) = (null_mut(), 0);
        assert_eq!(
            fpgaPrepareBuffer(handle, 4096, &mut addr, &mut wsid, 0),
            FPGA_NOT_SUPPORTED
        );

        // Error events, as OPAE's hello_events raises one: a fatal error injected through
        // the FME's errors/inject_errors.
        let mut event = null_mut();
        assert_eq!(fpgaCreateEventHandle(&mut event), FPGA_OK);
        assert_eq!(
            fpgaRegisterEvent(handle, FPGA_EVENT_INTERRUPT, event, 0),
            FPGA_NOT_SUPPORTED
        );
        assert_eq!(
            fpgaRegisterEvent(handle, FPGA_EVENT_ERROR, event, 0),
            FPGA_OK,
            "{}",
            last_error()
        );
        let mut fd = -1;
        assert_eq!(fpgaGetOSObjectFromEventHandle(event, &mut fd), FPGA_OK);
        assert!(!readable_within(fd, 100), "no error yet");
        let mut inject = null_mut();
        let name = CString::new("errors/inject_errors").unwrap();
        assert_eq!(
            fpgaHandleGetObject(second, name.as_ptr(), &mut inject, 0),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(fpgaObjectWrite64(inject, 0b10, 0), FPGA_OK, "fatal");
        assert!(
            readable_within(fd, 5000),
            "the injected error signals the event"
        );
        let mut signalled = 0u64;
        assert_eq!(libc::read(fd, (&raw mut signalled).cast(), 8), 8);
        assert!(signalled >= 1);
        assert_eq!(fpgaObjectWrite64(inject, 0, 0), FPGA_OK, "cleared");
        assert!(!readable_within(fd, 100), "clearing is not an error");
        assert_eq!(
            fpgaUnregisterEvent(handle, FPGA_EVENT_ERROR, event),
            FPGA_OK
        );
        assert_eq!(fpgaObjectWrite64(inject, 0b100, 0), FPGA_OK, "non-fatal");
        assert!(
            !readable_within(fd, 100),
            "an unregistered event is not signalled"
        );
        assert_eq!(fpgaObjectWrite64(inject, 0, 0), FPGA_OK);
        assert_eq!(fpgaDestroyObject(&mut inject), FPGA_OK);
        assert_eq!(fpgaDestroyEventHandle(&mut event), FPGA_OK);
        assert_eq!(fpgaClose(second), FPGA_OK);
        assert_eq!(fpgaClose(handle), FPGA_OK);

        // The perf counters, found as OPAE's object_api finds them.
        let read = |object: fpga_object| {
            let mut value = 0;
            assert_eq!(
                fpgaObjectRead64(object, &mut value, FPGA_OBJECT_SYNC),
                FPGA_OK
            );
            value
        };
        let (mut clock, mut fabric, mut mmio_read) = (null_mut(), null_mut(), null_mut());
        let glob = |pattern: &str, out: &mut fpga_object| {
            let pattern = CString::new(pattern).unwrap();
            assert_eq!(
                fpgaTokenGetObject(fme, pattern.as_ptr(), out, FPGA_OBJECT_GLOB),
                FPGA_OK,
                "{}",
                last_error()
            );
        };
        glob("*perf/clock", &mut clock);
        glob("*perf/fabric", &mut fabric);
        let name = CString::new("mmio_read").unwrap();
        assert_eq!(
            fpgaObjectGetObject(fabric, name.as_ptr(), &mut mmio_read, FPGA_OBJECT_GLOB),
            FPGA_OK
        );
        let (ticks, reads) = (read(clock), read(mmio_read));
        let port = open(DFL);
        let mut value = 0;
        for _ in 0..3 {
            assert_eq!(fpgaReadMMIO64(port, 0, 0, &mut value), FPGA_OK);
        }
        assert_eq!(fpgaClose(port), FPGA_OK);
        assert_eq!(read(mmio_read), reads + 3, "three MMIO reads of the port");
        assert!(read(clock) > ticks, "the card's clock runs");
        for mut object in [mmio_read, fabric, clock] {
            assert_eq!(fpgaDestroyObject(&mut object), FPGA_OK);
        }
    }
    destroy_token(fme);
}

#[test]
fn a_management_function_reconfigures_the_accelerator_in_its_slot() {
    let _serial = serial();
    let (_, mgmt) = device_objects()
        .into_iter()
        .find(|(id, _)| id.starts_with("xocl/"))
        .expect("the XRT card's management function");
    // The image the other tests load (the card keeps an image of the same id loaded).
    let image = accelhost::workloads::vadd::vadd_image(2);
    // SAFETY: for the whole test, every pointer passed is valid.
    unsafe {
        let mut handle = null_mut();
        assert_eq!(fpgaOpen(mgmt, &mut handle, 0), FPGA_OK, "{}", last_error());
        assert_eq!(
            fpgaReconfigureSlot(handle, 0, image.as_ptr(), image.len(), 0),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            fpgaReconfigureSlot(handle, 1, image.as_ptr(), image.len(), 0),
            FPGA_INVALID_PARAM,
            "one slot"
        );
        assert!(last_error().contains("1 slot"), "{}", last_error());
        let broken = &image[..100];
        assert_eq!(
            fpgaReconfigureSlot(handle, 0, broken.as_ptr(), broken.len(), 0),
            FPGA_INVALID_PARAM,
            "the plugin's check of the image, reached through the slot"
        );
        // The slot's accelerator was opened for the load and closed again.
        let user = open(XOCL);
        assert_eq!(fpgaClose(user), FPGA_OK);
        assert_eq!(fpgaClose(handle), FPGA_OK);
    }
    destroy_token(mgmt);
}

#[test]
fn offload_vadd_with_retain_and_release() {
    let _serial = serial();
    let handle = open(XOCL);
    let image = accelhost::workloads::vadd::vadd_image(2);
    let n = 4096u32;
    let bytes = u64::from(n) * 4;
    let in1: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let in2: Vec<u32> = (0..n).map(|i| i ^ 0xA5A5_A5A5).collect();
    // SAFETY: for the whole test, every pointer passed is valid or deliberately NULL/forged.
    unsafe {
        let mut program = null_mut();
        assert_eq!(
            accelhostProgramCreate(handle, image.as_ptr(), image.len(), &mut program),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            accelhostProgramCreate(handle, null(), 5, &mut program),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostProgramCreate(handle, image.as_ptr(), image.len(), null_mut()),
            FPGA_INVALID_PARAM
        );
        let mut kernel = null_mut();
        let name = CString::new("vadd").unwrap();
        assert_eq!(
            accelhostKernelCreate(program, name.as_ptr(), &mut kernel),
            FPGA_OK,
            "{}",
            last_error()
        );
        let missing = CString::new("nope").unwrap();
        let mut none = null_mut();
        assert_ne!(
            accelhostKernelCreate(program, missing.as_ptr(), &mut none),
            FPGA_OK
        );
        assert_eq!(
            accelhostKernelCreate(program, null(), &mut none),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostKernelCreate(handle, name.as_ptr(), &mut none),
            FPGA_INVALID_PARAM,
            "a handle is not a program"
        );
        // The kernel keeps the program alive.
        assert_eq!(accelhostProgramRelease(program), FPGA_OK);
        assert_eq!(
            accelhostProgramRelease(program),
            FPGA_INVALID_PARAM,
            "double release"
        );

        let mut mems = [null_mut(); 6];
        let kinds = [
            ACCELHOST_MEMORY_HOST,
            ACCELHOST_MEMORY_HOST,
            ACCELHOST_MEMORY_HOST,
            ACCELHOST_MEMORY_DEVICE,
            ACCELHOST_MEMORY_DEVICE,
            ACCELHOST_MEMORY_DEVICE,
        ];
        for (mem, kind) in mems.iter_mut().zip(kinds) {
            assert_eq!(
                accelhostMemAlloc(handle, kind, bytes, mem),
                FPGA_OK,
                "{}",
                last_error()
            );
        }
        let mut junk = null_mut();
        assert_eq!(
            accelhostMemAlloc(handle, 9, bytes, &mut junk),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostMemAlloc(handle, ACCELHOST_MEMORY_HOST, 0, &mut junk),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostMemAlloc(handle, ACCELHOST_MEMORY_HOST, 64, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostMemAlloc(kernel, ACCELHOST_MEMORY_HOST, 64, &mut junk),
            FPGA_INVALID_PARAM
        );
        let [h1, h2, hout, d1, d2, dout] = mems;
        let mut size = 0;
        assert_eq!(accelhostMemGetSize(h1, &mut size), FPGA_OK);
        assert!(size >= bytes);
        assert_eq!(
            accelhostMemGetSize(kernel, &mut size),
            FPGA_INVALID_PARAM,
            "a kernel is not memory"
        );
        assert_eq!(accelhostMemGetSize(h1, null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(
            accelhostMemWrite(h1, 0, in1.as_ptr().cast(), bytes),
            FPGA_OK
        );
        assert_eq!(
            accelhostMemWrite(h2, 0, in2.as_ptr().cast(), bytes),
            FPGA_OK
        );
        assert_eq!(accelhostMemWrite(h1, 0, null(), bytes), FPGA_INVALID_PARAM);
        assert_eq!(
            accelhostMemWrite(h1, size, in1.as_ptr().cast(), 4),
            FPGA_INVALID_PARAM,
            "past the end"
        );
        assert_ne!(
            accelhostMemWrite(d1, 0, in1.as_ptr().cast(), 4),
            FPGA_OK,
            "device memory is not host-visible"
        );

        let mut queue = null_mut();
        assert_eq!(accelhostQueueCreate(handle, &mut queue), FPGA_OK);
        assert_eq!(accelhostQueueCreate(handle, null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(
            accelhostQueueCreate(queue, &mut junk),
            FPGA_INVALID_PARAM,
            "a queue is not a handle"
        );
        assert_eq!(
            accelhostEnqueueMemcpy(queue, d1, 0, h1, 0, bytes, null_mut()),
            FPGA_OK
        );
        assert_eq!(
            accelhostEnqueueMemcpy(queue, d2, 0, h2, 0, bytes, null_mut()),
            FPGA_OK
        );
        assert_eq!(
            accelhostEnqueueMemcpy(queue, d2, 0, kernel, 0, bytes, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostEnqueueMemcpy(h1, d2, 0, h2, 0, bytes, null_mut()),
            FPGA_INVALID_PARAM,
            "memory is not a queue"
        );
        let arg = |memory: *mut c_void| accelhost_kernel_arg {
            kind: ACCELHOST_ARG_MEMORY,
            reserved: 0,
            value: 0,
            memory,
        };
        let args = [
            arg(d1),
            arg(d2),
            arg(dout),
            accelhost_kernel_arg {
                kind: ACCELHOST_ARG_U32,
                reserved: 0,
                value: u64::from(n),
                memory: null_mut(),
            },
        ];
        let mut launched = null_mut();
        assert_eq!(
            accelhostEnqueueLaunch(queue, kernel, args.as_ptr(), 4, &mut launched),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            accelhostEnqueueLaunch(queue, kernel, null(), 4, null_mut()),
            FPGA_INVALID_PARAM
        );
        let bad_kind = [accelhost_kernel_arg {
            kind: 77,
            reserved: 0,
            value: 0,
            memory: null_mut(),
        }];
        assert_eq!(
            accelhostEnqueueLaunch(queue, kernel, bad_kind.as_ptr(), 1, null_mut()),
            FPGA_INVALID_PARAM
        );
        let too_big = [accelhost_kernel_arg {
            kind: ACCELHOST_ARG_U32,
            reserved: 0,
            value: 1 << 40,
            memory: null_mut(),
        }];
        assert_eq!(
            accelhostEnqueueLaunch(queue, kernel, too_big.as_ptr(), 1, null_mut()),
            FPGA_INVALID_PARAM
        );
        let bad_mem = [arg(kernel)];
        assert_eq!(
            accelhostEnqueueLaunch(queue, kernel, bad_mem.as_ptr(), 1, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostEnqueueLaunch(queue, h1, args.as_ptr(), 4, null_mut()),
            FPGA_INVALID_PARAM,
            "memory is not a kernel"
        );
        let mut copied = null_mut();
        assert_eq!(
            accelhostEnqueueMemcpy(queue, hout, 0, dout, 0, bytes, &mut copied),
            FPGA_OK
        );
        assert_eq!(
            accelhostEventWait(copied, 30_000),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(accelhostEventWait(launched, -1), FPGA_OK);
        let mut status = -1;
        assert_eq!(accelhostEventGetStatus(launched, &mut status), FPGA_OK);
        assert_eq!(status, ACCELHOST_EVENT_COMPLETE);
        assert_eq!(
            accelhostEventGetStatus(launched, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostEventGetStatus(queue, &mut status),
            FPGA_INVALID_PARAM,
            "a queue is not an event"
        );
        assert_eq!(accelhostEventWait(queue, 0), FPGA_INVALID_PARAM);
        assert_eq!(accelhostQueueFinish(queue), FPGA_OK);
        assert_eq!(
            accelhostQueueFinish(launched),
            FPGA_INVALID_PARAM,
            "an event is not a queue"
        );

        let mut out = vec![0u32; n as usize];
        assert_eq!(
            accelhostMemRead(hout, 0, out.as_mut_ptr().cast(), bytes),
            FPGA_OK
        );
        assert_eq!(
            accelhostMemRead(hout, 0, null_mut(), bytes),
            FPGA_INVALID_PARAM
        );
        for i in 0..n as usize {
            assert_eq!(out[i], in1[i].wrapping_add(in2[i]), "element {i}");
        }

        // Retain / release: each retain needs a release; one more is refused.
        for (retain, release, object) in [
            (
                accelhostKernelRetain as extern "C" fn(*mut c_void) -> fpga_result,
                accelhostKernelRelease as extern "C" fn(*mut c_void) -> fpga_result,
                kernel,
            ),
            (accelhostQueueRetain, accelhostQueueRelease, queue),
            (accelhostEventRetain, accelhostEventRelease, launched),
            (accelhostEventRetain, accelhostEventRelease, copied),
        ] {
            assert_eq!(retain(object), FPGA_OK);
            assert_eq!(release(object), FPGA_OK);
            assert_eq!(release(object), FPGA_OK);
            assert_eq!(release(object), FPGA_INVALID_PARAM, "double release");
            assert_eq!(
                retain(object),
                FPGA_INVALID_PARAM,
                "retain after the last release"
            );
        }
        assert_eq!(accelhostMemRetain(h1), FPGA_OK);
        for mem in mems {
            assert_eq!(accelhostMemRelease(mem), FPGA_OK);
        }
        assert_eq!(accelhostMemRelease(h1), FPGA_OK);
        assert_eq!(accelhostMemRelease(h1), FPGA_INVALID_PARAM);
        assert_eq!(accelhostMemRetain(null_mut()), FPGA_INVALID_PARAM);
        assert_eq!(
            accelhostMemRetain(handle),
            FPGA_INVALID_PARAM,
            "a handle is not memory"
        );
        assert_eq!(accelhostProgramRetain(forged()), FPGA_INVALID_PARAM);
        assert_eq!(accelhostQueueRelease(null_mut()), FPGA_INVALID_PARAM);
    }
    assert_eq!(fpgaClose(handle), FPGA_OK);
}

#[test]
fn builtin_program_of_a_capi_afu() {
    let _serial = serial();
    let handle = open(CXL_MEMCPY);
    // SAFETY: valid pointers.
    unsafe {
        let mut program = null_mut();
        assert_eq!(
            accelhostProgramCreate(handle, null(), 0, &mut program),
            FPGA_OK,
            "{}",
            last_error()
        );
        let mut kernel = null_mut();
        let name = CString::new("memcpy").unwrap();
        assert_eq!(
            accelhostKernelCreate(program, name.as_ptr(), &mut kernel),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(accelhostKernelRelease(kernel), FPGA_OK);
        assert_eq!(accelhostProgramRelease(program), FPGA_OK);
    }
    assert_eq!(fpgaClose(handle), FPGA_OK);
}

#[test]
fn plugins_are_listed_with_their_state() {
    let _serial = serial();
    // SAFETY: valid pointers, or deliberately NULL.
    unsafe {
        let mut count = 0;
        assert_eq!(accelhostGetPlugins(null_mut(), 0, &mut count), FPGA_OK);
        assert_eq!(count, 3);
        let mut infos = vec![std::mem::zeroed::<accelhost_plugin_info>(); 2];
        assert_eq!(
            accelhostGetPlugins(infos.as_mut_ptr(), 2, &mut count),
            FPGA_OK
        );
        assert_eq!(count, 3, "the total, though two were asked for");
        let name = CStr::from_ptr(infos[0].name.as_ptr()).to_str().unwrap();
        assert_eq!(name, "dfl");
        assert_eq!(
            CStr::from_ptr(infos[0].module.as_ptr()).to_str().unwrap(),
            "builtin:dfl"
        );
        assert_eq!(infos[0].state, ACCELHOST_PLUGIN_RUNNING);
        assert_eq!(infos[0].reason[0], 0);
        assert_eq!(
            accelhostGetPlugins(infos.as_mut_ptr(), 2, null_mut()),
            FPGA_INVALID_PARAM
        );
        assert_eq!(
            accelhostGetPlugins(null_mut(), 2, &mut count),
            FPGA_INVALID_PARAM
        );
    }
}

#[test]
fn error_strings_and_the_last_error() {
    let _serial = serial();
    let mut seen = std::collections::HashSet::new();
    for code in FPGA_OK..=FPGA_RECONF_ERROR {
        // SAFETY: fpgaErrStr returns a static NUL-terminated string.
        let text = unsafe { CStr::from_ptr(fpgaErrStr(code)) }
            .to_str()
            .unwrap();
        assert!(!text.is_empty());
        assert!(seen.insert(text), "{text} twice");
    }
    // SAFETY: as above.
    let unknown = unsafe { CStr::from_ptr(fpgaErrStr(1234)) }
        .to_str()
        .unwrap();
    assert_eq!(unknown, "unknown result code");

    let mut id = [0 as c_char; 8];
    assert_eq!(
        // SAFETY: a forged token is refused without being dereferenced.
        unsafe { accelhostTokenGetId(forged(), id.as_mut_ptr(), 8) },
        FPGA_INVALID_PARAM
    );
    let message = last_error();
    assert!(message.contains("not a live token"), "{message}");
    assert_eq!(
        // SAFETY: NULL is allowed and only returns the code.
        unsafe { accelhostGetLastError(null_mut(), 0) },
        0,
        "not an accelhost error"
    );
    let dfl = open(DFL);
    // SAFETY: valid pointers.
    unsafe {
        let mut second = null_mut();
        let token = token_by_id(DFL);
        assert_eq!(fpgaOpen(token, &mut second, 0), FPGA_BUSY);
        assert_eq!(
            accelhostGetLastError(null_mut(), 0),
            accelhost::ErrorCode::Busy as i32
        );
        assert!(last_error().contains("plugin 'dfl'"), "{}", last_error());
        destroy_token(token);
    }
    assert_eq!(fpgaClose(dfl), FPGA_OK);
}

#[test]
fn a_panic_is_an_exception_not_a_crash() {
    let rc = opae_c::ffi::guard("test", || panic!("boom"));
    assert_eq!(rc, FPGA_EXCEPTION);
    assert!(last_error().contains("boom"));
    assert_eq!(opae_c::ffi::guard("test", || Ok(())), FPGA_OK);
}

#[test]
fn error_codes_map_to_opae_results() {
    use accelhost::ErrorCode as E;
    let table = [
        (E::Unsupported, FPGA_NOT_SUPPORTED),
        (E::InvalidArgument, FPGA_INVALID_PARAM),
        (E::NotFound, FPGA_NOT_FOUND),
        (E::Busy, FPGA_BUSY),
        (E::NoSpace, FPGA_NO_MEMORY),
        (E::PermissionDenied, FPGA_NO_ACCESS),
        (E::Timeout, FPGA_EXCEPTION),
        (E::OutOfMemory, FPGA_NO_MEMORY),
        (E::DeviceError, FPGA_EXCEPTION),
        (E::NotInitialized, FPGA_NO_DRIVER),
        (E::AlreadyExists, FPGA_BUSY),
        (E::Internal, FPGA_EXCEPTION),
        (E::Config, FPGA_INVALID_PARAM),
        (E::LoadFailed, FPGA_NO_DRIVER),
        (E::IncompatibleInterface, FPGA_NO_DRIVER),
        (E::PluginFaulted, FPGA_EXCEPTION),
        (E::Stale, FPGA_INVALID_PARAM),
        (E::PluginUnavailable, FPGA_NO_DRIVER),
    ];
    for (code, result) in table {
        assert_eq!(result_of(code), result, "{code}");
    }
}

#[test]
fn initialize_is_idempotent_and_null_safe() {
    let _serial = serial();
    // SAFETY: NULL and valid strings.
    unsafe {
        assert_eq!(fpgaInitialize(null()), FPGA_OK, "a host runs already");
        let missing = CString::new("/nonexistent/accelhost.json").unwrap();
        assert_eq!(
            fpgaInitialize(missing.as_ptr()),
            FPGA_OK,
            "does nothing while a host runs"
        );
        assert_eq!(accelhostLoadConfig(null()), FPGA_INVALID_PARAM);
        assert_eq!(accelhostLoadConfigJson(null()), FPGA_INVALID_PARAM);
    }
}

#[test]
fn an_interrupt_signals_the_eventfd() {
    use accelhost::families::cxl::abi::memcpy;
    let _serial = serial();
    let capi = open(CXL_MEMCPY);
    // SAFETY: for the whole test, valid pointers.
    unsafe {
        let mut event = null_mut();
        assert_eq!(fpgaCreateEventHandle(&mut event), FPGA_OK);
        let mut fd = -1;
        assert_eq!(fpgaGetOSObjectFromEventHandle(event, &mut fd), FPGA_OK);
        assert_eq!(
            fpgaRegisterEvent(capi, FPGA_EVENT_INTERRUPT, event, 1),
            FPGA_OK,
            "{}",
            last_error()
        );

        // One IRQ work element for the memcpy AFU, through the offload extension.
        let (mut program, mut kernel, mut queue, mut mem, mut done) =
            (null_mut(), null_mut(), null_mut(), null_mut(), null_mut());
        assert_eq!(
            accelhostProgramCreate(capi, null(), 0, &mut program),
            FPGA_OK
        );
        let name = CString::new("memcpy").unwrap();
        assert_eq!(
            accelhostKernelCreate(program, name.as_ptr(), &mut kernel),
            FPGA_OK
        );
        assert_eq!(
            accelhostMemAlloc(capi, ACCELHOST_MEMORY_HOST, memcpy::LINE_SIZE, &mut mem),
            FPGA_OK
        );
        let mut element = accelhost::workloads::capi::interrupt(1);
        let command = element.cmd | memcpy::CMD_VALID;
        element.cmd = 0;
        let bytes = element.encode();
        assert_eq!(
            accelhostMemWrite(mem, 0, bytes.as_ptr().cast(), bytes.len() as u64),
            FPGA_OK
        );
        assert_eq!(
            accelhostMemWrite(mem, 0, (&raw const command).cast(), 1),
            FPGA_OK
        );
        assert_eq!(accelhostQueueCreate(capi, &mut queue), FPGA_OK);
        let args = [
            accelhost_kernel_arg {
                kind: ACCELHOST_ARG_MEMORY,
                reserved: 0,
                value: 0,
                memory: mem,
            },
            accelhost_kernel_arg {
                kind: ACCELHOST_ARG_U32,
                reserved: 0,
                value: 1,
                memory: null_mut(),
            },
            accelhost_kernel_arg {
                kind: ACCELHOST_ARG_U32,
                reserved: 0,
                value: 1,
                memory: null_mut(),
            },
        ];
        assert_eq!(
            accelhostEnqueueLaunch(queue, kernel, args.as_ptr(), 3, &mut done),
            FPGA_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            accelhostEventWait(done, 10_000),
            FPGA_OK,
            "{}",
            last_error()
        );

        // The registered interrupt made the eventfd readable, with a count of 1.
        let mut ready = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        assert_eq!(
            libc::poll(&mut ready, 1, 10_000),
            1,
            "the eventfd was not signalled"
        );
        let mut count = 0u64;
        assert_eq!(libc::read(fd, (&raw mut count).cast(), 8), 8);
        assert_eq!(count, 1);

        assert_eq!(
            fpgaUnregisterEvent(capi, FPGA_EVENT_INTERRUPT, event),
            FPGA_OK
        );
        assert_eq!(fpgaDestroyEventHandle(&mut event), FPGA_OK);
        for release in [
            accelhostEventRelease(done),
            accelhostQueueRelease(queue),
            accelhostMemRelease(mem),
            accelhostKernelRelease(kernel),
            accelhostProgramRelease(program),
        ] {
            assert_eq!(release, FPGA_OK);
        }
    }
    assert_eq!(fpgaClose(capi), FPGA_OK);
}

#[test]
fn the_families_opae_programs_see_are_dfl_and_those_asked_for() {
    use opae_c::families::Shown;
    let default = Shown::parse(None).unwrap();
    assert_eq!(default, Shown::Families(vec![]));
    assert_eq!(Shown::parse(Some("")).unwrap(), default);
    for family in [Some("dfl"), None] {
        assert!(default.shows_family(family), "{family:?}");
    }
    for family in ["cxl", "xocl", "other"] {
        assert!(!default.shows_family(Some(family)), "{family}");
    }
    let some = Shown::parse(Some("cxl,my-family_2,cxl")).unwrap();
    assert_eq!(
        some,
        Shown::Families(vec!["cxl".into(), "my-family_2".into()])
    );
    assert!(some.shows_family(Some("cxl")) && some.shows_family(Some("dfl")));
    assert!(!some.shows_family(Some("xocl")));
    let all = Shown::parse(Some("all")).unwrap();
    assert_eq!(all, Shown::All);
    assert!(
        ["dfl", "cxl", "xocl", "other"]
            .iter()
            .all(|f| all.shows_family(Some(f)))
    );
    for bad in [
        ",", "cxl,", ",cxl", "cxl;xocl", "Cxl", " cxl", "all,xocl", "xocl,all", "a/b",
    ] {
        let why = Shown::parse(Some(bad)).unwrap_err();
        assert!(why.starts_with(&format!("{bad:?}: ")), "{bad:?}: {why}");
    }
    let long = "x".repeat(65);
    assert!(Shown::parse(Some(&long)).is_err());
    assert!(Shown::parse(Some(&long[..64])).is_ok());
}

#[test]
fn enumerate_hands_out_only_the_families_shown() {
    let _serial = serial();
    // serial() shows every family to these tests; the embedded default has three.
    let mut families = std::collections::BTreeSet::new();
    for token in enumerate(None) {
        let id = token_id(token);
        families.insert(id.split('/').next().unwrap().to_string());
        destroy_token(token);
    }
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        ["cxl", "dfl", "xocl"]
    );
}

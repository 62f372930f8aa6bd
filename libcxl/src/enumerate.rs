//! `struct cxl_adapter_h`: a cursor over the CAPI adapters (`cardC`), and the AFUs of one.
//! As in libcxl, stepping past the last frees the handle and answers NULL, and every step
//! that succeeds leaves `errno` 0.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::context::{Scope, next_afu};
use accelhost_door::handles::Object;

use crate::error::{CxlResult, answer, step};
use crate::handles;
use crate::state;

/// What a `struct cxl_adapter_h *` points to: where the enumeration stands.
struct AdapterHandle {
    position: AtomicUsize,
}

impl Object for AdapterHandle {
    const KIND: &'static str = "cxl_adapter_h";
}

fn adapter_handle(call: &str, adapter: *mut c_void) -> CxlResult<Arc<AdapterHandle>> {
    handles::get::<AdapterHandle>(call, adapter)
}

/// The card number of a live adapter handle.
pub fn adapter_card(call: &str, adapter: *mut c_void) -> CxlResult<u32> {
    let position = adapter_handle(call, adapter)?
        .position
        .load(Ordering::Acquire);
    Ok(state::adapters(call)?[position].card)
}

pub extern "C" fn cxl_adapter_next(adapter: *mut c_void) -> *mut c_void {
    let call = "cxl_adapter_next";
    step(call, || {
        let adapters = state::adapters(call)?;
        if adapter.is_null() {
            return handles::publish(
                call,
                Arc::new(AdapterHandle {
                    position: AtomicUsize::new(0),
                }),
            );
        }
        let handle = adapter_handle(call, adapter)?;
        let next = handle.position.load(Ordering::Acquire) + 1;
        if next < adapters.len() {
            handle.position.store(next, Ordering::Release);
            Ok(adapter)
        } else {
            handles::remove::<AdapterHandle>(call, adapter)?;
            Ok(std::ptr::null_mut())
        }
    })
}

pub extern "C" fn cxl_adapter_dev_name(adapter: *mut c_void) -> *mut c_char {
    let call = "cxl_adapter_dev_name";
    answer(call, std::ptr::null_mut(), || {
        let position = adapter_handle(call, adapter)?
            .position
            .load(Ordering::Acquire);
        Ok(state::adapters(call)?[position].name.as_ptr().cast_mut())
    })
}

pub extern "C" fn cxl_adapter_free(adapter: *mut c_void) {
    let call = "cxl_adapter_free";
    answer(call, (), || {
        if adapter.is_null() {
            return Ok(());
        }
        handles::remove::<AdapterHandle>(call, adapter)
    })
}

pub extern "C" fn cxl_adapter_afu_next(adapter: *mut c_void, afu: *mut c_void) -> *mut c_void {
    let call = "cxl_adapter_afu_next";
    step(call, || {
        let card = adapter_card(call, adapter)?;
        next_afu(call, Scope::Card(card), afu)
    })
}

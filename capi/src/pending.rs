//! OPAE functions the plugin interface cannot express yet: error registers, metrics, the
//! sysobject tree, user clocks and UMsgs. Each checks its arguments as OPAE does (a NULL
//! pointer, or a token or handle that is not one, is `FPGA_INVALID_PARAM`), then answers
//! `FPGA_NOT_SUPPORTED`, logging what is missing; `accelhostGetLastError` says it too. No
//! `fpga_object` is ever handed out, so every object argument is refused.

use std::ffi::{c_char, c_int, c_void};

use crate::ffi::{guard, non_null};
use crate::handle::handle_of;
use crate::result::{CapiError, CapiResult, invalid};
use crate::token::token_of;
use crate::types::*;

/// What the plugin interface lacks, by OPAE area.
const ERRORS: &str = "error registers: the plugin interface has none yet";
const METRICS: &str = "metrics: the plugin interface has no sensors or counters yet";
const SYSOBJECT: &str = "the sysobject tree: the plugin interface has no attribute tree yet";
const USERCLK: &str = "user clocks: the plugin interface has none yet";
const UMSG: &str = "UMsgs: no accelhost device family has them";

fn unsupported(call: &str, what: &str) -> CapiResult {
    tracing::info!("{call}: not supported: {what}");
    Err(CapiError::NotSupported(format!("{call}: {what}")))
}

fn no_object(what: &str) -> CapiError {
    invalid(format!(
        "{what} is not an fpga_object: this library hands out none (sysobjects are not supported yet)"
    ))
}

/// OPAE's `fpgaReadError`: not supported yet.
///
/// # Safety
/// `value` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaReadError(
    token: fpga_token,
    _error_num: u32,
    value: *mut u64,
) -> fpga_result {
    guard("fpgaReadError", || {
        token_of(token)?;
        non_null(value, "value")?;
        unsupported("fpgaReadError", ERRORS)
    })
}

/// OPAE's `fpgaClearError`: not supported yet.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaClearError(token: fpga_token, _error_num: u32) -> fpga_result {
    guard("fpgaClearError", || {
        token_of(token)?;
        unsupported("fpgaClearError", ERRORS)
    })
}

/// OPAE's `fpgaClearAllErrors`: not supported yet.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaClearAllErrors(token: fpga_token) -> fpga_result {
    guard("fpgaClearAllErrors", || {
        token_of(token)?;
        unsupported("fpgaClearAllErrors", ERRORS)
    })
}

/// OPAE's `fpgaGetErrorInfo`: not supported yet.
///
/// # Safety
/// `error_info` must be NULL or valid for one write of `struct fpga_error_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetErrorInfo(
    token: fpga_token,
    _error_num: u32,
    error_info: *mut c_void,
) -> fpga_result {
    guard("fpgaGetErrorInfo", || {
        token_of(token)?;
        non_null(error_info, "error_info")?;
        unsupported("fpgaGetErrorInfo", ERRORS)
    })
}

/// OPAE's `fpgaGetNumMetrics`: not supported yet.
///
/// # Safety
/// `num_metrics` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetNumMetrics(
    handle: fpga_handle,
    num_metrics: *mut u64,
) -> fpga_result {
    guard("fpgaGetNumMetrics", || {
        handle_of(handle)?;
        non_null(num_metrics, "num_metrics")?;
        unsupported("fpgaGetNumMetrics", METRICS)
    })
}

/// OPAE's `fpgaGetMetricsInfo`: not supported yet.
///
/// # Safety
/// The pointers must be NULL or valid for the writes OPAE documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetMetricsInfo(
    handle: fpga_handle,
    metric_info: *mut c_void,
    num_metrics: *mut u64,
) -> fpga_result {
    guard("fpgaGetMetricsInfo", || {
        handle_of(handle)?;
        non_null(metric_info, "metric_info")?;
        non_null(num_metrics, "num_metrics")?;
        unsupported("fpgaGetMetricsInfo", METRICS)
    })
}

/// OPAE's `fpgaGetMetricsByIndex`: not supported yet.
///
/// # Safety
/// The pointers must be NULL or valid for the accesses OPAE documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetMetricsByIndex(
    handle: fpga_handle,
    metric_num: *mut u64,
    _num_metric_indexes: u64,
    metrics: *mut c_void,
) -> fpga_result {
    guard("fpgaGetMetricsByIndex", || {
        handle_of(handle)?;
        non_null(metric_num, "metric_num")?;
        non_null(metrics, "metrics")?;
        unsupported("fpgaGetMetricsByIndex", METRICS)
    })
}

/// OPAE's `fpgaGetMetricsByName`: not supported yet.
///
/// # Safety
/// The pointers must be NULL or valid for the accesses OPAE documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetMetricsByName(
    handle: fpga_handle,
    metrics_names: *mut *mut c_char,
    _num_metric_names: u64,
    metrics: *mut c_void,
) -> fpga_result {
    guard("fpgaGetMetricsByName", || {
        handle_of(handle)?;
        non_null(metrics_names, "metrics_names")?;
        non_null(metrics, "metrics")?;
        unsupported("fpgaGetMetricsByName", METRICS)
    })
}

/// OPAE's `fpgaGetMetricsThresholdInfo`: not supported yet.
///
/// # Safety
/// The pointers must be NULL or valid for the accesses OPAE documents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetMetricsThresholdInfo(
    handle: fpga_handle,
    metric_thresholds: *mut c_void,
    num_thresholds: *mut u32,
) -> fpga_result {
    guard("fpgaGetMetricsThresholdInfo", || {
        handle_of(handle)?;
        non_null(metric_thresholds, "metric_thresholds")?;
        non_null(num_thresholds, "num_thresholds")?;
        unsupported("fpgaGetMetricsThresholdInfo", METRICS)
    })
}

/// OPAE's `fpgaTokenGetObject`: not supported yet.
///
/// # Safety
/// `name` must be NULL or a C string; `object` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaTokenGetObject(
    token: fpga_token,
    name: *const c_char,
    object: *mut fpga_object,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaTokenGetObject", || {
        token_of(token)?;
        non_null(name, "name")?;
        non_null(object, "object")?;
        unsupported("fpgaTokenGetObject", SYSOBJECT)
    })
}

/// OPAE's `fpgaHandleGetObject`: not supported yet.
///
/// # Safety
/// `name` must be NULL or a C string; `object` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaHandleGetObject(
    handle: fpga_handle,
    name: *const c_char,
    object: *mut fpga_object,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaHandleGetObject", || {
        handle_of(handle)?;
        non_null(name, "name")?;
        non_null(object, "object")?;
        unsupported("fpgaHandleGetObject", SYSOBJECT)
    })
}

/// OPAE's `fpgaObjectGetObject`: no object is valid here.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaObjectGetObject(
    _parent: fpga_object,
    _name: *const c_char,
    _object: *mut fpga_object,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaObjectGetObject", || Err(no_object("parent")))
}

/// OPAE's `fpgaObjectGetObjectAt`: no object is valid here.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaObjectGetObjectAt(
    _parent: fpga_object,
    _idx: usize,
    _object: *mut fpga_object,
) -> fpga_result {
    guard("fpgaObjectGetObjectAt", || Err(no_object("parent")))
}

/// OPAE's `fpgaObjectGetType`: no object is valid here.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaObjectGetType(_obj: fpga_object, _type: *mut c_int) -> fpga_result {
    guard("fpgaObjectGetType", || Err(no_object("obj")))
}

/// OPAE's `fpgaDestroyObject`: no object is valid here.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaDestroyObject(_obj: *mut fpga_object) -> fpga_result {
    guard("fpgaDestroyObject", || Err(no_object("*obj")))
}

/// OPAE's `fpgaObjectGetSize`: no object is valid here.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaObjectGetSize(
    _obj: fpga_object,
    _value: *mut u32,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaObjectGetSize", || Err(no_object("obj")))
}

/// OPAE's `fpgaObjectRead`: no object is valid here.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaObjectRead(
    _obj: fpga_object,
    _buffer: *mut u8,
    _offset: usize,
    _len: usize,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaObjectRead", || Err(no_object("obj")))
}

/// OPAE's `fpgaObjectRead64`: no object is valid here.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaObjectRead64(
    _obj: fpga_object,
    _value: *mut u64,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaObjectRead64", || Err(no_object("obj")))
}

/// OPAE's `fpgaObjectWrite64`: no object is valid here.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaObjectWrite64(_obj: fpga_object, _value: u64, _flags: c_int) -> fpga_result {
    guard("fpgaObjectWrite64", || Err(no_object("obj")))
}

/// OPAE's `fpgaSetUserClock`: not supported yet.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaSetUserClock(
    handle: fpga_handle,
    _high_clk: u64,
    _low_clk: u64,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaSetUserClock", || {
        handle_of(handle)?;
        unsupported("fpgaSetUserClock", USERCLK)
    })
}

/// OPAE's `fpgaGetUserClock`: not supported yet.
///
/// # Safety
/// The pointers must be NULL or valid for one write each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetUserClock(
    handle: fpga_handle,
    high_clk: *mut u64,
    low_clk: *mut u64,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaGetUserClock", || {
        handle_of(handle)?;
        non_null(high_clk, "high_clk")?;
        non_null(low_clk, "low_clk")?;
        unsupported("fpgaGetUserClock", USERCLK)
    })
}

/// OPAE's `fpgaGetNumUmsg`: not supported.
///
/// # Safety
/// `value` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetNumUmsg(handle: fpga_handle, value: *mut u64) -> fpga_result {
    guard("fpgaGetNumUmsg", || {
        handle_of(handle)?;
        non_null(value, "value")?;
        unsupported("fpgaGetNumUmsg", UMSG)
    })
}

/// OPAE's `fpgaSetUmsgAttributes`: not supported.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaSetUmsgAttributes(handle: fpga_handle, _value: u64) -> fpga_result {
    guard("fpgaSetUmsgAttributes", || {
        handle_of(handle)?;
        unsupported("fpgaSetUmsgAttributes", UMSG)
    })
}

/// OPAE's `fpgaTriggerUmsg`: not supported.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaTriggerUmsg(handle: fpga_handle, _value: u64) -> fpga_result {
    guard("fpgaTriggerUmsg", || {
        handle_of(handle)?;
        unsupported("fpgaTriggerUmsg", UMSG)
    })
}

/// OPAE's `fpgaGetUmsgPtr`: not supported.
///
/// # Safety
/// `umsg_ptr` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetUmsgPtr(
    handle: fpga_handle,
    umsg_ptr: *mut *mut u64,
) -> fpga_result {
    guard("fpgaGetUmsgPtr", || {
        handle_of(handle)?;
        non_null(umsg_ptr, "umsg_ptr")?;
        unsupported("fpgaGetUmsgPtr", UMSG)
    })
}

//! The sysfs attributes libcxl reads and writes (`cxl_get_*`, `cxl_set_*`, the error
//! buffer): an AFU's from what accelhost found (its config for an emulated AFU, sysfs for a
//! real one), and the few an AFU's description does not carry from sysfs itself
//! (`/sys/class/cxl/...`), or, for an emulated AFU, the emulated card's values.

use std::ffi::{c_int, c_long, c_void};

use accelhost::cxl::{AfuDesc, AfuMode, ContextKind};

use crate::context::afu_handle;
use crate::enumerate::adapter_card;
use crate::error::{CxlResult, failed, refuse, status, store};
use crate::state::{self, Listed};

const MODE_DEDICATED: c_long = 0x1;
const MODE_DIRECTED: c_long = 0x2;

/// The sysfs class libcxl reads.
const CLASS: &str = "/sys/class/cxl";

/// What the emulated cards answer for the attributes an AFU's description lacks: the cxl
/// driver's API version 3 (compatible with 1), no prefaulting, the processing-accelerator
/// PCI class in configuration record 0, a user image loaded, the timebase synced, no
/// tunneled operations.
fn emulated_value(attribute: &str) -> Option<c_long> {
    Some(match attribute {
        "api_version" => 3,
        "api_version_compatible" => 1,
        "prefault_mode" => 0,
        "cr0/class" => 0x12_0000,
        "base_image" => 0,
        "image_loaded" => 1,
        "psl_revision" => 0,
        "psl_timebase_synced" => 1,
        "tunneled_ops_supported" => 0,
        _ => return None,
    })
}

/// `attribute` of sysfs entry `entry` (`afuC.S` or `cardC`): the emulated card's value, or
/// the real file's (decimal, or hex with 0x, as sysfs writes them).
fn attribute(call: &str, desc: &AfuDesc, entry: &str, attribute: &str) -> CxlResult<c_long> {
    if desc.emulated {
        return emulated_value(attribute).ok_or_else(|| {
            refuse(
                call,
                libc::ENOENT,
                format!("the emulated {entry} has no {attribute}"),
            )
        });
    }
    let path = format!("{CLASS}/{entry}/{attribute}");
    let text = std::fs::read_to_string(&path)
        .map_err(|err| failed(call, &format!("reading {path}"), &err))?;
    let text = text.trim();
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => c_long::from_str_radix(hex, 16),
        None => text.parse::<c_long>(),
    };
    parsed.map_err(|_| {
        refuse(
            call,
            libc::EINVAL,
            format!("{path} holds '{text}', not a number"),
        )
    })
}

/// The AFU behind a handle (enumerated or opened) and the view it was opened in.
fn afu_of(call: &str, afu: *mut c_void) -> CxlResult<(&'static Listed, Option<ContextKind>)> {
    let handle = afu_handle(call, afu)?;
    let kind = handle.opened.as_ref().map(|opened| opened.kind);
    Ok((handle.listed(call)?, kind))
}

/// Answers `call` with `value(desc)` through `out`.
fn get(
    call: &str,
    afu: *mut c_void,
    out: *mut c_long,
    value: impl FnOnce(&Listed, Option<ContextKind>) -> CxlResult<c_long>,
) -> c_int {
    status(call, || {
        let (listed, kind) = afu_of(call, afu)?;
        let value = value(listed, kind)?;
        store(call, out, value)
    })
}

fn entry(listed: &Listed) -> String {
    listed.name.to_string_lossy().into_owned()
}

fn mode_bits(mode: Option<AfuMode>) -> c_long {
    match mode {
        Some(AfuMode::Dedicated) => MODE_DEDICATED,
        Some(AfuMode::Directed) => MODE_DIRECTED,
        None => 0,
    }
}

/// A setter: the current value is accepted as is; an emulated AFU's settings come from the
/// config, and a real one's are written to sysfs (which needs root, as libcxl's does).
fn set(
    call: &str,
    afu: *mut c_void,
    attribute: &str,
    value: c_long,
    current: impl FnOnce(&Listed) -> CxlResult<c_long>,
) -> c_int {
    status(call, || {
        let (listed, _) = afu_of(call, afu)?;
        let current = current(listed)?;
        if value == current {
            return Ok(());
        }
        if listed.afu.desc().emulated {
            return Err(refuse(
                call,
                libc::EPERM,
                format!(
                    "{} is emulated: its {attribute} is {current}, set by its card in the config",
                    entry(listed)
                ),
            ));
        }
        let path = format!("{CLASS}/{}/{attribute}", entry(listed));
        std::fs::write(&path, value.to_string())
            .map_err(|err| failed(call, &format!("writing {path}"), &err))
    })
}

pub extern "C" fn cxl_get_api_version(afu: *mut c_void, out: *mut c_long) -> c_int {
    let call = "cxl_get_api_version";
    get(call, afu, out, |listed, _| {
        attribute(call, listed.afu.desc(), &entry(listed), "api_version")
    })
}

pub extern "C" fn cxl_get_api_version_compatible(afu: *mut c_void, out: *mut c_long) -> c_int {
    let call = "cxl_get_api_version_compatible";
    get(call, afu, out, |listed, _| {
        attribute(
            call,
            listed.afu.desc(),
            &entry(listed),
            "api_version_compatible",
        )
    })
}

/// Configuration record `cr`'s `field`: record 0 is the AFU's identity.
fn config_record(call: &str, listed: &Listed, cr: c_long, field: &str) -> CxlResult<c_long> {
    let desc = listed.afu.desc();
    if cr != 0 {
        return Err(refuse(
            call,
            libc::ENOENT,
            format!(
                "{} has configuration record 0 only, not {cr}",
                entry(listed)
            ),
        ));
    }
    match field {
        "vendor" => Ok(c_long::from(desc.vendor_id)),
        "device" => Ok(c_long::from(desc.device_id)),
        _ => attribute(call, desc, &entry(listed), "cr0/class"),
    }
}

pub extern "C" fn cxl_get_cr_class(afu: *mut c_void, cr: c_long, out: *mut c_long) -> c_int {
    let call = "cxl_get_cr_class";
    get(call, afu, out, |listed, _| {
        config_record(call, listed, cr, "class")
    })
}

pub extern "C" fn cxl_get_cr_device(afu: *mut c_void, cr: c_long, out: *mut c_long) -> c_int {
    let call = "cxl_get_cr_device";
    get(call, afu, out, |listed, _| {
        config_record(call, listed, cr, "device")
    })
}

pub extern "C" fn cxl_get_cr_vendor(afu: *mut c_void, cr: c_long, out: *mut c_long) -> c_int {
    let call = "cxl_get_cr_vendor";
    get(call, afu, out, |listed, _| {
        config_record(call, listed, cr, "vendor")
    })
}

pub extern "C" fn cxl_get_irqs_max(afu: *mut c_void, out: *mut c_long) -> c_int {
    get("cxl_get_irqs_max", afu, out, |listed, _| {
        Ok(c_long::from(listed.afu.desc().irqs_max))
    })
}

pub extern "C" fn cxl_set_irqs_max(afu: *mut c_void, value: c_long) -> c_int {
    set("cxl_set_irqs_max", afu, "irqs_max", value, |listed| {
        Ok(c_long::from(listed.afu.desc().irqs_max))
    })
}

pub extern "C" fn cxl_get_irqs_min(afu: *mut c_void, out: *mut c_long) -> c_int {
    get("cxl_get_irqs_min", afu, out, |listed, _| {
        Ok(c_long::from(listed.afu.desc().irqs_min))
    })
}

/// The bytes a context of `kind` maps: a master the global area and every per-process area,
/// others (and the AFU itself) `mmio_size`.
pub extern "C" fn cxl_get_mmio_size(afu: *mut c_void, out: *mut c_long) -> c_int {
    get("cxl_get_mmio_size", afu, out, |listed, kind| {
        let desc = listed.afu.desc();
        let size = match kind {
            Some(ContextKind::Master) => {
                desc.pp_mmio_offset + u64::from(desc.max_contexts) * desc.pp_mmio_len
            }
            _ => desc.mmio_size,
        };
        Ok(size as c_long)
    })
}

pub extern "C" fn cxl_get_mode(afu: *mut c_void, out: *mut c_long) -> c_int {
    get("cxl_get_mode", afu, out, |listed, _| {
        Ok(mode_bits(listed.afu.desc().mode))
    })
}

pub extern "C" fn cxl_set_mode(afu: *mut c_void, value: c_long) -> c_int {
    set("cxl_set_mode", afu, "mode", value, |listed| {
        Ok(mode_bits(listed.afu.desc().mode))
    })
}

pub extern "C" fn cxl_get_modes_supported(afu: *mut c_void, out: *mut c_long) -> c_int {
    get("cxl_get_modes_supported", afu, out, |listed, _| {
        Ok(listed
            .afu
            .desc()
            .modes_supported
            .iter()
            .map(|mode| mode_bits(Some(*mode)))
            .fold(0, |all, bit| all | bit))
    })
}

pub extern "C" fn cxl_get_prefault_mode(afu: *mut c_void, out: *mut c_int) -> c_int {
    let call = "cxl_get_prefault_mode";
    status(call, || {
        let (listed, _) = afu_of(call, afu)?;
        let mode = attribute(call, listed.afu.desc(), &entry(listed), "prefault_mode")?;
        store(call, out, mode as c_int)
    })
}

pub extern "C" fn cxl_set_prefault_mode(afu: *mut c_void, value: c_int) -> c_int {
    let call = "cxl_set_prefault_mode";
    set(call, afu, "prefault_mode", c_long::from(value), |listed| {
        attribute(call, listed.afu.desc(), &entry(listed), "prefault_mode")
    })
}

pub extern "C" fn cxl_get_pp_mmio_len(afu: *mut c_void, out: *mut c_long) -> c_int {
    get("cxl_get_pp_mmio_len", afu, out, |listed, _| {
        Ok(listed.afu.desc().pp_mmio_len as c_long)
    })
}

pub extern "C" fn cxl_get_pp_mmio_off(afu: *mut c_void, out: *mut c_long) -> c_int {
    get("cxl_get_pp_mmio_off", afu, out, |listed, _| {
        Ok(listed.afu.desc().pp_mmio_offset as c_long)
    })
}

/// The first AFU on an adapter (the card's facts are every AFU's) and the adapter's sysfs
/// entry.
fn adapter_afu(call: &str, adapter: *mut c_void) -> CxlResult<(&'static AfuDesc, String)> {
    let card = adapter_card(call, adapter)?;
    let listed = state::afus(call)?
        .iter()
        .find(|listed| listed.afu.desc().card == card)
        .ok_or_else(|| refuse(call, libc::ENODEV, format!("card{card} has no AFU")))?;
    Ok((listed.afu.desc(), format!("card{card}")))
}

/// Answers `call` with the adapter's `name` attribute through `out`.
fn adapter_get(call: &str, adapter: *mut c_void, out: *mut c_long, name: &str) -> c_int {
    status(call, || {
        let (desc, card) = adapter_afu(call, adapter)?;
        store(call, out, attribute(call, desc, &card, name)?)
    })
}

pub extern "C" fn cxl_get_base_image(adapter: *mut c_void, out: *mut c_long) -> c_int {
    adapter_get("cxl_get_base_image", adapter, out, "base_image")
}

pub extern "C" fn cxl_get_caia_version(
    adapter: *mut c_void,
    major: *mut c_long,
    minor: *mut c_long,
) -> c_int {
    let call = "cxl_get_caia_version";
    status(call, || {
        let (desc, _) = adapter_afu(call, adapter)?;
        store(call, major, c_long::from(desc.caia_version.0))?;
        store(call, minor, c_long::from(desc.caia_version.1))
    })
}

pub extern "C" fn cxl_get_image_loaded(adapter: *mut c_void, out: *mut c_int) -> c_int {
    let call = "cxl_get_image_loaded";
    status(call, || {
        let (desc, card) = adapter_afu(call, adapter)?;
        store(
            call,
            out,
            attribute(call, desc, &card, "image_loaded")? as c_int,
        )
    })
}

pub extern "C" fn cxl_get_psl_revision(adapter: *mut c_void, out: *mut c_long) -> c_int {
    adapter_get("cxl_get_psl_revision", adapter, out, "psl_revision")
}

pub extern "C" fn cxl_get_psl_timebase_synced(adapter: *mut c_void, out: *mut c_long) -> c_int {
    adapter_get(
        "cxl_get_psl_timebase_synced",
        adapter,
        out,
        "psl_timebase_synced",
    )
}

pub extern "C" fn cxl_get_tunneled_ops_supported(adapter: *mut c_void, out: *mut c_long) -> c_int {
    adapter_get(
        "cxl_get_tunneled_ops_supported",
        adapter,
        out,
        "tunneled_ops_supported",
    )
}

/// The AFU's error buffer (`afu_err_buff`): a real AFU's sysfs file; an emulated AFU has
/// none.
fn error_buffer(call: &str, afu: *mut c_void) -> CxlResult<String> {
    let (listed, _) = afu_of(call, afu)?;
    if listed.afu.desc().emulated {
        return Err(refuse(
            call,
            libc::ENOENT,
            format!("the emulated {} has no error buffer", entry(listed)),
        ));
    }
    Ok(format!("{CLASS}/{}/afu_err_buff", entry(listed)))
}

pub extern "C" fn cxl_errinfo_size(afu: *mut c_void, out: *mut usize) -> c_int {
    let call = "cxl_errinfo_size";
    status(call, || {
        let path = error_buffer(call, afu)?;
        let size = std::fs::metadata(&path)
            .map_err(|err| failed(call, &format!("reading {path}"), &err))?
            .len();
        store(call, out, size as usize)
    })
}

pub extern "C" fn cxl_errinfo_read(
    afu: *mut c_void,
    dst: *mut c_void,
    offset: libc::off_t,
    len: usize,
) -> isize {
    let call = "cxl_errinfo_read";
    crate::error::answer(call, -1, || {
        use std::os::unix::fs::FileExt;
        let path = error_buffer(call, afu)?;
        if dst.is_null() || offset < 0 {
            return Err(refuse(
                call,
                libc::EINVAL,
                "a NULL buffer or a negative offset",
            ));
        }
        let file = std::fs::File::open(&path)
            .map_err(|err| failed(call, &format!("opening {path}"), &err))?;
        // SAFETY: the caller gives `len` writable bytes at `dst`.
        let buffer = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), len) };
        let read = file
            .read_at(buffer, offset as u64)
            .map_err(|err| failed(call, &format!("reading {path}"), &err))?;
        Ok(read as isize)
    })
}

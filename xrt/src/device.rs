//! Devices (`xrtDeviceHandle`) and the xclbin each has loaded, and xclbin files
//! (`xrtXclbinHandle`). Loading checks the image in the library before any plugin sees it.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::{Arc, Mutex};

use accelhost::xclbin::Xclbin;
use accelhost::{Handle, OpenMode, Program, Queue};

use accelhost_door::handles::Object;

use crate::error::{XrtResult, failed, handle, refuse, status, text};
use crate::handles::{close, of, publish};
use crate::state::state;

/// An open card.
pub struct Device {
    pub handle: Handle,
    /// The in-order queue buffer syncs and copies run in.
    pub transfers: Queue,
    loaded: Mutex<Option<Arc<Loaded>>>,
}

/// The xclbin a device runs, and what it says of its kernels and memory.
pub struct Loaded {
    pub program: Program,
    pub image: Xclbin,
}

impl Object for Device {
    const KIND: &'static str = "device";
}

/// An xclbin read from a file, not loaded yet.
struct XclbinFile {
    bytes: Vec<u8>,
    image: Xclbin,
}

impl Object for XclbinFile {
    const KIND: &'static str = "xclbin";
}

/// Where `struct axlf` keeps the image's length (`m_header.m_length`): after the magic,
/// the signature length, reserved bytes, the key block and the unique id.
const AXLF_LENGTH_AT: usize = 8 + 4 + 28 + 256 + 8;
/// The magic an image starts with.
const AXLF_MAGIC: &[u8; 8] = b"xclbin2\0";
/// The largest image taken through a pointer: a bound on what is read from the program's
/// memory on the strength of a length field.
const MAX_IMAGE: u64 = 1 << 32;

impl Device {
    /// The device of a live handle.
    pub fn of(call: &str, device: *mut c_void) -> XrtResult<Arc<Device>> {
        of::<Device>(call, device)
    }

    /// The xclbin loaded on the device.
    pub fn loaded(&self, call: &str) -> XrtResult<Arc<Loaded>> {
        let loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        loaded.clone().ok_or_else(|| {
            refuse(
                call,
                libc::EINVAL,
                "no xclbin is loaded on the device: load one first (xrtDeviceLoadXclbinFile)",
            )
        })
    }

    /// The loaded xclbin, when it is the one of `uuid` (`ENOENT` otherwise).
    pub fn running(&self, call: &str, uuid: accelhost::Guid) -> XrtResult<Arc<Loaded>> {
        let loaded = self.loaded(call)?;
        if loaded.image.uuid == uuid {
            Ok(loaded)
        } else {
            Err(refuse(
                call,
                libc::ENOENT,
                format!("no xclbin {uuid} was loaded on the device"),
            ))
        }
    }

    fn load(&self, call: &str, bytes: &[u8]) -> XrtResult<()> {
        let image = parse(call, bytes)?;
        let program = self
            .handle
            .create_program(bytes)
            .map_err(|err| failed(call, &err))?;
        *self.loaded.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Arc::new(Loaded { program, image }));
        Ok(())
    }
}

fn parse(call: &str, bytes: &[u8]) -> XrtResult<Xclbin> {
    accelhost::xclbin::parse(bytes)
        .map_err(|err| refuse(call, libc::EINVAL, format!("not a valid xclbin: {err}")))
}

fn open(call: &str, card: usize) -> XrtResult<*mut c_void> {
    let state = state();
    let host = state
        .host
        .as_ref()
        .map_err(|why| refuse(call, libc::ENODEV, why))?;
    let token = state.cards.get(card).ok_or_else(|| {
        refuse(
            call,
            libc::ENODEV,
            format!(
                "no device {card}: the library lists {} XRT card(s)",
                state.cards.len()
            ),
        )
    })?;
    let handle = host
        .open(token, OpenMode::Shared)
        .map_err(|err| failed(call, &err))?;
    let transfers = handle.create_queue().map_err(|err| failed(call, &err))?;
    publish(
        call,
        Arc::new(Device {
            handle,
            transfers,
            loaded: Mutex::new(None),
        }),
    )
}

/// The largest xclbin file read: far above any card's image.
const MAX_XCLBIN_FILE_MIB: u64 = 4096;

/// The xclbin file at the path argument `path`: a regular file (a FIFO or a device is refused
/// without being waited on or read), of at most [`MAX_XCLBIN_FILE_MIB`] MiB, measured before
/// it is read.
fn read_file(call: &str, path: *const c_char) -> XrtResult<Vec<u8>> {
    // SAFETY: the path argument is NULL or a NUL-terminated string.
    let path = unsafe { text(call, "the path", path) }?;
    let limit = accelhost::files::Limit {
        what: "an xclbin file",
        max_mib: MAX_XCLBIN_FILE_MIB,
        set_by: "the largest xclbin file the XRT door reads",
    };
    accelhost::files::read_regular(std::path::Path::new(path), &limit)
        .map_err(|err| refuse(call, err.errno(), err))
}

/// Writes a uuid's 16 bytes to `out`.
pub fn write_uuid(call: &str, uuid: accelhost::Guid, out: *mut u8) -> XrtResult<()> {
    if out.is_null() {
        return Err(refuse(call, libc::EINVAL, "the uuid to write is NULL"));
    }
    // SAFETY: out is an xuid_t: 16 writable bytes.
    unsafe { std::ptr::copy_nonoverlapping(uuid.to_bytes().as_ptr(), out, 16) };
    Ok(())
}

/// Reads a uuid argument's 16 bytes.
pub fn read_uuid(call: &str, uuid: *const u8) -> XrtResult<accelhost::Guid> {
    if uuid.is_null() {
        return Err(refuse(call, libc::EINVAL, "the uuid is NULL"));
    }
    let mut bytes = [0; 16];
    // SAFETY: uuid is an xuid_t: 16 readable bytes.
    unsafe { std::ptr::copy_nonoverlapping(uuid, bytes.as_mut_ptr(), 16) };
    Ok(accelhost::Guid::from_bytes(bytes))
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtDeviceOpen(index: c_uint) -> *mut c_void {
    const CALL: &str = "xrtDeviceOpen";
    handle(CALL, || open(CALL, index as usize))
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtDeviceOpenByBDF(bdf: *const c_char) -> *mut c_void {
    const CALL: &str = "xrtDeviceOpenByBDF";
    handle(CALL, || {
        // SAFETY: the BDF argument is NULL or a NUL-terminated string.
        let bdf = unsafe { text(CALL, "the BDF", bdf) }?;
        let card = state()
            .cards
            .iter()
            .position(|token| {
                token.properties().bus_address.is_some_and(|address| {
                    let full = address.to_string();
                    full == bdf || full.split_once(':').is_some_and(|(_, short)| short == bdf)
                })
            })
            .ok_or_else(|| refuse(CALL, libc::ENODEV, format!("no XRT card at {bdf}")))?;
        open(CALL, card)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtDeviceClose(device: *mut c_void) -> c_int {
    const CALL: &str = "xrtDeviceClose";
    status(CALL, || close::<Device>(CALL, device))
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtDeviceLoadXclbinFile(device: *mut c_void, path: *const c_char) -> c_int {
    const CALL: &str = "xrtDeviceLoadXclbinFile";
    status(CALL, || {
        let device = Device::of(CALL, device)?;
        device.load(CALL, &read_file(CALL, path)?)
    })
}

/// # Safety
/// `axlf` is NULL or points to a whole xclbin image, as XRT's takes it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn xrtDeviceLoadXclbin(device: *mut c_void, axlf: *const u8) -> c_int {
    const CALL: &str = "xrtDeviceLoadXclbin";
    status(CALL, || {
        let device = Device::of(CALL, device)?;
        if axlf.is_null() {
            return Err(refuse(CALL, libc::EINVAL, "the xclbin is NULL"));
        }
        // SAFETY: an image starts with its magic and header, which hold its length.
        let head = unsafe { std::slice::from_raw_parts(axlf, AXLF_LENGTH_AT + 8) };
        if &head[..8] != AXLF_MAGIC {
            return Err(refuse(
                CALL,
                libc::EINVAL,
                "not an xclbin: no xclbin2 magic",
            ));
        }
        let length = u64::from_le_bytes(head[AXLF_LENGTH_AT..].try_into().unwrap());
        if length < head.len() as u64 || length > MAX_IMAGE {
            return Err(refuse(
                CALL,
                libc::EINVAL,
                format!("the xclbin's header says it is {length} bytes long"),
            ));
        }
        // SAFETY: the caller passes the whole image, whose length its header gives.
        let bytes = unsafe { std::slice::from_raw_parts(axlf, length as usize) };
        device.load(CALL, bytes)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtDeviceLoadXclbinHandle(device: *mut c_void, xclbin: *mut c_void) -> c_int {
    const CALL: &str = "xrtDeviceLoadXclbinHandle";
    status(CALL, || {
        let device = Device::of(CALL, device)?;
        let file = of::<XclbinFile>(CALL, xclbin)?;
        device.load(CALL, &file.bytes)
    })
}

/// Loads the xclbin of that uuid, which must be the one the device has loaded already (the
/// library keeps no registry of other images).
#[unsafe(no_mangle)]
pub extern "C" fn xrtDeviceLoadXclbinUUID(device: *mut c_void, uuid: *const u8) -> c_int {
    const CALL: &str = "xrtDeviceLoadXclbinUUID";
    status(CALL, || {
        let device = Device::of(CALL, device)?;
        device.running(CALL, read_uuid(CALL, uuid)?).map(drop)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtDeviceGetXclbinUUID(device: *mut c_void, out: *mut u8) -> c_int {
    const CALL: &str = "xrtDeviceGetXclbinUUID";
    status(CALL, || {
        let device = Device::of(CALL, device)?;
        write_uuid(CALL, device.loaded(CALL)?.image.uuid, out)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtXclbinAllocFilename(path: *const c_char) -> *mut c_void {
    const CALL: &str = "xrtXclbinAllocFilename";
    handle(CALL, || {
        let bytes = read_file(CALL, path)?;
        let image = parse(CALL, &bytes)?;
        publish(CALL, Arc::new(XclbinFile { bytes, image }))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtXclbinFreeHandle(xclbin: *mut c_void) -> c_int {
    const CALL: &str = "xrtXclbinFreeHandle";
    status(CALL, || close::<XclbinFile>(CALL, xclbin))
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtXclbinGetUUID(xclbin: *mut c_void, out: *mut u8) -> c_int {
    const CALL: &str = "xrtXclbinGetUUID";
    status(CALL, || {
        let file = of::<XclbinFile>(CALL, xclbin)?;
        write_uuid(CALL, file.image.uuid, out)
    })
}

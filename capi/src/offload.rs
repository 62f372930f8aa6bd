//! The offload-style extension, as liboffload and Unified Runtime expose it: memory,
//! programs, kernels, in-order queues and events, each reference counted from C
//! (`accelhost*Retain` / `accelhost*Release`; the creating call holds the first reference).

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use accelhost::{Arg, Event, EventStatus, Kernel, Memory, MemoryKind, Program, Queue};

use crate::ffi::{
    CapiResult, Object, c_str, guard, invalid, lookup_kind, non_null, register, slice,
    with_registered, write_out,
};
use crate::handle::with_handle;
use crate::types::*;

/// One offload object and the references C holds on it.
pub struct OffloadObject {
    refs: AtomicU32,
    value: OffloadValue,
}

enum OffloadValue {
    Memory(Memory),
    Program(Program),
    Kernel(Kernel),
    Queue(Queue),
    Event(Event),
}

impl OffloadObject {
    /// The object's kind, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self.value {
            OffloadValue::Memory(_) => "memory object",
            OffloadValue::Program(_) => "program",
            OffloadValue::Kernel(_) => "kernel",
            OffloadValue::Queue(_) => "queue",
            OffloadValue::Event(_) => "offload event",
        }
    }
}

fn new_object(value: OffloadValue) -> *mut c_void {
    register(Object::Offload(OffloadObject {
        refs: AtomicU32::new(1),
        value,
    }))
}

/// Looks up `ptr` as the offload kind `what` (the values `pick` finds); returns a clone.
fn get<T: Clone>(
    ptr: *const c_void,
    what: &str,
    pick: fn(&OffloadValue) -> Option<&T>,
) -> CapiResult<T> {
    let object = lookup_kind(ptr, what, |o| match o {
        Object::Offload(off) => pick(&off.value).is_some(),
        _ => false,
    })?;
    let Object::Offload(off) = &*object else {
        unreachable!("lookup_kind checked the kind");
    };
    Ok(pick(&off.value)
        .expect("lookup_kind checked the kind")
        .clone())
}

fn memory_of(ptr: *const c_void) -> CapiResult<Memory> {
    get(ptr, "memory object", |v| match v {
        OffloadValue::Memory(m) => Some(m),
        _ => None,
    })
}

fn program_of(ptr: *const c_void) -> CapiResult<Program> {
    get(ptr, "program", |v| match v {
        OffloadValue::Program(p) => Some(p),
        _ => None,
    })
}

fn kernel_of(ptr: *const c_void) -> CapiResult<Kernel> {
    get(ptr, "kernel", |v| match v {
        OffloadValue::Kernel(k) => Some(k),
        _ => None,
    })
}

fn queue_of(ptr: *const c_void) -> CapiResult<Queue> {
    get(ptr, "queue", |v| match v {
        OffloadValue::Queue(q) => Some(q),
        _ => None,
    })
}

fn event_of(ptr: *const c_void) -> CapiResult<Event> {
    get(ptr, "offload event", |v| match v {
        OffloadValue::Event(e) => Some(e),
        _ => None,
    })
}

/// The reference count of an offload object (`with_registered` checked the kind).
fn refs(object: &Object) -> &AtomicU32 {
    let Object::Offload(off) = object else {
        unreachable!("with_registered checked the kind");
    };
    &off.refs
}

/// Adds a reference to an offload object of kind `what`.
fn retain(ptr: *const c_void, what: &str, is: fn(&OffloadValue) -> bool) -> CapiResult {
    with_registered(
        ptr,
        what,
        |o| matches!(o, Object::Offload(off) if is(&off.value)),
        |_, object| refs(object).fetch_add(1, Ordering::AcqRel),
    )
    .map(drop)
}

/// Drops a reference; the last one unregisters the object (and drops it outside the lock).
fn release(ptr: *const c_void, what: &str, is: fn(&OffloadValue) -> bool) -> CapiResult {
    let last = with_registered(
        ptr,
        what,
        |o| matches!(o, Object::Offload(off) if is(&off.value)),
        |map, object| {
            (refs(object).fetch_sub(1, Ordering::AcqRel) == 1).then(|| map.remove(&(ptr as usize)))
        },
    )?;
    drop(last);
    Ok(())
}

/// Defines the retain and release functions of one offload kind.
macro_rules! refcounting {
    ($retain:ident, $release:ident, $what:literal, $variant:ident) => {
        #[doc = concat!("Adds a reference to a ", $what, ".")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $retain(object: *mut c_void) -> fpga_result {
            guard(stringify!($retain), || {
                retain(object, $what, |v| matches!(v, OffloadValue::$variant(_)))
            })
        }

        #[doc = concat!("Drops a reference to a ", $what, "; the last one frees it.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $release(object: *mut c_void) -> fpga_result {
            guard(stringify!($release), || {
                release(object, $what, |v| matches!(v, OffloadValue::$variant(_)))
            })
        }
    };
}

refcounting!(
    accelhostMemRetain,
    accelhostMemRelease,
    "memory object",
    Memory
);
refcounting!(
    accelhostProgramRetain,
    accelhostProgramRelease,
    "program",
    Program
);
refcounting!(
    accelhostKernelRetain,
    accelhostKernelRelease,
    "kernel",
    Kernel
);
refcounting!(accelhostQueueRetain, accelhostQueueRelease, "queue", Queue);
refcounting!(
    accelhostEventRetain,
    accelhostEventRelease,
    "offload event",
    Event
);

/// Allocates `size` bytes of `kind` memory on the device behind `handle`.
///
/// # Safety
/// `memory` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostMemAlloc(
    handle: fpga_handle,
    kind: accelhost_memory_kind,
    size: u64,
    memory: *mut *mut c_void,
) -> fpga_result {
    guard("accelhostMemAlloc", || {
        non_null(memory, "memory")?;
        let kind = match kind {
            ACCELHOST_MEMORY_HOST => MemoryKind::Host,
            ACCELHOST_MEMORY_DEVICE => MemoryKind::Device,
            ACCELHOST_MEMORY_SHARED => MemoryKind::Shared,
            other => return Err(invalid(format!("{other} is not an accelhost_memory_kind"))),
        };
        if size == 0 {
            return Err(invalid("size is 0"));
        }
        let allocated = with_handle(handle, |h| Ok(h.handle.alloc(kind, size)?))?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe {
            write_out(
                memory,
                new_object(OffloadValue::Memory(allocated)),
                "memory",
            )
        }
    })
}

/// The size of a memory object in bytes.
///
/// # Safety
/// `size` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostMemGetSize(memory: *mut c_void, size: *mut u64) -> fpga_result {
    guard("accelhostMemGetSize", || {
        non_null(size, "size")?;
        let value = memory_of(memory)?.size();
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(size, value, "size") }
    })
}

/// Copies `len` bytes from `data` into host or shared memory at `offset`.
///
/// # Safety
/// `data` must be NULL or valid for `len` reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostMemWrite(
    memory: *mut c_void,
    offset: u64,
    data: *const c_void,
    len: u64,
) -> fpga_result {
    guard("accelhostMemWrite", || {
        non_null(data, "data")?;
        let memory = memory_of(memory)?;
        let len = usize::try_from(len).map_err(|_| invalid("len is too large"))?;
        // SAFETY: non-NULL, valid for `len` reads by the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
        Ok(memory.write(offset, bytes)?)
    })
}

/// Copies `len` bytes of host or shared memory at `offset` into `out`.
///
/// # Safety
/// `out` must be NULL or valid for `len` writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostMemRead(
    memory: *mut c_void,
    offset: u64,
    out: *mut c_void,
    len: u64,
) -> fpga_result {
    guard("accelhostMemRead", || {
        non_null(out, "out")?;
        let memory = memory_of(memory)?;
        let len = usize::try_from(len).map_err(|_| invalid("len is too large"))?;
        // SAFETY: non-NULL, valid for `len` writes by the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts_mut(out.cast::<u8>(), len) };
        Ok(memory.read(offset, bytes)?)
    })
}

/// Creates a program from a device image (an xclbin for XRT cards), or, with `image` NULL
/// and `len` 0, the built-in program of a device whose function is fixed (CAPI AFUs).
///
/// # Safety
/// `image` must be NULL or valid for `len` reads; `program` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostProgramCreate(
    handle: fpga_handle,
    image: *const u8,
    len: usize,
    program: *mut *mut c_void,
) -> fpga_result {
    guard("accelhostProgramCreate", || {
        non_null(program, "program")?;
        let bytes: &[u8] = match (image.is_null(), len) {
            (true, 0) => &[],
            (true, _) => return Err(invalid("image is NULL but len is not 0")),
            // SAFETY: non-NULL, valid for `len` reads by the caller's contract.
            (false, _) => unsafe { std::slice::from_raw_parts(image, len) },
        };
        let created = with_handle(handle, |h| {
            Ok(if bytes.is_empty() {
                h.handle.builtin_program()?
            } else {
                h.handle.create_program(bytes)?
            })
        })?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe {
            write_out(
                program,
                new_object(OffloadValue::Program(created)),
                "program",
            )
        }
    })
}

/// Looks up the kernel `name` of a program.
///
/// # Safety
/// `name` must be NULL or NUL-terminated; `kernel` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostKernelCreate(
    program: *mut c_void,
    name: *const c_char,
    kernel: *mut *mut c_void,
) -> fpga_result {
    guard("accelhostKernelCreate", || {
        non_null(kernel, "kernel")?;
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        let found = program_of(program)?.kernel(name)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(kernel, new_object(OffloadValue::Kernel(found)), "kernel") }
    })
}

/// Creates an in-order queue on the device behind `handle`.
///
/// # Safety
/// `queue` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostQueueCreate(
    handle: fpga_handle,
    queue: *mut *mut c_void,
) -> fpga_result {
    guard("accelhostQueueCreate", || {
        non_null(queue, "queue")?;
        let created = with_handle(handle, |h| Ok(h.handle.create_queue()?))?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(queue, new_object(OffloadValue::Queue(created)), "queue") }
    })
}

/// Hands an enqueue's event to C (if it asked for one).
///
/// # Safety
/// `out` must be NULL or valid for one write.
unsafe fn give_event(out: *mut *mut c_void, event: Event) {
    if !out.is_null() {
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { out.write(new_object(OffloadValue::Event(event))) };
    }
}

/// Enqueues a copy of `size` bytes from `src` at `src_offset` to `dst` at `dst_offset`, in
/// any direction. `event` (may be NULL) gets an event for the copy.
///
/// # Safety
/// `event` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostEnqueueMemcpy(
    queue: *mut c_void,
    dst: *mut c_void,
    dst_offset: u64,
    src: *mut c_void,
    src_offset: u64,
    size: u64,
    event: *mut *mut c_void,
) -> fpga_result {
    guard("accelhostEnqueueMemcpy", || {
        let queue = queue_of(queue)?;
        let (dst, src) = (memory_of(dst)?, memory_of(src)?);
        let done = queue.enqueue_memcpy(&dst, dst_offset, &src, src_offset, size)?;
        // SAFETY: NULL or valid for one write by the caller's contract.
        unsafe { give_event(event, done) };
        Ok(())
    })
}

/// Enqueues a launch of `kernel` with `num_args` arguments. `event` (may be NULL) gets an
/// event for the launch.
///
/// # Safety
/// `args` must be NULL or valid for `num_args` reads; `event` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostEnqueueLaunch(
    queue: *mut c_void,
    kernel: *mut c_void,
    args: *const accelhost_kernel_arg,
    num_args: u32,
    event: *mut *mut c_void,
) -> fpga_result {
    guard("accelhostEnqueueLaunch", || {
        // SAFETY: NULL or valid for `num_args` reads by the caller's contract.
        let raw = unsafe { slice(args, num_args, "args", "num_args") }?;
        let queue = queue_of(queue)?;
        let kernel = kernel_of(kernel)?;
        // The memory objects first, so the arguments can borrow them.
        let memories: Vec<Option<Memory>> = raw
            .iter()
            .map(|a| {
                (a.kind == ACCELHOST_ARG_MEMORY)
                    .then(|| memory_of(a.memory))
                    .transpose()
            })
            .collect::<CapiResult<_>>()?;
        let converted: Vec<Arg<'_>> = raw
            .iter()
            .zip(&memories)
            .enumerate()
            .map(|(i, (a, m))| match (a.kind, m) {
                (ACCELHOST_ARG_MEMORY, Some(m)) => Ok(Arg::MemoryAt(m, a.value)),
                (ACCELHOST_ARG_U32, _) => u32::try_from(a.value)
                    .map(Arg::U32)
                    .map_err(|_| invalid(format!("argument {i} does not fit in 32 bits"))),
                (ACCELHOST_ARG_I32, _) => Ok(Arg::I32(a.value as u32 as i32)),
                (ACCELHOST_ARG_U64, _) => Ok(Arg::U64(a.value)),
                (kind, _) => Err(invalid(format!("argument {i} has unknown kind {kind}"))),
            })
            .collect::<CapiResult<_>>()?;
        let done = queue.enqueue_launch(&kernel, &converted)?;
        // SAFETY: NULL or valid for one write by the caller's contract.
        unsafe { give_event(event, done) };
        Ok(())
    })
}

/// Waits until every command enqueued so far finished; the first failure is returned.
#[unsafe(no_mangle)]
pub extern "C" fn accelhostQueueFinish(queue: *mut c_void) -> fpga_result {
    guard("accelhostQueueFinish", || Ok(queue_of(queue)?.finish()?))
}

/// Waits for an offload event, for up to `timeout_ms` milliseconds (negative: no limit).
/// `FPGA_EXCEPTION` if the command failed or the wait timed out.
#[unsafe(no_mangle)]
pub extern "C" fn accelhostEventWait(event: *mut c_void, timeout_ms: i64) -> fpga_result {
    guard("accelhostEventWait", || {
        let event = event_of(event)?;
        match u64::try_from(timeout_ms) {
            Ok(ms) => Ok(event.wait_timeout(Duration::from_millis(ms))?),
            Err(_) => Ok(event.wait()?),
        }
    })
}

/// Where an offload event stands, without waiting.
///
/// # Safety
/// `status` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostEventGetStatus(
    event: *mut c_void,
    status: *mut accelhost_event_status,
) -> fpga_result {
    guard("accelhostEventGetStatus", || {
        non_null(status, "status")?;
        let value = match event_of(event)?.status() {
            EventStatus::Pending => ACCELHOST_EVENT_PENDING,
            EventStatus::Complete => ACCELHOST_EVENT_COMPLETE,
            EventStatus::Failed(_) => ACCELHOST_EVENT_FAILED,
        };
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(status, value, "status") }
    })
}

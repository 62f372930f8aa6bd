//! The offload-style extension, as liboffload and Unified Runtime expose it: memory,
//! programs, kernels, in-order queues and events, each reference counted from C
//! (`accelhost*Retain` / `accelhost*Release`; the creating call holds the first reference).

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use accelhost::{Arg, Event, EventStatus, Kernel, Memory, MemoryKind, Program, Queue};

use crate::ffi::{c_str, guard, non_null, slice, write_out};
use crate::handle::handle_of;
use crate::registry::{self, Object};
use crate::result::{CapiResult, invalid};
use crate::types::*;

/// One offload object (a `Memory`, `Program`, `Kernel`, `Queue` or `Event`) and the
/// references C holds on it.
struct Counted<T> {
    refs: AtomicU32,
    value: T,
}

/// Registers `value` with one reference, the creating call's.
fn new_object<T>(value: T) -> *mut c_void
where
    Counted<T>: Object,
{
    registry::insert(Counted {
        refs: AtomicU32::new(1),
        value,
    })
}

/// The offload object of type `T` behind `ptr`.
fn value_of<T: Clone>(ptr: *const c_void) -> CapiResult<T>
where
    Counted<T>: Object,
{
    Ok(registry::get::<Counted<T>>(ptr)?.value.clone())
}

/// Adds a reference to the offload object of type `T` behind `ptr`.
fn retain<T>(ptr: *const c_void) -> CapiResult
where
    Counted<T>: Object,
{
    registry::remove_if::<Counted<T>>(ptr, |object| {
        object.refs.fetch_add(1, Ordering::AcqRel);
        false
    })
    .map(drop)
}

/// Drops a reference; the last one unregisters the object (and drops it outside the lock).
fn release<T>(ptr: *const c_void) -> CapiResult
where
    Counted<T>: Object,
{
    let last = registry::remove_if::<Counted<T>>(ptr, |object| {
        object.refs.fetch_sub(1, Ordering::AcqRel) == 1
    })?;
    drop(last);
    Ok(())
}

/// Makes `Counted<$ty>` an object C holds, named `$what`, and defines its retain and
/// release functions.
macro_rules! offload_kind {
    ($ty:ty, $what:literal, $retain:ident, $release:ident) => {
        impl Object for Counted<$ty> {
            const KIND: &'static str = $what;
            /// Before the handles they were made on.
            const TEARDOWN_RANK: u8 = 1;
        }

        #[doc = concat!("Adds a reference to a ", $what, ".")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $retain(object: *mut c_void) -> fpga_result {
            guard(stringify!($retain), || retain::<$ty>(object))
        }

        #[doc = concat!("Drops a reference to a ", $what, "; the last one frees it.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $release(object: *mut c_void) -> fpga_result {
            guard(stringify!($release), || release::<$ty>(object))
        }
    };
}

offload_kind!(
    Memory,
    "memory object",
    accelhostMemRetain,
    accelhostMemRelease
);
offload_kind!(
    Program,
    "program",
    accelhostProgramRetain,
    accelhostProgramRelease
);
offload_kind!(
    Kernel,
    "kernel",
    accelhostKernelRetain,
    accelhostKernelRelease
);
offload_kind!(Queue, "queue", accelhostQueueRetain, accelhostQueueRelease);
offload_kind!(
    Event,
    "offload event",
    accelhostEventRetain,
    accelhostEventRelease
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
        let allocated = handle_of(handle)?
            .accelerator("accelhostMemAlloc")?
            .alloc(kind, size)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(memory, new_object(allocated), "memory") }
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
        let value = value_of::<Memory>(memory)?.size();
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
        let memory = value_of::<Memory>(memory)?;
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
        let memory = value_of::<Memory>(memory)?;
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
        let h = handle_of(handle)?;
        let accelerator = h.accelerator("accelhostProgramCreate")?;
        let created = if bytes.is_empty() {
            accelerator.builtin_program()?
        } else {
            accelerator.create_program(bytes)?
        };
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(program, new_object(created), "program") }
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
        let found = value_of::<Program>(program)?.kernel(name)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(kernel, new_object(found), "kernel") }
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
        let created = handle_of(handle)?
            .accelerator("accelhostQueueCreate")?
            .create_queue()?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(queue, new_object(created), "queue") }
    })
}

/// Hands an enqueue's event to C (if it asked for one).
///
/// # Safety
/// `out` must be NULL or valid for one write.
unsafe fn give_event(out: *mut *mut c_void, event: Event) {
    if !out.is_null() {
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { out.write(new_object(event)) };
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
        let queue = value_of::<Queue>(queue)?;
        let (dst, src) = (value_of::<Memory>(dst)?, value_of::<Memory>(src)?);
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
        let queue = value_of::<Queue>(queue)?;
        let kernel = value_of::<Kernel>(kernel)?;
        // The memory objects first, so the arguments can borrow them.
        let memories: Vec<Option<Memory>> = raw
            .iter()
            .map(|a| {
                (a.kind == ACCELHOST_ARG_MEMORY)
                    .then(|| value_of::<Memory>(a.memory))
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
    guard("accelhostQueueFinish", || {
        Ok(value_of::<Queue>(queue)?.finish()?)
    })
}

/// Waits for an offload event, for up to `timeout_ms` milliseconds (negative: no limit).
/// `FPGA_EXCEPTION` if the command failed or the wait timed out.
#[unsafe(no_mangle)]
pub extern "C" fn accelhostEventWait(event: *mut c_void, timeout_ms: i64) -> fpga_result {
    guard("accelhostEventWait", || {
        let event = value_of::<Event>(event)?;
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
        let value = match value_of::<Event>(event)?.status() {
            EventStatus::Pending => ACCELHOST_EVENT_PENDING,
            EventStatus::Complete => ACCELHOST_EVENT_COMPLETE,
            EventStatus::Failed(_) => ACCELHOST_EVENT_FAILED,
        };
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(status, value, "status") }
    })
}

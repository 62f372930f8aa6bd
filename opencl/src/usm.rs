//! Unified shared memory (`cl_intel_unified_shared_memory`), which the SYCL runtime's OpenCL
//! path allocates and copies with: host, device and shared allocations handed out as
//! pointers, and the copies, fills and hints on them. Host and shared allocations are memory
//! the device reaches, at their own address in this process; a device allocation's pointer is
//! address space reserved and never backed, so that it is unique and a dereference by the
//! application faults, as on a real device. On an emulated device listed as a CPU a device
//! allocation is host memory too, as on every CPU device: libraries read a CPU device's
//! allocations in place (oneMKL's host code does, under dpnp).

use std::ffi::c_void;
use std::sync::Arc;

use accelhost::{Memory, MemoryKind};

use accelhost_door::usm::{AddressMap, DeviceAddresses};

use crate::cl::*;
use crate::command::{Enqueue, HostAddress};
use crate::context::{Context, context};
use crate::device::Device;
use crate::error::{ClResult, object, refuse, status};
use crate::event::Progress;
use crate::info::{Value, give};
use crate::object::Held;
use crate::queue::Queue;
use crate::transfer;

/// One allocation.
pub struct Allocation {
    context: Held<Context>,
    /// The device it was made for; `None` for a host allocation.
    device: Option<&'static Device>,
    /// The context's device whose memory holds it.
    on: usize,
    kind: cl_uint,
    base: usize,
    size: usize,
    memory: Memory,
}

impl Allocation {
    /// The library's memory.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The context's device whose memory holds it.
    pub fn device_index(&self) -> usize {
        self.on
    }

    /// Its context.
    pub fn context(&self) -> &Arc<Context> {
        self.context.object()
    }
}

/// Live allocations by their first byte's address.
static LIVE: AddressMap<Allocation> = AddressMap::new();
/// The addresses of device allocations: reserved, never backed, never handed out twice.
static DEVICE_ADDRESSES: DeviceAddresses = DeviceAddresses::new();

/// The allocation `ptr` points into, and where in it.
pub fn find(ptr: *const c_void) -> Option<(Arc<Allocation>, usize)> {
    LIVE.find(ptr as usize, 1)
}

/// Checks the allocation properties: only `CL_MEM_ALLOC_FLAGS_INTEL`, whose placement and
/// write-combining hints are taken as hints.
///
/// # Safety
/// A non-NULL `properties` is 0-terminated.
unsafe fn check_properties(properties: *const cl_ulong) -> ClResult<()> {
    let mut at = properties;
    while !at.is_null() {
        // SAFETY: the list is 0-terminated and read pairwise up to the terminator.
        let key = unsafe { at.read() };
        if key == 0 {
            break;
        }
        // SAFETY: a key is followed by its value.
        let value = unsafe { at.add(1).read() };
        if key != CL_MEM_ALLOC_FLAGS_INTEL || value & !0b111 != 0 {
            return Err(CL_INVALID_PROPERTY);
        }
        // SAFETY: past the pair, still within the list.
        at = unsafe { at.add(2) };
    }
    Ok(())
}

fn allocate(
    call: &str,
    context_handle: *mut c_void,
    device: Option<*mut Device>,
    properties: *const cl_ulong,
    size: usize,
    alignment: cl_uint,
    kind: cl_uint,
) -> ClResult<*mut c_void> {
    let context = context(context_handle)?;
    // SAFETY: the application passes a 0-terminated list, or NULL.
    unsafe { check_properties(properties) }?;
    if size == 0 {
        return Err(CL_INVALID_BUFFER_SIZE);
    }
    if alignment != 0 && (!alignment.is_power_of_two() || alignment > 4096) {
        return Err(CL_INVALID_VALUE);
    }
    let wanted = |on: usize| match kind {
        CL_MEM_TYPE_DEVICE_INTEL if context.device(on).device_memory_is_hosts() => {
            MemoryKind::Shared
        }
        CL_MEM_TYPE_DEVICE_INTEL => MemoryKind::Device,
        CL_MEM_TYPE_SHARED_INTEL => MemoryKind::Shared,
        _ => MemoryKind::Host,
    };
    // A host allocation is held by the first of the context's devices that makes one, of
    // those whose largest allocation it fits.
    let candidates: Vec<usize> = match device {
        Some(device) => vec![context.index_of(device).ok_or(CL_INVALID_DEVICE)?],
        None => (0..context.len()).collect(),
    };
    let fitting: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|on| size as u64 <= context.device(*on).max_alloc_bytes())
        .collect();
    if let (true, Some(&first)) = (fitting.is_empty(), candidates.first()) {
        // None fits: the first says why.
        context.device(first).check_alloc(call, size)?;
    }
    let candidates = fitting;
    let mut made = Err(CL_INVALID_DEVICE);
    for on in candidates {
        made = transfer::allocate(
            call,
            context.handle(on),
            wanted(on),
            size,
            CL_OUT_OF_RESOURCES,
        )
        .map(|memory| (on, memory));
        if made.is_ok() {
            break;
        }
    }
    let (on, memory) = made?;
    let device = device.map(|_| context.device(on));
    let base = match memory.host_ptr() {
        Some(pointer) => pointer as usize,
        None => DEVICE_ADDRESSES.take(size).ok_or(CL_OUT_OF_HOST_MEMORY)?,
    };
    let allocation = Arc::new(Allocation {
        context: Held::new(context_handle, context),
        device,
        on,
        kind,
        base,
        size,
        memory,
    });
    LIVE.insert(base, size, allocation)
        .map_err(|_| CL_OUT_OF_RESOURCES)?;
    Ok(base as *mut c_void)
}

pub(crate) extern "C" fn host_mem_alloc(
    context: *mut c_void,
    properties: *const cl_ulong,
    size: usize,
    alignment: cl_uint,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clHostMemAllocINTEL";
    object(CALL, errcode_ret, || {
        allocate(
            CALL,
            context,
            None,
            properties,
            size,
            alignment,
            CL_MEM_TYPE_HOST_INTEL,
        )
    })
}

pub(crate) extern "C" fn device_mem_alloc(
    context: *mut c_void,
    device: *mut Device,
    properties: *const cl_ulong,
    size: usize,
    alignment: cl_uint,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clDeviceMemAllocINTEL";
    object(CALL, errcode_ret, || {
        allocate(
            CALL,
            context,
            Some(device),
            properties,
            size,
            alignment,
            CL_MEM_TYPE_DEVICE_INTEL,
        )
    })
}

pub(crate) extern "C" fn shared_mem_alloc(
    context: *mut c_void,
    device: *mut Device,
    properties: *const cl_ulong,
    size: usize,
    alignment: cl_uint,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clSharedMemAllocINTEL";
    object(CALL, errcode_ret, || {
        // A shared allocation without a device is one every device of the context reaches:
        // the context's first holds it.
        let device = (!device.is_null()).then_some(device);
        allocate(
            CALL,
            context,
            device,
            properties,
            size,
            alignment,
            CL_MEM_TYPE_SHARED_INTEL,
        )
    })
}

/// Frees an allocation; the memory goes once the commands queued on it finished.
pub(crate) extern "C" fn mem_free(context_handle: *mut c_void, ptr: *mut c_void) -> cl_int {
    status("clMemFreeINTEL", || {
        let context = context(context_handle)?;
        if ptr.is_null() {
            return Ok(());
        }
        let freed = LIVE.remove_if(ptr as usize, |allocation| {
            Arc::ptr_eq(allocation.context(), &context)
        });
        match freed {
            Some(freed) => {
                drop(freed);
                Ok(())
            }
            None => Err(CL_INVALID_VALUE),
        }
    })
}

pub(crate) extern "C" fn get_mem_alloc_info(
    context_handle: *mut c_void,
    ptr: *const c_void,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetMemAllocInfoINTEL", || {
        let context = context(context_handle)?;
        let found = find(ptr).filter(|(a, _)| Arc::ptr_eq(a.context(), &context));
        let value = match (param, found) {
            (CL_MEM_ALLOC_TYPE_INTEL, found) => Some(Value::uint(
                found.map_or(CL_MEM_TYPE_UNKNOWN_INTEL, |(a, _)| a.kind),
            )),
            (CL_MEM_ALLOC_BASE_PTR_INTEL, found) => {
                Some(Value::sizes(&[found.map_or(0, |(a, _)| a.base)]))
            }
            (CL_MEM_ALLOC_SIZE_INTEL, found) => {
                Some(Value::sizes(&[found.map_or(0, |(a, _)| a.size)]))
            }
            (CL_MEM_ALLOC_DEVICE_INTEL, found) => Some(Value::pointer(
                found
                    .and_then(|(a, _)| a.device)
                    .map_or(std::ptr::null(), std::ptr::from_ref),
            )),
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetMemAllocInfoINTEL's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

/// One end of a copy: an allocation (and where in it), or the application's own memory.
enum End {
    Allocation(Arc<Allocation>, usize),
    Plain(HostAddress),
}

fn end(queue: &Queue, ptr: *const c_void, size: usize) -> ClResult<End> {
    if ptr.is_null() {
        return Err(CL_INVALID_VALUE);
    }
    Ok(match find(ptr) {
        Some((allocation, offset)) => {
            if offset + size > allocation.size {
                return Err(CL_INVALID_VALUE);
            }
            let here = Arc::ptr_eq(allocation.context(), queue.context().object())
                && allocation.on == queue.device_index();
            if !here && allocation.memory.host_ptr().is_some() {
                // Host memory of another device is host memory for this one's copies.
                return Ok(End::Plain(HostAddress::of(ptr)));
            }
            if !here {
                return Err(refuse(
                    "USM",
                    CL_INVALID_VALUE,
                    "the allocation lives on another context or device than the queue's",
                ));
            }
            End::Allocation(allocation, offset)
        }
        None => End::Plain(HostAddress::of(ptr)),
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_memcpy(
    queue_handle: *mut c_void,
    blocking: cl_bool,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueMemcpyINTEL";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let blocking = blocking != CL_FALSE;
        if size == 0 {
            let run = |_: &Queue| Ok(Progress::Done(Ok(())));
            // SAFETY: event is NULL or points to a handle.
            return unsafe { enqueue.submit(CALL, CL_COMMAND_MEMCPY_INTEL, blocking, event, run) };
        }
        if (dst as usize).abs_diff(src as usize) < size {
            return Err(CL_MEM_COPY_OVERLAP);
        }
        let ends = (
            end(enqueue.queue(), dst, size)?,
            end(enqueue.queue(), src, size)?,
        );
        let run = move |queue: &Queue| {
            Ok(match ends {
                (End::Allocation(to, at), End::Allocation(from, from_at)) => {
                    transfer::copy(queue, CALL, &to.memory, at, &from.memory, from_at, size)?
                }
                (End::Allocation(to, at), End::Plain(from)) => {
                    // SAFETY: the application passes size readable bytes at src.
                    let data = unsafe { from.bytes(size) };
                    transfer::write(queue, CALL, &to.memory, at, data)?
                }
                (End::Plain(to), End::Allocation(from, at)) => {
                    // SAFETY: the application passes size writable bytes at dst.
                    let out = unsafe { to.bytes_mut(size) };
                    transfer::read(queue, CALL, &from.memory, at, out)?;
                    Progress::Done(Ok(()))
                }
                (End::Plain(to), End::Plain(from)) => {
                    queue.finish(CALL)?;
                    // SAFETY: the application passes size bytes at each, not overlapping.
                    unsafe { std::ptr::copy_nonoverlapping(from.ptr(), to.ptr(), size) };
                    Progress::Done(Ok(()))
                }
            })
        };
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, CL_COMMAND_MEMCPY_INTEL, blocking, event, run) }
    })
}

/// Fills `size` bytes at `dst` with `pattern`, repeated.
#[allow(clippy::too_many_arguments)]
fn fill(
    call: &'static str,
    queue_handle: *mut c_void,
    dst: *mut c_void,
    pattern: &[u8],
    size: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> ClResult<()> {
    // SAFETY: the wait list follows the entry point's contract.
    let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
    if pattern.is_empty()
        || !pattern.len().is_power_of_two()
        || pattern.len() > 128
        || !size.is_multiple_of(pattern.len())
    {
        return Err(CL_INVALID_VALUE);
    }
    let data: Vec<u8> = pattern.iter().copied().cycle().take(size).collect();
    let target = end(enqueue.queue(), dst, size)?;
    let run = move |queue: &Queue| {
        Ok(match target {
            End::Allocation(to, at) => transfer::write(queue, call, &to.memory, at, &data)?,
            End::Plain(to) => {
                queue.finish(call)?;
                // SAFETY: the application passes size writable bytes at dst.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), to.ptr(), size) };
                Progress::Done(Ok(()))
            }
        })
    };
    // SAFETY: event is NULL or points to a handle.
    unsafe { enqueue.submit(call, CL_COMMAND_MEMFILL_INTEL, false, event, run) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_mem_fill(
    queue: *mut c_void,
    dst: *mut c_void,
    pattern: *const c_void,
    pattern_size: usize,
    size: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueMemFillINTEL";
    status(CALL, || {
        if pattern.is_null() || pattern_size == 0 {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes pattern_size bytes at pattern.
        let pattern = unsafe { std::slice::from_raw_parts(pattern.cast::<u8>(), pattern_size) };
        fill(CALL, queue, dst, pattern, size, count, wait, event)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_memset(
    queue: *mut c_void,
    dst: *mut c_void,
    value: cl_int,
    size: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueMemsetINTEL";
    status(CALL, || {
        fill(CALL, queue, dst, &[value as u8], size, count, wait, event)
    })
}

/// Migration and advice are hints: the memory is where it is; the command checks its range
/// and completes.
fn hint(
    command: cl_uint,
    queue_handle: *mut c_void,
    ptr: *const c_void,
    size: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> ClResult<()> {
    // SAFETY: the wait list follows the entry point's contract.
    let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
    match end(enqueue.queue(), ptr, size)? {
        End::Allocation(..) => {}
        End::Plain(_) => return Err(CL_INVALID_VALUE),
    }
    let call = if command == CL_COMMAND_MIGRATEMEM_INTEL {
        "clEnqueueMigrateMemINTEL"
    } else {
        "clEnqueueMemAdviseINTEL"
    };
    let run = |_: &Queue| Ok(Progress::Done(Ok(())));
    // SAFETY: event is NULL or points to a handle.
    unsafe { enqueue.submit(call, command, false, event, run) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_migrate_mem(
    queue: *mut c_void,
    ptr: *const c_void,
    size: usize,
    _flags: cl_bitfield,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    status("clEnqueueMigrateMemINTEL", || {
        hint(
            CL_COMMAND_MIGRATEMEM_INTEL,
            queue,
            ptr,
            size,
            count,
            wait,
            event,
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_mem_advise(
    queue: *mut c_void,
    ptr: *const c_void,
    size: usize,
    _advice: cl_uint,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    status("clEnqueueMemAdviseINTEL", || {
        hint(
            CL_COMMAND_MEMADVISE_INTEL,
            queue,
            ptr,
            size,
            count,
            wait,
            event,
        )
    })
}

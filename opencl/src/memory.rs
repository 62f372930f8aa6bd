//! Buffers: memory of one device of the context (device memory where the plugin has it,
//! host memory the device reaches otherwise), sub-buffers (a region of a buffer's memory),
//! and the commands that move data in and out.
//! Reads and maps complete when they run (OpenCL lets any command do so); writes, copies and
//! fills of device memory are queued.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use accelhost::{Memory, MemoryKind};

use crate::cl::*;
use crate::command::{Enqueue, HostAddress};
use crate::context::{Context, context};
use crate::device::BASE_ADDRESS_ALIGN;
use crate::error::{ClResult, list, object, refuse, report, status};
use crate::event::Progress;
use crate::info::{Value, give};
use crate::object::{Held, get, publish, references};
use crate::queue::Queue;
use crate::transfer;

/// An OpenCL buffer.
pub struct Buffer {
    context: Held<Context>,
    /// The device it lives on: the context's first (README: a context of several devices).
    device: usize,
    flags: cl_bitfield,
    size: usize,
    /// The memory, shared by a buffer and its sub-buffers.
    memory: Memory,
    /// Where the buffer starts in `memory`: 0, or a sub-buffer's origin.
    origin: usize,
    /// The buffer a sub-buffer is a region of (held: a sub-buffer retains it).
    parent: Option<Held<Buffer>>,
    /// The application's memory of `CL_MEM_USE_HOST_PTR` (at the buffer's origin), which maps
    /// and migrations to the host bring up to date.
    host_ptr: usize,
    /// Mapped regions by the pointer handed out.
    maps: Mutex<HashMap<usize, Mapping>>,
}

impl crate::object::Object for Buffer {
    const KIND: &'static str = "cl_mem";
}

/// A mapped region.
struct Mapping {
    offset: usize,
    size: usize,
    /// Mapped for writing: the unmap writes it back.
    writes: bool,
    /// The copy handed out; none when the pointer is the application's own memory
    /// (`CL_MEM_USE_HOST_PTR`).
    copy: Option<Box<[u8]>>,
}

impl Buffer {
    /// The library's memory.
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// Where the buffer starts in its memory.
    pub fn origin(&self) -> usize {
        self.origin
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether `other` shares its memory (a buffer and its sub-buffers do).
    pub fn same_memory(&self, other: &Buffer) -> bool {
        std::ptr::eq(self.root(), other.root())
    }

    /// Whether `self`'s `[offset, offset + size)` and `other`'s `[other_offset, ...)` are in
    /// the same memory and overlap (a buffer and its sub-buffers share one).
    fn overlaps(&self, offset: usize, other: &Buffer, other_offset: usize, size: usize) -> bool {
        self.same_memory(other)
            && (self.origin + offset).abs_diff(other.origin + other_offset) < size
    }

    /// The buffer whose memory this is: itself, or a sub-buffer's parent.
    fn root(&self) -> *const Buffer {
        self.parent
            .as_ref()
            .map_or(std::ptr::from_ref(self), |parent| {
                Arc::as_ptr(parent.object())
            })
    }

    /// The device's place in the context.
    pub fn device_index(&self) -> usize {
        self.device
    }

    fn check_range(&self, offset: usize, size: usize) -> ClResult<()> {
        match offset.checked_add(size) {
            Some(end) if end <= self.size && size > 0 => Ok(()),
            _ => Err(CL_INVALID_VALUE),
        }
    }

    /// Writes `data` at `offset` after the queue's earlier commands.
    pub fn write(
        &self,
        queue: &Queue,
        call: &str,
        offset: usize,
        data: &[u8],
    ) -> ClResult<Progress> {
        transfer::write(queue, call, &self.memory, self.origin + offset, data)
    }

    /// Reads into `out` from `offset` once the queue's earlier commands finished.
    pub fn read(&self, queue: &Queue, call: &str, offset: usize, out: &mut [u8]) -> ClResult<()> {
        transfer::read(queue, call, &self.memory, self.origin + offset, out)
    }

    /// Copies the application's `CL_MEM_USE_HOST_PTR` memory in (`to_device`) or out.
    fn sync_host_ptr(
        &self,
        queue: &Queue,
        call: &str,
        offset: usize,
        size: usize,
        to_device: bool,
    ) -> ClResult<Progress> {
        if self.host_ptr == 0 {
            return Ok(Progress::Done(Ok(())));
        }
        let at = (self.host_ptr + offset) as *mut u8;
        if to_device {
            // SAFETY: the application keeps its USE_HOST_PTR memory, of the buffer's size,
            // for the buffer's life.
            let data = unsafe { std::slice::from_raw_parts(at, size) };
            self.write(queue, call, offset, data)
        } else {
            // SAFETY: as above.
            let out = unsafe { std::slice::from_raw_parts_mut(at, size) };
            self.read(queue, call, offset, out)
                .map(|()| Progress::Done(Ok(())))
        }
    }
}

/// The buffer behind `handle`, or `CL_INVALID_MEM_OBJECT`.
pub fn buffer(handle: *const c_void) -> ClResult<Arc<Buffer>> {
    get::<Buffer>(handle).ok_or(CL_INVALID_MEM_OBJECT)
}

/// The buffer behind `handle`, on `queue`'s device.
pub fn buffer_on(handle: *const c_void, queue: &Queue) -> ClResult<Arc<Buffer>> {
    let buffer = buffer(handle)?;
    if !Arc::ptr_eq(buffer.context.object(), queue.context().object())
        || buffer.device != queue.device_index()
    {
        return Err(refuse(
            "enqueue",
            CL_INVALID_CONTEXT,
            "the buffer lives on another context or device than the queue's",
        ));
    }
    Ok(buffer)
}

const ACCESS: cl_bitfield = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
const HOST_ACCESS: cl_bitfield =
    CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS;
const HOST_PTR: cl_bitfield = CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR;

pub(crate) extern "C" fn create_buffer(
    context_handle: *mut c_void,
    flags: cl_bitfield,
    size: usize,
    host_ptr: *mut c_void,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clCreateBuffer";
    object(CALL, errcode_ret, || {
        let context = context(context_handle)?;
        let flags = if flags & ACCESS == 0 {
            flags | CL_MEM_READ_WRITE
        } else {
            flags
        };
        if flags & !(ACCESS | HOST_ACCESS | HOST_PTR) != 0
            || (flags & ACCESS).count_ones() > 1
            || (flags & HOST_ACCESS).count_ones() > 1
            || flags & (CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR)
                == (CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR)
            || flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)
                == (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)
        {
            return Err(CL_INVALID_VALUE);
        }
        let wants_ptr = flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR) != 0;
        if wants_ptr == host_ptr.is_null() {
            return Err(CL_INVALID_HOST_PTR);
        }
        let device = 0;
        if size == 0 {
            return Err(CL_INVALID_BUFFER_SIZE);
        }
        context.device(device).check_alloc(CALL, size)?;
        let handle = context.handle(device);
        let memory = transfer::allocate(
            CALL,
            handle,
            MemoryKind::Device,
            size,
            CL_MEM_OBJECT_ALLOCATION_FAILURE,
        )?;
        let buffer = Buffer {
            context: Held::new(context_handle, context.clone()),
            device,
            flags,
            size,
            memory,
            origin: 0,
            parent: None,
            host_ptr: if flags & CL_MEM_USE_HOST_PTR != 0 {
                host_ptr as usize
            } else {
                0
            },
            maps: Mutex::new(HashMap::new()),
        };
        if wants_ptr {
            // SAFETY: the application passes size bytes at host_ptr for these flags.
            let data = unsafe { std::slice::from_raw_parts(host_ptr.cast::<u8>(), size) };
            let staging = handle.create_queue().map_err(|err| report(CALL, &err))?;
            write_now(&buffer, &staging, data).map_err(|err| report(CALL, &err))?;
        }
        publish(Arc::new(buffer))
    })
}

/// The region a sub-buffer covers (`cl_buffer_region`).
#[repr(C)]
struct Region {
    origin: usize,
    size: usize,
}

pub(crate) extern "C" fn create_sub_buffer(
    parent_handle: *mut c_void,
    flags: cl_bitfield,
    create_type: cl_uint,
    info: *const c_void,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clCreateSubBuffer";
    object(CALL, errcode_ret, || {
        let parent = buffer(parent_handle)?;
        if parent.parent.is_some() {
            return Err(refuse(
                CALL,
                CL_INVALID_MEM_OBJECT,
                "a sub-buffer is made of a buffer, not of another sub-buffer",
            ));
        }
        if create_type != CL_BUFFER_CREATE_TYPE_REGION || info.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: for CL_BUFFER_CREATE_TYPE_REGION, info points to a cl_buffer_region.
        let region = unsafe { info.cast::<Region>().read_unaligned() };
        if region.size == 0 {
            return Err(CL_INVALID_BUFFER_SIZE);
        }
        match region.origin.checked_add(region.size) {
            Some(end) if end <= parent.size => {}
            _ => return Err(CL_INVALID_VALUE),
        }
        if !region.origin.is_multiple_of(BASE_ADDRESS_ALIGN) {
            return Err(CL_MISALIGNED_SUB_BUFFER_OFFSET);
        }
        if flags & !(ACCESS | HOST_ACCESS) != 0
            || (flags & ACCESS).count_ones() > 1
            || (flags & HOST_ACCESS).count_ones() > 1
        {
            return Err(CL_INVALID_VALUE);
        }
        // What the parent does not allow, its region does not either.
        let device_writes = |f: cl_bitfield| f & CL_MEM_READ_ONLY == 0;
        let device_reads = |f: cl_bitfield| f & CL_MEM_WRITE_ONLY == 0;
        let host_writes = |f: cl_bitfield| f & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS) == 0;
        let host_reads = |f: cl_bitfield| f & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS) == 0;
        let widens =
            |allowed: &dyn Fn(cl_bitfield) -> bool| allowed(flags) && !allowed(parent.flags);
        if (flags & ACCESS != 0 && (widens(&device_writes) || widens(&device_reads)))
            || (flags & HOST_ACCESS != 0 && (widens(&host_writes) || widens(&host_reads)))
        {
            return Err(CL_INVALID_VALUE);
        }
        let access = if flags & ACCESS == 0 {
            parent.flags & ACCESS
        } else {
            flags & ACCESS
        };
        let host_access = if flags & HOST_ACCESS == 0 {
            parent.flags & HOST_ACCESS
        } else {
            flags & HOST_ACCESS
        };
        let sub = Buffer {
            context: Held::new(parent.context.handle(), parent.context.object().clone()),
            device: parent.device,
            flags: access | host_access | (parent.flags & HOST_PTR),
            size: region.size,
            memory: parent.memory.clone(),
            origin: region.origin,
            parent: Some(Held::new(parent_handle, parent.clone())),
            host_ptr: if parent.host_ptr == 0 {
                0
            } else {
                parent.host_ptr + region.origin
            },
            maps: Mutex::new(HashMap::new()),
        };
        publish(Arc::new(sub))
    })
}

/// The initial contents, written through a queue of the buffer's own.
fn write_now(buffer: &Buffer, queue: &accelhost::Queue, data: &[u8]) -> accelhost::Result<()> {
    if buffer.memory.kind() != MemoryKind::Device {
        return buffer.memory.write(0, data);
    }
    queue.write(&buffer.memory, 0, data)?.wait()
}

pub(crate) extern "C" fn get_mem_object_info(
    handle: *mut c_void,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetMemObjectInfo", || {
        let buffer = buffer(handle)?;
        let value = match param {
            CL_MEM_TYPE => Some(Value::uint(CL_MEM_OBJECT_BUFFER)),
            CL_MEM_FLAGS => Some(Value::ulong(buffer.flags)),
            CL_MEM_SIZE => Some(Value::sizes(&[buffer.size])),
            CL_MEM_HOST_PTR => Some(Value::sizes(&[buffer.host_ptr])),
            CL_MEM_MAP_COUNT => Some(Value::uint(
                buffer.maps.lock().unwrap_or_else(|e| e.into_inner()).len() as cl_uint,
            )),
            CL_MEM_REFERENCE_COUNT => references::<Buffer>(handle).map(Value::uint),
            CL_MEM_CONTEXT => Some(Value::pointer(buffer.context.handle())),
            CL_MEM_ASSOCIATED_MEMOBJECT => Some(Value::pointer(
                buffer
                    .parent
                    .as_ref()
                    .map_or(std::ptr::null(), |parent| parent.handle().cast_const()),
            )),
            CL_MEM_OFFSET => Some(Value::sizes(&[buffer.origin])),
            CL_MEM_USES_SVM_POINTER => Some(Value::bool(false)),
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetMemObjectInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_read_buffer(
    queue_handle: *mut c_void,
    buffer_handle: *mut c_void,
    blocking: cl_bool,
    offset: usize,
    size: usize,
    ptr: *mut c_void,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueReadBuffer";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let buffer = buffer_on(buffer_handle, enqueue.queue())?;
        buffer.check_range(offset, size)?;
        if ptr.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        let to = HostAddress::of(ptr);
        let run = move |queue: &Queue| {
            // SAFETY: the application passes size writable bytes at ptr, for the command.
            let out = unsafe { to.bytes_mut(size) };
            buffer.read(queue, CALL, offset, out)?;
            Ok(Progress::Done(Ok(())))
        };
        // SAFETY: event is NULL or points to a handle.
        unsafe {
            enqueue.submit(
                CALL,
                CL_COMMAND_READ_BUFFER,
                blocking != CL_FALSE,
                event,
                run,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_write_buffer(
    queue_handle: *mut c_void,
    buffer_handle: *mut c_void,
    blocking: cl_bool,
    offset: usize,
    size: usize,
    ptr: *const c_void,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueWriteBuffer";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let buffer = buffer_on(buffer_handle, enqueue.queue())?;
        buffer.check_range(offset, size)?;
        if ptr.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        let from = HostAddress::of(ptr);
        // The data is copied when the command runs, so the application may reuse ptr once
        // its event finished.
        let run = move |queue: &Queue| {
            // SAFETY: the application passes size bytes at ptr, for the command.
            let data = unsafe { from.bytes(size) };
            buffer.write(queue, CALL, offset, data)
        };
        // SAFETY: event is NULL or points to a handle.
        unsafe {
            enqueue.submit(
                CALL,
                CL_COMMAND_WRITE_BUFFER,
                blocking != CL_FALSE,
                event,
                run,
            )
        }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_copy_buffer(
    queue_handle: *mut c_void,
    src_handle: *mut c_void,
    dst_handle: *mut c_void,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueCopyBuffer";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let src = buffer_on(src_handle, enqueue.queue())?;
        let dst = buffer_on(dst_handle, enqueue.queue())?;
        src.check_range(src_offset, size)?;
        dst.check_range(dst_offset, size)?;
        if src.overlaps(src_offset, &dst, dst_offset, size) {
            return Err(CL_MEM_COPY_OVERLAP);
        }
        let run = move |queue: &Queue| {
            transfer::copy(
                queue,
                CALL,
                &dst.memory,
                dst.origin + dst_offset,
                &src.memory,
                src.origin + src_offset,
                size,
            )
        };
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, CL_COMMAND_COPY_BUFFER, false, event, run) }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_fill_buffer(
    queue_handle: *mut c_void,
    buffer_handle: *mut c_void,
    pattern: *const c_void,
    pattern_size: usize,
    offset: usize,
    size: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueFillBuffer";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let buffer = buffer_on(buffer_handle, enqueue.queue())?;
        buffer.check_range(offset, size)?;
        if pattern.is_null()
            || !pattern_size.is_power_of_two()
            || pattern_size > 128
            || !offset.is_multiple_of(pattern_size)
            || !size.is_multiple_of(pattern_size)
        {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes pattern_size bytes at pattern.
        let pattern = unsafe { std::slice::from_raw_parts(pattern.cast::<u8>(), pattern_size) };
        let data: Vec<u8> = pattern.iter().copied().cycle().take(size).collect();
        let run = move |queue: &Queue| buffer.write(queue, CALL, offset, &data);
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, CL_COMMAND_FILL_BUFFER, false, event, run) }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_map_buffer(
    queue_handle: *mut c_void,
    buffer_handle: *mut c_void,
    blocking: cl_bool,
    flags: cl_bitfield,
    offset: usize,
    size: usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clEnqueueMapBuffer";
    object(CALL, errcode_ret, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let buffer = buffer_on(buffer_handle, enqueue.queue())?;
        buffer.check_range(offset, size)?;
        if flags & !(CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0 {
            return Err(CL_INVALID_VALUE);
        }
        let writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION) != 0;
        let reads = flags & CL_MAP_WRITE_INVALIDATE_REGION == 0;
        let (pointer, mut copy) = if buffer.host_ptr != 0 {
            ((buffer.host_ptr + offset) as *mut u8, None)
        } else {
            let mut copy = vec![0u8; size].into_boxed_slice();
            (copy.as_mut_ptr(), Some(copy))
        };
        let own_copy = copy.is_some();
        let mapped = HostAddress::of(pointer);
        let target = buffer.clone();
        let run = move |queue: &Queue| {
            if reads {
                if own_copy {
                    // SAFETY: the mapping's copy lives until the unmap, which runs after this
                    // command in the queue's order.
                    target.read(queue, CALL, offset, unsafe { mapped.bytes_mut(size) })?;
                } else {
                    target.sync_host_ptr(queue, CALL, offset, size, false)?;
                }
            }
            Ok(Progress::Done(Ok(())))
        };
        let mut maps = buffer.maps.lock().unwrap_or_else(|e| e.into_inner());
        maps.insert(
            pointer as usize,
            Mapping {
                offset,
                size,
                writes,
                copy: copy.take(),
            },
        );
        drop(maps);
        // SAFETY: event is NULL or points to a handle.
        let submitted = unsafe {
            enqueue.submit(
                CALL,
                CL_COMMAND_MAP_BUFFER,
                blocking != CL_FALSE,
                event,
                run,
            )
        };
        if let Err(code) = submitted {
            buffer
                .maps
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&(pointer as usize));
            return Err(code);
        }
        Ok(pointer.cast())
    })
}

pub(crate) extern "C" fn enqueue_unmap_mem_object(
    queue_handle: *mut c_void,
    buffer_handle: *mut c_void,
    mapped: *mut c_void,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueUnmapMemObject";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let buffer = buffer_on(buffer_handle, enqueue.queue())?;
        let mapping = buffer
            .maps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(mapped as usize));
        let Some(Mapping {
            offset,
            size,
            writes,
            copy,
        }) = mapping
        else {
            return Err(CL_INVALID_VALUE);
        };
        let run = move |queue: &Queue| match (writes, copy) {
            (false, _) => Ok(Progress::Done(Ok(()))),
            (true, Some(copy)) => buffer.write(queue, CALL, offset, &copy),
            (true, None) => buffer.sync_host_ptr(queue, CALL, offset, size, true),
        };
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, CL_COMMAND_UNMAP_MEM_OBJECT, false, event, run) }
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_migrate_mem_objects(
    queue_handle: *mut c_void,
    num_objects: cl_uint,
    objects: *const *mut c_void,
    flags: cl_bitfield,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueMigrateMemObjects";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        // SAFETY: objects holds num_objects handles.
        let handles = unsafe { list(num_objects, objects, CL_INVALID_VALUE) }?;
        if handles.is_empty()
            || flags & !(CL_MIGRATE_MEM_OBJECT_HOST | CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED) != 0
        {
            return Err(CL_INVALID_VALUE);
        }
        let buffers = handles
            .iter()
            .map(|h| buffer_on(*h, enqueue.queue()))
            .collect::<ClResult<Vec<_>>>()?;
        let to_host = flags & CL_MIGRATE_MEM_OBJECT_HOST != 0;
        let moves = flags & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED == 0;
        let run = move |queue: &Queue| {
            let mut last = Progress::Done(Ok(()));
            if moves {
                for buffer in &buffers {
                    last = buffer.sync_host_ptr(queue, CALL, 0, buffer.size, !to_host)?;
                }
            }
            Ok(last)
        };
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, CL_COMMAND_MIGRATE_MEM_OBJECTS, false, event, run) }
    })
}

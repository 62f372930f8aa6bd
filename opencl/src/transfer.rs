//! Allocations and the bytes moved in and out of them and between them, in a queue's order:
//! the one way buffers and unified shared memory both do it. Host-visible memory is read,
//! written and copied directly once the queue's earlier commands finished; device memory
//! through the library queue's staging buffers and queued copies.

use accelhost::{ErrorCode, Handle, Memory, MemoryKind};

use crate::cl::cl_int;
use crate::error::{ClResult, report};
use crate::event::Progress;
use crate::queue::Queue;

/// `size` bytes of `kind` on the device of `handle`, or of host memory the device reaches
/// where its plugin has none of that kind (or none yet: an XRT card's banks come with its
/// first program). Out of memory or space is `exhausted`; other failures their code.
pub fn allocate(
    call: &str,
    handle: &Handle,
    kind: MemoryKind,
    size: usize,
    exhausted: cl_int,
) -> ClResult<Memory> {
    let fallback = |err: &accelhost::Error| {
        kind != MemoryKind::Host
            && matches!(
                err.code(),
                ErrorCode::Unsupported | ErrorCode::NotInitialized
            )
    };
    match handle.alloc(kind, size as u64) {
        Err(err) if fallback(&err) => handle.alloc(MemoryKind::Host, size as u64),
        other => other,
    }
    .map_err(|err| {
        let code = report(call, &err);
        match err.code() {
            ErrorCode::OutOfMemory | ErrorCode::NoSpace => exhausted,
            _ => code,
        }
    })
}

/// Writes `data` into `memory` at `offset` after the queue's earlier commands; `data` is
/// copied before this returns, so the application may reuse it.
pub fn write(
    queue: &Queue,
    call: &str,
    memory: &Memory,
    offset: usize,
    data: &[u8],
) -> ClResult<Progress> {
    if memory.kind() != MemoryKind::Device {
        queue.finish(call)?;
        memory
            .write(offset as u64, data)
            .map_err(|err| report(call, &err))?;
        return Ok(Progress::Done(Ok(())));
    }
    let event = queue
        .commands()
        .write(memory, offset as u64, data)
        .map_err(|err| report(call, &err))?;
    Ok(Progress::Device(event))
}

/// Reads `memory` at `offset` into `out` once the queue's earlier commands finished.
pub fn read(
    queue: &Queue,
    call: &str,
    memory: &Memory,
    offset: usize,
    out: &mut [u8],
) -> ClResult<()> {
    if memory.kind() != MemoryKind::Device {
        queue.finish(call)?;
        return memory
            .read(offset as u64, out)
            .map_err(|err| report(call, &err));
    }
    queue
        .commands()
        .read(memory, offset as u64, out)
        .map(drop)
        .map_err(|err| report(call, &err))
}

/// Copies `size` bytes of `src` at `src_offset` to `dst` at `dst_offset` after the queue's
/// earlier commands. Between two host-visible allocations the host copies (a device that
/// works on host memory only, a CAPI AFU, has no copy engine of its own, and its "device"
/// allocations are host memory); otherwise the device copies, in the queue.
pub fn copy(
    queue: &Queue,
    call: &str,
    dst: &Memory,
    dst_offset: usize,
    src: &Memory,
    src_offset: usize,
    size: usize,
) -> ClResult<Progress> {
    let within = |memory: &Memory, offset: usize| {
        offset
            .checked_add(size)
            .is_some_and(|end| end as u64 <= memory.size())
    };
    if let (Some(to), Some(from)) = (dst.host_ptr(), src.host_ptr())
        && within(dst, dst_offset)
        && within(src, src_offset)
    {
        queue.finish(call)?;
        // SAFETY: both allocations live (held here) and hold `size` bytes from their
        // offsets, checked above; `copy` allows the ranges to overlap (one allocation).
        unsafe { std::ptr::copy(from.add(src_offset), to.add(dst_offset), size) };
        return Ok(Progress::Done(Ok(())));
    }
    let event = queue
        .commands()
        .enqueue_memcpy(dst, dst_offset as u64, src, src_offset as u64, size as u64)
        .map_err(|err| report(call, &err))?;
    Ok(Progress::Device(event))
}

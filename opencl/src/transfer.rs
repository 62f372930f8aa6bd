//! Moving bytes between the application's memory and an allocation, in a queue's order: the
//! one way buffers and unified shared memory both do it. Host-visible memory is read and
//! written directly once the queue's earlier commands finished; device memory through a
//! staging allocation and a queued copy.

use accelhost::{Memory, MemoryKind};

use crate::error::{ClResult, report};
use crate::event::Progress;
use crate::queue::Queue;

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
    let staging = queue
        .handle()
        .alloc(MemoryKind::Host, data.len() as u64)
        .map_err(|err| report(call, &err))?;
    staging.write(0, data).map_err(|err| report(call, &err))?;
    let event = queue
        .commands()
        .enqueue_memcpy(memory, offset as u64, &staging, 0, data.len() as u64)
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
    let staging = queue
        .handle()
        .alloc(MemoryKind::Host, out.len() as u64)
        .map_err(|err| report(call, &err))?;
    queue
        .commands()
        .enqueue_memcpy(&staging, 0, memory, offset as u64, out.len() as u64)
        .and_then(|event| event.wait())
        .and_then(|()| staging.read(0, out))
        .map_err(|err| report(call, &err))
}

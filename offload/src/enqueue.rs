//! What queues run: memcpy in every direction and kernel launches. A pointer paired with a
//! device must lie in an allocation of that device; one paired with the host device is the
//! program's own memory (or a host allocation of the queue's device, used directly). Bytes
//! from the program's memory are copied in the call, so it may reuse them at once; bytes to
//! it are written before the call returns (the copy completes when it runs, which the API
//! allows of any command).

use std::ffi::c_void;

use accelhost::{Memory, MemoryKind};

use crate::memory::{Allocation, find, is_device_memory};
use crate::program::Kernel;
use crate::queue::Queue;
use crate::result::{OlRes, fail, failed};
use crate::state::{DeviceRef, device};
use crate::types::*;

/// One side of a copy.
enum Side {
    /// Memory the device reaches, and where in it.
    Device(std::sync::Arc<Allocation>, u64),
    /// The program's own memory.
    Program(*mut u8),
}

fn side(
    queue: &Queue,
    pointer: *mut c_void,
    device_handle: *mut c_void,
    size: usize,
    which: &str,
) -> OlRes<Side> {
    if pointer.is_null() {
        return Err(fail(
            OL_ERRC_INVALID_NULL_POINTER,
            format!("{which} is NULL"),
        ));
    }
    let found = find(queue.device, pointer as usize, size);
    match device(device_handle)? {
        DeviceRef::Host => Ok(match found {
            Some((allocation, offset)) if allocation.memory.kind() != MemoryKind::Device => {
                Side::Device(allocation, offset)
            }
            _ if is_device_memory(pointer as usize) => {
                return Err(fail(
                    OL_ERRC_INVALID_ARGUMENT,
                    format!("{which} is device memory: pair it with its device, not the host's"),
                ));
            }
            _ => Side::Program(pointer.cast()),
        }),
        DeviceRef::Accelerator(owner) if std::ptr::eq(owner, queue.device) => {
            let (allocation, offset) = found.ok_or_else(|| {
                fail(
                    OL_ERRC_INVALID_ARGUMENT,
                    format!(
                        "{which} ({pointer:p}, {size} bytes) is not in an allocation of the device"
                    ),
                )
            })?;
            Ok(Side::Device(allocation, offset))
        }
        DeviceRef::Accelerator(_) => Err(fail(
            OL_ERRC_UNSUPPORTED_FEATURE,
            format!("{which} is on another device than the queue's: copy through the host"),
        )),
    }
}

/// Copies `size` bytes from `source` (of `source_device`) to `target` (of `target_device`)
/// in `queue`'s order; the command's event.
pub fn memcpy(
    queue: &Queue,
    target: *mut c_void,
    target_device: *mut c_void,
    source: *mut c_void,
    source_device: *mut c_void,
    size: usize,
) -> OlRes<accelhost::Event> {
    if size == 0 {
        return Err(fail(OL_ERRC_INVALID_SIZE, "Size is 0"));
    }
    let to = side(queue, target, target_device, size, "DstPtr")?;
    let from = side(queue, source, source_device, size, "SrcPtr")?;
    let size64 = size as u64;
    let copy = |to: &Memory, to_at, from: &Memory, from_at| {
        queue
            .commands
            .enqueue_memcpy(to, to_at, from, from_at, size64)
            .map_err(|err| failed(&err))
    };
    match (to, from) {
        (Side::Device(to, to_at), Side::Device(from, from_at)) => {
            copy(&to.memory, to_at, &from.memory, from_at)
        }
        (Side::Device(to, to_at), Side::Program(from)) => {
            // SAFETY: the program passes size readable bytes at SrcPtr.
            let bytes = unsafe { std::slice::from_raw_parts(from, size) };
            queue
                .commands
                .write(&to.memory, to_at, bytes)
                .map_err(|err| failed(&err))
        }
        (Side::Program(to), Side::Device(from, from_at)) => {
            // SAFETY: the program passes size writable bytes at DstPtr.
            let out = unsafe { std::slice::from_raw_parts_mut(to, size) };
            queue
                .commands
                .read(&from.memory, from_at, out)
                .map_err(|err| failed(&err))
        }
        (Side::Program(_), Side::Program(_)) => Err(fail(
            OL_ERRC_INVALID_ARGUMENT,
            "both pointers are the host's: at least one side must be a device",
        )),
    }
}

/// Launches `kernel` with its packed arguments: once (a kernel of a device image runs once
/// per launch; its arguments say how much it processes), or over the launch's work-items (a
/// kernel built from SPIR-V).
pub fn launch(
    queue: &Queue,
    kernel: &Kernel,
    data: &[u8],
    sizes: &LaunchSizeArgs,
) -> OlRes<accelhost::Event> {
    if !std::ptr::eq(kernel.program.device, queue.device) {
        return Err(fail(
            OL_ERRC_INVALID_ARGUMENT,
            "the kernel's program is on another device than the queue's",
        ));
    }
    let dimensions = sizes.dimensions;
    if !(1..=3).contains(&dimensions) {
        return Err(fail(
            OL_ERRC_INVALID_SIZE,
            format!("Dimensions is {dimensions}: 1, 2 or 3"),
        ));
    }
    let items: usize = (0..dimensions)
        .map(|d| sizes.num_groups[d].saturating_mul(sizes.group_size[d]))
        .product();
    if items != 1 && !kernel.over_work_items() {
        return Err(fail(
            OL_ERRC_UNSUPPORTED_FEATURE,
            format!(
                "a launch of {items} work items: the devices run a kernel once per launch \
                 (one group of one item), and its arguments say how much it processes"
            ),
        ));
    }
    let values = kernel.arguments(data, sizes)?;
    let args: Vec<_> = values.iter().map(|value| value.arg()).collect();
    queue
        .commands
        .enqueue_launch(&kernel.kernel, &args)
        .map_err(|err| failed(&err))
}

//! The exported functions of `OffloadAPI.h` 0.0.1, each with its `...WithCodeLoc` variant,
//! which puts the program's code location in the details of the call's error.

use std::ffi::{CStr, c_char, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::enqueue;
use crate::handles::{publish, release, retain};
use crate::info;
use crate::memory;
use crate::program::{Kernel, Program};
use crate::queue::{Event, Queue, record};
use crate::result::{OlRes, answer, at_location, fail};
use crate::state::{self, HOST_DEVICE, PLATFORM, handle_of};
use crate::types::*;

/// `olInit` calls not yet matched by `olShutDown`.
static INITIALIZED: AtomicU32 = AtomicU32::new(0);

/// Writes `value` through a non-NULL out pointer.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn give<T>(out: *mut T, what: &str, value: impl FnOnce() -> OlRes<T>) -> OlRes<()> {
    if out.is_null() {
        return Err(fail(
            OL_ERRC_INVALID_NULL_POINTER,
            format!("{what} is NULL"),
        ));
    }
    let value = value()?;
    // SAFETY: out is writable.
    unsafe { out.write(value) };
    Ok(())
}

/// Fills `entries` handles at `out` from `all`.
///
/// # Safety
/// `out` is NULL or holds `entries` writable handles.
unsafe fn fill(entries: u32, out: *mut *mut c_void, all: &[*mut c_void]) -> OlRes<()> {
    if entries == 0 {
        return Err(fail(OL_ERRC_INVALID_SIZE, "NumEntries is 0"));
    }
    if out.is_null() {
        return Err(fail(
            OL_ERRC_INVALID_NULL_POINTER,
            "the output array is NULL",
        ));
    }
    for (at, handle) in all.iter().take(entries as usize).enumerate() {
        // SAFETY: out holds entries handles.
        unsafe { out.add(at).write(*handle) };
    }
    Ok(())
}

/// Starts the library (its host and devices) and counts the call.
#[unsafe(no_mangle)]
pub extern "C" fn olInit() -> OlResult {
    answer("olInit", || {
        INITIALIZED.fetch_add(1, Ordering::Relaxed);
        match &state::state().why_none {
            Some(why) => Err(fail(OL_ERRC_UNKNOWN, why.clone())),
            None => Ok(()),
        }
    })
}

/// Counts down `olInit`. The host and its devices stay for the process's life, so handles a
/// program still holds stay valid.
#[unsafe(no_mangle)]
pub extern "C" fn olShutDown() -> OlResult {
    answer("olShutDown", || {
        INITIALIZED
            .try_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .map(drop)
            .map_err(|_| fail(OL_ERRC_INVALID_VALUE, "olShutDown without olInit"))
    })
}

/// # Safety
/// `out` is NULL or holds `entries` writable handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetPlatform(entries: u32, out: *mut *mut c_void) -> OlResult {
    // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
    answer("olGetPlatform", || unsafe {
        fill(entries, out, &[handle_of(&PLATFORM)])
    })
}

/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetPlatformCount(out: *mut u32) -> OlResult {
    // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
    answer("olGetPlatformCount", || unsafe {
        give(out, "NumPlatforms", || Ok(1))
    })
}

/// # Safety
/// `out` is NULL or holds `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetPlatformInfo(
    platform: *mut c_void,
    property: u32,
    size: usize,
    out: *mut c_void,
) -> OlResult {
    // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
    answer("olGetPlatformInfo", || unsafe {
        info::write(info::platform(platform, property), size, out)
    })
}

/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetPlatformInfoSize(
    platform: *mut c_void,
    property: u32,
    out: *mut usize,
) -> OlResult {
    // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
    answer("olGetPlatformInfoSize", || unsafe {
        info::write_size(info::platform(platform, property), out)
    })
}

/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetDeviceCount(platform: *mut c_void, out: *mut u32) -> OlResult {
    answer("olGetDeviceCount", || {
        state::platform(platform)?;
        // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
        unsafe {
            give(
                out,
                "NumDevices",
                || Ok(state::state().devices.len() as u32),
            )
        }
    })
}

/// # Safety
/// `out` is NULL or holds `entries` writable handles.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetDevice(
    platform: *mut c_void,
    entries: u32,
    out: *mut *mut c_void,
) -> OlResult {
    answer("olGetDevice", || {
        state::platform(platform)?;
        let all: Vec<_> = state::state().devices.iter().map(handle_of).collect();
        // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
        unsafe { fill(entries, out, &all) }
    })
}

/// # Safety
/// `out` is NULL or holds `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetDeviceInfo(
    device: *mut c_void,
    property: u32,
    size: usize,
    out: *mut c_void,
) -> OlResult {
    // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
    answer("olGetDeviceInfo", || unsafe {
        info::write(info::device(device, property), size, out)
    })
}

/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetDeviceInfoSize(
    device: *mut c_void,
    property: u32,
    out: *mut usize,
) -> OlResult {
    // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
    answer("olGetDeviceInfoSize", || unsafe {
        info::write_size(info::device(device, property), out)
    })
}

/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olGetHostDevice(out: *mut *mut c_void) -> OlResult {
    // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
    answer("olGetHostDevice", || unsafe {
        give(out, "Device", || Ok(handle_of(&HOST_DEVICE)))
    })
}

/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olMemAlloc(
    device: *mut c_void,
    kind: u32,
    size: usize,
    out: *mut *mut c_void,
) -> OlResult {
    answer("olMemAlloc", || {
        let device = state::accelerator(device, "has no allocations: allocate on a device")?;
        // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
        unsafe {
            give(out, "AllocationOut", || {
                memory::allocate(device, kind, size).map(|at| at as *mut c_void)
            })
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olMemFree(device: *mut c_void, kind: u32, address: *mut c_void) -> OlResult {
    answer("olMemFree", || {
        let device = state::accelerator(device, "has no allocations")?;
        if address.is_null() {
            return Err(fail(OL_ERRC_INVALID_NULL_POINTER, "Address is NULL"));
        }
        memory::free(device, kind, address as usize)
    })
}

/// # Safety
/// `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olCreateQueue(device: *mut c_void, out: *mut *mut c_void) -> OlResult {
    answer("olCreateQueue", || {
        let device = state::accelerator(device, "has no queues")?;
        // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
        unsafe { give(out, "Queue", || publish(Arc::new(Queue::create(device)?))) }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olRetainQueue(queue: *mut c_void) -> OlResult {
    answer("olRetainQueue", || {
        retain::<Queue>(queue, OL_ERRC_INVALID_QUEUE)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olReleaseQueue(queue: *mut c_void) -> OlResult {
    answer("olReleaseQueue", || {
        release::<Queue>(queue, OL_ERRC_INVALID_QUEUE)
    })
}

/// Waits for every command of the queue.
#[unsafe(no_mangle)]
pub extern "C" fn olWaitQueue(queue: *mut c_void) -> OlResult {
    answer("olWaitQueue", || Queue::of(queue)?.wait())
}

#[unsafe(no_mangle)]
pub extern "C" fn olRetainEvent(event: *mut c_void) -> OlResult {
    answer("olRetainEvent", || {
        retain::<Event>(event, OL_ERRC_INVALID_EVENT)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olReleaseEvent(event: *mut c_void) -> OlResult {
    answer("olReleaseEvent", || {
        release::<Event>(event, OL_ERRC_INVALID_EVENT)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olWaitEvent(event: *mut c_void) -> OlResult {
    answer("olWaitEvent", || Event::of(event)?.wait())
}

/// # Safety
/// `target` and `source` hold `size` bytes as their devices say; `event` is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olEnqueueMemcpy(
    queue: *mut c_void,
    target: *mut c_void,
    target_device: *mut c_void,
    source: *mut c_void,
    source_device: *mut c_void,
    size: usize,
    event: *mut *mut c_void,
) -> OlResult {
    answer("olEnqueueMemcpy", || {
        let queue = Queue::of(queue)?;
        let done = enqueue::memcpy(&queue, target, target_device, source, source_device, size)?;
        // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
        unsafe { record(done, event) }?;
        Ok(())
    })
}

/// # Safety
/// `data` holds `data_size` readable bytes; `sizes` is NULL or readable; `event` is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olEnqueueKernelLaunch(
    queue: *mut c_void,
    kernel: *mut c_void,
    data: *const c_void,
    data_size: usize,
    sizes: *const LaunchSizeArgs,
    event: *mut *mut c_void,
) -> OlResult {
    answer("olEnqueueKernelLaunch", || {
        let queue = Queue::of(queue)?;
        let kernel = Kernel::of(kernel)?;
        // SAFETY: sizes is NULL or an ol_kernel_launch_size_args_t.
        let sizes = unsafe { sizes.as_ref() }
            .ok_or_else(|| fail(OL_ERRC_INVALID_NULL_POINTER, "LaunchSizeArgs is NULL"))?;
        let data: &[u8] = if data_size == 0 {
            &[]
        } else if data.is_null() {
            return Err(fail(OL_ERRC_INVALID_NULL_POINTER, "ArgumentsData is NULL"));
        } else {
            // SAFETY: the program passes data_size bytes at data.
            unsafe { std::slice::from_raw_parts(data.cast(), data_size) }
        };
        let done = enqueue::launch(&queue, &kernel, data, sizes)?;
        // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
        unsafe { record(done, event) }?;
        Ok(())
    })
}

/// # Safety
/// `data` holds `size` readable bytes; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olCreateProgram(
    device: *mut c_void,
    data: *mut c_void,
    size: usize,
    out: *mut *mut c_void,
) -> OlResult {
    answer("olCreateProgram", || {
        let device = state::accelerator(device, "runs no programs")?;
        if data.is_null() {
            return Err(fail(OL_ERRC_INVALID_NULL_POINTER, "ProgData is NULL"));
        }
        if size == 0 {
            return Err(fail(OL_ERRC_INVALID_SIZE, "ProgDataSize is 0"));
        }
        // SAFETY: the program passes size bytes at data.
        let image = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
        // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
        unsafe {
            give(out, "Program", || {
                publish(Arc::new(Program::create(device, image)?))
            })
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olRetainProgram(program: *mut c_void) -> OlResult {
    answer("olRetainProgram", || {
        retain::<Program>(program, OL_ERRC_INVALID_ARGUMENT)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olReleaseProgram(program: *mut c_void) -> OlResult {
    answer("olReleaseProgram", || {
        release::<Program>(program, OL_ERRC_INVALID_ARGUMENT)
    })
}

/// # Safety
/// `name` is NULL or NUL-terminated; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn olCreateKernel(
    program: *mut c_void,
    name: *const c_char,
    out: *mut *mut c_void,
) -> OlResult {
    answer("olCreateKernel", || {
        let program = Program::of(program)?;
        if name.is_null() {
            return Err(fail(OL_ERRC_INVALID_NULL_POINTER, "KernelName is NULL"));
        }
        // SAFETY: a non-NULL name is NUL-terminated.
        let name = unsafe { CStr::from_ptr(name) }
            .to_str()
            .map_err(|_| fail(OL_ERRC_INVALID_KERNEL_NAME, "KernelName is not UTF-8"))?;
        // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
        unsafe { give(out, "Kernel", || publish(Arc::new(program.kernel(name)?))) }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olRetainKernel(kernel: *mut c_void) -> OlResult {
    answer("olRetainKernel", || {
        retain::<Kernel>(kernel, OL_ERRC_INVALID_ARGUMENT)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn olReleaseKernel(kernel: *mut c_void) -> OlResult {
    answer("olReleaseKernel", || {
        release::<Kernel>(kernel, OL_ERRC_INVALID_ARGUMENT)
    })
}

/// The `...WithCodeLoc` variant of each function: the same call, with the program's code
/// location in its error's details.
macro_rules! with_code_location {
    ($($variant:ident => $call:ident($($arg:ident: $ty:ty),*);)*) => {$(
        /// # Safety
        /// As the plain function's; `location` is NULL or an `ol_code_location_t`.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $variant($($arg: $ty,)* location: *const CodeLocation) -> OlResult {
            #[allow(unused_unsafe)]
            // SAFETY: the caller's pointers are as this entry point's `# Safety` states.
            unsafe { at_location(location, || $call($($arg),*)) }
        }
    )*};
}

with_code_location! {
    olInitWithCodeLoc => olInit();
    olShutDownWithCodeLoc => olShutDown();
    olGetPlatformWithCodeLoc => olGetPlatform(entries: u32, out: *mut *mut c_void);
    olGetPlatformCountWithCodeLoc => olGetPlatformCount(out: *mut u32);
    olGetPlatformInfoWithCodeLoc => olGetPlatformInfo(platform: *mut c_void, property: u32, size: usize, out: *mut c_void);
    olGetPlatformInfoSizeWithCodeLoc => olGetPlatformInfoSize(platform: *mut c_void, property: u32, out: *mut usize);
    olGetDeviceCountWithCodeLoc => olGetDeviceCount(platform: *mut c_void, out: *mut u32);
    olGetDeviceWithCodeLoc => olGetDevice(platform: *mut c_void, entries: u32, out: *mut *mut c_void);
    olGetDeviceInfoWithCodeLoc => olGetDeviceInfo(device: *mut c_void, property: u32, size: usize, out: *mut c_void);
    olGetDeviceInfoSizeWithCodeLoc => olGetDeviceInfoSize(device: *mut c_void, property: u32, out: *mut usize);
    olGetHostDeviceWithCodeLoc => olGetHostDevice(out: *mut *mut c_void);
    olMemAllocWithCodeLoc => olMemAlloc(device: *mut c_void, kind: u32, size: usize, out: *mut *mut c_void);
    olMemFreeWithCodeLoc => olMemFree(device: *mut c_void, kind: u32, address: *mut c_void);
    olCreateQueueWithCodeLoc => olCreateQueue(device: *mut c_void, out: *mut *mut c_void);
    olRetainQueueWithCodeLoc => olRetainQueue(queue: *mut c_void);
    olReleaseQueueWithCodeLoc => olReleaseQueue(queue: *mut c_void);
    olWaitQueueWithCodeLoc => olWaitQueue(queue: *mut c_void);
    olRetainEventWithCodeLoc => olRetainEvent(event: *mut c_void);
    olReleaseEventWithCodeLoc => olReleaseEvent(event: *mut c_void);
    olWaitEventWithCodeLoc => olWaitEvent(event: *mut c_void);
    olEnqueueMemcpyWithCodeLoc => olEnqueueMemcpy(queue: *mut c_void, target: *mut c_void, target_device: *mut c_void, source: *mut c_void, source_device: *mut c_void, size: usize, event: *mut *mut c_void);
    olEnqueueKernelLaunchWithCodeLoc => olEnqueueKernelLaunch(queue: *mut c_void, kernel: *mut c_void, data: *const c_void, data_size: usize, sizes: *const LaunchSizeArgs, event: *mut *mut c_void);
    olCreateProgramWithCodeLoc => olCreateProgram(device: *mut c_void, data: *mut c_void, size: usize, out: *mut *mut c_void);
    olRetainProgramWithCodeLoc => olRetainProgram(program: *mut c_void);
    olReleaseProgramWithCodeLoc => olReleaseProgram(program: *mut c_void);
    olCreateKernelWithCodeLoc => olCreateKernel(program: *mut c_void, name: *const c_char, out: *mut *mut c_void);
    olRetainKernelWithCodeLoc => olRetainKernel(kernel: *mut c_void);
    olReleaseKernelWithCodeLoc => olReleaseKernel(kernel: *mut c_void);
}

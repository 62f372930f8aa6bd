//! The entry points and the ICD dispatch table that lists them, one slot per OpenCL entry
//! point in `CL/cl_icd.h`'s order. The loader calls through the table without checking, so
//! no slot is NULL: an entry point this platform does not implement answers
//! `CL_INVALID_OPERATION` (or NULL with that code in `errcode_ret`) and logs its name.
//!
//! The table points at this module's private functions, never at the exported symbols: an
//! application that links `libOpenCL.so` has the loader's functions of the same names first
//! in the symbol search order, and a table entry bound to those would call back into the
//! loader forever.

use std::ffi::{CStr, c_char, c_void};

use crate::cl::*;
use crate::context::Context;
use crate::device::Device;
use crate::error::{ClResult, status, write_if};
use crate::event::Event;
use crate::memory::Buffer;
use crate::object::{Dispatch, SLOTS, install};
use crate::platform::{self, Family, Platform};
use crate::program::{Kernel, Program};
use crate::queue::Queue;
use crate::state::{State, state};
use crate::{context, event, memory, object, program, queue, rect, usm};

/// What an entry point this platform does not implement answers, after saying which one.
fn unsupported(name: &'static CStr) -> cl_int {
    crate::log::unsupported(name);
    CL_INVALID_OPERATION
}

/// One slot: the implementation, or a stub of the entry point's shape. The stubs take fewer
/// parameters than the entry point's callers pass, which the C calling convention allows
/// (the caller owns its arguments); an object-returning one takes exactly up to
/// `errcode_ret`, its last parameter, which it sets.
macro_rules! slot {
    ($name:ident, = $implemented:path) => {
        $implemented as *const c_void
    };
    ($name:ident, status) => {{
        extern "C" fn stub() -> cl_int {
            unsupported(c_name!($name))
        }
        stub as *const c_void
    }};
    ($name:ident, null) => {{
        extern "C" fn stub() -> *mut c_void {
            unsupported(c_name!($name));
            std::ptr::null_mut()
        }
        stub as *const c_void
    }};
    ($name:ident, nothing) => {{
        extern "C" fn stub() {
            unsupported(c_name!($name));
        }
        stub as *const c_void
    }};
    ($name:ident, object($($arg:ident),*)) => {{
        extern "C" fn stub($(_: $arg,)* errcode_ret: *mut cl_int) -> *mut c_void {
            let code = unsupported(c_name!($name));
            if !errcode_ret.is_null() {
                // SAFETY: a non-NULL errcode_ret points to a cl_int the caller owns.
                unsafe { errcode_ret.write(code) };
            }
            std::ptr::null_mut()
        }
        stub as *const c_void
    }};
}

macro_rules! c_name {
    ($name:ident) => {
        match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
            Ok(name) => name,
            Err(_) => unreachable!(),
        }
    };
}

/// Parameters before `errcode_ret`, each passed in an integer register (no entry point that
/// returns an object takes a float or a struct by value).
type P = usize;

macro_rules! dispatch_table {
    ($($index:literal $name:ident: [$($shape:tt)*];)*) => {
        /// The entry points' names, in slot order; a test checks them against the system's
        /// `CL/cl_icd.h`.
        pub const SLOT_NAMES: [&str; SLOTS] = [$(stringify!($name)),*];
        const _: () = {
            let mut at = 0;
            $(assert!($index == at, "slots are listed in order"); at += 1;)*
            let _ = at;
        };
        /// The table every object points to.
        pub static DISPATCH: Dispatch = Dispatch([$(slot!($name, $($shape)*)),*]);
    };
}

dispatch_table! {
    0 clGetPlatformIDs: [= get_platform_ids];
    1 clGetPlatformInfo: [= get_platform_info];
    2 clGetDeviceIDs: [= get_device_ids];
    3 clGetDeviceInfo: [= get_device_info];
    4 clCreateContext: [= context::create_context];
    5 clCreateContextFromType: [= context::create_context_from_type];
    6 clRetainContext: [= object::retain_as::<Context, CL_INVALID_CONTEXT>];
    7 clReleaseContext: [= object::release_as::<Context, CL_INVALID_CONTEXT>];
    8 clGetContextInfo: [= context::get_context_info];
    9 clCreateCommandQueue: [= queue::create_command_queue];
    10 clRetainCommandQueue: [= object::retain_as::<Queue, CL_INVALID_COMMAND_QUEUE>];
    11 clReleaseCommandQueue: [= object::release_as::<Queue, CL_INVALID_COMMAND_QUEUE>];
    12 clGetCommandQueueInfo: [= queue::get_command_queue_info];
    13 clSetCommandQueueProperty: [status];
    14 clCreateBuffer: [= memory::create_buffer];
    15 clCreateImage2D: [object(P, P, P, P, P, P, P)];
    16 clCreateImage3D: [object(P, P, P, P, P, P, P, P, P)];
    17 clRetainMemObject: [= object::retain_as::<Buffer, CL_INVALID_MEM_OBJECT>];
    18 clReleaseMemObject: [= object::release_as::<Buffer, CL_INVALID_MEM_OBJECT>];
    19 clGetSupportedImageFormats: [status];
    20 clGetMemObjectInfo: [= memory::get_mem_object_info];
    21 clGetImageInfo: [status];
    22 clCreateSampler: [object(P, P, P, P)];
    23 clRetainSampler: [status];
    24 clReleaseSampler: [status];
    25 clGetSamplerInfo: [status];
    26 clCreateProgramWithSource: [= program::create_program_with_source];
    27 clCreateProgramWithBinary: [= program::create_program_with_binary];
    28 clRetainProgram: [= object::retain_as::<Program, CL_INVALID_PROGRAM>];
    29 clReleaseProgram: [= object::release_as::<Program, CL_INVALID_PROGRAM>];
    30 clBuildProgram: [= program::build_program];
    31 clUnloadCompiler: [= unload_compiler];
    32 clGetProgramInfo: [= program::get_program_info];
    33 clGetProgramBuildInfo: [= program::get_program_build_info];
    34 clCreateKernel: [= program::create_kernel];
    35 clCreateKernelsInProgram: [= program::create_kernels_in_program];
    36 clRetainKernel: [= object::retain_as::<Kernel, CL_INVALID_KERNEL>];
    37 clReleaseKernel: [= object::release_as::<Kernel, CL_INVALID_KERNEL>];
    38 clSetKernelArg: [= program::set_kernel_arg];
    39 clGetKernelInfo: [= program::get_kernel_info];
    40 clGetKernelWorkGroupInfo: [= program::get_kernel_work_group_info];
    41 clWaitForEvents: [= event::wait_for_events];
    42 clGetEventInfo: [= event::get_event_info];
    43 clRetainEvent: [= object::retain_as::<Event, CL_INVALID_EVENT>];
    44 clReleaseEvent: [= object::release_as::<Event, CL_INVALID_EVENT>];
    45 clGetEventProfilingInfo: [= event::get_event_profiling_info];
    46 clFlush: [= queue::flush];
    47 clFinish: [= queue::finish];
    48 clEnqueueReadBuffer: [= memory::enqueue_read_buffer];
    49 clEnqueueWriteBuffer: [= memory::enqueue_write_buffer];
    50 clEnqueueCopyBuffer: [= memory::enqueue_copy_buffer];
    51 clEnqueueReadImage: [status];
    52 clEnqueueWriteImage: [status];
    53 clEnqueueCopyImage: [status];
    54 clEnqueueCopyImageToBuffer: [status];
    55 clEnqueueCopyBufferToImage: [status];
    56 clEnqueueMapBuffer: [= memory::enqueue_map_buffer];
    57 clEnqueueMapImage: [object(P, P, P, P, P, P, P, P, P, P, P)];
    58 clEnqueueUnmapMemObject: [= memory::enqueue_unmap_mem_object];
    59 clEnqueueNDRangeKernel: [= program::enqueue_nd_range_kernel];
    60 clEnqueueTask: [= program::enqueue_task];
    61 clEnqueueNativeKernel: [status];
    62 clEnqueueMarker: [= program::enqueue_marker];
    63 clEnqueueWaitForEvents: [= program::enqueue_wait_for_events];
    64 clEnqueueBarrier: [= program::enqueue_barrier];
    65 clGetExtensionFunctionAddress: [= get_extension_function_address];
    66 clCreateFromGLBuffer: [object(P, P, P)];
    67 clCreateFromGLTexture2D: [object(P, P, P, P, P)];
    68 clCreateFromGLTexture3D: [object(P, P, P, P, P)];
    69 clCreateFromGLRenderbuffer: [object(P, P, P)];
    70 clGetGLObjectInfo: [status];
    71 clGetGLTextureInfo: [status];
    72 clEnqueueAcquireGLObjects: [status];
    73 clEnqueueReleaseGLObjects: [status];
    74 clGetGLContextInfoKHR: [status];
    75 clGetDeviceIDsFromD3D10KHR: [status];
    76 clCreateFromD3D10BufferKHR: [object(P, P, P)];
    77 clCreateFromD3D10Texture2DKHR: [object(P, P, P, P)];
    78 clCreateFromD3D10Texture3DKHR: [object(P, P, P, P)];
    79 clEnqueueAcquireD3D10ObjectsKHR: [status];
    80 clEnqueueReleaseD3D10ObjectsKHR: [status];
    81 clSetEventCallback: [= event::set_event_callback];
    82 clCreateSubBuffer: [= memory::create_sub_buffer];
    83 clSetMemObjectDestructorCallback: [status];
    84 clCreateUserEvent: [= event::create_user_event];
    85 clSetUserEventStatus: [= event::set_user_event_status];
    86 clEnqueueReadBufferRect: [= rect::enqueue_read_buffer_rect];
    87 clEnqueueWriteBufferRect: [= rect::enqueue_write_buffer_rect];
    88 clEnqueueCopyBufferRect: [= rect::enqueue_copy_buffer_rect];
    89 clCreateSubDevicesEXT: [status];
    90 clRetainDeviceEXT: [status];
    91 clReleaseDeviceEXT: [status];
    92 clCreateEventFromGLsyncKHR: [object(P, P)];
    93 clCreateSubDevices: [status];
    94 clRetainDevice: [= retain_device];
    95 clReleaseDevice: [= release_device];
    96 clCreateImage: [object(P, P, P, P, P)];
    97 clCreateProgramWithBuiltInKernels: [object(P, P, P, P)];
    98 clCompileProgram: [= program::compile_program];
    99 clLinkProgram: [= program::link_program];
    100 clUnloadPlatformCompiler: [= unload_platform_compiler];
    101 clGetKernelArgInfo: [status];
    102 clEnqueueFillBuffer: [= memory::enqueue_fill_buffer];
    103 clEnqueueFillImage: [status];
    104 clEnqueueMigrateMemObjects: [= memory::enqueue_migrate_mem_objects];
    105 clEnqueueMarkerWithWaitList: [= program::enqueue_marker_with_wait_list];
    106 clEnqueueBarrierWithWaitList: [= program::enqueue_barrier_with_wait_list];
    107 clGetExtensionFunctionAddressForPlatform: [= get_extension_function_address_for_platform];
    108 clCreateFromGLTexture: [object(P, P, P, P, P)];
    109 clGetDeviceIDsFromD3D11KHR: [status];
    110 clCreateFromD3D11BufferKHR: [object(P, P, P)];
    111 clCreateFromD3D11Texture2DKHR: [object(P, P, P, P)];
    112 clCreateFromD3D11Texture3DKHR: [object(P, P, P, P)];
    113 clCreateFromDX9MediaSurfaceKHR: [object(P, P, P, P, P)];
    114 clEnqueueAcquireD3D11ObjectsKHR: [status];
    115 clEnqueueReleaseD3D11ObjectsKHR: [status];
    116 clGetDeviceIDsFromDX9MediaAdapterKHR: [status];
    117 clEnqueueAcquireDX9MediaSurfacesKHR: [status];
    118 clEnqueueReleaseDX9MediaSurfacesKHR: [status];
    119 clCreateFromEGLImageKHR: [object(P, P, P, P, P)];
    120 clEnqueueAcquireEGLObjectsKHR: [status];
    121 clEnqueueReleaseEGLObjectsKHR: [status];
    122 clCreateEventFromEGLSyncKHR: [object(P, P, P)];
    123 clCreateCommandQueueWithProperties: [= queue::create_command_queue_with_properties];
    124 clCreatePipe: [object(P, P, P, P, P)];
    125 clGetPipeInfo: [status];
    126 clSVMAlloc: [null];
    127 clSVMFree: [nothing];
    128 clEnqueueSVMFree: [status];
    129 clEnqueueSVMMemcpy: [status];
    130 clEnqueueSVMMemFill: [status];
    131 clEnqueueSVMMap: [status];
    132 clEnqueueSVMUnmap: [status];
    133 clCreateSamplerWithProperties: [object(P, P)];
    134 clSetKernelArgSVMPointer: [status];
    135 clSetKernelExecInfo: [= program::set_kernel_exec_info];
    136 clGetKernelSubGroupInfoKHR: [= program::get_kernel_sub_group_info];
    137 clCloneKernel: [object(P)];
    138 clCreateProgramWithIL: [= program::create_program_with_il];
    139 clEnqueueSVMMigrateMem: [status];
    140 clGetDeviceAndHostTimer: [status];
    141 clGetHostTimer: [status];
    142 clGetKernelSubGroupInfo: [= program::get_kernel_sub_group_info];
    143 clSetDefaultDeviceCommandQueue: [status];
    144 clSetProgramReleaseCallback: [status];
    145 clSetProgramSpecializationConstant: [= program::set_program_specialization_constant];
    146 clCreateBufferWithProperties: [object(P, P, P, P, P)];
    147 clCreateImageWithProperties: [object(P, P, P, P, P, P)];
    148 clSetContextDestructorCallback: [status];
    149 clGetKernelSuggestedLocalWorkSize: [status];
}

/// The host and the devices, started by the first call that needs them.
fn started() -> &'static State {
    install(&DISPATCH);
    state()
}

/// `clGetPlatformIDs` (and the loaders' `clIcdGetPlatformIDsKHR`): the platforms that have
/// devices, in [`Family::ALL`]'s order (`accelhost` always, even without devices, so that
/// the user sees it and its message on why).
extern "C" fn get_platform_ids(
    num_entries: cl_uint,
    platforms: *mut *mut Platform,
    num_platforms: *mut cl_uint,
) -> cl_int {
    status("clGetPlatformIDs", || {
        if (num_entries == 0 && !platforms.is_null())
            || (platforms.is_null() && num_platforms.is_null())
        {
            return Err(CL_INVALID_VALUE);
        }
        let state = started();
        let listed: Vec<*mut Platform> = Family::ALL
            .into_iter()
            .filter(|family| state.lists(*family))
            .map(platform::handle)
            .collect();
        if !platforms.is_null() {
            for (at, listed) in listed.iter().take(num_entries as usize).enumerate() {
                // SAFETY: the caller's array holds num_entries entries.
                unsafe { platforms.add(at).write(*listed) };
            }
        }
        // SAFETY: a non-NULL num_platforms points to a cl_uint.
        unsafe { write_if(num_platforms, listed.len() as cl_uint) };
        Ok(())
    })
}

/// The platform `platform` names, NULL standing for the first listed (the loaders resolve a
/// NULL platform before they call, but a program linked to this library directly may pass
/// it).
fn resolve(platform: *const Platform) -> Option<&'static Platform> {
    if platform.is_null() {
        return platform::of(platform::handle(started().first_listed()));
    }
    platform::of(platform)
}

/// The listed platform `platform` names (NULL: the first), or `CL_INVALID_PLATFORM`.
fn listed(platform: *const Platform) -> ClResult<&'static Platform> {
    let platform = resolve(platform).ok_or(CL_INVALID_PLATFORM)?;
    if started().lists(platform.family()) {
        Ok(platform)
    } else {
        Err(CL_INVALID_PLATFORM)
    }
}

extern "C" fn get_platform_info(
    platform: *const Platform,
    param: cl_platform_info,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    install(&DISPATCH);
    // Not `listed`: a platform's name is asked before anything else, and needs no host
    // (but to resolve NULL).
    let Some(platform) = resolve(platform) else {
        return CL_INVALID_PLATFORM;
    };
    match platform.value(param) {
        // SAFETY: the caller's out and size_ret follow clGetPlatformInfo's contract.
        Some(value) => unsafe { value.answer(size, out, size_ret) },
        None => CL_INVALID_VALUE,
    }
}

/// `clUnloadPlatformCompiler`: a hint that the program builds nothing more for now. There is
/// no compiler to unload (programs come as device images), so the hint is taken at once.
extern "C" fn unload_platform_compiler(platform: *const Platform) -> cl_int {
    status("clUnloadPlatformCompiler", || {
        // NULL is not a platform for this call (OpenCL 1.2).
        if platform.is_null() {
            return Err(CL_INVALID_PLATFORM);
        }
        listed(platform).map(drop)
    })
}

/// `clUnloadCompiler` (OpenCL 1.1, deprecated): the same hint, for every platform.
extern "C" fn unload_compiler() -> cl_int {
    CL_SUCCESS
}

/// The functions reached by name rather than through the table: the loaders' enumerator, and
/// the extension functions of unified shared memory.
fn function(name: *const c_char) -> *mut c_void {
    if name.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a non-NULL name is a NUL-terminated string, as the entry points require.
    let name = unsafe { CStr::from_ptr(name) };
    match name.to_bytes() {
        b"clIcdGetPlatformIDsKHR" => get_platform_ids as *mut c_void,
        b"clGetPlatformInfo" => get_platform_info as *mut c_void,
        b"clHostMemAllocINTEL" => usm::host_mem_alloc as *mut c_void,
        b"clDeviceMemAllocINTEL" => usm::device_mem_alloc as *mut c_void,
        b"clSharedMemAllocINTEL" => usm::shared_mem_alloc as *mut c_void,
        b"clMemFreeINTEL" | b"clMemBlockingFreeINTEL" => usm::mem_free as *mut c_void,
        b"clGetMemAllocInfoINTEL" => usm::get_mem_alloc_info as *mut c_void,
        b"clSetKernelArgMemPointerINTEL" => program::set_kernel_arg_mem_pointer as *mut c_void,
        b"clEnqueueMemcpyINTEL" => usm::enqueue_memcpy as *mut c_void,
        b"clEnqueueMemFillINTEL" => usm::enqueue_mem_fill as *mut c_void,
        b"clEnqueueMemsetINTEL" => usm::enqueue_memset as *mut c_void,
        b"clEnqueueMigrateMemINTEL" => usm::enqueue_migrate_mem as *mut c_void,
        b"clEnqueueMemAdviseINTEL" => usm::enqueue_mem_advise as *mut c_void,
        _ => std::ptr::null_mut(),
    }
}

extern "C" fn get_extension_function_address(name: *const c_char) -> *mut c_void {
    function(name)
}

extern "C" fn get_extension_function_address_for_platform(
    platform: *const Platform,
    name: *const c_char,
) -> *mut c_void {
    install(&DISPATCH);
    if resolve(platform).is_none() {
        return std::ptr::null_mut();
    }
    function(name)
}

/// `clIcdGetPlatformIDsKHR`: the loaders' enumerator.
#[unsafe(no_mangle)]
pub extern "C" fn clIcdGetPlatformIDsKHR(
    num_entries: cl_uint,
    platforms: *mut *mut Platform,
    num_platforms: *mut cl_uint,
) -> cl_int {
    get_platform_ids(num_entries, platforms, num_platforms)
}

/// `clGetPlatformInfo`, as a symbol for `ocl-icd`.
#[unsafe(no_mangle)]
pub extern "C" fn clGetPlatformInfo(
    platform: *const Platform,
    param: cl_platform_info,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    get_platform_info(platform, param, size, out, size_ret)
}

/// `clGetExtensionFunctionAddress`: the symbol both loaders require of an ICD.
#[unsafe(no_mangle)]
pub extern "C" fn clGetExtensionFunctionAddress(name: *const c_char) -> *mut c_void {
    get_extension_function_address(name)
}

/// The device `device` names, if it is one of ours (never dereferenced otherwise).
fn ours(device: *const Device) -> Option<&'static Device> {
    started().devices.iter().find(|d| std::ptr::eq(*d, device))
}

extern "C" fn get_device_ids(
    platform: *const Platform,
    device_type: cl_device_type,
    num_entries: cl_uint,
    devices: *mut *mut Device,
    num_devices: *mut cl_uint,
) -> cl_int {
    install(&DISPATCH);
    let platform = match listed(platform) {
        Ok(platform) => platform,
        Err(code) => return code,
    };
    if (num_entries == 0 && !devices.is_null()) || (devices.is_null() && num_devices.is_null()) {
        return CL_INVALID_VALUE;
    }
    let of_type = crate::device::of_type(&started().devices, platform.family(), device_type);
    let listed: Vec<*mut Device> = match of_type {
        Ok(listed) => listed.into_iter().map(Device::id).collect(),
        Err(code) => return code,
    };
    if !num_devices.is_null() {
        // SAFETY: a non-NULL num_devices points to a cl_uint.
        unsafe { num_devices.write(listed.len() as cl_uint) };
    }
    if listed.is_empty() {
        return CL_DEVICE_NOT_FOUND;
    }
    if !devices.is_null() {
        for (at, device) in listed.iter().take(num_entries as usize).enumerate() {
            // SAFETY: the caller's array holds num_entries entries.
            unsafe { devices.add(at).write(*device) };
        }
    }
    CL_SUCCESS
}

extern "C" fn get_device_info(
    device: *const Device,
    param: cl_device_info,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    let Some(device) = ours(device) else {
        return CL_INVALID_DEVICE;
    };
    // Asked of the manager only for CL_DEVICE_AVAILABLE: listing the plugins gathers every
    // plugin's figures, and clinfo asks about a hundred other things per device.
    let available = || {
        started().host.as_ref().is_some_and(|host| {
            host.plugins().iter().any(|p| {
                p.name == device.token().plugin() && p.status == accelhost::PluginStatus::Running
            })
        })
    };
    match device.value(param, available) {
        // SAFETY: the caller's out and size_ret follow clGetDeviceInfo's contract.
        Some(value) => unsafe { value.answer(size, out, size_ret) },
        None => CL_INVALID_VALUE,
    }
}

/// Root devices are not counted (OpenCL 1.2): retaining one only checks it.
extern "C" fn retain_device(device: *const Device) -> cl_int {
    if ours(device).is_some() {
        CL_SUCCESS
    } else {
        CL_INVALID_DEVICE
    }
}

extern "C" fn release_device(device: *const Device) -> cl_int {
    retain_device(device)
}

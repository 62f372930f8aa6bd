//! Programs from device images (an xclbin, checked by the library before any plugin sees
//! it), their kernels by name with their arguments, and launches. There is no compiler:
//! programs from source or IL answer `CL_COMPILER_NOT_AVAILABLE`, as FPGA runtimes do.

use std::ffi::{CStr, c_char, c_void};
use std::sync::{Arc, Mutex};

use accelhost::xclbin::{ArgKind, KernelMeta};
use accelhost::{Arg, ErrorCode};
use accelhost_door::compute_units;

use crate::cl::*;
use crate::command::Enqueue;
use crate::context::{Context, context};
use crate::device::Device;
use crate::error::{ClResult, list, object, refuse, report, status, write_if};
use crate::event::Progress;
use crate::info::{Value, give};
use crate::memory::{Buffer, buffer};
use crate::object::{Held, get, publish, references};
use crate::queue::Queue;

/// An OpenCL program: an image loaded on one device of the context.
pub struct Program {
    context: Held<Context>,
    device: usize,
    program: accelhost::Program,
    binary: Vec<u8>,
    /// The kernels the image describes (an xclbin's EMBEDDED_METADATA), when it does.
    kernels: Vec<KernelMeta>,
    /// The image's compute units, as IP_LAYOUT names them (`vadd:vadd_1`).
    compute_units: Vec<String>,
}

impl crate::object::Object for Program {
    const KIND: &'static str = "cl_program";
}

/// A kernel argument as set.
#[derive(Clone)]
enum ArgValue {
    Buffer(Arc<Buffer>),
    /// A unified-shared-memory pointer: its allocation, and where in it.
    Usm(Arc<crate::usm::Allocation>, usize),
    Bytes(Vec<u8>),
}

/// An OpenCL kernel.
pub struct Kernel {
    program: Held<Program>,
    kernel: accelhost::Kernel,
    /// Its arguments, when the image describes them.
    described: Option<Vec<accelhost::xclbin::KernelArg>>,
    args: Mutex<Vec<Option<ArgValue>>>,
}

impl crate::object::Object for Kernel {
    const KIND: &'static str = "cl_kernel";
}

/// The most arguments a kernel the image does not describe may take.
const MAX_UNDESCRIBED_ARGS: usize = 64;

pub(crate) extern "C" fn create_program_with_source(
    _context: *mut c_void,
    _count: cl_uint,
    _strings: *const *const c_char,
    _lengths: *const usize,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    object("clCreateProgramWithSource", errcode_ret, || {
        Err(refuse(
            "clCreateProgramWithSource",
            CL_COMPILER_NOT_AVAILABLE,
            "the devices have no compiler: create programs from device images \
             (clCreateProgramWithBinary with an xclbin)",
        ))
    })
}

pub(crate) extern "C" fn create_program_with_il(
    _context: *mut c_void,
    _il: *const c_void,
    _length: usize,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    object("clCreateProgramWithIL", errcode_ret, || {
        Err(refuse(
            "clCreateProgramWithIL",
            CL_COMPILER_NOT_AVAILABLE,
            "the devices have no compiler for IL: create programs from device images",
        ))
    })
}

pub(crate) extern "C" fn create_program_with_binary(
    context_handle: *mut c_void,
    num_devices: cl_uint,
    devices: *const *mut Device,
    lengths: *const usize,
    binaries: *const *const u8,
    binary_status: *mut cl_int,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clCreateProgramWithBinary";
    object(CALL, errcode_ret, || {
        let context = context(context_handle)?;
        // SAFETY: devices, lengths and binaries hold num_devices entries.
        let (devices, lengths, binaries) = unsafe {
            (
                list(num_devices, devices, CL_INVALID_VALUE)?,
                list(num_devices, lengths, CL_INVALID_VALUE)?,
                list(num_devices, binaries, CL_INVALID_VALUE)?,
            )
        };
        if devices.len() != 1 {
            return Err(refuse(
                CALL,
                CL_INVALID_VALUE,
                "a program is made for one device at a time",
            ));
        }
        let device = context.index_of(devices[0]).ok_or(CL_INVALID_DEVICE)?;
        if binaries[0].is_null() || lengths[0] == 0 {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the application passes lengths[0] bytes at binaries[0].
        let binary = unsafe { std::slice::from_raw_parts(binaries[0], lengths[0]) }.to_vec();
        let made = context.handle(device).create_program(&binary);
        // SAFETY: binary_status is NULL or holds num_devices entries.
        unsafe {
            write_if(
                binary_status,
                if made.is_ok() {
                    CL_SUCCESS
                } else {
                    CL_INVALID_BINARY
                },
            )
        };
        let program = made.map_err(|err| match err.code() {
            ErrorCode::InvalidArgument => {
                report(CALL, &err);
                CL_INVALID_BINARY
            }
            _ => report(CALL, &err),
        })?;
        let (kernels, compute_units) = match accelhost::xclbin::parse(&binary) {
            Ok(image) => {
                let units = image
                    .compute_units()
                    .into_iter()
                    .map(|ip| ip.name.clone())
                    .collect();
                (image.kernels, units)
            }
            Err(_) => (Vec::new(), Vec::new()),
        };
        publish(Arc::new(Program {
            context: Held::new(context_handle, context),
            device,
            program,
            binary,
            kernels,
            compute_units,
        }))
    })
}

pub(crate) extern "C" fn build_program(
    program: *mut c_void,
    _num_devices: cl_uint,
    _devices: *const *mut Device,
    _options: *const c_char,
    notify: Option<extern "C" fn(*mut c_void, *mut c_void)>,
    user_data: *mut c_void,
) -> cl_int {
    // A device image is built already.
    if get::<Program>(program).is_none() {
        return CL_INVALID_PROGRAM;
    }
    if let Some(notify) = notify {
        notify(program, user_data);
    }
    CL_SUCCESS
}

pub(crate) extern "C" fn get_program_info(
    handle: *mut c_void,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetProgramInfo", || {
        let program = get::<Program>(handle).ok_or(CL_INVALID_PROGRAM)?;
        let device = program.context.object().device(program.device);
        let names: Vec<&str> = program.kernels.iter().map(|k| k.name.as_str()).collect();
        let value = match param {
            CL_PROGRAM_REFERENCE_COUNT => references::<Program>(handle).map(Value::uint),
            CL_PROGRAM_CONTEXT => Some(Value::pointer(program.context.handle())),
            CL_PROGRAM_NUM_DEVICES => Some(Value::uint(1)),
            CL_PROGRAM_DEVICES => Some(Value::pointer(device)),
            CL_PROGRAM_SOURCE => Some(Value::text("")),
            CL_PROGRAM_BINARY_SIZES => Some(Value::sizes(&[program.binary.len()])),
            CL_PROGRAM_BINARIES => {
                // An array of one pointer, to memory of BINARY_SIZES bytes, that the
                // application provides.
                if !out.is_null() {
                    if size < size_of::<*mut u8>() {
                        return Err(CL_INVALID_VALUE);
                    }
                    // SAFETY: out holds one pointer, which is NULL or points to
                    // BINARY_SIZES writable bytes.
                    unsafe {
                        let target = out.cast::<*mut u8>().read();
                        if !target.is_null() {
                            std::ptr::copy_nonoverlapping(
                                program.binary.as_ptr(),
                                target,
                                program.binary.len(),
                            );
                        }
                    }
                }
                // SAFETY: size_ret is NULL or points to a usize.
                unsafe { write_if(size_ret, size_of::<*mut u8>()) };
                return Ok(());
            }
            CL_PROGRAM_NUM_KERNELS if !names.is_empty() => Some(Value::sizes(&[names.len()])),
            CL_PROGRAM_KERNEL_NAMES if !names.is_empty() => Some(Value::text(&names.join(";"))),
            CL_PROGRAM_NUM_KERNELS | CL_PROGRAM_KERNEL_NAMES => {
                return Err(CL_INVALID_PROGRAM_EXECUTABLE);
            }
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetProgramInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

pub(crate) extern "C" fn get_program_build_info(
    handle: *mut c_void,
    _device: *mut Device,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetProgramBuildInfo", || {
        get::<Program>(handle).ok_or(CL_INVALID_PROGRAM)?;
        let value = match param {
            CL_PROGRAM_BUILD_STATUS => Some(Value::uint(CL_BUILD_SUCCESS as cl_uint)),
            CL_PROGRAM_BUILD_OPTIONS | CL_PROGRAM_BUILD_LOG => Some(Value::text("")),
            CL_PROGRAM_BINARY_TYPE => Some(Value::uint(CL_PROGRAM_BINARY_TYPE_EXECUTABLE)),
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetProgramBuildInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

pub(crate) extern "C" fn create_kernel(
    program_handle: *mut c_void,
    name: *const c_char,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clCreateKernel";
    object(CALL, errcode_ret, || {
        let program = get::<Program>(program_handle).ok_or(CL_INVALID_PROGRAM)?;
        if name.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: a non-NULL name is NUL-terminated.
        let asked = unsafe { CStr::from_ptr(name) }
            .to_str()
            .map_err(|_| CL_INVALID_KERNEL_NAME)?;
        let name = match compute_units::choice(asked) {
            Ok(None) => asked,
            Ok(Some((kernel, units))) => {
                let of_kernel: Vec<&str> = program
                    .compute_units
                    .iter()
                    .filter_map(|ip| ip.split_once(':'))
                    .filter(|(owner, _)| *owner == kernel)
                    .map(|(_, unit)| unit)
                    .collect();
                compute_units::check("the program's image", kernel, &units, &of_kernel)
                    .map_err(|why| refuse(CALL, CL_INVALID_KERNEL_NAME, &why))?;
                kernel
            }
            Err(why) => return Err(refuse(CALL, CL_INVALID_KERNEL_NAME, &why)),
        };
        // A name the program lacks is an answer, not a failure (PyOpenCL probes names).
        let kernel = program
            .program
            .kernel(name)
            .map_err(|err| match err.code() {
                ErrorCode::NotFound | ErrorCode::InvalidArgument => CL_INVALID_KERNEL_NAME,
                _ => report(CALL, &err),
            })?;
        let described = program.kernels.iter().find(|k| k.name == name).map(|k| {
            let mut args = k.args.clone();
            args.sort_by_key(|a| a.index);
            args
        });
        let slots = described.as_ref().map_or(0, Vec::len);
        publish(Arc::new(Kernel {
            program: Held::new(program_handle, program),
            kernel,
            described,
            args: Mutex::new((0..slots).map(|_| None).collect()),
        }))
    })
}

pub(crate) extern "C" fn set_kernel_arg(
    handle: *mut c_void,
    index: cl_uint,
    size: usize,
    value: *const c_void,
) -> cl_int {
    status("clSetKernelArg", || {
        let kernel = get::<Kernel>(handle).ok_or(CL_INVALID_KERNEL)?;
        let index = index as usize;
        let described = kernel.described.as_ref().map(|args| args.get(index));
        let kind = match described {
            Some(None) => return Err(CL_INVALID_ARG_INDEX),
            Some(Some(arg)) => Some(arg.kind),
            None if index >= MAX_UNDESCRIBED_ARGS => return Err(CL_INVALID_ARG_INDEX),
            None => None,
        };
        let as_buffer = || -> Option<Arc<Buffer>> {
            if size != size_of::<*mut c_void>() || value.is_null() {
                return None;
            }
            // SAFETY: value points to size bytes: one handle.
            buffer(unsafe { value.cast::<*const c_void>().read() }).ok()
        };
        let arg = match kind {
            Some(ArgKind::Global) => ArgValue::Buffer(as_buffer().ok_or(CL_INVALID_MEM_OBJECT)?),
            Some(ArgKind::Scalar) | None => match as_buffer() {
                Some(buffer) if kind.is_none() => ArgValue::Buffer(buffer),
                _ => {
                    if value.is_null() || size == 0 {
                        return Err(CL_INVALID_ARG_VALUE);
                    }
                    if let Some(Some(arg)) = described
                        && arg.size as usize != size
                    {
                        return Err(CL_INVALID_ARG_SIZE);
                    }
                    // SAFETY: value points to size bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), size) };
                    ArgValue::Bytes(bytes.to_vec())
                }
            },
        };
        kernel.set(index, arg);
        Ok(())
    })
}

impl Kernel {
    fn set(&self, index: usize, arg: ArgValue) {
        let mut args = self.args.lock().unwrap_or_else(|e| e.into_inner());
        if args.len() <= index {
            args.resize_with(index + 1, || None);
        }
        args[index] = Some(arg);
    }
}

/// `clSetKernelArgMemPointerINTEL`: a unified-shared-memory pointer as argument `index`.
pub(crate) extern "C" fn set_kernel_arg_mem_pointer(
    handle: *mut c_void,
    index: cl_uint,
    ptr: *const c_void,
) -> cl_int {
    status("clSetKernelArgMemPointerINTEL", || {
        let kernel = get::<Kernel>(handle).ok_or(CL_INVALID_KERNEL)?;
        let index = index as usize;
        match kernel.described.as_ref().map(|args| args.get(index)) {
            Some(None) => return Err(CL_INVALID_ARG_INDEX),
            Some(Some(arg)) if arg.kind != ArgKind::Global => return Err(CL_INVALID_ARG_VALUE),
            None if index >= MAX_UNDESCRIBED_ARGS => return Err(CL_INVALID_ARG_INDEX),
            _ => {}
        }
        let (allocation, offset) = crate::usm::find(ptr).ok_or(CL_INVALID_ARG_VALUE)?;
        kernel.set(index, ArgValue::Usm(allocation, offset));
        Ok(())
    })
}

/// `clSetKernelExecInfo`: the unified-shared-memory hints (indirect access, the pointers a
/// kernel reaches indirectly) are taken; every allocation is reachable anyway.
pub(crate) extern "C" fn set_kernel_exec_info(
    handle: *mut c_void,
    param: cl_uint,
    size: usize,
    value: *const c_void,
) -> cl_int {
    if get::<Kernel>(handle).is_none() {
        return CL_INVALID_KERNEL;
    }
    match param {
        CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL
        | CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL
        | CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL
            if size == size_of::<cl_bool>() && !value.is_null() =>
        {
            CL_SUCCESS
        }
        CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL if size.is_multiple_of(size_of::<*const c_void>()) => {
            CL_SUCCESS
        }
        _ => CL_INVALID_VALUE,
    }
}

pub(crate) extern "C" fn get_kernel_info(
    handle: *mut c_void,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetKernelInfo", || {
        let kernel = get::<Kernel>(handle).ok_or(CL_INVALID_KERNEL)?;
        let value = match param {
            CL_KERNEL_FUNCTION_NAME => Some(Value::text(kernel.kernel.name())),
            CL_KERNEL_NUM_ARGS => kernel
                .described
                .as_ref()
                .map(|args| Value::uint(args.len() as cl_uint)),
            CL_KERNEL_REFERENCE_COUNT => references::<Kernel>(handle).map(Value::uint),
            CL_KERNEL_CONTEXT => Some(Value::pointer(kernel.program.object().context.handle())),
            CL_KERNEL_PROGRAM => Some(Value::pointer(kernel.program.handle())),
            CL_KERNEL_ATTRIBUTES => Some(Value::text("")),
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetKernelInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

pub(crate) extern "C" fn get_kernel_work_group_info(
    handle: *mut c_void,
    _device: *mut Device,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetKernelWorkGroupInfo", || {
        get::<Kernel>(handle).ok_or(CL_INVALID_KERNEL)?;
        let value = match param {
            CL_KERNEL_WORK_GROUP_SIZE | CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE => {
                Some(Value::sizes(&[1]))
            }
            CL_KERNEL_COMPILE_WORK_GROUP_SIZE => Some(Value::sizes(&[0, 0, 0])),
            CL_KERNEL_LOCAL_MEM_SIZE | CL_KERNEL_PRIVATE_MEM_SIZE => Some(Value::ulong(0)),
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetKernelWorkGroupInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

/// Launches `kernel` once on the queue, with its arguments as they are set now.
fn launch(
    call: &'static str,
    queue_handle: *mut c_void,
    kernel_handle: *mut c_void,
    command: cl_uint,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> ClResult<()> {
    // SAFETY: the wait list follows the entry point's contract.
    let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
    let kernel = get::<Kernel>(kernel_handle).ok_or(CL_INVALID_KERNEL)?;
    let program = kernel.program.object();
    if !Arc::ptr_eq(program.context.object(), enqueue.queue().context().object())
        || program.device != enqueue.queue().device_index()
    {
        return Err(CL_INVALID_CONTEXT);
    }
    let values = kernel.args.lock().unwrap_or_else(|e| e.into_inner());
    let mut args = Vec::with_capacity(values.len());
    for (index, value) in values.iter().enumerate() {
        let value = value.as_ref().ok_or_else(|| {
            refuse(
                call,
                CL_INVALID_KERNEL_ARGS,
                &format!("argument {index} of {} is not set", kernel.kernel.name()),
            )
        })?;
        match value {
            ArgValue::Buffer(buffer) if buffer.device_index() != program.device => {
                return Err(CL_INVALID_MEM_OBJECT);
            }
            ArgValue::Usm(allocation, _)
                if allocation.device_index() != program.device
                    || !Arc::ptr_eq(allocation.context(), program.context.object()) =>
            {
                return Err(CL_INVALID_MEM_OBJECT);
            }
            _ => args.push(value.clone()),
        }
    }
    drop(values);
    let run = move |queue: &Queue| {
        let args: Vec<Arg> = args
            .iter()
            .map(|value| match value {
                ArgValue::Buffer(buffer) => Arg::MemoryAt(buffer.memory(), buffer.origin() as u64),
                ArgValue::Usm(allocation, offset) => {
                    Arg::MemoryAt(allocation.memory(), *offset as u64)
                }
                ArgValue::Bytes(bytes) => match bytes.len() {
                    4 => Arg::U32(u32::from_ne_bytes(bytes[..].try_into().unwrap())),
                    8 => Arg::U64(u64::from_ne_bytes(bytes[..].try_into().unwrap())),
                    _ => Arg::Bytes(bytes),
                },
            })
            .collect();
        let launched = queue
            .commands()
            .enqueue_launch(&kernel.kernel, &args)
            .map_err(|err| report(call, &err))?;
        Ok(Progress::Device(launched))
    };
    // SAFETY: event is NULL or points to a handle.
    unsafe { enqueue.submit(call, command, false, event, run) }
}

pub(crate) extern "C" fn enqueue_task(
    queue: *mut c_void,
    kernel: *mut c_void,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    status("clEnqueueTask", || {
        launch(
            "clEnqueueTask",
            queue,
            kernel,
            CL_COMMAND_TASK,
            count,
            wait,
            event,
        )
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn enqueue_nd_range_kernel(
    queue: *mut c_void,
    kernel: *mut c_void,
    work_dim: cl_uint,
    _global_offset: *const usize,
    global_size: *const usize,
    local_size: *const usize,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueNDRangeKernel";
    status(CALL, || {
        if !(1..=3).contains(&work_dim) {
            return Err(CL_INVALID_WORK_DIMENSION);
        }
        // SAFETY: global_size (and a non-NULL local_size) hold work_dim sizes.
        let global = unsafe { list(work_dim, global_size, CL_INVALID_GLOBAL_WORK_SIZE) }?;
        let local = if local_size.is_null() {
            &[][..]
        } else {
            // SAFETY: as above.
            unsafe { list(work_dim, local_size, CL_INVALID_VALUE) }?
        };
        // The device runs a kernel once per launch, as clEnqueueTask does.
        if global.iter().any(|&n| n != 1) || local.iter().any(|&n| n != 1) {
            return Err(refuse(
                CALL,
                CL_INVALID_GLOBAL_WORK_SIZE,
                "the devices run one work item per launch: use a global size of 1 \
                 (the kernel's size argument says how much it processes)",
            ));
        }
        launch(
            CALL,
            queue,
            kernel,
            CL_COMMAND_NDRANGE_KERNEL,
            count,
            wait,
            event,
        )
    })
}

/// A marker: done when everything enqueued before it and its wait list are.
pub(crate) extern "C" fn enqueue_marker_with_wait_list(
    queue_handle: *mut c_void,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    const CALL: &str = "clEnqueueMarkerWithWaitList";
    status(CALL, || {
        // SAFETY: the wait list follows the entry point's contract.
        let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
        let run = |queue: &Queue| {
            Ok(match queue.commands().pending_events().pop() {
                Some(last) => Progress::Device(last),
                None => Progress::Done(Ok(())),
            })
        };
        // SAFETY: event is NULL or points to a handle.
        unsafe { enqueue.submit(CALL, CL_COMMAND_MARKER, false, event, run) }
    })
}

/// The OpenCL 1.0 form of a marker's wait list: waits for `events` before later commands.
pub(crate) extern "C" fn enqueue_wait_for_events(
    queue: *mut c_void,
    count: cl_uint,
    events: *const *mut c_void,
) -> cl_int {
    if count == 0 || events.is_null() {
        return CL_INVALID_VALUE;
    }
    enqueue_marker_with_wait_list(queue, count, events, std::ptr::null_mut())
}

pub(crate) extern "C" fn enqueue_barrier_with_wait_list(
    queue_handle: *mut c_void,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> cl_int {
    // The queue is in order: a barrier is a marker.
    enqueue_marker_with_wait_list(queue_handle, count, wait, event)
}

pub(crate) extern "C" fn enqueue_marker(queue: *mut c_void, event: *mut *mut c_void) -> cl_int {
    enqueue_marker_with_wait_list(queue, 0, std::ptr::null(), event)
}

pub(crate) extern "C" fn enqueue_barrier(queue: *mut c_void) -> cl_int {
    enqueue_marker_with_wait_list(queue, 0, std::ptr::null(), std::ptr::null_mut())
}

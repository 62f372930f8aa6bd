//! Programs from device images (an xclbin, checked by the library before any plugin sees
//! it) or from OpenCL C source (built for an XRT card's emulated compute units with the
//! system's clang, whole or compiled and linked apart) or from SPIR-V (through LLVM's SPIR-V
//! translator to the same kernels), their kernels by name with their arguments, and
//! launches.

use std::ffi::{CStr, CString, c_char, c_void};
use std::ptr;
use std::sync::{Arc, Mutex};

use accelhost::xclbin::kernels::{
    BuiltKernels, CompiledOpencl, KernelBuildError, LOCAL_MEMORY_BYTES, MAX_HEADERS, MAX_IL_BYTES,
    build_opencl, build_spirv, check_spirv, compile_opencl, compile_spirv, link_opencl,
    spec_constants,
};
use accelhost::xclbin::{ArgKind, KernelMeta};
use accelhost::{Arg, ErrorCode};
use accelhost_door::compute_units;

use crate::cl::*;
use crate::command::Enqueue;
use crate::context::{Context, context};
use crate::device::{Device, MAX_WORK_GROUP};
use crate::error::{ClResult, list, object, refuse, report, status, write_if};
use crate::event::Progress;
use crate::info::{Value, give};
use crate::memory::{Buffer, buffer};
use crate::object::{Held, get, publish, references};
use crate::queue::Queue;

/// An OpenCL program for one device of the context: an image loaded on it, or source or IL
/// that becomes one when it is built.
pub struct Program {
    context: Held<Context>,
    device: usize,
    /// What it was made from, for a program made from source or IL.
    source: Option<Source>,
    /// The image on the device, once there is one.
    built: Mutex<Option<Arc<Built>>>,
    /// The source compiled apart (`clCompileProgram`), for `clLinkProgram`.
    compiled: Mutex<Option<Arc<CompiledOpencl>>>,
    /// The specialization constants set for a program from IL, by id, for its next build.
    constants: Mutex<Vec<(u32, Vec<u8>)>>,
    /// The last build's options, status and log.
    build: Mutex<BuildRecord>,
}

/// What a program to be built was made from.
enum Source {
    /// OpenCL C (`clCreateProgramWithSource`).
    OpenclC(String),
    /// A SPIR-V module (`clCreateProgramWithIL`).
    Il(Vec<u8>),
}

impl Source {
    /// The OpenCL C, for a program made from it.
    fn opencl_c(&self) -> Option<&str> {
        match self {
            Source::OpenclC(text) => Some(text),
            Source::Il(_) => None,
        }
    }
}

/// An image loaded on the program's device.
struct Built {
    program: accelhost::Program,
    binary: Vec<u8>,
    /// The kernels the image describes (an xclbin's EMBEDDED_METADATA), when it does.
    kernels: Vec<KernelMeta>,
    /// The image's compute units, as IP_LAYOUT names them (`vadd:vadd_1`).
    compute_units: Vec<String>,
}

/// What `clGetProgramBuildInfo` answers.
struct BuildRecord {
    status: cl_int,
    options: String,
    log: String,
}

impl Program {
    /// A program of `device` of `context` made from `source`, not built yet.
    fn unbuilt(context: Held<Context>, device: usize, source: Source) -> Program {
        Program {
            context,
            device,
            source: Some(source),
            built: Mutex::new(None),
            compiled: Mutex::new(None),
            constants: Mutex::new(Vec::new()),
            build: Mutex::new(BuildRecord {
                status: CL_BUILD_NONE,
                options: String::new(),
                log: String::new(),
            }),
        }
    }

    /// The image, or `CL_INVALID_PROGRAM_EXECUTABLE` before a successful build.
    fn built(&self) -> ClResult<Arc<Built>> {
        self.built
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or(CL_INVALID_PROGRAM_EXECUTABLE)
    }

    /// The specialization constants set so far.
    fn constants(&self) -> Vec<(u32, Vec<u8>)> {
        self.constants
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn record(&self) -> std::sync::MutexGuard<'_, BuildRecord> {
        self.build.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Loads `binary` on `device` of `context`: the program's image.
fn load(context: &Context, device: usize, binary: Vec<u8>) -> accelhost::Result<Built> {
    let program = context.handle(device).create_program(&binary)?;
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
    Ok(Built {
        program,
        binary,
        kernels,
        compute_units,
    })
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
    /// A NULL buffer: the kernel's pointer is null.
    Null,
    Bytes(Vec<u8>),
}

/// An OpenCL kernel.
pub struct Kernel {
    program: Held<Program>,
    kernel: accelhost::Kernel,
    /// Its arguments, when the image describes them (without the NDRange's).
    described: Option<Vec<accelhost::xclbin::KernelArg>>,
    /// Built from OpenCL C: it takes the NDRange after its own arguments, and runs every
    /// work-item of it.
    ndrange: bool,
    /// The pointers of the structs it takes by value, each an argument of the card's after
    /// the described ones, set when its struct is.
    struct_pointers: Vec<StructPointer>,
    args: Mutex<Vec<Option<ArgValue>>>,
}

/// A global pointer inside a struct a kernel built from SPIR-V takes by value
/// ([`field_pointer`](accelhost::xclbin::kernels::field_pointer)).
struct StructPointer {
    /// The card's argument that carries it.
    slot: usize,
    /// The struct's argument.
    of: usize,
    /// Where in the struct's bytes it is.
    offset: usize,
}

impl StructPointer {
    /// The argument value of the pointer in `bytes`, the struct's value: a null pointer, or
    /// the unified-shared-memory allocation it points into. Any other address is
    /// `CL_INVALID_ARG_VALUE`, said: it is nothing the card holds.
    fn value(&self, kernel: &str, bytes: &[u8]) -> ClResult<ArgValue> {
        let address = accelhost_door::usm::pointer_in_struct(bytes, self.offset as u64)
            .ok_or(CL_INVALID_ARG_SIZE)?;
        if address == 0 {
            return Ok(ArgValue::Null);
        }
        let (allocation, offset) = crate::usm::find(address as *const c_void).ok_or_else(|| {
            refuse(
                "clSetKernelArg",
                CL_INVALID_ARG_VALUE,
                &format!(
                    "argument {} of {kernel}, a struct, holds at byte {} the address \
                     {address:#x}, which is in no unified-shared-memory allocation: a pointer \
                     in a struct reaches only those",
                    self.of, self.offset
                ),
            )
        })?;
        Ok(ArgValue::Usm(allocation, offset))
    }
}

impl crate::object::Object for Kernel {
    const KIND: &'static str = "cl_kernel";
}

/// The most arguments a kernel the image does not describe may take.
const MAX_UNDESCRIBED_ARGS: usize = 64;

/// The most source a program may have: a bound on what a build reads and compiles.
const MAX_SOURCE_BYTES: usize = 16 << 20;

pub(crate) extern "C" fn create_program_with_source(
    context_handle: *mut c_void,
    count: cl_uint,
    strings: *const *const c_char,
    lengths: *const usize,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clCreateProgramWithSource";
    object(CALL, errcode_ret, || {
        let context = context(context_handle)?;
        // SAFETY: strings holds count entries.
        let strings = unsafe { list(count, strings, CL_INVALID_VALUE) }?;
        let lengths: &[usize] = if lengths.is_null() {
            &[]
        } else {
            // SAFETY: a non-NULL lengths holds count entries.
            unsafe { list(count, lengths, CL_INVALID_VALUE) }?
        };
        let mut source = Vec::new();
        for (index, &string) in strings.iter().enumerate() {
            if string.is_null() {
                return Err(CL_INVALID_VALUE);
            }
            let bytes = match lengths.get(index).copied().unwrap_or(0) {
                // SAFETY: a zero length means a NUL-terminated string.
                0 => unsafe { CStr::from_ptr(string) }.to_bytes(),
                // SAFETY: the application passes len bytes at string.
                len if len <= MAX_SOURCE_BYTES => unsafe {
                    std::slice::from_raw_parts(string.cast::<u8>(), len)
                },
                _ => return Err(CL_INVALID_VALUE),
            };
            source.extend_from_slice(bytes);
            if source.len() > MAX_SOURCE_BYTES {
                return Err(refuse(
                    CALL,
                    CL_INVALID_VALUE,
                    &format!("the source is over {MAX_SOURCE_BYTES} bytes"),
                ));
            }
        }
        let source = String::from_utf8(source)
            .map_err(|_| refuse(CALL, CL_INVALID_VALUE, "the source is not UTF-8 text"))?;
        // Built for the context's first XRT card, whose compute units run kernels.
        let device = (0..context.len())
            .find(|&index| context.device(index).runs_kernels())
            .unwrap_or(0);
        publish(Arc::new(Program::unbuilt(
            Held::new(context_handle, context),
            device,
            Source::OpenclC(source),
        )))
    })
}

pub(crate) extern "C" fn create_program_with_il(
    context_handle: *mut c_void,
    il: *const c_void,
    length: usize,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clCreateProgramWithIL";
    object(CALL, errcode_ret, || {
        let context = context(context_handle)?;
        if il.is_null() || length == 0 {
            return Err(refuse(CALL, CL_INVALID_VALUE, "no IL was given"));
        }
        if length > MAX_IL_BYTES {
            return Err(refuse(
                CALL,
                CL_INVALID_VALUE,
                &format!("{length} bytes of IL: a program has at most {MAX_IL_BYTES}"),
            ));
        }
        // SAFETY: the application passes length bytes at il.
        let il = unsafe { std::slice::from_raw_parts(il.cast::<u8>(), length) }.to_vec();
        check_spirv(&il).map_err(|err| refuse(CALL, CL_INVALID_VALUE, &err.to_string()))?;
        // Built for the context's first device that builds SPIR-V.
        let Some(device) = (0..context.len()).find(|&index| context.device(index).builds_spirv())
        else {
            return Err(refuse(
                CALL,
                CL_INVALID_OPERATION,
                "no device of the context takes IL: an XRT card does, where LLVM's SPIR-V \
                 translator is installed",
            ));
        };
        publish(Arc::new(Program::unbuilt(
            Held::new(context_handle, context),
            device,
            Source::Il(il),
        )))
    })
}

/// `clSetProgramSpecializationConstant`: a value for a specialization constant the program's
/// SPIR-V declares, of its type's size, for the program's next build.
pub(crate) extern "C" fn set_program_specialization_constant(
    handle: *mut c_void,
    spec_id: cl_uint,
    spec_size: usize,
    spec_value: *const c_void,
) -> cl_int {
    const CALL: &str = "clSetProgramSpecializationConstant";
    status(CALL, || {
        let program = get::<Program>(handle).ok_or(CL_INVALID_PROGRAM)?;
        let Some(Source::Il(il)) = &program.source else {
            return Err(refuse(
                CALL,
                CL_INVALID_PROGRAM,
                "only a program made from IL has specialization constants",
            ));
        };
        if spec_value.is_null() {
            return Err(CL_INVALID_VALUE);
        }
        let declared = spec_constants(il).map_err(|why| refuse(CALL, CL_INVALID_PROGRAM, &why))?;
        let Some(ty) = declared.get(&spec_id) else {
            return Err(refuse(
                CALL,
                CL_INVALID_SPEC_ID,
                &format!("the module has no specialization constant {spec_id}"),
            ));
        };
        if spec_size != ty.size() {
            return Err(refuse(
                CALL,
                CL_INVALID_VALUE,
                &format!(
                    "specialization constant {spec_id} takes {} bytes, not {spec_size}",
                    ty.size()
                ),
            ));
        }
        // SAFETY: the application passes spec_size bytes at spec_value.
        let value =
            unsafe { std::slice::from_raw_parts(spec_value.cast::<u8>(), spec_size) }.to_vec();
        let mut constants = program.constants.lock().unwrap_or_else(|e| e.into_inner());
        constants.retain(|(id, _)| *id != spec_id);
        constants.push((spec_id, value));
        Ok(())
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
        let made = load(&context, device, binary);
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
        publish(Arc::new(Program {
            context: Held::new(context_handle, context),
            device,
            source: None,
            built: Mutex::new(Some(Arc::new(program))),
            compiled: Mutex::new(None),
            constants: Mutex::new(Vec::new()),
            build: Mutex::new(BuildRecord {
                status: CL_BUILD_SUCCESS,
                options: String::new(),
                log: String::new(),
            }),
        }))
    })
}

pub(crate) extern "C" fn build_program(
    handle: *mut c_void,
    num_devices: cl_uint,
    devices: *const *mut Device,
    options: *const c_char,
    notify: Option<extern "C" fn(*mut c_void, *mut c_void)>,
    user_data: *mut c_void,
) -> cl_int {
    const CALL: &str = "clBuildProgram";
    let built = status(CALL, || {
        let program = get::<Program>(handle).ok_or(CL_INVALID_PROGRAM)?;
        // SAFETY: devices holds num_devices entries.
        unsafe { for_the_programs_device(CALL, &program, num_devices, devices) }?;
        // SAFETY: options is NULL or NUL-terminated.
        let options = unsafe { text_or_empty(options) };
        match &program.source {
            // A device image is built already.
            None => {
                program.record().options = options;
                Ok(())
            }
            Some(Source::OpenclC(source)) => build_from_source(&program, options, |options| {
                let kept = accelhost::ComponentCache::from_env();
                build_opencl(source, options, Some(&kept))
            }),
            Some(Source::Il(il)) => build_from_source(&program, options, |options| {
                let kept = accelhost::ComponentCache::from_env();
                build_spirv(il, options, &program.constants(), Some(&kept))
            }),
        }
    });
    if let Some(notify) = notify {
        notify(handle, user_data);
    }
    built
}

/// Checks that `devices` (NULL when `count` is 0: all of them) are devices of `program`'s
/// context. Whichever they are, the program is built for its device, the context's first XRT
/// card: the other devices run no kernels (a launch on them is refused), and the SYCL runtime
/// names every device of its context.
///
/// # Safety
/// `devices` holds `count` entries.
unsafe fn for_the_programs_device(
    call: &str,
    program: &Program,
    count: cl_uint,
    devices: *const *mut Device,
) -> ClResult<()> {
    if count == 0 {
        return Ok(());
    }
    // SAFETY: per the contract above.
    let devices = unsafe { list(count, devices, CL_INVALID_VALUE) }?;
    let context = program.context.object();
    if devices.iter().any(|&d| context.index_of(d).is_none()) {
        return Err(refuse(
            call,
            CL_INVALID_DEVICE,
            "a device named is not one of the program's context",
        ));
    }
    Ok(())
}

/// The options string at `options`, or empty for NULL.
///
/// # Safety
/// A non-NULL `options` is NUL-terminated.
unsafe fn text_or_empty(options: *const c_char) -> String {
    if options.is_null() {
        return String::new();
    }
    // SAFETY: per the contract above.
    unsafe { CStr::from_ptr(options) }
        .to_string_lossy()
        .into_owned()
}

/// `clCompileProgram`: the program's source (with the programs given as headers, by the
/// names its `#include`s use) compiled for its device, to be linked by `clLinkProgram`.
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn compile_program(
    handle: *mut c_void,
    num_devices: cl_uint,
    devices: *const *mut Device,
    options: *const c_char,
    num_input_headers: cl_uint,
    input_headers: *const *mut c_void,
    header_include_names: *const *const c_char,
    notify: Option<extern "C" fn(*mut c_void, *mut c_void)>,
    user_data: *mut c_void,
) -> cl_int {
    const CALL: &str = "clCompileProgram";
    let compiled = status(CALL, || {
        let program = get::<Program>(handle).ok_or(CL_INVALID_PROGRAM)?;
        // SAFETY: devices holds num_devices entries.
        unsafe { for_the_programs_device(CALL, &program, num_devices, devices) }?;
        // SAFETY: options is NULL or NUL-terminated.
        let options = unsafe { text_or_empty(options) };
        if num_input_headers as usize > MAX_HEADERS {
            return Err(refuse(
                CALL,
                CL_INVALID_VALUE,
                &format!("a compile takes at most {MAX_HEADERS} headers"),
            ));
        }
        // SAFETY: both lists hold num_input_headers entries.
        let (header_programs, names) = unsafe {
            (
                list(num_input_headers, input_headers, CL_INVALID_VALUE)?,
                list(num_input_headers, header_include_names, CL_INVALID_VALUE)?,
            )
        };
        let mut headers = Vec::with_capacity(header_programs.len());
        let mut header_bytes = 0;
        for (&header, &name) in header_programs.iter().zip(names) {
            let header = get::<Program>(header).ok_or(CL_INVALID_VALUE)?;
            if name.is_null() {
                return Err(CL_INVALID_VALUE);
            }
            let Some(text) = header.source.as_ref().and_then(Source::opencl_c) else {
                return Err(refuse(
                    CALL,
                    CL_INVALID_VALUE,
                    "a header is a program made from source",
                ));
            };
            header_bytes += text.len();
            if header_bytes > MAX_SOURCE_BYTES {
                return Err(refuse(
                    CALL,
                    CL_INVALID_VALUE,
                    &format!("the headers are over {MAX_SOURCE_BYTES} bytes"),
                ));
            }
            // SAFETY: a non-NULL header name is NUL-terminated.
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            headers.push((name.into_owned(), text.to_owned()));
        }
        let Some(source) = &program.source else {
            return Err(refuse(
                CALL,
                CL_INVALID_OPERATION,
                "only a program made from source or IL compiles",
            ));
        };
        let device = program.context.object().device(program.device);
        let outcome = if !device.runs_kernels() {
            Err((CL_COMPILER_NOT_AVAILABLE, NO_COMPILER.to_owned()))
        } else {
            match source {
                Source::OpenclC(text) => compile_opencl(text, &options, &headers),
                Source::Il(il) => compile_spirv(il, &options, &program.constants()),
            }
            .map_err(|err| match err {
                err @ (KernelBuildError::NoCompiler(_) | KernelBuildError::NoTranslator(_)) => {
                    (CL_COMPILER_NOT_AVAILABLE, err.to_string())
                }
                err @ KernelBuildError::Options(_) => {
                    (CL_INVALID_COMPILER_OPTIONS, err.to_string())
                }
                err => (CL_COMPILE_PROGRAM_FAILURE, err.to_string()),
            })
        };
        let mut record = program.record();
        record.options = options;
        match outcome {
            Ok(compiled) => {
                record.status = CL_BUILD_SUCCESS;
                record.log = compiled.log().to_owned();
                *program.compiled.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(Arc::new(compiled));
                Ok(())
            }
            Err((code, log)) => {
                record.status = CL_BUILD_ERROR;
                record.log = log;
                *program.compiled.lock().unwrap_or_else(|e| e.into_inner()) = None;
                Err(code)
            }
        }
    });
    if let Some(notify) = notify {
        notify(handle, user_data);
    }
    compiled
}

/// `clLinkProgram`: the compiled programs linked into a new program of all their kernels,
/// loaded on their device. When the link fails, the new program is still made (with the
/// link's log) and `CL_LINK_PROGRAM_FAILURE` returned, as OpenCL asks.
#[allow(clippy::too_many_arguments)]
pub(crate) extern "C" fn link_program(
    context_handle: *mut c_void,
    num_devices: cl_uint,
    devices: *const *mut Device,
    options: *const c_char,
    num_input_programs: cl_uint,
    input_programs: *const *mut c_void,
    notify: Option<extern "C" fn(*mut c_void, *mut c_void)>,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    const CALL: &str = "clLinkProgram";
    let mut link_failed = false;
    let linked = object(CALL, errcode_ret, || {
        let context = context(context_handle)?;
        // SAFETY: options is NULL or NUL-terminated.
        let options = unsafe { text_or_empty(options) };
        // Options that permit optimizations may be ignored; a library is not made.
        if let Some(other) = options
            .split_whitespace()
            .find(|option| !option.starts_with("-cl-"))
        {
            return Err(refuse(
                CALL,
                CL_INVALID_LINKER_OPTIONS,
                &format!(
                    "'{other}' is not a link option of these devices (they link executables, \
                     taking -cl-* options)"
                ),
            ));
        }
        // SAFETY: input_programs holds num_input_programs entries.
        let inputs = unsafe { list(num_input_programs, input_programs, CL_INVALID_VALUE) }?;
        let mut programs = Vec::with_capacity(inputs.len());
        let mut device = None;
        for &input in inputs {
            let program = get::<Program>(input).ok_or(CL_INVALID_PROGRAM)?;
            if !std::ptr::eq(program.context.handle(), context_handle) {
                return Err(CL_INVALID_CONTEXT);
            }
            let compiled = program
                .compiled
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .ok_or_else(|| {
                    refuse(
                        CALL,
                        CL_INVALID_OPERATION,
                        "a program linked is compiled first (clCompileProgram)",
                    )
                })?;
            device = Some(program.device);
            programs.push(compiled);
        }
        let device = device.ok_or(CL_INVALID_VALUE)?;
        if num_devices > 0 {
            // SAFETY: devices holds num_devices entries.
            let devices = unsafe { list(num_devices, devices, CL_INVALID_VALUE) }?;
            if devices.iter().any(|&d| context.index_of(d) != Some(device)) {
                return Err(refuse(
                    CALL,
                    CL_INVALID_DEVICE,
                    "a program is linked for the device its parts were compiled for",
                ));
            }
        }
        let parts: Vec<&CompiledOpencl> = programs.iter().map(Arc::as_ref).collect();
        let outcome = link_opencl(&parts, Some(&accelhost::ComponentCache::from_env()))
            .map_err(|err| (CL_LINK_PROGRAM_FAILURE, err.to_string()))
            .and_then(|built| loaded(CALL, &context, device, built));
        let (built, status, log) = match outcome {
            Ok((built, log)) => (Some(Arc::new(built)), CL_BUILD_SUCCESS, log),
            Err((code, log)) => {
                if code != CL_LINK_PROGRAM_FAILURE {
                    return Err(code);
                }
                link_failed = true;
                refuse(CALL, code, &log);
                (None, CL_BUILD_ERROR, log)
            }
        };
        publish(Arc::new(Program {
            context: Held::new(context_handle, context),
            device,
            source: None,
            built: Mutex::new(built),
            compiled: Mutex::new(None),
            constants: Mutex::new(Vec::new()),
            build: Mutex::new(BuildRecord {
                status,
                options,
                log,
            }),
        }))
    });
    if link_failed {
        // SAFETY: errcode_ret is NULL or points to a cl_int.
        unsafe { write_if(errcode_ret, CL_LINK_PROGRAM_FAILURE) };
    }
    if let Some(notify) = notify
        && !linked.is_null()
    {
        notify(linked, user_data);
    }
    linked
}

/// What a device that runs no kernels answers for a build.
const NO_COMPILER: &str = "no device of the program's context runs kernels of a program's \
                           own, so there is no compiler for it: make the context with an XRT \
                           card";

/// `built` made into an image and loaded on `device` of `context`, with the build's log;
/// the error code and what to log when loading failed.
fn loaded(
    call: &str,
    context: &Context,
    device: usize,
    built: BuiltKernels,
) -> Result<(Built, String), (cl_int, String)> {
    let image =
        accelhost::xclbin::XclbinBuilder::kernels(built.uuid(), &built.kernels, built.module, 1)
            .build();
    match load(context, device, image) {
        Ok(loaded) => Ok((loaded, built.log)),
        Err(err) => Err((
            report(call, &err),
            format!("loading the built program on the device: {err}"),
        )),
    }
}

/// Builds the program's source or IL with `build` (given the options) into an image for its
/// device and loads it there. Built programs are kept in the compile cache the door's host
/// uses.
fn build_from_source(
    program: &Program,
    options: String,
    build: impl FnOnce(&str) -> Result<BuiltKernels, KernelBuildError>,
) -> ClResult<()> {
    const CALL: &str = "clBuildProgram";
    let context = program.context.object();
    let device = context.device(program.device);
    let outcome = if !device.runs_kernels() {
        Err((CL_COMPILER_NOT_AVAILABLE, NO_COMPILER.to_owned()))
    } else {
        match build(&options) {
            Ok(built) => loaded(CALL, context, program.device, built),
            Err(KernelBuildError::NoCompiler(why)) => Err((CL_COMPILER_NOT_AVAILABLE, why)),
            Err(err @ KernelBuildError::NoTranslator(_)) => {
                Err((CL_COMPILER_NOT_AVAILABLE, err.to_string()))
            }
            Err(err @ KernelBuildError::Options(_)) => {
                Err((CL_INVALID_BUILD_OPTIONS, err.to_string()))
            }
            Err(err) => Err((CL_BUILD_PROGRAM_FAILURE, err.to_string())),
        }
    };
    let mut record = program.record();
    record.options = options;
    match outcome {
        Ok((loaded, log)) => {
            record.status = CL_BUILD_SUCCESS;
            record.log = log;
            *program.built.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(loaded));
            Ok(())
        }
        Err((code, log)) => {
            record.status = CL_BUILD_ERROR;
            record.log = log;
            Err(code)
        }
    }
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
        let built = program.built().ok();
        let kernels = built.as_ref().map_or(&[][..], |b| &b.kernels[..]);
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        let binary = built.as_ref().map_or(&[][..], |b| &b.binary[..]);
        let value = match param {
            CL_PROGRAM_REFERENCE_COUNT => references::<Program>(handle).map(Value::uint),
            CL_PROGRAM_CONTEXT => Some(Value::pointer(program.context.handle())),
            CL_PROGRAM_NUM_DEVICES => Some(Value::uint(1)),
            CL_PROGRAM_DEVICES => Some(Value::pointer(device)),
            CL_PROGRAM_SOURCE => Some(Value::text(
                program
                    .source
                    .as_ref()
                    .and_then(Source::opencl_c)
                    .unwrap_or(""),
            )),
            CL_PROGRAM_IL => Some(Value::bytes(match &program.source {
                Some(Source::Il(il)) => il.clone(),
                _ => Vec::new(),
            })),
            CL_PROGRAM_BINARY_SIZES => Some(Value::sizes(&[binary.len()])),
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
                            std::ptr::copy_nonoverlapping(binary.as_ptr(), target, binary.len());
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
        let program = get::<Program>(handle).ok_or(CL_INVALID_PROGRAM)?;
        let built = program.built().is_ok();
        let compiled = program
            .compiled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        let record = program.record();
        let value = match param {
            CL_PROGRAM_BUILD_STATUS => Some(Value::uint(record.status as cl_uint)),
            CL_PROGRAM_BUILD_OPTIONS => Some(Value::text(&record.options)),
            CL_PROGRAM_BUILD_LOG => Some(Value::text(&record.log)),
            CL_PROGRAM_BINARY_TYPE if built => Some(Value::uint(CL_PROGRAM_BINARY_TYPE_EXECUTABLE)),
            CL_PROGRAM_BINARY_TYPE if compiled => {
                Some(Value::uint(CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT))
            }
            CL_PROGRAM_BINARY_TYPE => Some(Value::uint(CL_PROGRAM_BINARY_TYPE_NONE)),
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetProgramBuildInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

/// `clCreateKernelsInProgram`: a kernel object for each kernel of the built program, in the
/// program's order; none is kept when one cannot be made.
pub(crate) extern "C" fn create_kernels_in_program(
    program_handle: *mut c_void,
    count: cl_uint,
    kernels: *mut *mut c_void,
    count_ret: *mut cl_uint,
) -> cl_int {
    status("clCreateKernelsInProgram", || {
        let program = get::<Program>(program_handle).ok_or(CL_INVALID_PROGRAM)?;
        let names: Vec<CString> = program
            .built()?
            .kernels
            .iter()
            .filter_map(|kernel| CString::new(kernel.name.as_str()).ok())
            .collect();
        if !kernels.is_null() {
            if (count as usize) < names.len() {
                return Err(CL_INVALID_VALUE);
            }
            let mut made: Vec<*mut c_void> = Vec::with_capacity(names.len());
            for name in &names {
                let mut code = CL_SUCCESS;
                let kernel = create_kernel(program_handle, name.as_ptr(), &mut code);
                if code != CL_SUCCESS {
                    for kernel in made {
                        crate::object::release::<Kernel>(kernel);
                    }
                    return Err(code);
                }
                made.push(kernel);
            }
            for (at, kernel) in made.into_iter().enumerate() {
                // SAFETY: kernels holds count >= names.len() handles.
                unsafe { kernels.add(at).write(kernel) };
            }
        }
        // SAFETY: count_ret is NULL or points to a cl_uint.
        unsafe { write_if(count_ret, names.len() as cl_uint) };
        Ok(())
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
        let built = program.built()?;
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
                let of_kernel: Vec<&str> = built
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
        let kernel = built.program.kernel(name).map_err(|err| match err.code() {
            ErrorCode::NotFound | ErrorCode::InvalidArgument => CL_INVALID_KERNEL_NAME,
            _ => report(CALL, &err),
        })?;
        let meta = built.kernels.iter().find(|k| k.name == name);
        let ndrange = meta.is_some_and(accelhost::xclbin::kernels::is_ndrange);
        let mut struct_pointers = Vec::new();
        let described = meta.map(|k| {
            let mut args = k.args.clone();
            args.sort_by_key(|a| a.index);
            if ndrange {
                args.truncate(args.len() - accelhost::xclbin::kernels::NDRANGE_ARGS.len());
            }
            struct_pointers = split_struct_pointers(&mut args);
            args
        });
        let slots = described.as_ref().map_or(0, Vec::len) + struct_pointers.len();
        publish(Arc::new(Kernel {
            program: Held::new(program_handle, program),
            kernel,
            described,
            ndrange,
            struct_pointers,
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
        let handle_given = || -> Option<*const c_void> {
            if size != size_of::<*mut c_void>() || value.is_null() {
                return None;
            }
            // SAFETY: value points to size bytes: one handle.
            Some(unsafe { value.cast::<*const c_void>().read() })
        };
        let as_buffer = || handle_given().and_then(|h| buffer(h).ok());
        let arg = match kind {
            // The value, or the handle it points to, may be NULL: a null pointer.
            Some(ArgKind::Global) if value.is_null() || handle_given() == Some(ptr::null()) => {
                if size != size_of::<*mut c_void>() {
                    return Err(CL_INVALID_ARG_SIZE);
                }
                ArgValue::Null
            }
            Some(ArgKind::Global) => ArgValue::Buffer(as_buffer().ok_or(CL_INVALID_MEM_OBJECT)?),
            // A __local argument is given its size, with no value: the card's register holds
            // the byte count.
            Some(ArgKind::Local) if !value.is_null() => return Err(CL_INVALID_ARG_VALUE),
            Some(ArgKind::Local) => match u32::try_from(size) {
                Ok(bytes) if bytes > 0 => ArgValue::Bytes(bytes.to_ne_bytes().to_vec()),
                _ => return Err(CL_INVALID_ARG_SIZE),
            },
            Some(ArgKind::Scalar) | None => match as_buffer() {
                Some(buffer) if kind.is_none() => ArgValue::Buffer(buffer),
                _ => {
                    if value.is_null() || size == 0 {
                        return Err(CL_INVALID_ARG_VALUE);
                    }
                    // SAFETY: value points to size bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), size) };
                    let mut bytes = bytes.to_vec();
                    // The registers hold a value in whole words: a `char` in 4 bytes, a
                    // 6-byte struct in 8.
                    if let Some(Some(arg)) = described {
                        let words = arg.size as usize;
                        if size > words || size + 4 <= words {
                            return Err(CL_INVALID_ARG_SIZE);
                        }
                        bytes.resize(words, 0);
                    }
                    ArgValue::Bytes(bytes)
                }
            },
        };
        let mut pointers = Vec::new();
        if let ArgValue::Bytes(bytes) = &arg {
            for pointer in kernel.struct_pointers.iter().filter(|p| p.of == index) {
                pointers.push((pointer.slot, pointer.value(kernel.kernel.name(), bytes)?));
            }
        }
        kernel.set(index, arg);
        for (slot, value) in pointers {
            kernel.set(slot, value);
        }
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

/// `clSetKernelArgMemPointerINTEL`: a unified-shared-memory pointer, or NULL, as argument
/// `index`.
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
        // A null pointer is a value a kernel may take (SYCL passes one for an unused output).
        if ptr.is_null() {
            kernel.set(index, ArgValue::Null);
            return Ok(());
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

/// Takes the arguments that carry the pointers of structs off the end of `args`, where the
/// build puts them, and says where each comes from; none when they are not all such, of
/// arguments before them.
fn split_struct_pointers(args: &mut Vec<accelhost::xclbin::KernelArg>) -> Vec<StructPointer> {
    use accelhost::xclbin::kernels::field_pointer;
    let own = args
        .iter()
        .take_while(|arg| field_pointer(&arg.name).is_none())
        .count();
    let pointers: Option<Vec<StructPointer>> = args[own..]
        .iter()
        .enumerate()
        .map(|(at, arg)| {
            let (of, offset) = field_pointer(&arg.name)?;
            (of < own && arg.kind == ArgKind::Global).then_some(StructPointer {
                slot: own + at,
                of,
                offset: usize::try_from(offset).ok()?,
            })
        })
        .collect();
    match pointers {
        Some(pointers) => {
            args.truncate(own);
            pointers
        }
        None => Vec::new(),
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
        let kernel = get::<Kernel>(handle).ok_or(CL_INVALID_KERNEL)?;
        let value = match param {
            CL_KERNEL_WORK_GROUP_SIZE if kernel.ndrange => Some(Value::sizes(&[MAX_WORK_GROUP])),
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

/// `clGetKernelSubGroupInfo` and its KHR name: `CL_INVALID_OPERATION` for a known kernel,
/// OpenCL's answer where the devices have no sub-groups (`CL_DEVICE_MAX_NUM_SUB_GROUPS` is 0;
/// a kernel's `get_sub_group_size()` is 1). Said without a log line: the SYCL runtime asks
/// for every kernel it launches. Takes only the kernel, as the C calling convention allows.
pub(crate) extern "C" fn get_kernel_sub_group_info(handle: *mut c_void) -> cl_int {
    status("clGetKernelSubGroupInfo", || {
        get::<Kernel>(handle).ok_or(CL_INVALID_KERNEL)?;
        Err(CL_INVALID_OPERATION)
    })
}

/// The NDRange arguments of a kernel built from OpenCL C: dimensions, global sizes, local
/// sizes, offsets (`kernels::NDRANGE_ARGS`).
type Range = [u32; 10];

/// The library's form of a launch's argument values.
fn launch_args(args: &[ArgValue]) -> Vec<Arg<'_>> {
    args.iter().map(launch_arg).collect()
}

/// The library's form of one argument value.
fn launch_arg(value: &ArgValue) -> Arg<'_> {
    match value {
        ArgValue::Buffer(buffer) => Arg::MemoryAt(buffer.memory(), buffer.origin() as u64),
        ArgValue::Usm(allocation, offset) => Arg::MemoryAt(allocation.memory(), *offset as u64),
        // The contract's null pointer.
        ArgValue::Null => Arg::U64(0),
        ArgValue::Bytes(bytes) => match bytes.len() {
            4 => Arg::U32(u32::from_ne_bytes(bytes[..].try_into().unwrap())),
            8 => Arg::U64(u64::from_ne_bytes(bytes[..].try_into().unwrap())),
            _ => Arg::Bytes(bytes),
        },
    }
}

/// Launches `kernel` once on the queue, with its arguments as they are set now (and `range`
/// after them, for a kernel built from OpenCL C).
#[allow(clippy::too_many_arguments)]
fn launch(
    call: &'static str,
    queue_handle: *mut c_void,
    kernel_handle: *mut c_void,
    command: cl_uint,
    range: Option<Range>,
    count: cl_uint,
    wait: *const *mut c_void,
    event: *mut *mut c_void,
) -> ClResult<()> {
    // SAFETY: the wait list follows the entry point's contract.
    let enqueue = unsafe { Enqueue::new(queue_handle, count, wait) }?;
    let kernel = get::<Kernel>(kernel_handle).ok_or(CL_INVALID_KERNEL)?;
    let program = kernel.program.object();
    if !Arc::ptr_eq(program.context.object(), enqueue.queue().context().object()) {
        return Err(CL_INVALID_CONTEXT);
    }
    if program.device != enqueue.queue().device_index() {
        return Err(refuse(
            call,
            CL_INVALID_PROGRAM_EXECUTABLE,
            "the program is built for its context's XRT card, and this queue's device runs \
             no kernels of a program's own",
        ));
    }
    let values = kernel.args.lock().unwrap_or_else(|e| e.into_inner());
    let mut set = Vec::with_capacity(values.len());
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
            _ => set.push(value),
        }
    }
    let local_bytes: u64 = kernel
        .described
        .iter()
        .flatten()
        .zip(&set)
        .filter(|(arg, _)| arg.kind == ArgKind::Local)
        .filter_map(|(_, value)| match value {
            ArgValue::Bytes(bytes) => bytes.as_slice().try_into().ok().map(u32::from_ne_bytes),
            _ => None,
        })
        .map(|bytes| u64::from(bytes).next_multiple_of(16))
        .sum();
    if local_bytes > LOCAL_MEMORY_BYTES {
        return Err(refuse(
            call,
            CL_OUT_OF_RESOURCES,
            &format!(
                "the __local arguments of {} ask for {local_bytes} bytes; a launch is given at \
                 most {LOCAL_MEMORY_BYTES}",
                kernel.kernel.name()
            ),
        ));
    }
    let range = kernel
        .ndrange
        .then(|| range.unwrap_or([1, 1, 1, 1, 1, 1, 1, 0, 0, 0]));
    let range = range.iter().flatten().copied();
    if event.is_null() && enqueue.runs_now() {
        // Nobody will ask about this launch: it goes to the plugin with the ones after it,
        // taking its arguments as they are set now (no copy of them is kept here).
        let args: Vec<Arg> = set
            .into_iter()
            .map(launch_arg)
            .chain(range.map(Arg::U32))
            .collect();
        return enqueue
            .queue()
            .commands()
            .defer_launch(&kernel.kernel, &args)
            .map_err(|err| report(call, &err));
    }
    let args: Vec<ArgValue> = set
        .into_iter()
        .cloned()
        .chain(range.map(|n| ArgValue::Bytes(n.to_ne_bytes().to_vec())))
        .collect();
    drop(values);
    let run = move |queue: &Queue| {
        let launched = queue
            .commands()
            .enqueue_launch(&kernel.kernel, &launch_args(&args))
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
            None,
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
    global_offset: *const usize,
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
        let offset = if global_offset.is_null() {
            &[][..]
        } else {
            // SAFETY: as above.
            unsafe { list(work_dim, global_offset, CL_INVALID_VALUE) }?
        };
        let built_from_source = get::<Kernel>(kernel).ok_or(CL_INVALID_KERNEL)?.ndrange;
        if built_from_source {
            let range = ndrange(work_dim, global, local, offset)?;
            return launch(
                CALL,
                queue,
                kernel,
                CL_COMMAND_NDRANGE_KERNEL,
                Some(range),
                count,
                wait,
                event,
            );
        }
        // An image's kernel runs once per launch, as clEnqueueTask does.
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
            None,
            count,
            wait,
            event,
        )
    })
}

/// The NDRange arguments of a launch, checked as `clEnqueueNDRangeKernel` does; without a
/// local size, each dimension's work-group is the largest divisor of its global size that
/// keeps the group within [`MAX_WORK_GROUP`].
fn ndrange(dim: cl_uint, global: &[usize], local: &[usize], offset: &[usize]) -> ClResult<Range> {
    let fits = |n: usize| u32::try_from(n).ok();
    let mut range = [dim, 1, 1, 1, 1, 1, 1, 0, 0, 0];
    let mut group = 1usize;
    for d in 0..dim as usize {
        let g = global[d];
        if g == 0 {
            return Err(CL_INVALID_GLOBAL_WORK_SIZE);
        }
        let l = match local.get(d) {
            Some(&l) => l,
            None => (1..=(MAX_WORK_GROUP / group).min(g))
                .rev()
                .find(|l| g.is_multiple_of(*l))
                .unwrap_or(1),
        };
        if l == 0 || !g.is_multiple_of(l) {
            return Err(CL_INVALID_WORK_GROUP_SIZE);
        }
        group *= l;
        let o = offset.get(d).copied().unwrap_or(0);
        if o.checked_add(g).and_then(fits).is_none() {
            return Err(CL_INVALID_GLOBAL_WORK_SIZE);
        }
        range[1 + d] = g as u32;
        range[4 + d] = l as u32;
        range[7 + d] = o as u32;
    }
    if group > MAX_WORK_GROUP {
        return Err(CL_INVALID_WORK_GROUP_SIZE);
    }
    Ok(range)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_structs_pointer_is_null_an_allocation_or_refused_and_its_offset_never_wraps() {
        let at = |offset| StructPointer {
            slot: 1,
            of: 0,
            offset,
        };
        let mut bytes = vec![0u8; 16];
        assert!(matches!(at(8).value("k", &bytes), Ok(ArgValue::Null)));
        // An address in no allocation, and 8 bytes past the struct's end.
        bytes[8..].copy_from_slice(&0x1234_5000u64.to_ne_bytes());
        assert!(matches!(
            at(8).value("k", &bytes),
            Err(CL_INVALID_ARG_VALUE)
        ));
        assert!(matches!(at(9).value("k", &bytes), Err(CL_INVALID_ARG_SIZE)));
        assert!(matches!(
            at(usize::MAX - 3).value("k", &bytes),
            Err(CL_INVALID_ARG_SIZE)
        ));
    }
}

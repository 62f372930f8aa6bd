//! The platforms' devices: one per accelerator of a plugin that exports the `offload`
//! interface on the `accelhost` platform, and the XRT cards once more on the `Xilinx`
//! platform, listed once per process (OpenCL's root devices live as long as it does).
//!
//! Device type: FPGA runtimes report `CL_DEVICE_TYPE_ACCELERATOR`, which Vitis hosts ask
//! for, so the `Xilinx` platform's cards do. The SYCL runtime's OpenCL adapter (Unified
//! Runtime) drops every device with that bit, and dpctl names only CPU, GPU and accelerator
//! devices (a custom one is "Unknown device type"), so the `accelhost` platform's devices
//! report `CL_DEVICE_TYPE_CPU` by default (the emulated devices are run by the host
//! processor), or what `ACCELHOST_OPENCL_DEVICE_TYPE` names. `clGetDeviceIDs` lists a
//! device for a type query exactly when its type has one of the query's bits.

use std::sync::{Arc, Mutex, Weak};

use accelhost::xclbin::kernels::KERNEL_BUFFER_BYTES;
use accelhost::{Handle, Host, OpenMode, PluginInfo, Token};

use crate::cl::*;
use crate::error::{ClResult, refuse};
use crate::info::Value;
use crate::object::Dispatched;
use crate::platform::{self, Family, Platform};

/// The alignment of a sub-buffer's origin, in bytes: what `CL_DEVICE_MEM_BASE_ADDR_ALIGN`
/// reports (in bits), a page.
pub const BASE_ADDRESS_ALIGN: usize = 4096;
/// Every bit a device-type query may have.
const KNOWN_TYPES: cl_device_type = CL_DEVICE_TYPE_DEFAULT
    | CL_DEVICE_TYPE_CPU
    | CL_DEVICE_TYPE_GPU
    | CL_DEVICE_TYPE_ACCELERATOR
    | CL_DEVICE_TYPE_CUSTOM;

/// The devices of `devices` on `platform` a query for `device_type` lists: those whose type
/// has one of its bits, the platform's first for `DEFAULT`, and all of them for `ALL` (custom
/// ones too: the SYCL runtime's loader asks only for `ALL`); `CL_INVALID_DEVICE_TYPE` for a
/// type that is none.
pub fn of_type(
    devices: &[Device],
    platform: Family,
    device_type: cl_device_type,
) -> ClResult<Vec<&Device>> {
    if device_type == 0 || (device_type != CL_DEVICE_TYPE_ALL && device_type & !KNOWN_TYPES != 0) {
        return Err(CL_INVALID_DEVICE_TYPE);
    }
    let on: Vec<&Device> = devices.iter().filter(|d| d.family == platform).collect();
    if device_type == CL_DEVICE_TYPE_ALL {
        return Ok(on);
    }
    let mut listed: Vec<&Device> = Vec::new();
    for (at, device) in on.iter().enumerate() {
        let default = at == 0 && device_type & CL_DEVICE_TYPE_DEFAULT != 0;
        if default || device.device_type & device_type != 0 {
            listed.push(device);
        }
    }
    Ok(listed)
}

/// The least local memory OpenCL 3.0 allows a device that is not custom, in bytes.
const MIN_LOCAL_MEMORY: u64 = 32 << 10;

/// The caches in front of a device's memory, as its queries answer them: an emulated
/// device's memory is the host's, which the host processor that runs the emulator reaches
/// through its caches; of a real card's, the host knows none (all 0).
#[derive(Clone, Copy)]
struct Caches {
    /// Line size of the first-level data cache, in bytes.
    line: u32,
    /// The first-level data cache, in bytes: the private scratch a work-group's local
    /// memory lives in when it is host memory.
    first_level: u64,
    /// The last-level cache, in bytes.
    last_level: u64,
}

/// The host processor's caches, as the C library reads them (0 where it does not know).
fn host_caches() -> Caches {
    static CACHES: std::sync::OnceLock<Caches> = std::sync::OnceLock::new();
    *CACHES.get_or_init(|| {
        // SAFETY: sysconf only reads the processor's description.
        let ask = |name| u64::try_from(unsafe { libc::sysconf(name) }).unwrap_or(0);
        let last_level = [
            libc::_SC_LEVEL4_CACHE_SIZE,
            libc::_SC_LEVEL3_CACHE_SIZE,
            libc::_SC_LEVEL2_CACHE_SIZE,
            libc::_SC_LEVEL1_DCACHE_SIZE,
        ]
        .into_iter()
        .map(ask)
        .find(|size| *size > 0)
        .unwrap_or(0);
        Caches {
            line: u32::try_from(ask(libc::_SC_LEVEL1_DCACHE_LINESIZE)).unwrap_or(0),
            // OpenCL's least for a device that is not custom, where the C library does not
            // know the processor's cache.
            first_level: ask(libc::_SC_LEVEL1_DCACHE_SIZE).max(MIN_LOCAL_MEMORY),
            last_level,
        }
    })
}

/// The type of the `accelhost` platform's devices: `ACCELHOST_OPENCL_DEVICE_TYPE` (`cpu`,
/// the default; `accelerator`; `custom`), or a message naming what it holds instead (the
/// devices are then CPU devices).
pub fn accelhost_type() -> Result<cl_device_type, String> {
    match std::env::var("ACCELHOST_OPENCL_DEVICE_TYPE").as_deref() {
        Err(_) | Ok("" | "cpu") => Ok(CL_DEVICE_TYPE_CPU),
        Ok("accelerator") => Ok(CL_DEVICE_TYPE_ACCELERATOR),
        Ok("custom") => Ok(CL_DEVICE_TYPE_CUSTOM),
        Ok(other) => Err(format!(
            "ACCELHOST_OPENCL_DEVICE_TYPE is '{}', not cpu, accelerator or custom: the \
             accelhost platform's devices are CPU devices",
            other.escape_debug()
        )),
    }
}

/// The largest work-group a launch of an OpenCL C kernel may have.
pub(crate) const MAX_WORK_GROUP: usize = 1024;

/// What the devices that build OpenCL C list beside unified shared memory: double
/// precision, and the 32-bit atomic functions under their extensions' names (`atom_add`,
/// ...: OpenCL C 1.2 names them `atomic_*` in its core, and requires a 1.2 device to list
/// the extensions all the same), the 64-bit ones (`atom_add` on `long`, which SYCL's
/// reductions call), with byte stores.
const OPENCL_C_EXTENSIONS: [(&str, cl_version); 8] = [
    ("cl_khr_fp64", FIRST_VERSION),
    ("cl_khr_global_int32_base_atomics", FIRST_VERSION),
    ("cl_khr_global_int32_extended_atomics", FIRST_VERSION),
    ("cl_khr_local_int32_base_atomics", FIRST_VERSION),
    ("cl_khr_local_int32_extended_atomics", FIRST_VERSION),
    ("cl_khr_int64_base_atomics", FIRST_VERSION),
    ("cl_khr_int64_extended_atomics", FIRST_VERSION),
    ("cl_khr_byte_addressable_store", FIRST_VERSION),
];

/// The version of each of [`OPENCL_C_EXTENSIONS`]: their first, 1.0.0.
const FIRST_VERSION: cl_version = make_version(1, 0, 0);

/// An OpenCL device object: an accelhost device and the facts of its plugin.
#[repr(C)]
pub struct Device {
    header: Dispatched,
    token: Token,
    /// The plugin's `grants.dma_memory_mib`, in bytes: all the memory the device can hold
    /// for this process.
    memory_bytes: u64,
    /// The plugin's contract version, for the driver version.
    wit_version: String,
    /// The platform it is listed on.
    family: Family,
    /// Its `CL_DEVICE_TYPE`.
    device_type: cl_device_type,
    /// Whether it is an emulated device (its plugin says `emulated: true`): its memory is
    /// the host's.
    emulated: bool,
    /// The device's open, which every context of the process that has the device shares
    /// while one lives (an AFU in dedicated mode takes one open at a time, and an OpenCL
    /// program may make a context per operation).
    opened: Mutex<Weak<Handle>>,
}

impl Device {
    /// The device for `token`, of `plugin`, on the `family` platform as a device of
    /// `device_type`.
    pub fn new(
        header: Dispatched,
        token: Token,
        plugin: &PluginInfo,
        family: Family,
        device_type: cl_device_type,
    ) -> Device {
        let emulated = token
            .properties()
            .extras
            .iter()
            .any(|(key, value)| key == "emulated" && value == "true");
        Device {
            header,
            token,
            memory_bytes: plugin.grants.dma_memory_mib.saturating_mul(1 << 20),
            wit_version: plugin.wit_version.clone().unwrap_or_default(),
            family,
            device_type,
            emulated,
            opened: Mutex::new(Weak::new()),
        }
    }

    /// The device's open for a context: the one the process's other contexts hold, while it
    /// is still open, else a new one (shared). It closes when the last context lets go.
    pub fn open(&self, host: &Host) -> accelhost::Result<Arc<Handle>> {
        let mut opened = self.opened.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(handle) = opened.upgrade().filter(|handle| handle.is_open()) {
            return Ok(handle);
        }
        let handle = Arc::new(host.open(&self.token, OpenMode::Shared)?);
        *opened = Arc::downgrade(&handle);
        Ok(handle)
    }

    /// Whether programs for this device build from OpenCL C: an XRT card, when the system
    /// has clang. Such a device computes in doubles too (`cl_khr_fp64`).
    fn builds_opencl_c(&self) -> bool {
        self.runs_kernels() && compiler_available()
    }

    /// Whether it builds programs from SPIR-V: it builds OpenCL C and the system has LLVM's
    /// SPIR-V translator.
    pub fn builds_spirv(&self) -> bool {
        self.builds_opencl_c() && accelhost::xclbin::kernels::translates_spirv()
    }

    /// Its extensions, with their versions: USM's, and with a compiler OpenCL C's and, with
    /// the translator, `cl_khr_il_program`.
    fn extensions(&self) -> Vec<(&'static str, cl_version)> {
        let mut listed = vec![platform::USM_EXTENSION];
        if self.builds_opencl_c() {
            listed.extend(OPENCL_C_EXTENSIONS);
        }
        if self.builds_spirv() {
            listed.push(("cl_khr_il_program", FIRST_VERSION));
        }
        listed
    }

    /// The SPIR-V versions it takes, as `CL_DEVICE_ILS_WITH_VERSION` lists them.
    fn il_versions(&self) -> Vec<(&'static str, cl_version)> {
        if !self.builds_spirv() {
            return Vec::new();
        }
        accelhost::xclbin::kernels::IL_VERSIONS
            .iter()
            .map(|&(major, minor)| ("SPIR-V", make_version(major, minor, 0)))
            .collect()
    }

    /// Whether its device allocations are the host's memory at their own address: an
    /// emulated device (whose memory is the host's) listed as a CPU, as programs read a CPU
    /// device's allocations in place (oneMKL's host code does, for dpnp's arrays).
    pub fn device_memory_is_hosts(&self) -> bool {
        self.emulated && self.device_type & CL_DEVICE_TYPE_CPU != 0
    }

    /// Whether its compute units run kernels of the program's own: an XRT card's do.
    pub fn runs_kernels(&self) -> bool {
        self.token
            .properties()
            .extras
            .iter()
            .any(|(key, value)| key == "interface" && value == "xocl")
    }

    /// Whether its kernels are 32-bit: the emulated XRT card runs them as 32-bit
    /// WebAssembly, whose pointers and size_t are 4 bytes and whose memory is 4 GiB.
    fn runs_32_bit_kernels(&self) -> bool {
        self.emulated && self.runs_kernels()
    }

    /// The largest buffer it makes (`CL_DEVICE_MAX_MEM_ALLOC_SIZE`): all its memory, and on a
    /// card with 32-bit kernels no more than a kernel's memory holds beside the kernel's own.
    pub fn max_alloc_bytes(&self) -> u64 {
        if self.runs_32_bit_kernels() {
            self.memory_bytes.min(KERNEL_BUFFER_BYTES)
        } else {
            self.memory_bytes
        }
    }

    /// `CL_INVALID_BUFFER_SIZE`, said on stderr for `call` with the limit and where it comes
    /// from, when `size` bytes are more than [`max_alloc_bytes`](Self::max_alloc_bytes).
    pub fn check_alloc(&self, call: &str, size: usize) -> ClResult<()> {
        let largest = self.max_alloc_bytes();
        if size as u64 <= largest {
            return Ok(());
        }
        let why = if largest < self.memory_bytes {
            "a 32-bit kernel's memory, less what the kernel keeps for itself"
        } else {
            "its plugin's grants.dma_memory_mib"
        };
        Err(refuse(
            call,
            CL_INVALID_BUFFER_SIZE,
            &format!(
                "{size} bytes are more than the device's largest allocation \
                 (CL_DEVICE_MAX_MEM_ALLOC_SIZE), {largest} bytes: {why}"
            ),
        ))
    }

    /// The platform it is listed on.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The device's handle.
    pub fn id(&self) -> *mut Device {
        std::ptr::from_ref(self).cast_mut()
    }

    /// The accelhost device.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The answer to `clGetDeviceInfo(param)`, if `param` is one; `available` says whether
    /// its plugin runs now.
    pub fn value(&self, param: cl_device_info, available: impl FnOnce() -> bool) -> Option<Value> {
        let properties = self.token.properties();
        let platform: *const Platform = platform::handle(self.family);
        Some(match param {
            CL_DEVICE_TYPE => Value::ulong(self.device_type),
            CL_DEVICE_VENDOR_ID => Value::uint(properties.vendor_id.into()),
            CL_DEVICE_NAME => Value::text(&self.token.id()),
            CL_DEVICE_VENDOR => {
                Value::text(&accelhost::types::pci_vendor_name(properties.vendor_id))
            }
            CL_DRIVER_VERSION => Value::text(&format!(
                "accelhost {} ({} plugin, {})",
                env!("CARGO_PKG_VERSION"),
                self.token.plugin(),
                self.wit_version
            )),
            CL_DEVICE_PROFILE => Value::text("FULL_PROFILE"),
            CL_DEVICE_VERSION => Value::text(platform::VERSION),
            CL_DEVICE_NUMERIC_VERSION => Value::uint(make_version(3, 0, 0)),
            CL_DEVICE_OPENCL_C_VERSION => Value::text("OpenCL C 1.2 "),
            CL_DEVICE_EXTENSIONS => {
                let names: Vec<&str> = self.extensions().iter().map(|(name, _)| *name).collect();
                Value::text(&names.join(" "))
            }
            CL_DEVICE_EXTENSIONS_WITH_VERSION => Value::name_versions(&self.extensions()),
            CL_DEVICE_IL_VERSION => {
                let versions: Vec<String> = self
                    .il_versions()
                    .iter()
                    .map(|(_, version)| {
                        format!("SPIR-V_{}.{}", version >> 22, (version >> 12) & 0x3ff)
                    })
                    .collect();
                Value::text(&versions.join(" "))
            }
            CL_DEVICE_ILS_WITH_VERSION => Value::name_versions(&self.il_versions()),
            CL_DEVICE_BUILT_IN_KERNELS => Value::text(""),
            // Host, device and single-device shared allocations: the device reaches them;
            // no atomics or concurrent access are promised.
            CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL
            | CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL
            | CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL => {
                Value::ulong(CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL)
            }
            CL_DEVICE_CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL
            | CL_DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL => Value::ulong(0),
            CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED => Value::text("none"),
            CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION
            | CL_DEVICE_OPENCL_C_ALL_VERSIONS
            | CL_DEVICE_OPENCL_C_FEATURES
            | CL_DEVICE_PARTITION_TYPE => Value::none(),
            CL_DEVICE_PLATFORM => Value::pointer(platform),
            // Kernels come from device images, whose printf has no buffer here.
            CL_DEVICE_PRINTF_BUFFER_SIZE => Value::sizes(&[0]),
            CL_DEVICE_PARENT_DEVICE => Value::pointer(std::ptr::null::<Device>()),
            CL_DEVICE_PARTITION_PROPERTIES => Value::sizes(&[0]),
            CL_DEVICE_AVAILABLE => Value::bool(available()),
            CL_DEVICE_ENDIAN_LITTLE => Value::bool(cfg!(target_endian = "little")),
            // Programs come from OpenCL C or SPIR-V when the system has clang. Every device
            // says so, as a program of a context is built for the context's XRT card, which
            // runs its kernels, whichever devices the build names: the SYCL runtime asks each
            // device of its context (the platform's, CAPI devices too) before it builds.
            // Where it compiles, it links too (clCompileProgram, clLinkProgram).
            CL_DEVICE_COMPILER_AVAILABLE | CL_DEVICE_LINKER_AVAILABLE => {
                Value::bool(compiler_available())
            }
            CL_DEVICE_PREFERRED_INTEROP_USER_SYNC => Value::bool(true),
            CL_DEVICE_IMAGE_SUPPORT
            | CL_DEVICE_ERROR_CORRECTION_SUPPORT
            | CL_DEVICE_HOST_UNIFIED_MEMORY
            | CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS
            | CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT
            | CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT
            | CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT
            | CL_DEVICE_PIPE_SUPPORT => Value::bool(false),
            _ => return self.capacity(param),
        })
    }

    /// The answers about sizes, limits, caches and capabilities (the rest of
    /// [`value`](Self::value)'s).
    fn capacity(&self, param: cl_device_info) -> Option<Value> {
        let memory = self.memory_bytes;
        // The emulated devices' memory is host memory behind the host processor's caches;
        // of a real card's, the host knows no cache.
        let caches = if self.emulated {
            host_caches()
        } else {
            Caches {
                line: 0,
                first_level: 0,
                last_level: 0,
            }
        };
        Some(match param {
            CL_DEVICE_GLOBAL_MEM_SIZE => Value::ulong(memory),
            CL_DEVICE_MAX_MEM_ALLOC_SIZE => Value::ulong(self.max_alloc_bytes()),
            // A program sizes a size_t kernel argument by this.
            CL_DEVICE_ADDRESS_BITS if self.runs_32_bit_kernels() => Value::uint(32),
            CL_DEVICE_ADDRESS_BITS => Value::uint(64),
            CL_DEVICE_MAX_COMPUTE_UNITS | CL_DEVICE_REFERENCE_COUNT => Value::uint(1),
            CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS => Value::uint(3),
            // An XRT card runs OpenCL C kernels over work-groups; an image's kernel, and any
            // other device's, runs once per launch (clEnqueueTask): one work item per group.
            CL_DEVICE_MAX_WORK_ITEM_SIZES if self.runs_kernels() => {
                Value::sizes(&[MAX_WORK_GROUP; 3])
            }
            CL_DEVICE_MAX_WORK_GROUP_SIZE if self.runs_kernels() => Value::sizes(&[MAX_WORK_GROUP]),
            CL_DEVICE_MAX_WORK_ITEM_SIZES => Value::sizes(&[1, 1, 1]),
            CL_DEVICE_MAX_WORK_GROUP_SIZE | CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE => {
                Value::sizes(&[1])
            }
            CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR
            | CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT
            | CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT
            | CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG
            | CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
            | CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR
            | CL_DEVICE_NATIVE_VECTOR_WIDTH_SHORT
            | CL_DEVICE_NATIVE_VECTOR_WIDTH_INT
            | CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG
            | CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT => Value::uint(1),
            CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE | CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE
                if self.builds_opencl_c() =>
            {
                Value::uint(1)
            }
            CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE
            | CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF
            | CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE
            | CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF => Value::uint(0),
            // Not known to the host: the card's clocks are the image's.
            CL_DEVICE_MAX_CLOCK_FREQUENCY => Value::uint(0),
            // Buffers are page-aligned DMA memory (the value is in bits).
            CL_DEVICE_MEM_BASE_ADDR_ALIGN => Value::uint(BASE_ADDRESS_ALIGN as cl_uint * 8),
            CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE => Value::uint(128),
            CL_DEVICE_MAX_PARAMETER_SIZE => Value::sizes(&[1024]),
            CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE => Value::ulong(64 << 10),
            CL_DEVICE_MAX_CONSTANT_ARGS => Value::uint(8),
            CL_DEVICE_EXECUTION_CAPABILITIES => Value::ulong(CL_EXEC_KERNEL),
            CL_DEVICE_QUEUE_PROPERTIES => {
                Value::ulong(CL_QUEUE_PROFILING_ENABLE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
            }
            // Nanoseconds.
            CL_DEVICE_PROFILING_TIMER_RESOLUTION => Value::sizes(&[1]),
            CL_DEVICE_GLOBAL_MEM_CACHE_TYPE if caches.last_level > 0 => {
                Value::uint(CL_READ_WRITE_CACHE)
            }
            CL_DEVICE_GLOBAL_MEM_CACHE_TYPE => Value::uint(CL_NONE),
            CL_DEVICE_GLOBAL_MEM_CACHE_SIZE => Value::ulong(caches.last_level),
            CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE => Value::uint(caches.line),
            // Work-group scratch of an emulated device is host memory (CL_GLOBAL, as CPU
            // runtimes say), as much as the processor's first-level data cache holds.
            CL_DEVICE_LOCAL_MEM_TYPE if self.emulated => Value::uint(CL_GLOBAL),
            CL_DEVICE_LOCAL_MEM_TYPE => Value::uint(CL_LOCAL),
            CL_DEVICE_LOCAL_MEM_SIZE => Value::ulong(caches.first_level),
            // OpenCL C runs as WebAssembly, whose float and double arithmetic is IEEE 754's:
            // round to nearest even, with denormals, infinities and NaNs; fma is exact.
            CL_DEVICE_SINGLE_FP_CONFIG | CL_DEVICE_DOUBLE_FP_CONFIG if self.builds_opencl_c() => {
                Value::ulong(CL_FP_DENORM | CL_FP_INF_NAN | CL_FP_ROUND_TO_NEAREST | CL_FP_FMA)
            }
            // No half precision (cl_khr_fp16 is not listed): no capabilities.
            CL_DEVICE_HALF_FP_CONFIG
            | CL_DEVICE_SINGLE_FP_CONFIG
            | CL_DEVICE_DOUBLE_FP_CONFIG
            | CL_DEVICE_PARTITION_AFFINITY_DOMAIN
            | CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES
            | CL_DEVICE_SVM_CAPABILITIES
            | CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES
            | CL_DEVICE_ATOMIC_FENCE_CAPABILITIES
            | CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES => Value::ulong(0),
            CL_DEVICE_MAX_READ_IMAGE_ARGS
            | CL_DEVICE_MAX_WRITE_IMAGE_ARGS
            | CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS
            | CL_DEVICE_MAX_SAMPLERS
            | CL_DEVICE_PARTITION_MAX_SUB_DEVICES
            | CL_DEVICE_IMAGE_PITCH_ALIGNMENT
            | CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT
            | CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE
            | CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE
            | CL_DEVICE_MAX_ON_DEVICE_QUEUES
            | CL_DEVICE_MAX_ON_DEVICE_EVENTS
            | CL_DEVICE_MAX_PIPE_ARGS
            | CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS
            | CL_DEVICE_PIPE_MAX_PACKET_SIZE
            | CL_DEVICE_PREFERRED_PLATFORM_ATOMIC_ALIGNMENT
            | CL_DEVICE_PREFERRED_GLOBAL_ATOMIC_ALIGNMENT
            | CL_DEVICE_PREFERRED_LOCAL_ATOMIC_ALIGNMENT
            | CL_DEVICE_MAX_NUM_SUB_GROUPS => Value::uint(0),
            CL_DEVICE_IMAGE2D_MAX_WIDTH
            | CL_DEVICE_IMAGE2D_MAX_HEIGHT
            | CL_DEVICE_IMAGE3D_MAX_WIDTH
            | CL_DEVICE_IMAGE3D_MAX_HEIGHT
            | CL_DEVICE_IMAGE3D_MAX_DEPTH
            | CL_DEVICE_IMAGE_MAX_BUFFER_SIZE
            | CL_DEVICE_IMAGE_MAX_ARRAY_SIZE
            | CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE
            | CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE => Value::sizes(&[0]),
            _ => return None,
        })
    }
}

/// Whether the system's clang builds OpenCL C for the devices (looked at once per process).
fn compiler_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let clang = std::env::var_os(accelhost::xclbin::kernels::CLANG_ENV)
            .unwrap_or_else(|| "clang".into());
        std::process::Command::new(clang)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    })
}

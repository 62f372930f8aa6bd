//! The OpenCL types and constants this platform uses, with the values of Khronos's
//! `CL/cl.h`, `CL/cl_ext.h` and `CL/cl_icd.h` (a test compiles each name against the system's
//! headers and checks its value).

#![allow(non_camel_case_types)]

pub type cl_int = i32;
pub type cl_uint = u32;
pub type cl_ulong = u64;
pub type cl_bool = cl_uint;
pub type cl_bitfield = cl_ulong;
pub type cl_device_type = cl_bitfield;
pub type cl_platform_info = cl_uint;
pub type cl_device_info = cl_uint;
/// `CL_MAKE_VERSION(major, minor, patch)`: 10 bits of major, 10 of minor, 12 of patch.
pub type cl_version = cl_uint;

/// `CL_MAKE_VERSION`.
pub const fn make_version(major: u32, minor: u32, patch: u32) -> cl_version {
    (major << 22) | (minor << 12) | patch
}

/// `cl_name_version`: a version and a NUL-padded name of at most 63 bytes.
#[repr(C)]
pub struct cl_name_version {
    pub version: cl_version,
    pub name: [u8; 64],
}

macro_rules! constants {
    ($($name:ident: $ty:ty = $value:expr;)*) => {
        $(pub const $name: $ty = $value;)*
        /// Every constant above with its value, for the test that checks them against the
        /// system's OpenCL headers.
        pub const CONSTANTS: &[(&str, i128)] = &[$((stringify!($name), $value as i128)),*];
    };
}

constants! {
    CL_SUCCESS: cl_int = 0;
    CL_DEVICE_NOT_FOUND: cl_int = -1;
    CL_INVALID_VALUE: cl_int = -30;
    CL_INVALID_DEVICE_TYPE: cl_int = -31;
    CL_INVALID_PLATFORM: cl_int = -32;
    CL_INVALID_DEVICE: cl_int = -33;
    CL_INVALID_OPERATION: cl_int = -59;

    CL_FALSE: cl_bool = 0;
    CL_TRUE: cl_bool = 1;
    CL_NONE: cl_uint = 0;

    CL_PLATFORM_PROFILE: cl_platform_info = 0x0900;
    CL_PLATFORM_VERSION: cl_platform_info = 0x0901;
    CL_PLATFORM_NAME: cl_platform_info = 0x0902;
    CL_PLATFORM_VENDOR: cl_platform_info = 0x0903;
    CL_PLATFORM_EXTENSIONS: cl_platform_info = 0x0904;
    CL_PLATFORM_HOST_TIMER_RESOLUTION: cl_platform_info = 0x0905;
    CL_PLATFORM_NUMERIC_VERSION: cl_platform_info = 0x0906;
    CL_PLATFORM_EXTENSIONS_WITH_VERSION: cl_platform_info = 0x0907;
    CL_PLATFORM_ICD_SUFFIX_KHR: cl_platform_info = 0x0920;

    CL_DEVICE_TYPE_DEFAULT: cl_device_type = 1 << 0;
    CL_DEVICE_TYPE_CPU: cl_device_type = 1 << 1;
    CL_DEVICE_TYPE_GPU: cl_device_type = 1 << 2;
    CL_DEVICE_TYPE_ACCELERATOR: cl_device_type = 1 << 3;
    CL_DEVICE_TYPE_CUSTOM: cl_device_type = 1 << 4;
    CL_DEVICE_TYPE_ALL: cl_device_type = 0xFFFF_FFFF;

    CL_DEVICE_TYPE: cl_device_info = 0x1000;
    CL_DEVICE_VENDOR_ID: cl_device_info = 0x1001;
    CL_DEVICE_MAX_COMPUTE_UNITS: cl_device_info = 0x1002;
    CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS: cl_device_info = 0x1003;
    CL_DEVICE_MAX_WORK_GROUP_SIZE: cl_device_info = 0x1004;
    CL_DEVICE_MAX_WORK_ITEM_SIZES: cl_device_info = 0x1005;
    CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR: cl_device_info = 0x1006;
    CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT: cl_device_info = 0x1007;
    CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT: cl_device_info = 0x1008;
    CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG: cl_device_info = 0x1009;
    CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT: cl_device_info = 0x100A;
    CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE: cl_device_info = 0x100B;
    CL_DEVICE_MAX_CLOCK_FREQUENCY: cl_device_info = 0x100C;
    CL_DEVICE_ADDRESS_BITS: cl_device_info = 0x100D;
    CL_DEVICE_MAX_READ_IMAGE_ARGS: cl_device_info = 0x100E;
    CL_DEVICE_MAX_WRITE_IMAGE_ARGS: cl_device_info = 0x100F;
    CL_DEVICE_MAX_MEM_ALLOC_SIZE: cl_device_info = 0x1010;
    CL_DEVICE_IMAGE2D_MAX_WIDTH: cl_device_info = 0x1011;
    CL_DEVICE_IMAGE2D_MAX_HEIGHT: cl_device_info = 0x1012;
    CL_DEVICE_IMAGE3D_MAX_WIDTH: cl_device_info = 0x1013;
    CL_DEVICE_IMAGE3D_MAX_HEIGHT: cl_device_info = 0x1014;
    CL_DEVICE_IMAGE3D_MAX_DEPTH: cl_device_info = 0x1015;
    CL_DEVICE_IMAGE_SUPPORT: cl_device_info = 0x1016;
    CL_DEVICE_MAX_PARAMETER_SIZE: cl_device_info = 0x1017;
    CL_DEVICE_MAX_SAMPLERS: cl_device_info = 0x1018;
    CL_DEVICE_MEM_BASE_ADDR_ALIGN: cl_device_info = 0x1019;
    CL_DEVICE_MIN_DATA_TYPE_ALIGN_SIZE: cl_device_info = 0x101A;
    CL_DEVICE_SINGLE_FP_CONFIG: cl_device_info = 0x101B;
    CL_DEVICE_GLOBAL_MEM_CACHE_TYPE: cl_device_info = 0x101C;
    CL_DEVICE_GLOBAL_MEM_CACHELINE_SIZE: cl_device_info = 0x101D;
    CL_DEVICE_GLOBAL_MEM_CACHE_SIZE: cl_device_info = 0x101E;
    CL_DEVICE_GLOBAL_MEM_SIZE: cl_device_info = 0x101F;
    CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE: cl_device_info = 0x1020;
    CL_DEVICE_MAX_CONSTANT_ARGS: cl_device_info = 0x1021;
    CL_DEVICE_LOCAL_MEM_TYPE: cl_device_info = 0x1022;
    CL_DEVICE_LOCAL_MEM_SIZE: cl_device_info = 0x1023;
    CL_DEVICE_ERROR_CORRECTION_SUPPORT: cl_device_info = 0x1024;
    CL_DEVICE_PROFILING_TIMER_RESOLUTION: cl_device_info = 0x1025;
    CL_DEVICE_ENDIAN_LITTLE: cl_device_info = 0x1026;
    CL_DEVICE_AVAILABLE: cl_device_info = 0x1027;
    CL_DEVICE_COMPILER_AVAILABLE: cl_device_info = 0x1028;
    CL_DEVICE_EXECUTION_CAPABILITIES: cl_device_info = 0x1029;
    CL_DEVICE_QUEUE_PROPERTIES: cl_device_info = 0x102A;
    CL_DEVICE_NAME: cl_device_info = 0x102B;
    CL_DEVICE_VENDOR: cl_device_info = 0x102C;
    CL_DRIVER_VERSION: cl_device_info = 0x102D;
    CL_DEVICE_PROFILE: cl_device_info = 0x102E;
    CL_DEVICE_VERSION: cl_device_info = 0x102F;
    CL_DEVICE_EXTENSIONS: cl_device_info = 0x1030;
    CL_DEVICE_PLATFORM: cl_device_info = 0x1031;
    CL_DEVICE_DOUBLE_FP_CONFIG: cl_device_info = 0x1032;
    CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF: cl_device_info = 0x1034;
    CL_DEVICE_HOST_UNIFIED_MEMORY: cl_device_info = 0x1035;
    CL_DEVICE_NATIVE_VECTOR_WIDTH_CHAR: cl_device_info = 0x1036;
    CL_DEVICE_NATIVE_VECTOR_WIDTH_SHORT: cl_device_info = 0x1037;
    CL_DEVICE_NATIVE_VECTOR_WIDTH_INT: cl_device_info = 0x1038;
    CL_DEVICE_NATIVE_VECTOR_WIDTH_LONG: cl_device_info = 0x1039;
    CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT: cl_device_info = 0x103A;
    CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE: cl_device_info = 0x103B;
    CL_DEVICE_NATIVE_VECTOR_WIDTH_HALF: cl_device_info = 0x103C;
    CL_DEVICE_OPENCL_C_VERSION: cl_device_info = 0x103D;
    CL_DEVICE_LINKER_AVAILABLE: cl_device_info = 0x103E;
    CL_DEVICE_BUILT_IN_KERNELS: cl_device_info = 0x103F;
    CL_DEVICE_IMAGE_MAX_BUFFER_SIZE: cl_device_info = 0x1040;
    CL_DEVICE_IMAGE_MAX_ARRAY_SIZE: cl_device_info = 0x1041;
    CL_DEVICE_PARENT_DEVICE: cl_device_info = 0x1042;
    CL_DEVICE_PARTITION_MAX_SUB_DEVICES: cl_device_info = 0x1043;
    CL_DEVICE_PARTITION_PROPERTIES: cl_device_info = 0x1044;
    CL_DEVICE_PARTITION_AFFINITY_DOMAIN: cl_device_info = 0x1045;
    CL_DEVICE_PARTITION_TYPE: cl_device_info = 0x1046;
    CL_DEVICE_REFERENCE_COUNT: cl_device_info = 0x1047;
    CL_DEVICE_PREFERRED_INTEROP_USER_SYNC: cl_device_info = 0x1048;
    CL_DEVICE_PRINTF_BUFFER_SIZE: cl_device_info = 0x1049;
    CL_DEVICE_IMAGE_PITCH_ALIGNMENT: cl_device_info = 0x104A;
    CL_DEVICE_IMAGE_BASE_ADDRESS_ALIGNMENT: cl_device_info = 0x104B;
    CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS: cl_device_info = 0x104C;
    CL_DEVICE_MAX_GLOBAL_VARIABLE_SIZE: cl_device_info = 0x104D;
    CL_DEVICE_QUEUE_ON_DEVICE_PROPERTIES: cl_device_info = 0x104E;
    CL_DEVICE_QUEUE_ON_DEVICE_PREFERRED_SIZE: cl_device_info = 0x104F;
    CL_DEVICE_QUEUE_ON_DEVICE_MAX_SIZE: cl_device_info = 0x1050;
    CL_DEVICE_MAX_ON_DEVICE_QUEUES: cl_device_info = 0x1051;
    CL_DEVICE_MAX_ON_DEVICE_EVENTS: cl_device_info = 0x1052;
    CL_DEVICE_SVM_CAPABILITIES: cl_device_info = 0x1053;
    CL_DEVICE_GLOBAL_VARIABLE_PREFERRED_TOTAL_SIZE: cl_device_info = 0x1054;
    CL_DEVICE_MAX_PIPE_ARGS: cl_device_info = 0x1055;
    CL_DEVICE_PIPE_MAX_ACTIVE_RESERVATIONS: cl_device_info = 0x1056;
    CL_DEVICE_PIPE_MAX_PACKET_SIZE: cl_device_info = 0x1057;
    CL_DEVICE_PREFERRED_PLATFORM_ATOMIC_ALIGNMENT: cl_device_info = 0x1058;
    CL_DEVICE_PREFERRED_GLOBAL_ATOMIC_ALIGNMENT: cl_device_info = 0x1059;
    CL_DEVICE_PREFERRED_LOCAL_ATOMIC_ALIGNMENT: cl_device_info = 0x105A;
    CL_DEVICE_IL_VERSION: cl_device_info = 0x105B;
    CL_DEVICE_MAX_NUM_SUB_GROUPS: cl_device_info = 0x105C;
    CL_DEVICE_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS: cl_device_info = 0x105D;
    CL_DEVICE_NUMERIC_VERSION: cl_device_info = 0x105E;
    CL_DEVICE_EXTENSIONS_WITH_VERSION: cl_device_info = 0x1060;
    CL_DEVICE_ILS_WITH_VERSION: cl_device_info = 0x1061;
    CL_DEVICE_BUILT_IN_KERNELS_WITH_VERSION: cl_device_info = 0x1062;
    CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES: cl_device_info = 0x1063;
    CL_DEVICE_ATOMIC_FENCE_CAPABILITIES: cl_device_info = 0x1064;
    CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT: cl_device_info = 0x1065;
    CL_DEVICE_OPENCL_C_ALL_VERSIONS: cl_device_info = 0x1066;
    CL_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE: cl_device_info = 0x1067;
    CL_DEVICE_WORK_GROUP_COLLECTIVE_FUNCTIONS_SUPPORT: cl_device_info = 0x1068;
    CL_DEVICE_GENERIC_ADDRESS_SPACE_SUPPORT: cl_device_info = 0x1069;
    CL_DEVICE_OPENCL_C_FEATURES: cl_device_info = 0x106F;
    CL_DEVICE_DEVICE_ENQUEUE_CAPABILITIES: cl_device_info = 0x1070;
    CL_DEVICE_PIPE_SUPPORT: cl_device_info = 0x1071;
    CL_DEVICE_LATEST_CONFORMANCE_VERSION_PASSED: cl_device_info = 0x1072;

    CL_EXEC_KERNEL: cl_bitfield = 1 << 0;
    CL_QUEUE_PROFILING_ENABLE: cl_bitfield = 1 << 1;
}

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
    CL_DEVICE_NOT_AVAILABLE: cl_int = -2;
    CL_COMPILER_NOT_AVAILABLE: cl_int = -3;
    CL_BUILD_PROGRAM_FAILURE: cl_int = -11;
    CL_COMPILE_PROGRAM_FAILURE: cl_int = -15;
    CL_LINK_PROGRAM_FAILURE: cl_int = -17;
    CL_INVALID_BUILD_OPTIONS: cl_int = -43;
    CL_INVALID_COMPILER_OPTIONS: cl_int = -66;
    CL_INVALID_LINKER_OPTIONS: cl_int = -67;
    CL_INVALID_WORK_GROUP_SIZE: cl_int = -54;
    CL_MEM_OBJECT_ALLOCATION_FAILURE: cl_int = -4;
    CL_OUT_OF_RESOURCES: cl_int = -5;
    CL_OUT_OF_HOST_MEMORY: cl_int = -6;
    CL_MEM_COPY_OVERLAP: cl_int = -8;
    CL_MAP_FAILURE: cl_int = -12;
    CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: cl_int = -14;
    CL_INVALID_VALUE: cl_int = -30;
    CL_INVALID_DEVICE_TYPE: cl_int = -31;
    CL_INVALID_PLATFORM: cl_int = -32;
    CL_INVALID_DEVICE: cl_int = -33;
    CL_INVALID_PROPERTY: cl_int = -64;
    CL_INVALID_SPEC_ID: cl_int = -71;
    CL_INVALID_CONTEXT: cl_int = -34;
    CL_INVALID_COMMAND_QUEUE: cl_int = -36;
    CL_INVALID_HOST_PTR: cl_int = -37;
    CL_INVALID_MEM_OBJECT: cl_int = -38;
    CL_INVALID_BINARY: cl_int = -42;
    CL_INVALID_PROGRAM: cl_int = -44;
    CL_INVALID_PROGRAM_EXECUTABLE: cl_int = -45;
    CL_INVALID_KERNEL_NAME: cl_int = -46;
    CL_INVALID_KERNEL: cl_int = -48;
    CL_INVALID_ARG_INDEX: cl_int = -49;
    CL_INVALID_ARG_VALUE: cl_int = -50;
    CL_INVALID_ARG_SIZE: cl_int = -51;
    CL_INVALID_KERNEL_ARGS: cl_int = -52;
    CL_INVALID_WORK_DIMENSION: cl_int = -53;
    CL_INVALID_GLOBAL_WORK_SIZE: cl_int = -63;
    CL_INVALID_EVENT_WAIT_LIST: cl_int = -57;
    CL_INVALID_EVENT: cl_int = -58;
    CL_INVALID_OPERATION: cl_int = -59;
    CL_INVALID_BUFFER_SIZE: cl_int = -61;
    CL_MISALIGNED_SUB_BUFFER_OFFSET: cl_int = -13;
    CL_BUFFER_CREATE_TYPE_REGION: cl_uint = 0x1220;

    CL_FALSE: cl_bool = 0;
    CL_TRUE: cl_bool = 1;
    CL_NONE: cl_uint = 0;
    CL_READ_WRITE_CACHE: cl_uint = 0x2;
    CL_LOCAL: cl_uint = 0x1;
    CL_GLOBAL: cl_uint = 0x2;
    CL_FP_DENORM: cl_bitfield = 0x1;
    CL_FP_INF_NAN: cl_bitfield = 0x2;
    CL_FP_ROUND_TO_NEAREST: cl_bitfield = 0x4;
    CL_FP_FMA: cl_bitfield = 0x20;

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
    CL_DEVICE_HALF_FP_CONFIG: cl_device_info = 0x1033;
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
    CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE: cl_bitfield = 1 << 0;
    CL_QUEUE_PROFILING_ENABLE: cl_bitfield = 1 << 1;

    CL_CONTEXT_REFERENCE_COUNT: cl_uint = 0x1080;
    CL_CONTEXT_DEVICES: cl_uint = 0x1081;
    CL_CONTEXT_PROPERTIES: cl_uint = 0x1082;
    CL_CONTEXT_NUM_DEVICES: cl_uint = 0x1083;
    CL_CONTEXT_PLATFORM: isize = 0x1084;

    CL_QUEUE_CONTEXT: cl_uint = 0x1090;
    CL_QUEUE_DEVICE: cl_uint = 0x1091;
    CL_QUEUE_REFERENCE_COUNT: cl_uint = 0x1092;
    CL_QUEUE_PROPERTIES: cl_uint = 0x1093;
    CL_QUEUE_PROPERTIES_ARRAY: cl_uint = 0x1098;

    CL_MEM_READ_WRITE: cl_bitfield = 1 << 0;
    CL_MEM_WRITE_ONLY: cl_bitfield = 1 << 1;
    CL_MEM_READ_ONLY: cl_bitfield = 1 << 2;
    CL_MEM_USE_HOST_PTR: cl_bitfield = 1 << 3;
    CL_MEM_ALLOC_HOST_PTR: cl_bitfield = 1 << 4;
    CL_MEM_COPY_HOST_PTR: cl_bitfield = 1 << 5;
    CL_MEM_HOST_WRITE_ONLY: cl_bitfield = 1 << 7;
    CL_MEM_HOST_READ_ONLY: cl_bitfield = 1 << 8;
    CL_MEM_HOST_NO_ACCESS: cl_bitfield = 1 << 9;
    CL_MEM_OBJECT_BUFFER: cl_uint = 0x10F0;
    CL_MEM_TYPE: cl_uint = 0x1100;
    CL_MEM_FLAGS: cl_uint = 0x1101;
    CL_MEM_SIZE: cl_uint = 0x1102;
    CL_MEM_HOST_PTR: cl_uint = 0x1103;
    CL_MEM_MAP_COUNT: cl_uint = 0x1104;
    CL_MEM_REFERENCE_COUNT: cl_uint = 0x1105;
    CL_MEM_CONTEXT: cl_uint = 0x1106;
    CL_MEM_ASSOCIATED_MEMOBJECT: cl_uint = 0x1107;
    CL_MEM_OFFSET: cl_uint = 0x1108;
    CL_MEM_USES_SVM_POINTER: cl_uint = 0x1109;

    CL_MAP_READ: cl_bitfield = 1 << 0;
    CL_MAP_WRITE: cl_bitfield = 1 << 1;
    CL_MAP_WRITE_INVALIDATE_REGION: cl_bitfield = 1 << 2;
    CL_MIGRATE_MEM_OBJECT_HOST: cl_bitfield = 1 << 0;
    CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED: cl_bitfield = 1 << 1;

    CL_PROGRAM_REFERENCE_COUNT: cl_uint = 0x1160;
    CL_PROGRAM_CONTEXT: cl_uint = 0x1161;
    CL_PROGRAM_NUM_DEVICES: cl_uint = 0x1162;
    CL_PROGRAM_DEVICES: cl_uint = 0x1163;
    CL_PROGRAM_SOURCE: cl_uint = 0x1164;
    CL_PROGRAM_BINARY_SIZES: cl_uint = 0x1165;
    CL_PROGRAM_BINARIES: cl_uint = 0x1166;
    CL_PROGRAM_NUM_KERNELS: cl_uint = 0x1167;
    CL_PROGRAM_KERNEL_NAMES: cl_uint = 0x1168;
    CL_PROGRAM_IL: cl_uint = 0x1169;
    CL_PROGRAM_BUILD_STATUS: cl_uint = 0x1181;
    CL_PROGRAM_BUILD_OPTIONS: cl_uint = 0x1182;
    CL_PROGRAM_BUILD_LOG: cl_uint = 0x1183;
    CL_PROGRAM_BINARY_TYPE: cl_uint = 0x1184;
    CL_BUILD_SUCCESS: cl_int = 0;
    CL_BUILD_NONE: cl_int = -1;
    CL_BUILD_ERROR: cl_int = -2;
    CL_PROGRAM_BINARY_TYPE_NONE: cl_uint = 0x0;
    CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT: cl_uint = 0x1;
    CL_PROGRAM_BINARY_TYPE_EXECUTABLE: cl_uint = 0x4;

    CL_KERNEL_FUNCTION_NAME: cl_uint = 0x1190;
    CL_KERNEL_NUM_ARGS: cl_uint = 0x1191;
    CL_KERNEL_REFERENCE_COUNT: cl_uint = 0x1192;
    CL_KERNEL_CONTEXT: cl_uint = 0x1193;
    CL_KERNEL_PROGRAM: cl_uint = 0x1194;
    CL_KERNEL_ATTRIBUTES: cl_uint = 0x1195;
    CL_KERNEL_WORK_GROUP_SIZE: cl_uint = 0x11B0;
    CL_KERNEL_COMPILE_WORK_GROUP_SIZE: cl_uint = 0x11B1;
    CL_KERNEL_LOCAL_MEM_SIZE: cl_uint = 0x11B2;
    CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE: cl_uint = 0x11B3;
    CL_KERNEL_PRIVATE_MEM_SIZE: cl_uint = 0x11B4;

    CL_EVENT_COMMAND_QUEUE: cl_uint = 0x11D0;
    CL_EVENT_COMMAND_TYPE: cl_uint = 0x11D1;
    CL_EVENT_REFERENCE_COUNT: cl_uint = 0x11D2;
    CL_EVENT_COMMAND_EXECUTION_STATUS: cl_uint = 0x11D3;
    CL_EVENT_CONTEXT: cl_uint = 0x11D4;
    CL_COMPLETE: cl_int = 0x0;
    CL_RUNNING: cl_int = 0x1;
    CL_SUBMITTED: cl_int = 0x2;
    CL_QUEUED: cl_int = 0x3;
    CL_COMMAND_USER: cl_uint = 0x1204;
    CL_COMMAND_NDRANGE_KERNEL: cl_uint = 0x11F0;
    CL_COMMAND_TASK: cl_uint = 0x11F1;
    CL_COMMAND_READ_BUFFER: cl_uint = 0x11F3;
    CL_COMMAND_WRITE_BUFFER: cl_uint = 0x11F4;
    CL_COMMAND_COPY_BUFFER: cl_uint = 0x11F5;
    CL_COMMAND_MAP_BUFFER: cl_uint = 0x11FB;
    CL_COMMAND_UNMAP_MEM_OBJECT: cl_uint = 0x11FD;
    CL_COMMAND_MARKER: cl_uint = 0x11FE;
    CL_COMMAND_READ_BUFFER_RECT: cl_uint = 0x1201;
    CL_COMMAND_WRITE_BUFFER_RECT: cl_uint = 0x1202;
    CL_COMMAND_COPY_BUFFER_RECT: cl_uint = 0x1203;
    CL_COMMAND_BARRIER: cl_uint = 0x1205;
    CL_COMMAND_MIGRATE_MEM_OBJECTS: cl_uint = 0x1206;
    CL_COMMAND_FILL_BUFFER: cl_uint = 0x1207;
    CL_PROFILING_COMMAND_QUEUED: cl_uint = 0x1280;
    CL_PROFILING_COMMAND_SUBMIT: cl_uint = 0x1281;
    CL_PROFILING_COMMAND_START: cl_uint = 0x1282;
    CL_PROFILING_COMMAND_END: cl_uint = 0x1283;
    CL_PROFILING_COMMAND_COMPLETE: cl_uint = 0x1284;
    CL_PROFILING_INFO_NOT_AVAILABLE: cl_int = -7;

    CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL: cl_uint = 0x4190;
    CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL: cl_uint = 0x4191;
    CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL: cl_uint = 0x4192;
    CL_DEVICE_CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL: cl_uint = 0x4193;
    CL_DEVICE_SHARED_SYSTEM_MEM_CAPABILITIES_INTEL: cl_uint = 0x4194;
    CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL: cl_bitfield = 1 << 0;
    CL_MEM_ALLOC_FLAGS_INTEL: cl_ulong = 0x4195;
    CL_MEM_TYPE_UNKNOWN_INTEL: cl_uint = 0x4196;
    CL_MEM_TYPE_HOST_INTEL: cl_uint = 0x4197;
    CL_MEM_TYPE_DEVICE_INTEL: cl_uint = 0x4198;
    CL_MEM_TYPE_SHARED_INTEL: cl_uint = 0x4199;
    CL_MEM_ALLOC_TYPE_INTEL: cl_uint = 0x419A;
    CL_MEM_ALLOC_BASE_PTR_INTEL: cl_uint = 0x419B;
    CL_MEM_ALLOC_SIZE_INTEL: cl_uint = 0x419C;
    CL_MEM_ALLOC_DEVICE_INTEL: cl_uint = 0x419D;
    CL_KERNEL_EXEC_INFO_INDIRECT_HOST_ACCESS_INTEL: cl_uint = 0x4200;
    CL_KERNEL_EXEC_INFO_INDIRECT_DEVICE_ACCESS_INTEL: cl_uint = 0x4201;
    CL_KERNEL_EXEC_INFO_INDIRECT_SHARED_ACCESS_INTEL: cl_uint = 0x4202;
    CL_KERNEL_EXEC_INFO_USM_PTRS_INTEL: cl_uint = 0x4203;
    CL_COMMAND_MEMFILL_INTEL: cl_uint = 0x4204;
    CL_COMMAND_MEMCPY_INTEL: cl_uint = 0x4205;
    CL_COMMAND_MIGRATEMEM_INTEL: cl_uint = 0x4206;
    CL_COMMAND_MEMADVISE_INTEL: cl_uint = 0x4207;
}

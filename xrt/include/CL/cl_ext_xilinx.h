/* accelhost's XRT door: the OpenCL extensions of Xilinx's cards, which XRT installs beside
 * its native API for Vitis OpenCL hosts (the `xcl2` helper includes it after the Khronos
 * headers). The names and values are XRT's, so a host built against this header sends the
 * OpenCL library the same numbers as one built against XRT's.
 *
 * It holds types, constants and the prototypes of the functions XRT's OpenCL library adds
 * (xclGetMemObjectFd, xclGetComputeUnitInfo, ...). No library of accelhost's defines those:
 * a program reaches them, as Vitis' `xcl2` helper does, through
 * clGetExtensionFunctionAddressForPlatform, which answers NULL for a platform without them;
 * one that calls them by name does not link.
 *
 * Compiles as C (C11: the anonymous members of cl_mem_ext_ptr_t) and as C++, with the
 * OpenCL headers (CL/cl_ext.h, found on the compiler's include path) before or after it. */
#ifndef ACCELHOST_CL_EXT_XILINX_H
#define ACCELHOST_CL_EXT_XILINX_H

/* As XRT's header does: Vitis hosts call OpenCL 1.x entry points that later headers mark
 * deprecated (clCreateCommandQueue, ...), and build without deprecation warnings. These
 * take effect only when this header comes before the first OpenCL header. */
#ifndef CL_USE_DEPRECATED_OPENCL_1_0_APIS
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif

#include <CL/cl_ext.h>

/* The anonymous structs below are C11; C++ compilers take them as an extension, which
 * __extension__ keeps quiet under -pedantic. */
#if defined(__GNUC__) || defined(__clang__)
#define ACCELHOST_CL_EXTENSION __extension__
#else
#define ACCELHOST_CL_EXTENSION
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Passed as clCreateBuffer's host_ptr when its flags carry CL_MEM_EXT_PTR_XILINX: says where
 * the buffer lives. Three views of the same three words:
 *   flags, obj, param        the original names;
 *   banks, host_ptr, unused1 a bank: XCL_MEM_DDR_BANKn bits, or a memory index (of the
 *                            xclbin's MEM_TOPOLOGY) with XCL_MEM_TOPOLOGY set; host_ptr is
 *                            the host memory for CL_MEM_USE_HOST_PTR (or NULL); unused1 NULL;
 *   argidx, host_ptr_, kernel the bank that argument argidx of kernel is connected to.
 * The top 8 bits of the first word are the XCL_MEM_EXT_* / XCL_MEM_TOPOLOGY flags. */
typedef struct cl_mem_ext_ptr_t {
  ACCELHOST_CL_EXTENSION union {
    ACCELHOST_CL_EXTENSION struct {
      unsigned int flags;
      void* obj;
      void* param;
    };
    ACCELHOST_CL_EXTENSION struct {
      unsigned int banks;
      void* host_ptr;
      void* unused1;
    };
    ACCELHOST_CL_EXTENSION struct {
      unsigned int argidx;
      void* host_ptr_;
      cl_kernel kernel;
    };
  };
} cl_mem_ext_ptr_t;

#undef ACCELHOST_CL_EXTENSION

/* Bit 31 of the values below is XRT's int with only the sign bit set, (-2147483647 - 1):
 * the same type and value as XRT's (1 << 31), so it widens the same way. In a cl_mem_flags
 * CL_MEM_EXT_PTR_XILINX is then 0xffffffff80000000, the number hosts built against XRT's
 * header pass (an OpenCL library that honours it tests bit 31); in cl_mem_ext_ptr_t's
 * unsigned first word XCL_MEM_TOPOLOGY is 0x80000000. */

/* cl_mem_flags: host_ptr is a cl_mem_ext_ptr_t. */
#define CL_MEM_EXT_PTR_XILINX (-2147483647 - 1)
/* cl_mem_flags: a buffer over a compute unit's registers. */
#define CL_MEM_REGISTER_MAP (1 << 27)

/* The cl_int XRT's OpenCL answers for what it does not implement. */
#define CL_XILINX_UNIMPLEMENTED (-20)

/* A cl_device_partition_property: one sub-device per connectivity group. */
#define CL_DEVICE_PARTITION_BY_CONNECTIVITY (-2147483647 - 1)

/* Banks for cl_mem_ext_ptr_t.banks (XCL_MEM_LEGACY: these bits, no memory index). */
#define XCL_MEM_DDR_BANK0 (1 << 0)
#define XCL_MEM_DDR_BANK1 (1 << 1)
#define XCL_MEM_DDR_BANK2 (1 << 2)
#define XCL_MEM_DDR_BANK3 (1 << 3)
#define XCL_MEM_LEGACY 0x0
/* The low bits are a memory index of the xclbin's MEM_TOPOLOGY. */
#define XCL_MEM_TOPOLOGY (-2147483647 - 1)
/* A buffer other devices reach over PCIe peer-to-peer. */
#define XCL_MEM_EXT_P2P_BUFFER (1 << 30)
/* A buffer in host memory the card reaches. */
#define XCL_MEM_EXT_HOST_ONLY (1 << 29)

/* clGetKernelInfo: the compute units of a kernel object (cl_uint), their base addresses
 * (size_t[]). */
#define CL_KERNEL_COMPUTE_UNIT_COUNT 0x1300
#define CL_KERNEL_INSTANCE_BASE_ADDRESS 0x1301
/* clGetKernelArgInfo: an argument's register offset in its compute unit (size_t). */
#define CL_KERNEL_ARG_OFFSET 0x1320
/* clGetMemObjectInfo: the memory index a buffer lives in (int). */
#define CL_MEM_BANK 0x1109
/* clGetProgramBuildInfo: what the program was built for (cl_program_target_type). */
#define CL_PROGRAM_TARGET_TYPE 0x1110
/* clGetDeviceInfo: the card's PCI address (char[]), its XRT device handle (void*), whether
 * it has no DMA engine (cl_bool), how many kernel DMA engines it has (cl_uint). */
#define CL_DEVICE_PCIE_BDF 0x1120
#define CL_DEVICE_HANDLE 0x1121
#define CL_DEVICE_NODMA 0x1122
#define CL_DEVICE_KDMA_COUNT 0x1123

typedef cl_uint cl_program_target_type;
#define CL_PROGRAM_TARGET_TYPE_NONE 0x0
#define CL_PROGRAM_TARGET_TYPE_HW 0x1
#define CL_PROGRAM_TARGET_TYPE_SW_EMU 0x2
#define CL_PROGRAM_TARGET_TYPE_HW_EMU 0x4

/* What xclGetComputeUnitInfo takes (XRT's OpenCL library): a compute unit's name (char[]),
 * scheduler index (cl_uint), argument connections (cl_ulong[]), base address (size_t). */
typedef cl_uint xcl_compute_unit_info;
#define XCL_COMPUTE_UNIT_NAME 0x1320
#define XCL_COMPUTE_UNIT_INDEX 0x1321
#define XCL_COMPUTE_UNIT_CONNECTIONS 0x1322
#define XCL_COMPUTE_UNIT_BASE_ADDRESS 0x1323

/* The functions of XRT's OpenCL library (see the top of this file: reached through
 * clGetExtensionFunctionAddressForPlatform, by these names). */

/* Sets or clears `properties` of a queue after its creation; the old ones to
 * `old_properties`. */
extern CL_API_ENTRY cl_int CL_API_CALL clSetCommandQueueProperty(
    cl_command_queue command_queue, cl_command_queue_properties properties, cl_bool enable,
    cl_command_queue_properties* old_properties);
/* The address `device` sees `mem` at, written to `address` (`size`: sizeof(uintptr_t)). */
extern CL_API_ENTRY cl_int CL_API_CALL xclGetMemObjDeviceAddress(cl_mem mem, cl_device_id device,
                                                                 size_t size, void* address);
/* A file descriptor other devices import `mem` by (PCIe peer-to-peer). */
extern CL_API_ENTRY cl_int CL_API_CALL xclGetMemObjectFd(cl_mem mem, int* fd);
/* A buffer of `context` on `device` over the memory another device exported as `fd`. */
extern CL_API_ENTRY cl_int CL_API_CALL xclGetMemObjectFromFd(cl_context context, cl_device_id device,
                                                             cl_mem_flags flags, int fd, cl_mem* mem);
/* XRT's own device object behind `device`. */
struct xrt_device;
extern CL_API_ENTRY struct xrt_device* CL_API_CALL xclGetXrtDevice(cl_device_id device, cl_int* errcode);
/* What `param_name` (XCL_COMPUTE_UNIT_*) says of compute unit `cu_id` of `kernel` (0 to
 * CL_KERNEL_COMPUTE_UNIT_COUNT - 1), as clGetKernelInfo answers. */
extern CL_API_ENTRY cl_int CL_API_CALL xclGetComputeUnitInfo(cl_kernel kernel, cl_uint cu_id,
                                                             xcl_compute_unit_info param_name,
                                                             size_t param_value_size, void* param_value,
                                                             size_t* param_value_size_ret);

/* Four cl_uint fill words for an image, as XRT's header names the type. */
typedef struct _cl_image_filler_xilinx {
  cl_uint t0;
  cl_uint t1;
  cl_uint t2;
  cl_uint t3;
} cl_image_fillier_xilinx;

#ifdef __cplusplus
}
#endif

#endif

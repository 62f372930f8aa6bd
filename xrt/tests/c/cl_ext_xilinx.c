/* A C program of a Vitis OpenCL host's kind: it includes XRT's <CL/cl_ext_xilinx.h> after the
 * Khronos headers and fills cl_mem_ext_ptr_t each way the hosts do (a bank by its bit, a
 * memory index of the topology with host memory, a kernel's argument), with the flags they
 * pass to clCreateBuffer. Each name must be XRT's number (the literals here are XRT's) and
 * each view of the struct the same words. No OpenCL call is made: this checks what a host
 * builds against. Exits 0 when every check held. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <CL/cl.h>
#include <CL/cl_ext_xilinx.h>

static int failed = 0;

static void expect(int ok, const char* what) {
  printf("%s: %s\n", what, ok ? "ok" : "FAILED");
  if (!ok) ++failed;
}

int main(void) {
  static int host[64];
  cl_mem_ext_ptr_t bank;
  cl_mem_ext_ptr_t topology;
  cl_mem_ext_ptr_t argument;
  cl_mem_flags flags = CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR | CL_MEM_EXT_PTR_XILINX;

  bank.flags = XCL_MEM_DDR_BANK1;
  bank.obj = NULL;
  bank.param = 0;
  topology.banks = 3 | XCL_MEM_TOPOLOGY;
  topology.host_ptr = host;
  topology.unused1 = NULL;
  argument.argidx = 2;
  argument.host_ptr_ = NULL;
  argument.kernel = (cl_kernel)0;

  expect(offsetof(cl_mem_ext_ptr_t, flags) == 0 && offsetof(cl_mem_ext_ptr_t, banks) == 0 &&
             offsetof(cl_mem_ext_ptr_t, argidx) == 0,
         "flags, banks and argidx are the first word");
  expect(offsetof(cl_mem_ext_ptr_t, obj) == sizeof(void*) &&
             offsetof(cl_mem_ext_ptr_t, host_ptr) == sizeof(void*) &&
             offsetof(cl_mem_ext_ptr_t, host_ptr_) == sizeof(void*),
         "obj, host_ptr and host_ptr_ the second");
  expect(offsetof(cl_mem_ext_ptr_t, param) == 2 * sizeof(void*) &&
             offsetof(cl_mem_ext_ptr_t, unused1) == 2 * sizeof(void*) &&
             offsetof(cl_mem_ext_ptr_t, kernel) == 2 * sizeof(void*),
         "param, unused1 and kernel the third");
  expect(sizeof(cl_mem_ext_ptr_t) == 3 * sizeof(void*), "three words in all");
  expect(bank.banks == 2u && topology.flags == 0x80000003u && topology.obj == (void*)host &&
             argument.flags == 2u && argument.param == NULL,
         "each view reads the words the others wrote");

  expect(flags == (0xffffffff80000000ull | 0x4u | 0x8u), "CL_MEM_EXT_PTR_XILINX in cl_mem_flags as XRT's");
  expect((flags & CL_MEM_EXT_PTR_XILINX) != 0 && (flags & CL_MEM_READ_ONLY) != 0,
         "and tested as hosts test it");
  expect(XCL_MEM_DDR_BANK0 == 1 && XCL_MEM_DDR_BANK1 == 2 && XCL_MEM_DDR_BANK2 == 4 &&
             XCL_MEM_DDR_BANK3 == 8 && XCL_MEM_LEGACY == 0,
         "the DDR bank bits");
  expect((unsigned int)XCL_MEM_TOPOLOGY == 0x80000000u && XCL_MEM_EXT_P2P_BUFFER == 0x40000000 &&
             XCL_MEM_EXT_HOST_ONLY == 0x20000000,
         "the top bits of the first word");
  expect(CL_MEM_REGISTER_MAP == 0x8000000 && CL_XILINX_UNIMPLEMENTED == -20 &&
             (cl_device_partition_property)CL_DEVICE_PARTITION_BY_CONNECTIVITY == (cl_device_partition_property)INT32_MIN,
         "CL_MEM_REGISTER_MAP, CL_XILINX_UNIMPLEMENTED, CL_DEVICE_PARTITION_BY_CONNECTIVITY");
  expect(CL_KERNEL_COMPUTE_UNIT_COUNT == 0x1300 && CL_KERNEL_INSTANCE_BASE_ADDRESS == 0x1301 &&
             CL_KERNEL_ARG_OFFSET == 0x1320 && CL_MEM_BANK == 0x1109 && CL_PROGRAM_TARGET_TYPE == 0x1110,
         "the kernel, argument, buffer and program queries");
  expect(CL_DEVICE_PCIE_BDF == 0x1120 && CL_DEVICE_HANDLE == 0x1121 && CL_DEVICE_NODMA == 0x1122 &&
             CL_DEVICE_KDMA_COUNT == 0x1123,
         "the device queries");
  expect(CL_PROGRAM_TARGET_TYPE_NONE == 0 && CL_PROGRAM_TARGET_TYPE_HW == 1 &&
             CL_PROGRAM_TARGET_TYPE_SW_EMU == 2 && CL_PROGRAM_TARGET_TYPE_HW_EMU == 4 &&
             sizeof(cl_program_target_type) == sizeof(cl_uint),
         "the program target types");
  expect(XCL_COMPUTE_UNIT_NAME == 0x1320 && XCL_COMPUTE_UNIT_INDEX == 0x1321 &&
             XCL_COMPUTE_UNIT_CONNECTIONS == 0x1322 && XCL_COMPUTE_UNIT_BASE_ADDRESS == 0x1323 &&
             sizeof(xcl_compute_unit_info) == sizeof(cl_uint),
         "the compute unit queries");
  printf("%d failed\n", failed);
  return failed == 0 ? 0 : 1;
}

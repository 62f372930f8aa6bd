// A C++ program of a Vitis OpenCL host's kind: it includes XRT's <CL/cl_ext_xilinx.h> after
// the OpenCL headers and builds cl_mem_ext_ptr_t the ways the hosts do: a vector of them
// filled field by field, one initialized from a brace list, a kernel's argument; and it types
// pointers to Xilinx's extension functions from their prototypes, as `xcl2` does before it
// asks the platform for them. No OpenCL call is made (this checks what a host builds
// against); exits 0 when every check held.
//
// With ACCELHOST_XCL2 defined it includes what the `xcl2` helper does, in its order and with
// its settings (the Khronos C++ bindings, <CL/cl2.hpp>, first); the test only compiles it so,
// since the bindings' default objects need an OpenCL library at link time.
#ifdef ACCELHOST_XCL2
#define CL_HPP_CL_1_2_DEFAULT_BUILD
#define CL_HPP_TARGET_OPENCL_VERSION 120
#define CL_HPP_MINIMUM_OPENCL_VERSION 120
#define CL_HPP_ENABLE_PROGRAM_CONSTRUCTION_FROM_ARRAY_COMPATIBILITY 1
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl2.hpp>
#else
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif
#include <CL/cl_ext_xilinx.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include "expect.hpp"

namespace {

// As xcl2's P2P and Ext classes: the types come from the prototypes, the functions from
// clGetExtensionFunctionAddressForPlatform (not called here).
decltype(&xclGetMemObjectFd) get_mem_object_fd = nullptr;
decltype(&xclGetMemObjectFromFd) get_mem_object_from_fd = nullptr;
decltype(&xclGetComputeUnitInfo) get_compute_unit_info = nullptr;

}  // namespace

int main() {
  std::vector<int> source(1024, 7);
  std::vector<cl_mem_ext_ptr_t> per_cu(4);
  for (unsigned i = 0; i < per_cu.size(); ++i) {
    per_cu[i].obj = source.data();
    per_cu[i].param = 0;
    per_cu[i].flags = i | XCL_MEM_TOPOLOGY;
  }
  cl_mem_ext_ptr_t p2p = {XCL_MEM_EXT_P2P_BUFFER, nullptr, 0};
  cl_mem_ext_ptr_t host_only;
  host_only.flags = XCL_MEM_EXT_HOST_ONLY;
  host_only.obj = nullptr;
  host_only.param = 0;
  cl_kernel kernel = nullptr;
  cl_mem_ext_ptr_t argument;
  argument.argidx = 1;
  argument.host_ptr_ = source.data();
  argument.kernel = kernel;
  const cl_mem_flags flags = CL_MEM_USE_HOST_PTR | CL_MEM_EXT_PTR_XILINX | CL_MEM_READ_ONLY;

  expect(std::is_standard_layout<cl_mem_ext_ptr_t>::value && std::is_trivially_copyable<cl_mem_ext_ptr_t>::value,
         "a plain C struct in C++");
  expect(per_cu[3].banks == 0x80000003u && per_cu[3].host_ptr == source.data() && per_cu[3].unused1 == nullptr,
         "a memory index of the topology, field by field");
  expect(p2p.flags == 0x40000000u && p2p.obj == nullptr && host_only.banks == 0x20000000u,
         "P2P and host-only buffers, from a brace list and field by field");
  expect(argument.flags == 1u && argument.obj == source.data() && argument.param == nullptr,
         "a kernel's argument in the same words");
  expect(flags == 0xffffffff80000000ull + 0x8u + 0x4u, "the flags clCreateBuffer gets, as XRT's header gives them");
  expect(std::is_same<decltype(CL_MEM_EXT_PTR_XILINX), int>::value && std::is_same<decltype(XCL_MEM_TOPOLOGY), int>::value,
         "ints, as XRT's");
  expect(CL_KERNEL_COMPUTE_UNIT_COUNT == 0x1300 && XCL_COMPUTE_UNIT_NAME == 0x1320 && CL_MEM_BANK == 0x1109,
         "the queries");
  expect(std::is_same<decltype(get_mem_object_fd), cl_int (*)(cl_mem, int*)>::value &&
             std::is_same<decltype(get_mem_object_from_fd),
                          cl_int (*)(cl_context, cl_device_id, cl_mem_flags, int, cl_mem*)>::value &&
             std::is_same<decltype(get_compute_unit_info), cl_int (*)(cl_kernel, cl_uint, xcl_compute_unit_info,
                                                                      size_t, void*, size_t*)>::value &&
             get_mem_object_fd == nullptr && get_mem_object_from_fd == nullptr && get_compute_unit_info == nullptr,
         "the extension functions' types, as xcl2 takes them");
  std::cout << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

// A program of XRT's native C++ API in the hello-world flow: xrt::device 0, load_xclbin,
// xrt::kernel, one xrt::bo per buffer argument in its group, map<unsigned*>() and fill,
// sync to the card, krnl(args...), wait, sync back, compare; then an xrt::xclbin loaded by
// object, a run built argument by argument on a compute unit chosen by name, and the errors thrown for what a program gets
// wrong. Exits 0 when every check held. argv[1]: the xclbin.
#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "experimental/xrt_xclbin.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_kernel.h"

#include "expect.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " XCLBIN\n";
    return 2;
  }
  const int count = 4096;
  const size_t bytes = sizeof(unsigned) * count;
  try {
    auto device = xrt::device(0);
    auto uuid = device.load_xclbin(argv[1]);
    expect(static_cast<bool>(uuid) && uuid == device.get_xclbin_uuid(), "the xclbin's uuid");
    auto krnl = xrt::kernel(device, uuid, "vadd");
    auto in1 = xrt::bo(device, bytes, krnl.group_id(0));
    auto in2 = xrt::bo(device, bytes, krnl.group_id(1));
    auto out = xrt::bo(device, bytes, xrt::bo::flags::normal, krnl.group_id(2));
    auto a = in1.map<unsigned*>();
    auto b = in2.map<unsigned*>();
    auto sum = out.map<unsigned*>();
    std::vector<unsigned> expected(count);
    for (int i = 0; i < count; ++i) {
      a[i] = 5u * static_cast<unsigned>(i);
      b[i] = 0x10000u - static_cast<unsigned>(i);
      sum[i] = 0;
      expected[i] = a[i] + b[i];
    }
    in1.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    in2.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    auto run = krnl(in1, in2, out, count);
    expect(run.wait() == ERT_CMD_STATE_COMPLETED, "the run completed");
    out.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    expect(std::memcmp(sum, expected.data(), bytes) == 0, "vadd is exact");
    std::cout << "C++ vadd of " << count << " elements: "
              << (std::memcmp(sum, expected.data(), bytes) == 0 ? "exact" : "wrong") << "\n";

    // An xclbin loaded by object, and a run set argument by argument.
    auto image = xrt::xclbin(std::string(argv[1]));
    expect(image.get_uuid() == uuid, "xrt::xclbin reads the same uuid");
    expect(device.load_xclbin(image) == uuid, "and loads it");
    auto krnl2 = xrt::kernel(device, uuid, "vadd:{vadd_1}");
    std::vector<unsigned> ones(count, 1u);
    in2.write(ones.data());
    in2.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    xrt::run steps(krnl2);
    steps.set_arg(0, in1);
    steps.set_arg(1, in2);
    steps.set_arg(2, out);
    steps.set_arg(3, count);
    steps.start();
    expect(steps.wait(std::chrono::milliseconds(10000)) == ERT_CMD_STATE_COMPLETED, "a timed wait");
    out.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    std::vector<unsigned> back(count);
    out.read(back.data());
    bool exact = true;
    for (int i = 0; i < count; ++i) exact = exact && back[i] == a[i] + 1u;
    expect(exact, "the run set argument by argument is exact");

    // Errors are exceptions with errno's code.
    expect(throws(EINVAL, [&] { krnl.group_id(3); }), "a value argument has no group");
    expect(throws(EINVAL, [&] { steps.set_arg(3, static_cast<long long>(count)); }),
           "a value of the wrong size");
    expect(throws(EINVAL, [&] { out.sync(XCL_BO_SYNC_BO_FROM_DEVICE, bytes, 4); }), "a sync past the end");
    expect(throws(ENODEV, [] { xrt::device(99); }), "no card 99");
    expect(throws(ENOENT, [&] { xrt::kernel(device, uuid, "vmul"); }), "a kernel the xclbin lacks");
    expect(static_cast<bool>(xrt::kernel(device, uuid, "vadd:{vadd_1,vadd_2}")), "both compute units by name");
    expect(throws(ENOENT, [&] { xrt::kernel(device, uuid, "vadd:{vadd_9}"); }), "a compute unit the xclbin lacks");
    expect(throws(EINVAL, [&] { xrt::kernel(device, uuid, "vadd:vadd_1"); }), "compute units without braces");
    auto part = xrt::bo(out, 64, 128);
    expect(part.address() == out.address() + 128 && part.size() == 64, "a sub-buffer");
  } catch (const std::exception& error) {
    std::cerr << "unexpected exception: " << error.what() << "\n";
    return 1;
  }
  std::cout << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

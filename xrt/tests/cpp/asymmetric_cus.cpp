// A host in the style of Vitis_Accel_Examples' multiple_cus_asymmetrical_xrt: vadd has four
// compute units, each wired to a DDR bank of its own, and the host opens one kernel per
// unit by name ("vadd:{vadd_1}" ...), places each unit's buffers in the banks that kernel's
// group_id names, runs all four at once on a quarter of the data each, and checks the sums.
// Exits 0 when every check held. argv[1]: the xclbin (4 units, 4 banks; unit n on bank n-1).
#include <iostream>
#include <string>
#include <vector>

#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_kernel.h"

#include "expect.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " XCLBIN\n";
    return 2;
  }
  const int num_cu = 4;
  const int chunk = 4096;
  const size_t bytes = sizeof(int) * chunk;
  try {
    auto device = xrt::device(0);
    auto uuid = device.load_xclbin(argv[1]);
    expect(xrt::kernel(device, uuid, "vadd").group_id(0) == 0, "vadd's group is its first unit's");
    expect(xrt::kernel(device, uuid, "vadd:{vadd_3,vadd_1}").group_id(1) == 2,
           "of several units, the first named");

    std::vector<xrt::kernel> krnl;
    std::vector<xrt::bo> in1, in2, out;
    std::vector<xrt::run> runs;
    for (int i = 0; i < num_cu; ++i) {
      std::string name = "vadd:{vadd_" + std::to_string(i + 1) + "}";
      krnl.push_back(xrt::kernel(device, uuid, name));
      bool own = true;
      for (int arg = 0; arg < 3; ++arg) own = own && krnl[i].group_id(arg) == i;
      expect(own, name + " answers its own bank");
      in1.push_back(xrt::bo(device, bytes, krnl[i].group_id(0)));
      in2.push_back(xrt::bo(device, bytes, krnl[i].group_id(1)));
      out.push_back(xrt::bo(device, bytes, krnl[i].group_id(2)));
      auto a = in1[i].map<int*>();
      auto b = in2[i].map<int*>();
      for (int j = 0; j < chunk; ++j) {
        a[j] = i * chunk + j;
        b[j] = 1000 * (i + 1);
      }
      in1[i].sync(XCL_BO_SYNC_BO_TO_DEVICE);
      in2[i].sync(XCL_BO_SYNC_BO_TO_DEVICE);
    }
    for (int i = 0; i < num_cu; ++i) runs.push_back(krnl[i](in1[i], in2[i], out[i], chunk));
    int wrong = 0;
    for (int i = 0; i < num_cu; ++i) {
      runs[i].wait();
      out[i].sync(XCL_BO_SYNC_BO_FROM_DEVICE);
      auto sum = out[i].map<int*>();
      for (int j = 0; j < chunk; ++j)
        if (sum[j] != i * chunk + j + 1000 * (i + 1)) ++wrong;
    }
    expect(wrong == 0, "four units, each on its own bank, exact");
    std::cout << num_cu << " compute units by name, each on its own bank: " << wrong << " mismatches\n";
  } catch (const std::exception& error) {
    std::cerr << "unexpected exception: " << error.what() << "\n";
    return 1;
  }
  std::cout << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

// A host of XRT's hardware-context flow with run lists: register_xclbin, xrt::hw_context,
// xrt::kernel made in the context, then many small vadds on xrt::runlist: each run's data of
// its own, executed together, checked exact, executed again after new inputs; a failing run
// in the middle of a list, whose wait throws xrt::runlist::command_error, after which the
// program goes on; and the list's rules (states, a run in one list, no start of a listed run,
// no add or reset while executing, a run without its arguments). Exits 0 when every check
// held. argv[1]: the xclbin; argv[2]: how many runs in the list.
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "xrt/experimental/xrt_kernel.h"
#include "xrt/experimental/xrt_xclbin.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_hw_context.h"
#include "xrt/xrt_kernel.h"

#include "expect.hpp"

namespace {

const int small = 1024;

// One vadd's buffers of `count` elements and its run, its arguments set.
struct job {
  int count;
  xrt::bo in1, in2, out;
  xrt::run run;

  job(const xrt::device& device, const xrt::kernel& krnl, unsigned seed, int elements = small)
      : count(elements),
        in1(device, sizeof(unsigned) * elements, krnl.group_id(0)),
        in2(device, sizeof(unsigned) * elements, krnl.group_id(1)),
        out(device, sizeof(unsigned) * elements, krnl.group_id(2)),
        run(krnl) {
    fill(seed);
    run.set_arg(0, in1);
    run.set_arg(1, in2);
    run.set_arg(2, out);
    run.set_arg(3, count);
  }

  void fill(unsigned seed) {
    auto a = in1.map<unsigned*>();
    auto b = in2.map<unsigned*>();
    auto c = out.map<unsigned*>();
    for (int i = 0; i < count; ++i) {
      a[i] = seed * 7919u + static_cast<unsigned>(i);
      b[i] = seed + 3u * static_cast<unsigned>(i);
      c[i] = 0;
    }
    in1.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    in2.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    out.sync(XCL_BO_SYNC_BO_TO_DEVICE);
  }

  // Elements of the output that are not the sum of the inputs.
  int mismatches() {
    out.sync(XCL_BO_SYNC_BO_FROM_DEVICE);
    auto a = in1.map<unsigned*>();
    auto b = in2.map<unsigned*>();
    auto c = out.map<unsigned*>();
    int wrong = 0;
    for (int i = 0; i < count; ++i) wrong += c[i] != a[i] + b[i];
    return wrong;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " XCLBIN RUNS\n";
    return 2;
  }
  const int runs = std::atoi(argv[2]);
  try {
    auto device = xrt::device(0);
    auto uuid = device.register_xclbin(xrt::xclbin(std::string(argv[1])));
    xrt::hw_context context(device, uuid);
    expect(context.get_xclbin_uuid() == uuid && context.get_device().get_handle() == device.get_handle(),
           "the context is the device's and the xclbin's");
    xrt::uuid other;
    expect(throws(ENOENT, [&] { xrt::hw_context(device, other); }),
           "a context of an xclbin the device does not run: ENOENT");
    auto krnl = xrt::kernel(context, "vadd");

    std::vector<std::unique_ptr<job>> jobs;
    for (int r = 0; r < runs; ++r) jobs.emplace_back(new job(device, krnl, static_cast<unsigned>(r)));
    xrt::runlist list(context);
    expect(list.state() == ERT_CMD_STATE_COMPLETED, "an empty list is completed");
    for (auto& j : jobs) list.add(j->run);
    expect(list.state() == ERT_CMD_STATE_NEW, "a list never executed is new");
    list.execute();
    list.wait();
    int wrong = 0;
    for (auto& j : jobs) wrong += j->mismatches();
    std::cout << runs << " runs of one list: " << wrong << " mismatches\n";
    if (wrong != 0) ++failed;
    expect(list.state() == ERT_CMD_STATE_COMPLETED, "a waited list is completed");

    for (int r = 0; r < runs; ++r) jobs[r]->fill(static_cast<unsigned>(1000 + r));
    list.execute();
    expect(list.wait(std::chrono::milliseconds(60000)) == std::cv_status::no_timeout,
           "a timed wait of the list executed again");
    wrong = 0;
    for (auto& j : jobs) wrong += j->mismatches();
    std::cout << "the same list executed again on new inputs: " << wrong << " mismatches\n";
    if (wrong != 0) ++failed;

    // The list's rules.
    expect(throws(EBUSY, [&] { jobs[0]->run.start(); }), "a listed run started on its own: EBUSY");
    xrt::runlist second(context);
    expect(throws(EBUSY, [&] { second.add(jobs[0]->run); }), "a run in two lists: EBUSY");
    xrt::run bare(krnl);
    second.add(bare);
    expect(throws(EINVAL, [&] { second.execute(); }), "a run without its arguments: EINVAL at execute");
    second.reset();
    second.execute();
    expect(second.state() == ERT_CMD_STATE_COMPLETED, "executing an empty list does nothing");

    // While a list executes it takes no runs, no reset and no second execute.
    job big(device, krnl, 5, 4 << 20);
    xrt::runlist busy(context);
    busy.add(big.run);
    busy.execute();
    expect(throws(EBUSY, [&] { busy.add(bare); }), "an add while the list executes: EBUSY");
    expect(throws(EBUSY, [&] { busy.reset(); }), "a reset while the list executes: EBUSY");
    expect(throws(EBUSY, [&] { busy.execute(); }), "an execute while the list executes: EBUSY");
    busy.wait();
    expect(big.mismatches() == 0, "the list that was executing: exact");

    // A run asking for more elements than its buffers hold fails on the card; the runs after
    // it fail with it, the list's wait says so, and the program goes on.
    job failing(device, krnl, 77);
    failing.run.set_arg(3, small * 64);
    job after(device, krnl, 78);
    list.reset();
    xrt::runlist broken(context);
    broken.add(jobs[1]->run);
    broken.add(failing.run);
    broken.add(after.run);
    broken.execute();
    bool thrown = false;
    try {
      broken.wait();
    } catch (const xrt::runlist::command_error& error) {
      thrown = error.get_command_state() == ERT_CMD_STATE_ERROR &&
               error.get_run().get_handle() == after.run.get_handle() &&
               std::string(error.what()).find("a run of the list failed") != std::string::npos;
    }
    expect(thrown, "a failed run in the middle: command_error with the list's last run");
    expect(broken.state() == ERT_CMD_STATE_ERROR, "the failed list's state is an error");
    broken.reset();
    expect(jobs[1]->mismatches() == 0, "the run before the failed one: exact");

    // Freed by the reset, each run starts on its own again.
    after.fill(79);
    after.run.start();
    after.run.wait();
    expect(after.mismatches() == 0, "a run freed from its list starts on its own: exact");
    list.execute();
    list.wait();
    expect(list.state() == ERT_CMD_STATE_COMPLETED, "a reset list executes as empty");
  } catch (const std::exception& error) {
    std::cout << "FAILED: threw " << error.what() << "\n";
    ++failed;
  }
  std::cout << "\n" << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

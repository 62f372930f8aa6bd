// std::fill without <algorithm>, as asynchronous_xrt does: XRT's xrt_queue.h brings it.
//
// A host in the style of Vitis_Accel_Examples' asynchronous_xrt: xrt::queue runs the
// buffers' syncs, the run's start and wait, and the sync back, in order on its own thread,
// with a second queue's sync joined by its event; then a pipeline of several vadds through
// two queues, and what the queue promises on its own: order, a thread apart from the
// caller's, results and exceptions in the futures, move-only tasks, waits across queues, an
// error of a call inside a task reaching the program, and a destructor that runs what is
// left before it returns. Exits 0 when every check held. argv[1]: the xclbin.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "xrt/experimental/xrt_queue.h"
#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_kernel.h"

#include "expect.hpp"

namespace {

// asynchronous_xrt's flow with `count` elements: bo0 synced on the main queue, bo1 on a
// second one, the main queue waiting for bo1's event before it starts the run.
bool asynchronous_vadd(const xrt::device& device, const xrt::kernel& krnl, int count) {
  const size_t bytes = sizeof(int) * count;
  auto bo0 = xrt::bo(device, bytes, krnl.group_id(0));
  auto bo1 = xrt::bo(device, bytes, krnl.group_id(1));
  auto bo_out = xrt::bo(device, bytes, krnl.group_id(2));
  auto bo0_map = bo0.map<int*>();
  auto bo1_map = bo1.map<int*>();
  auto bo_out_map = bo_out.map<int*>();
  std::fill(bo_out_map, bo_out_map + count, 0);
  std::vector<int> reference(count);
  for (int i = 0; i < count; ++i) {
    bo0_map[i] = i;
    bo1_map[i] = 3 * i + 7;
    reference[i] = bo0_map[i] + bo1_map[i];
  }
  auto run = xrt::run(krnl);
  run.set_arg(0, bo0);
  run.set_arg(1, bo1);
  run.set_arg(2, bo_out);
  run.set_arg(3, count);

  xrt::queue main_queue;
  xrt::queue queue_bo1;
  auto bo0_event = main_queue.enqueue([&bo0] { bo0.sync(XCL_BO_SYNC_BO_TO_DEVICE); });
  auto bo1_event = queue_bo1.enqueue([&bo1] { bo1.sync(XCL_BO_SYNC_BO_TO_DEVICE); });
  main_queue.enqueue(bo1_event);
  main_queue.enqueue([&run] {
    run.start();
    run.wait();
  });
  auto bo_out_event = main_queue.enqueue([&bo_out] { bo_out.sync(XCL_BO_SYNC_BO_FROM_DEVICE); });
  bo_out_event.wait();
  bo_out_event.get();  // rethrows what a sync threw
  return std::memcmp(bo_out_map, reference.data(), bytes) == 0;
}

// `rounds` vadds of different data through two queues: one moves each round's inputs in,
// the other runs it and moves the result out once the first queue's event says the inputs
// are there. Every result is checked.
int pipelined_vadds(const xrt::device& device, const xrt::kernel& krnl, int count, int rounds) {
  const size_t bytes = sizeof(unsigned) * count;
  struct round {
    xrt::bo a, b, out;
    xrt::run run;
  };
  std::vector<round> work;
  for (int r = 0; r < rounds; ++r) {
    round w{xrt::bo(device, bytes, krnl.group_id(0)), xrt::bo(device, bytes, krnl.group_id(1)),
            xrt::bo(device, bytes, krnl.group_id(2)), xrt::run(krnl)};
    auto a = w.a.map<unsigned*>();
    auto b = w.b.map<unsigned*>();
    for (int i = 0; i < count; ++i) {
      a[i] = static_cast<unsigned>(r * 100000 + i);
      b[i] = static_cast<unsigned>(r);
    }
    w.run.set_arg(0, w.a);
    w.run.set_arg(1, w.b);
    w.run.set_arg(2, w.out);
    w.run.set_arg(3, count);
    work.push_back(w);
  }
  xrt::queue inputs;
  xrt::queue compute;
  std::vector<xrt::queue::event> done;
  for (auto& w : work) {
    xrt::queue::event in = inputs.enqueue([&w] {
      w.a.sync(XCL_BO_SYNC_BO_TO_DEVICE);
      w.b.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    });
    compute.enqueue(in);
    done.push_back(compute.enqueue([&w] {
      w.run.start();
      return w.run.wait();
    }));
    done.push_back(compute.enqueue([&w] { w.out.sync(XCL_BO_SYNC_BO_FROM_DEVICE); }));
  }
  for (auto& event : done) event.wait();
  int wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    auto out = work[r].out.map<unsigned*>();
    for (int i = 0; i < count; ++i)
      if (out[i] != static_cast<unsigned>(r * 100000 + i + r)) ++wrong;
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " XCLBIN\n";
    return 2;
  }
  try {
    auto device = xrt::device(0);
    auto uuid = device.load_xclbin(argv[1]);
    auto krnl = xrt::kernel(device, uuid, "vadd");

    const int count = 512 * 512;
    bool exact = asynchronous_vadd(device, krnl, count);
    expect(exact, "asynchronous_xrt's flow");
    std::cout << "queued vadd of " << count << " elements: " << (exact ? "exact" : "wrong") << "\n";
    int wrong = pipelined_vadds(device, krnl, 4096, 8);
    expect(wrong == 0, "8 pipelined vadds");
    std::cout << "8 pipelined vadds through two queues: " << wrong << " mismatches\n";

    // In order, on one thread that is not the caller's.
    {
      xrt::queue q;
      std::vector<int> seen;
      std::vector<std::thread::id> threads;
      std::vector<xrt::queue::event> events;
      for (int i = 0; i < 1000; ++i)
        events.push_back(q.enqueue([&seen, &threads, i] {
          seen.push_back(i);
          threads.push_back(std::this_thread::get_id());
        }));
      events.back().wait();
      bool ordered = seen.size() == 1000;
      for (size_t i = 0; ordered && i < seen.size(); ++i) ordered = seen[i] == static_cast<int>(i);
      bool one_thread = !threads.empty();
      for (auto id : threads) one_thread = one_thread && id == threads.front() && id != std::this_thread::get_id();
      expect(ordered, "1000 tasks ran in the order enqueued");
      expect(one_thread, "all on the queue's one thread, not the caller's");
    }

    // enqueue returns before the task runs: the task waits for what the caller does after.
    {
      xrt::queue q;
      std::promise<void> go;
      std::shared_future<void> gone = go.get_future().share();
      auto waited = q.enqueue([gone] { return gone.wait_for(std::chrono::seconds(10)) == std::future_status::ready; });
      go.set_value();
      expect(waited.get(), "enqueue returned before its task ran");
    }

    // A value, an exception, a move-only task.
    {
      xrt::queue q;
      auto answer = q.enqueue([] { return 42; });
      auto thrown = q.enqueue([]() -> int { throw std::runtime_error("in a task"); });
      std::unique_ptr<std::string> owned(new std::string("moved in"));
      auto moved = q.enqueue([text = std::move(owned)]() mutable { return *text + " and out"; });
      expect(answer.get() == 42, "a task's value in its future");
      bool rethrown = false;
      try {
        thrown.get();
      } catch (const std::runtime_error& error) {
        rethrown = std::string(error.what()) == "in a task";
      }
      expect(rethrown, "a task's exception in its future");
      expect(moved.get() == "moved in and out", "a move-only, mutable task");
      expect(static_cast<bool>(xrt::queue::event(answer)) && !xrt::queue::event(), "events hold futures");
    }

    // A queue waits for another's event: its next task sees the other's work done.
    {
      xrt::queue first;
      xrt::queue second;
      std::atomic<bool> written{false};
      auto slow = first.enqueue([&written] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        written = true;
      });
      second.enqueue(xrt::queue::event(slow));
      auto saw = second.enqueue([&written] { return written.load(); });
      expect(saw.get(), "a queue waits for another queue's event");
    }

    // A failed call in a task reaches the program through the future, with errno's code.
    {
      xrt::queue q;
      auto small = xrt::bo(device, 4096, krnl.group_id(0));
      auto past_end = q.enqueue([&small] { small.sync(XCL_BO_SYNC_BO_TO_DEVICE, 4096, 4096); });
      bool refused = false;
      try {
        past_end.get();
      } catch (const std::system_error& error) {
        refused = error.code().value() == EINVAL;
      }
      expect(refused, "a sync past the end in a task is EINVAL in its future");
    }

    // The destructor runs what is still enqueued, then returns.
    {
      std::atomic<int> ran{0};
      {
        xrt::queue q;
        for (int i = 0; i < 50; ++i)
          q.enqueue([&ran] {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            ++ran;
          });
      }
      expect(ran == 50, "a queue's destructor runs what is left");
      std::cout << "tasks run before the destructor returned: " << ran << " of 50\n";
    }

    // The last copy dropped by one of the queue's own tasks: the thread runs the rest.
    {
      std::promise<void> left;
      std::shared_future<void> has_left = left.get_future().share();
      std::promise<void> rest;
      std::future<void> rest_ran = rest.get_future();
      {
        xrt::queue q;
        q.enqueue([keep = q, has_left] { has_left.wait(); });
        q.enqueue([&rest] { rest.set_value(); });
      }
      left.set_value();
      expect(rest_ran.wait_for(std::chrono::seconds(10)) == std::future_status::ready,
             "a queue whose last copy its own task held runs the rest");
    }
  } catch (const std::exception& error) {
    std::cerr << "unexpected exception: " << error.what() << "\n";
    return 1;
  }
  std::cout << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}

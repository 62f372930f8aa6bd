/* accelhost's XRT native API: xrt::runlist (XRT's experimental kernel API), runs of one
 * hardware context executed together, in the order they were added:
 *
 *   xrt::runlist list(context);
 *   list.add(run_a);  list.add(run_b);     each run's arguments set as usual
 *   list.execute();                        the runs handed to the plugin, 256 to a call
 *   list.wait();                           throws xrt::runlist::command_error on a failure
 *
 * Each run waits for the one before it, and a failed run fails the runs after it; the
 * command_error's run is the list's last (a list has one completion, its last run's), and its
 * what() says which run failed first when the plugin says so. A run is in at most one list
 * and is not started on its own while listed (std::system_error, EBUSY); a list takes no runs
 * and cannot be reset or executed again while it executes (EBUSY): from its execute until a
 * wait() or a state() sees it end. The C functions are accelhost's, for these classes; XRT
 * has no C API for run lists. */
#ifndef ACCELHOST_XRT_EXPERIMENTAL_KERNEL_H
#define ACCELHOST_XRT_EXPERIMENTAL_KERNEL_H

#include "xrt/xrt_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* accelhost_xrt_runlist_handle;

/* A run list for `device` running the xclbin `xclbin_uuid` (NULL and ENOENT otherwise). */
accelhost_xrt_runlist_handle accelhost_xrt_runlist_open(xrtDeviceHandle device, const xuid_t xclbin_uuid);
/* Adds `run` at the end: EBUSY while the list executes or when the run is listed already,
 * EINVAL for a run of another device or xclbin. */
int accelhost_xrt_runlist_add(accelhost_xrt_runlist_handle list, xrtRunHandle run);
/* Hands every run to the plugin, in order, 256 to a call (none: nothing); EBUSY while the last
 * execute runs. */
int accelhost_xrt_runlist_execute(accelhost_xrt_runlist_handle list);
/* Waits at most timeout_ms (0: no limit): ERT_CMD_STATE_COMPLETED or ERT_CMD_STATE_TIMEOUT;
 * ERT_CMD_STATE_ERROR with errno set and the list's last run in *failed (if not NULL). */
enum ert_cmd_state accelhost_xrt_runlist_wait(accelhost_xrt_runlist_handle list, unsigned int timeout_ms,
                                              xrtRunHandle* failed);
/* ERT_CMD_STATE_COMPLETED for a list of no runs, ERT_CMD_STATE_NEW before its first execute,
 * else its last run's state. */
enum ert_cmd_state accelhost_xrt_runlist_state(accelhost_xrt_runlist_handle list);
/* Empties the list (EBUSY while it executes). */
int accelhost_xrt_runlist_reset(accelhost_xrt_runlist_handle list);
/* Ends the handle; the runs are freed for other lists, without waiting for them. */
int accelhost_xrt_runlist_close(accelhost_xrt_runlist_handle list);

#ifdef __cplusplus
}

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace xrt {

class runlist {
  std::shared_ptr<void> m_handle;
  /* The runs added, kept alive while listed as XRT's list keeps them. */
  std::shared_ptr<std::vector<run>> m_runs;

 public:
  /* What wait() throws when a run of the list failed. */
  class command_error : public std::exception {
    run m_run;
    ert_cmd_state m_state;
    std::string m_what;

   public:
    command_error(const run& failed, ert_cmd_state state, const std::string& what)
        : m_run(failed), m_state(state), m_what(what) {}
    run get_run() const { return m_run; }
    ert_cmd_state get_command_state() const { return m_state; }
    const char* what() const noexcept override { return m_what.c_str(); }
  };

  runlist() = default;
  explicit runlist(const hw_context& context)
      : m_handle(detail::check(accelhost_xrt_runlist_open(context.get_device().get_handle(),
                                                          context.get_xclbin_uuid().get()),
                               "xrt::runlist"),
                 accelhost_xrt_runlist_close),
        m_runs(std::make_shared<std::vector<run>>()) {}

  void add(const run& r) {
    detail::check(accelhost_xrt_runlist_add(m_handle.get(), r.get_handle()), "xrt::runlist::add");
    m_runs->push_back(r);
  }
  void add(run&& r) { add(static_cast<const run&>(r)); }
  void execute() { detail::check(accelhost_xrt_runlist_execute(m_handle.get()), "xrt::runlist::execute"); }
  /* std::cv_status::timeout when the time (0: no limit) ran out first. */
  std::cv_status wait(const std::chrono::milliseconds& timeout) const {
    xrtRunHandle failed = nullptr;
    ert_cmd_state state = accelhost_xrt_runlist_wait(
        m_handle.get(), static_cast<unsigned int>(timeout.count()), &failed);
    if (state == ERT_CMD_STATE_TIMEOUT) return std::cv_status::timeout;
    if (state == ERT_CMD_STATE_ERROR) {
      int code = errno;
      run last;
      for (const run& listed : *m_runs)
        if (listed.get_handle() == failed) last = listed;
      throw command_error(last, state,
                          "xrt::runlist::wait: a run of the list failed (" +
                              std::string(std::strerror(code)) + "; the reason is on stderr)");
    }
    return std::cv_status::no_timeout;
  }
  void wait() const { wait(std::chrono::milliseconds(0)); }
  ert_cmd_state state() const { return accelhost_xrt_runlist_state(m_handle.get()); }
  /* Deprecated in XRT for state(): 0 while running, else completed (throws as wait()). */
  int poll() const {
    if (state() == ERT_CMD_STATE_RUNNING) return 0;
    wait();
    return 1;
  }
  void reset() {
    detail::check(accelhost_xrt_runlist_reset(m_handle.get()), "xrt::runlist::reset");
    m_runs->clear();
  }
  explicit operator bool() const { return m_handle != nullptr; }
};

}  // namespace xrt
#endif

#endif

/* accelhost's XRT native API: kernels and runs (xrtKernelHandle, xrtRunHandle, and
 * xrt::kernel, xrt::run in C++). A kernel's arguments are those the xclbin's metadata
 * describes; varargs are read by them: a buffer handle for a buffer, an int for a 4-byte
 * value, a 64-bit value for 8 bytes. */
#ifndef ACCELHOST_XRT_KERNEL_H
#define ACCELHOST_XRT_KERNEL_H

#include <stdint.h>

#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_uuid.h"
#include "xrt/detail/ert.h"
#include "xrt/detail/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* xrtKernelHandle;
typedef void* xrtRunHandle;

/* Opens kernel `name` of the xclbin `xclbin_uuid`, which must be the one the device has
 * loaded: "vadd", or "vadd:{vadd_1,vadd_2}" with compute units by name, each of which must
 * be one of the kernel's in the xclbin (ENOENT; EINVAL for a name of neither form). Runs go
 * to the kernel's compute units as its plugin schedules them. */
xrtKernelHandle xrtPLKernelOpen(xrtDeviceHandle device, const xuid_t xclbin_uuid, const char* name);
/* As xrtPLKernelOpen (compute units are shared with the process's other runs). */
xrtKernelHandle xrtPLKernelOpenExclusive(xrtDeviceHandle device, const xuid_t xclbin_uuid, const char* name);
int xrtKernelClose(xrtKernelHandle kernel);
/* The memory bank argument `argno` is connected to (at the first compute unit named when
 * the kernel was opened by "name:{unit,...}", else at the kernel's first); -1 for a value
 * argument. */
int xrtKernelArgGroupId(xrtKernelHandle kernel, int argno);
/* The register offset of argument `argno`. */
uint32_t xrtKernelArgOffset(xrtKernelHandle kernel, int argno);
/* Not supported (EOPNOTSUPP): a compute unit's registers are its plugin's. */
int xrtKernelReadRegister(xrtKernelHandle kernel, uint32_t offset, uint32_t* datap);
int xrtKernelWriteRegister(xrtKernelHandle kernel, uint32_t offset, uint32_t data);

/* Sets every argument, in order, and starts a run. */
xrtRunHandle xrtKernelRun(xrtKernelHandle kernel, ...);
xrtRunHandle xrtRunOpen(xrtKernelHandle kernel);
int xrtRunSetArg(xrtRunHandle run, int index, ...);
int xrtRunUpdateArg(xrtRunHandle run, int index, ...);
int xrtRunStart(xrtRunHandle run);
/* ERT_CMD_STATE_COMPLETED, or ERT_CMD_STATE_ERROR with errno set. */
enum ert_cmd_state xrtRunWait(xrtRunHandle run);
/* As xrtRunWait for at most timeout_ms (0: no limit); ERT_CMD_STATE_TIMEOUT then. */
enum ert_cmd_state xrtRunWaitFor(xrtRunHandle run, unsigned int timeout_ms);
enum ert_cmd_state xrtRunState(xrtRunHandle run);
/* Calls `callback` when a later start finishes (state: ERT_CMD_STATE_COMPLETED only). */
int xrtRunSetCallback(xrtRunHandle run, enum ert_cmd_state state,
                      void (*callback)(xrtRunHandle, enum ert_cmd_state, void*), void* data);
int xrtRunClose(xrtRunHandle run);

/* accelhost's, for the C++ classes: argument `index` of a run set to `size` bytes, or to a
 * buffer. */
int accelhost_xrt_run_set_arg_bytes(xrtRunHandle run, int index, const void* value, size_t size);
int accelhost_xrt_run_set_arg_bo(xrtRunHandle run, int index, xrtBufferHandle bo);

#ifdef __cplusplus
}

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "xrt/xrt_hw_context.h"

namespace xrt {

class kernel;

/* One execution of a kernel; copies share it. */
class run {
  std::shared_ptr<void> m_handle;
  friend class kernel;

  void set_args(int) {}
  template <typename First, typename... Rest>
  void set_args(int index, First&& first, Rest&&... rest) {
    set_arg(index, std::forward<First>(first));
    set_args(index + 1, std::forward<Rest>(rest)...);
  }

 public:
  run() = default;
  explicit run(const kernel& krnl);

  void set_arg(int index, const bo& buffer) {
    detail::check(accelhost_xrt_run_set_arg_bo(m_handle.get(), index, buffer.get_handle()),
                  "xrt::run::set_arg");
  }
  /* A value argument: its bytes, which must be as many as the kernel's argument has. */
  template <typename T, typename = typename std::enable_if<
                            !std::is_same<typename std::decay<T>::type, bo>::value>::type>
  void set_arg(int index, T&& value) {
    const typename std::decay<T>::type copy = value;
    detail::check(accelhost_xrt_run_set_arg_bytes(m_handle.get(), index, &copy, sizeof copy),
                  "xrt::run::set_arg");
  }
  template <typename T>
  void update_arg(int index, T&& value) {
    set_arg(index, std::forward<T>(value));
  }
  void start() { detail::check(xrtRunStart(m_handle.get()), "xrtRunStart"); }
  /* Waits (0: no limit); throws when the run failed. */
  ert_cmd_state wait(const std::chrono::milliseconds& timeout = std::chrono::milliseconds(0)) const {
    ert_cmd_state state = xrtRunWaitFor(m_handle.get(), static_cast<unsigned int>(timeout.count()));
    if (state == ERT_CMD_STATE_ERROR) detail::throw_errno("xrt::run::wait");
    return state;
  }
  ert_cmd_state wait(unsigned int timeout_ms) const { return wait(std::chrono::milliseconds(timeout_ms)); }
  ert_cmd_state state() const { return xrtRunState(m_handle.get()); }
  xrtRunHandle get_handle() const { return m_handle.get(); }
  explicit operator bool() const { return m_handle != nullptr; }
};

/* A kernel of the loaded xclbin. */
class kernel {
  std::shared_ptr<void> m_handle;

 public:
  enum class cu_access_mode : uint8_t { exclusive = 0, shared = 1, none = 2 };

  kernel() = default;
  kernel(const device& dev, const uuid& xclbin_id, const std::string& name,
         cu_access_mode mode = cu_access_mode::shared)
      : m_handle(detail::check(mode == cu_access_mode::exclusive
                                   ? xrtPLKernelOpenExclusive(dev.get_handle(), xclbin_id.get(), name.c_str())
                                   : xrtPLKernelOpen(dev.get_handle(), xclbin_id.get(), name.c_str()),
                               "xrtPLKernelOpen"),
                 xrtKernelClose) {}

  /* Kernel `name` of the xclbin the context's device runs. */
  kernel(const hw_context& context, const std::string& name)
      : kernel(context.get_device(), context.get_xclbin_uuid(), name,
               context.get_mode() == hw_context::access_mode::exclusive ? cu_access_mode::exclusive
                                                                        : cu_access_mode::shared) {}

  int group_id(int argno) const {
    return detail::check(xrtKernelArgGroupId(m_handle.get(), argno), "xrt::kernel::group_id");
  }
  uint32_t offset(int argno) const { return xrtKernelArgOffset(m_handle.get(), argno); }
  /* Sets every argument, in order, and starts a run. */
  template <typename... Args>
  run operator()(Args&&... args) const {
    run started(*this);
    started.set_args(0, std::forward<Args>(args)...);
    started.start();
    return started;
  }
  xrtKernelHandle get_handle() const { return m_handle.get(); }
  explicit operator bool() const { return m_handle != nullptr; }
};

inline run::run(const kernel& krnl)
    : m_handle(detail::check(xrtRunOpen(krnl.get_handle()), "xrtRunOpen"), xrtRunClose) {}

}  // namespace xrt
#endif

#endif

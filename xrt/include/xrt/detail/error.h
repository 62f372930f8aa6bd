/* accelhost's XRT native API: what the C++ classes throw when a C call fails. */
#ifndef ACCELHOST_XRT_ERROR_H
#define ACCELHOST_XRT_ERROR_H

#ifdef __cplusplus
#include <cerrno>
#include <string>
#include <system_error>

namespace xrt {
namespace detail {

/* Throws a std::system_error with errno's value (the C call's message is on stderr). */
[[noreturn]] inline void throw_errno(const char* call) {
  int code = errno != 0 ? errno : EIO;
  throw std::system_error(code, std::generic_category(), std::string(call) + " failed");
}

/* Returns status, or throws when the C call failed (-1). */
inline int check(int status, const char* call) {
  if (status == -1) throw_errno(call);
  return status;
}

/* Returns handle, or throws when the C call failed (NULL). */
inline void* check(void* handle, const char* call) {
  if (handle == nullptr) throw_errno(call);
  return handle;
}

}  // namespace detail
}  // namespace xrt
#endif

#endif

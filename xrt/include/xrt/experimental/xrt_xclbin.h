/* accelhost's XRT native API: xclbin files read before they are loaded (xrtXclbinHandle,
 * and xrt::xclbin in C++). */
#ifndef ACCELHOST_XRT_XCLBIN_H
#define ACCELHOST_XRT_XCLBIN_H

#include "xrt/xrt_uuid.h"
#include "xrt/detail/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* xrtXclbinHandle;

/* Reads and checks the xclbin at filename; NULL with errno set when it is not one. */
xrtXclbinHandle xrtXclbinAllocFilename(const char* filename);
/* Forgets the xclbin (a device that loaded it keeps it). */
int xrtXclbinFreeHandle(xrtXclbinHandle xclbin);
/* Writes the xclbin's uuid. */
int xrtXclbinGetUUID(xrtXclbinHandle xclbin, xuid_t out);

#ifdef __cplusplus
}

#include <memory>
#include <string>

namespace xrt {

/* An xclbin file, read and checked. */
class xclbin {
  std::shared_ptr<void> m_handle;

 public:
  xclbin() = default;
  explicit xclbin(const std::string& filename)
      : m_handle(detail::check(xrtXclbinAllocFilename(filename.c_str()), "xrtXclbinAllocFilename"),
                 xrtXclbinFreeHandle) {}
  uuid get_uuid() const {
    xuid_t value;
    detail::check(xrtXclbinGetUUID(m_handle.get(), value), "xrtXclbinGetUUID");
    return uuid(value);
  }
  xrtXclbinHandle get_handle() const { return m_handle.get(); }
  explicit operator bool() const { return m_handle != nullptr; }
};

}  // namespace xrt
#endif

#endif

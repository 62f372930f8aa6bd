/* accelhost's XRT native API: devices (xrtDeviceHandle, and xrt::device in C++). Device n
 * is the nth XRT card the library lists (`accelhost list`: the devices of interface xocl). */
#ifndef ACCELHOST_XRT_DEVICE_H
#define ACCELHOST_XRT_DEVICE_H

#include "xrt/xrt_uuid.h"
#include "xrt/detail/error.h"
#include "xrt/experimental/xrt_xclbin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* xrtDeviceHandle;
struct axlf;

/* Opens card `index`; NULL with errno set (ENODEV when there is no such card). */
xrtDeviceHandle xrtDeviceOpen(unsigned int index);
/* Opens the card at a PCI address ("0000:3d:00.0" or "3d:00.0"). */
xrtDeviceHandle xrtDeviceOpenByBDF(const char* bdf);
int xrtDeviceClose(xrtDeviceHandle device);
/* Loads an xclbin image held in memory (its header gives its length). */
int xrtDeviceLoadXclbin(xrtDeviceHandle device, const struct axlf* xclbin);
/* Loads the xclbin file at path. */
int xrtDeviceLoadXclbinFile(xrtDeviceHandle device, const char* path);
/* Loads an xclbin read with xrtXclbinAllocFilename. */
int xrtDeviceLoadXclbinHandle(xrtDeviceHandle device, xrtXclbinHandle xclbin);
/* Succeeds when the device has the xclbin of that uuid loaded. */
int xrtDeviceLoadXclbinUUID(xrtDeviceHandle device, const xuid_t uuid);
/* Writes the uuid of the loaded xclbin. */
int xrtDeviceGetXclbinUUID(xrtDeviceHandle device, xuid_t out);

#ifdef __cplusplus
}

#include <memory>
#include <string>

namespace xrt {

/* An open card; copies share it, the last one closes it. */
class device {
  std::shared_ptr<void> m_handle;

 public:
  device() = default;
  explicit device(unsigned int index)
      : m_handle(detail::check(xrtDeviceOpen(index), "xrtDeviceOpen"), xrtDeviceClose) {}
  explicit device(int index) : device(static_cast<unsigned int>(index)) {}
  explicit device(const std::string& bdf)
      : m_handle(detail::check(xrtDeviceOpenByBDF(bdf.c_str()), "xrtDeviceOpenByBDF"),
                 xrtDeviceClose) {}

  uuid load_xclbin(const std::string& path) {
    detail::check(xrtDeviceLoadXclbinFile(m_handle.get(), path.c_str()), "xrtDeviceLoadXclbinFile");
    return get_xclbin_uuid();
  }
  uuid load_xclbin(const struct axlf* image) {
    detail::check(xrtDeviceLoadXclbin(m_handle.get(), image), "xrtDeviceLoadXclbin");
    return get_xclbin_uuid();
  }
  uuid load_xclbin(const xclbin& image) {
    detail::check(xrtDeviceLoadXclbinHandle(m_handle.get(), image.get_handle()),
                  "xrtDeviceLoadXclbinHandle");
    return get_xclbin_uuid();
  }
  /* Loads the xclbin (a card runs one at a time) and returns its uuid, for an
   * xrt::hw_context. */
  uuid register_xclbin(const xclbin& image) { return load_xclbin(image); }
  uuid get_xclbin_uuid() const {
    xuid_t value;
    detail::check(xrtDeviceGetXclbinUUID(m_handle.get(), value), "xrtDeviceGetXclbinUUID");
    return uuid(value);
  }
  xrtDeviceHandle get_handle() const { return m_handle.get(); }
  explicit operator bool() const { return m_handle != nullptr; }
};

}  // namespace xrt
#endif

#endif

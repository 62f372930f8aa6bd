/* accelhost's XRT native API: xrt::hw_context (C++ only), the device running an xclbin, in
 * which kernels and runlists are made:
 *
 *   auto uuid = device.register_xclbin(xrt::xclbin("vadd.xclbin"));
 *   xrt::hw_context context(device, uuid);
 *   xrt::kernel krnl(context, "vadd");
 *
 * accelhost's cards run one xclbin at a time, so a context is the device and the uuid of
 * the xclbin it runs, checked when the context is made (std::system_error with ENOENT when
 * the device runs another or none). Quality-of-service parameters are taken and ignored, as
 * XRT does on platforms without them; the access mode is kept for get_mode(). */
#ifndef ACCELHOST_XRT_HW_CONTEXT_H
#define ACCELHOST_XRT_HW_CONTEXT_H

#ifndef __cplusplus
#error "xrt::hw_context is C++ only: XRT has no C API for it"
#endif

#include <cstdint>
#include <map>
#include <string>

#include "xrt/detail/error.h"
#include "xrt/xrt_device.h"
#include "xrt/xrt_uuid.h"

namespace xrt {

class hw_context {
 public:
  using cfg_param_type = std::map<std::string, uint32_t>;
  using qos_type = cfg_param_type;
  enum class access_mode : uint8_t { exclusive = 0, shared = 1 };

 private:
  device m_device;
  uuid m_uuid;
  access_mode m_mode = access_mode::shared;

 public:
  hw_context() = default;
  hw_context(const device& dev, const uuid& xclbin_id, access_mode mode)
      : m_device(dev), m_uuid(xclbin_id), m_mode(mode) {
    detail::check(xrtDeviceLoadXclbinUUID(dev.get_handle(), xclbin_id.get()), "xrt::hw_context");
  }
  hw_context(const device& dev, const uuid& xclbin_id)
      : hw_context(dev, xclbin_id, access_mode::shared) {}
  hw_context(const device& dev, const uuid& xclbin_id, const cfg_param_type&)
      : hw_context(dev, xclbin_id, access_mode::shared) {}

  device get_device() const { return m_device; }
  uuid get_xclbin_uuid() const { return m_uuid; }
  access_mode get_mode() const { return m_mode; }
  explicit operator bool() const { return static_cast<bool>(m_device); }
};

}  // namespace xrt

#endif

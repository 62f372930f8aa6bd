/* accelhost's XRT native API: buffer objects (xrtBufferHandle, and xrt::bo in C++). A buffer
 * is device memory in a bank of the loaded xclbin plus host memory in this process; map,
 * write and read touch the host memory, sync moves the bytes to or from the device. */
#ifndef ACCELHOST_XRT_BO_H
#define ACCELHOST_XRT_BO_H

#include <stddef.h>
#include <stdint.h>

#include "xrt/xrt_device.h"
#include "xrt/detail/xrt_mem.h"
#include "xrt/detail/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void* xrtBufferHandle;
typedef uint64_t xrtBufferFlags;
typedef uint32_t xrtMemoryGroup;

/* `size` bytes in bank `grp` (a kernel argument's xrtKernelArgGroupId); flags: 0, or
 * XCL_BO_FLAGS_DEV_ONLY / HOST_ONLY for one side only (P2P and SVM are not supported). */
xrtBufferHandle xrtBOAlloc(xrtDeviceHandle device, size_t size, xrtBufferFlags flags, xrtMemoryGroup grp);
/* Not supported (EOPNOTSUPP): the library cannot give the device the program's memory. */
xrtBufferHandle xrtBOAllocUserPtr(xrtDeviceHandle device, void* userptr, size_t size,
                                  xrtBufferFlags flags, xrtMemoryGroup grp);
/* `size` bytes at `offset` of `parent`, sharing its memory. */
xrtBufferHandle xrtBOSubAlloc(xrtBufferHandle parent, size_t size, size_t offset);
int xrtBOFree(xrtBufferHandle bo);
size_t xrtBOSize(xrtBufferHandle bo);
/* The address kernels see. */
uint64_t xrtBOAddress(xrtBufferHandle bo);
/* Moves `size` bytes at `offset` between host and device memory. */
int xrtBOSync(xrtBufferHandle bo, enum xclBOSyncDirection dir, size_t size, size_t offset);
/* The host memory, valid until the buffer is freed. */
void* xrtBOMap(xrtBufferHandle bo);
int xrtBOWrite(xrtBufferHandle bo, const void* src, size_t size, size_t seek);
int xrtBORead(xrtBufferHandle bo, void* dst, size_t size, size_t skip);
/* Copies device memory to device memory. */
int xrtBOCopy(xrtBufferHandle dst, xrtBufferHandle src, size_t size, size_t dst_offset,
              size_t src_offset);

#ifdef __cplusplus
}

#include <memory>

namespace xrt {

/* A memory bank: a kernel argument's group_id. */
using memory_group = uint32_t;

/* A buffer object; copies share it, the last one frees it. */
class bo {
  std::shared_ptr<void> m_handle;

 public:
  enum class flags : uint32_t {
    normal = 0,
    cacheable = XCL_BO_FLAGS_CACHEABLE,
    device_only = XCL_BO_FLAGS_DEV_ONLY,
    host_only = XCL_BO_FLAGS_HOST_ONLY,
    p2p = XCL_BO_FLAGS_P2P,
    svm = XCL_BO_FLAGS_SVM,
    carveout = XCL_BO_FLAGS_KERNBUF,
  };

  bo() = default;
  bo(const device& dev, size_t size, flags kind, memory_group grp)
      : m_handle(detail::check(xrtBOAlloc(dev.get_handle(), size, static_cast<xrtBufferFlags>(kind), grp),
                               "xrtBOAlloc"),
                 xrtBOFree) {}
  bo(const device& dev, size_t size, memory_group grp) : bo(dev, size, flags::normal, grp) {}
  bo(const bo& parent, size_t size, size_t offset)
      : m_handle(detail::check(xrtBOSubAlloc(parent.get_handle(), size, offset), "xrtBOSubAlloc"),
                 xrtBOFree) {}
  bo(const bo&) = default;
  bo& operator=(const bo&) = default;

  size_t size() const { return xrtBOSize(m_handle.get()); }
  uint64_t address() const { return xrtBOAddress(m_handle.get()); }
  void sync(xclBOSyncDirection dir, size_t size, size_t offset) {
    detail::check(xrtBOSync(m_handle.get(), dir, size, offset), "xrtBOSync");
  }
  void sync(xclBOSyncDirection dir) { sync(dir, size(), 0); }
  void* map() { return detail::check(xrtBOMap(m_handle.get()), "xrtBOMap"); }
  template <typename MapType>
  MapType map() {
    return reinterpret_cast<MapType>(map());
  }
  void write(const void* src, size_t size, size_t seek) {
    detail::check(xrtBOWrite(m_handle.get(), src, size, seek), "xrtBOWrite");
  }
  void write(const void* src) { write(src, size(), 0); }
  void read(void* dst, size_t size, size_t skip) {
    detail::check(xrtBORead(m_handle.get(), dst, size, skip), "xrtBORead");
  }
  void read(void* dst) { read(dst, size(), 0); }
  void copy(const bo& src, size_t size, size_t src_offset = 0, size_t dst_offset = 0) {
    detail::check(xrtBOCopy(m_handle.get(), src.get_handle(), size, dst_offset, src_offset), "xrtBOCopy");
  }
  void copy(const bo& src) { copy(src, src.size()); }
  xrtBufferHandle get_handle() const { return m_handle.get(); }
  explicit operator bool() const { return m_handle != nullptr; }
};

}  // namespace xrt
#endif

#endif

/* accelhost's XRT native API: the uuid of an xclbin (xuid_t, and xrt::uuid in C++). */
#ifndef ACCELHOST_XRT_UUID_H
#define ACCELHOST_XRT_UUID_H

/* An xclbin's uuid: its 16 bytes in the order it is written. */
typedef unsigned char xuid_t[16];

#ifdef __cplusplus
#include <cstdio>
#include <cstring>
#include <string>

namespace xrt {

/* An xclbin's uuid, compared and printed. */
class uuid {
  xuid_t m_uuid;

 public:
  uuid() { std::memset(m_uuid, 0, sizeof m_uuid); }
  uuid(const xuid_t value) { std::memcpy(m_uuid, value, sizeof m_uuid); }
  uuid(const uuid& other) { std::memcpy(m_uuid, other.m_uuid, sizeof m_uuid); }
  uuid& operator=(const uuid& other) {
    std::memcpy(m_uuid, other.m_uuid, sizeof m_uuid);
    return *this;
  }
  /* Its 16 bytes. */
  const unsigned char* get() const { return m_uuid; }
  /* The lower-case 8-4-4-4-12 form. */
  std::string to_string() const {
    char text[37];
    std::snprintf(text, sizeof text,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                  m_uuid[0], m_uuid[1], m_uuid[2], m_uuid[3], m_uuid[4], m_uuid[5], m_uuid[6],
                  m_uuid[7], m_uuid[8], m_uuid[9], m_uuid[10], m_uuid[11], m_uuid[12],
                  m_uuid[13], m_uuid[14], m_uuid[15]);
    return text;
  }
  /* Whether it is not all zeros. */
  explicit operator bool() const {
    static const xuid_t zero = {0};
    return std::memcmp(m_uuid, zero, sizeof m_uuid) != 0;
  }
  bool operator==(const uuid& other) const {
    return std::memcmp(m_uuid, other.m_uuid, sizeof m_uuid) == 0;
  }
  bool operator!=(const uuid& other) const { return !(*this == other); }
};

}  // namespace xrt
#endif

#endif

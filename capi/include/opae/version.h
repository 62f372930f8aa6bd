/* accelhost's OPAE-compatible C API: which OPAE API the library follows, and its build. */
#ifndef __FPGA_VERSION_H__
#define __FPGA_VERSION_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The OPAE release whose public API the library follows (capi/README.md lists which of its
 * functions are implemented). FPGA_INVALID_PARAM for a NULL version. */
fpga_result fpgaGetOPAECVersion(fpga_version *version);

/* The same as "major.minor.patch". FPGA_INVALID_PARAM for a NULL buffer or one too small for
 * the whole string; FPGA_VERSION_STR_MAX bytes always suffice. */
fpga_result fpgaGetOPAECVersionString(char *version_str, size_t len);
#define FPGA_VERSION_STR_MAX 10

/* Which build of the library this is ("accelhost-<version>"), cut to len bytes (NUL
 * included). FPGA_INVALID_PARAM for a NULL buffer or a zero len. */
fpga_result fpgaGetOPAECBuildString(char *build_str, size_t len);
#define FPGA_BUILD_STR_MAX 41

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_VERSION_H__ */

/* accelhost's OPAE-compatible C API: a device's error registers, the attributes in its
 * "errors/" directory (capi/README.md). */
#ifndef __FPGA_ERROR_H__
#define __FPGA_ERROR_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

fpga_result fpgaReadError(fpga_token token, uint32_t error_num, uint64_t *value);
fpga_result fpgaClearError(fpga_token token, uint32_t error_num);
fpga_result fpgaClearAllErrors(fpga_token token);
fpga_result fpgaGetErrorInfo(fpga_token token, uint32_t error_num,
			     struct fpga_error_info *error_info);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_ERROR_H__ */

/* accelhost's OPAE-compatible C API: UMsgs. Not supported: no accelhost family has them
 * (capi/README.md); the arguments are checked. */
#ifndef __FPGA_UMSG_H__
#define __FPGA_UMSG_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

fpga_result fpgaGetNumUmsg(fpga_handle handle, uint64_t *value);
fpga_result fpgaSetUmsgAttributes(fpga_handle handle, uint64_t value);
fpga_result fpgaTriggerUmsg(fpga_handle handle, uint64_t value);
fpga_result fpgaGetUmsgPtr(fpga_handle handle, uint64_t **umsg_ptr);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_UMSG_H__ */

/* accelhost's OPAE-compatible C API: AFU user clocks, in MHz, over the port attribute
 * "userclk/frequency" (capi/README.md). */
#ifndef __FPGA_AFU_USER_CLOCK_H__
#define __FPGA_AFU_USER_CLOCK_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

fpga_result fpgaSetUserClock(fpga_handle handle, uint64_t high_clk, uint64_t low_clk,
			     int flags);
fpga_result fpgaGetUserClock(fpga_handle handle, uint64_t *high_clk, uint64_t *low_clk,
			     int flags);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_AFU_USER_CLOCK_H__ */

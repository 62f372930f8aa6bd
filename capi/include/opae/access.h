/* accelhost's OPAE-compatible C API: opening and closing accelerators. */
#ifndef __FPGA_ACCESS_H__
#define __FPGA_ACCESS_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the resource behind token: exclusively, or shared with FPGA_OPEN_SHARED. */
fpga_result fpgaOpen(fpga_token token, fpga_handle *handle, int flags);
/* Releases the handle's buffers and MMIO mappings and closes it. */
fpga_result fpgaClose(fpga_handle handle);
fpga_result fpgaReset(fpga_handle handle);

/* The child AFU handles of handle: accelhost accelerators have none, so *num_children is 0. */
fpga_result fpgaGetChildren(fpga_handle handle, uint32_t max_children,
			    fpga_handle *children, uint32_t *num_children);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_ACCESS_H__ */

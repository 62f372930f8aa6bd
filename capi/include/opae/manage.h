/* accelhost's OPAE-compatible C API: reconfiguration. */
#ifndef __FPGA_MANAGE_H__
#define __FPGA_MANAGE_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loads an image the device's plugin understands (an xclbin for XRT cards) into slot. */
fpga_result fpgaReconfigureSlot(fpga_handle fpga, uint32_t slot, const uint8_t *bitstream,
				size_t bitstream_len, int flags);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_MANAGE_H__ */

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

/* SR-IOV port assignment: FPGA_NOT_SUPPORTED (ports are assigned outside accelhost). */
fpga_result fpgaAssignPortToInterface(fpga_handle fpga, uint32_t interface_num,
				      uint32_t slot_num, int flags);
fpga_result fpgaAssignToInterface(fpga_handle fpga, fpga_token accelerator,
				  uint32_t host_interface, int flags);
fpga_result fpgaReleaseFromInterface(fpga_handle fpga, fpga_token accelerator);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_MANAGE_H__ */

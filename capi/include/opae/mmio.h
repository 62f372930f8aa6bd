/* accelhost's OPAE-compatible C API: register access. Every access is checked by the
 * host; no pointer to the registers is handed out (pass NULL as mmio_ptr). Regions are
 * mapped on first access, or by fpgaMapMMIO. */
#ifndef __FPGA_MMIO_H__
#define __FPGA_MMIO_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

fpga_result fpgaWriteMMIO64(fpga_handle handle, uint32_t mmio_num, uint64_t offset,
			    uint64_t value);
fpga_result fpgaReadMMIO64(fpga_handle handle, uint32_t mmio_num, uint64_t offset,
			   uint64_t *value);
fpga_result fpgaWriteMMIO32(fpga_handle handle, uint32_t mmio_num, uint64_t offset,
			    uint32_t value);
fpga_result fpgaReadMMIO32(fpga_handle handle, uint32_t mmio_num, uint64_t offset,
			   uint32_t *value);
/* With a non-NULL mmio_ptr: *mmio_ptr = NULL and FPGA_NOT_SUPPORTED. */
/* Checks its arguments, then FPGA_NOT_SUPPORTED: accelhost's regions have no 64-byte store. */
fpga_result fpgaWriteMMIO512(fpga_handle handle, uint32_t mmio_num, uint64_t offset,
			     const void *value);
fpga_result fpgaMapMMIO(fpga_handle handle, uint32_t mmio_num, uint64_t **mmio_ptr);
fpga_result fpgaUnmapMMIO(fpga_handle handle, uint32_t mmio_num);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_MMIO_H__ */

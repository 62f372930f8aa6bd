/* accelhost's OPAE-compatible C API: memory shared with the device. */
#ifndef __FPGA_BUFFER_H__
#define __FPGA_BUFFER_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A buffer of at least len bytes the device reaches by DMA. *buf_addr is valid until
 * fpgaReleaseBuffer or fpgaClose. FPGA_BUF_PREALLOCATED is not supported. */
fpga_result fpgaPrepareBuffer(fpga_handle handle, uint64_t len, void **buf_addr,
			      uint64_t *wsid, int flags);
fpga_result fpgaReleaseBuffer(fpga_handle handle, uint64_t wsid);
fpga_result fpgaGetIOAddress(fpga_handle handle, uint64_t wsid, uint64_t *ioaddr);
/* FPGA_NOT_SUPPORTED: devices reach host memory only through prepared buffers. */
fpga_result fpgaBindSVA(fpga_handle handle, uint32_t *pasid);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_BUFFER_H__ */

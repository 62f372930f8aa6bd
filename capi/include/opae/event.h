/* accelhost's OPAE-compatible C API: device events, as eventfds to poll. A registration
 * fires once; register again for the next event. */
#ifndef __FPGA_EVENT_H__
#define __FPGA_EVENT_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

fpga_result fpgaCreateEventHandle(fpga_event_handle *event_handle);
/* Drops any registration, closes the eventfd, sets *event_handle to NULL. */
fpga_result fpgaDestroyEventHandle(fpga_event_handle *event_handle);
fpga_result fpgaGetOSObjectFromEventHandle(const fpga_event_handle eh, int *fd);
/* For FPGA_EVENT_INTERRUPT, flags is the interrupt vector. */
fpga_result fpgaRegisterEvent(fpga_handle handle, fpga_event_type event_type,
			      fpga_event_handle event_handle, uint32_t flags);
fpga_result fpgaUnregisterEvent(fpga_handle handle, fpga_event_type event_type,
				fpga_event_handle event_handle);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_EVENT_H__ */

/* accelhost's OPAE-compatible C API: library start and end. */
#ifndef __FPGA_INIT_H__
#define __FPGA_INIT_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Starts the host on config_file (an accelhost.json), or on the usual lookup when NULL
 * ($ACCELHOST_ENDPOINT, $ACCELHOST_CONFIG, ./accelhost.json, ..., the embedded default).
 * Optional: the first call that needs the host starts it. Does nothing if a host runs
 * already. */
fpga_result fpgaInitialize(const char *config_file);

/* Releases every object the application holds and shuts the host down. */
fpga_result fpgaFinalize(void);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_INIT_H__ */

/* accelhost's OPAE-compatible C API: error strings. */
#ifndef __FPGA_UTILS_H__
#define __FPGA_UTILS_H__

#include <stdio.h>

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A static description of a result code. */
const char *fpgaErrStr(fpga_result e);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_UTILS_H__ */

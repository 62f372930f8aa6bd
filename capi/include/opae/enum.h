/* accelhost's OPAE-compatible C API: finding resources. */
#ifndef __FPGA_ENUM_H__
#define __FPGA_ENUM_H__

#include <opae/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Finds the resources matching any of the filters (all of them when num_filters is 0),
 * across every running plugin. *num_matches is the number found; up to max_tokens new
 * tokens are stored in tokens, each to be destroyed with fpgaDestroyToken. */
fpga_result fpgaEnumerate(const fpga_properties *filters, uint32_t num_filters,
			  fpga_token *tokens, uint32_t max_tokens, uint32_t *num_matches);
fpga_result fpgaCloneToken(fpga_token src, fpga_token *dst);
/* Destroys *token and sets it to NULL. */
fpga_result fpgaDestroyToken(fpga_token *token);

#ifdef __cplusplus
}
#endif

#endif /* __FPGA_ENUM_H__ */

/* accelhost's XRT native API: where programs of 2020-2023 include it from (kernels and runs,
 * and the run lists of the experimental API). */
#include "xrt/experimental/xrt_kernel.h"

/* accelhost's XRT native API: where programs of 2020-2022 include it from. */
#include "xrt/xrt_bo.h"

/* accelhost's XRT native API: where programs of 2022-2023 include it from. */
#include "xrt/experimental/xrt_queue.h"

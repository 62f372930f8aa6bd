/* accelhost's OPAE-compatible C API: everything of the OPAE API that accelhost implements.
 * The accelhost extensions are in <opae/accelhost.h>. */
#ifndef __FPGA_FPGA_H__
#define __FPGA_FPGA_H__

#include <opae/log.h>
#include <opae/types.h>
#include <opae/init.h>
#include <opae/access.h>
#include <opae/buffer.h>
#include <opae/enum.h>
#include <opae/event.h>
#include <opae/manage.h>
#include <opae/mmio.h>
#include <opae/properties.h>
#include <opae/utils.h>
#include <opae/version.h>
#include <opae/error.h>
#include <opae/sysobject.h>
#include <opae/userclk.h>
#include <opae/metrics.h>
#include <opae/umsg.h>

#endif /* __FPGA_FPGA_H__ */

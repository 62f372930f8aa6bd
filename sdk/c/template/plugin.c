// A plugin with one device, which applications find and open. The SDK's defaults cover the
// rest: every export left out answers `unsupported` (`close` succeeds). Add your device's
// exports from plugin.h (`map_mmio`, `prepare_buffer`, the offload calls); `--from nlb0`
// starts from a plugin that drives a real card.

#include "accelhost.h"

bool exports_accel_plugin_discovery_enumerate(accelhost_filter_list_t *filters, accelhost_discovered_list_t *ret,
                                              accelhost_error_t *err) {
    accelhost_properties_t device = accelhost_accelerator("template0", 0x1234, 0x5678);
    return accelhost_discover(filters, &device, 1, ret, err);
}

bool exports_accel_plugin_fpga_open(uint64_t token, accelhost_open_mode_t mode, uint64_t *ret, accelhost_error_t *err) {
    *ret = token + 1;
    return true;
}

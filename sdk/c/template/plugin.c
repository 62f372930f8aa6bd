// The starting point of a C plugin: one device with no hardware behind it, which applications
// can find and open. Copy this directory, then replace the device with yours:
//
// - `enumerate` reports your devices (the host keeps the properties: queries never call you);
// - `open` / `close` hand out and take back handle numbers;
// - define any other export of plugin.h your device supports: `map_mmio` and `prepare_buffer`
//   for FPGA-style devices (see examples/c-nlb0), the offload calls for kernel launches.
//
// Every export you leave out answers `unsupported` (accelhost.c defines weak defaults).

#include <inttypes.h>
#include <stdlib.h>

#include "accelhost.h"

static uint64_t opened;

bool exports_accel_plugin_discovery_enumerate(exports_accel_plugin_discovery_list_filter_t *filters,
                                              exports_accel_plugin_discovery_list_discovered_t *ret,
                                              accelhost_error_t *err) {
    accelhost_properties_t p = {0};
    p.object_type = ACCEL_PLUGIN_TYPES_OBJECT_TYPE_ACCELERATOR;
    plugin_string_dup(&p.name, "template0");
    p.guid = (accel_plugin_types_guid_t){.high = 0x1234, .low = 0x5678};
    p.vendor_id = 0x1234;
    p.device_id = 0x0001;
    plugin_string_dup(&p.device_type, "fpga");
    plugin_string_dup(&p.host, "localhost");

    ret->len = 0;
    ret->ptr = NULL;
    if (accelhost_any_filter_matches(filters, &p)) {
        ret->ptr = malloc(sizeof *ret->ptr);
        if (ret->ptr == NULL) {
            exports_accel_plugin_discovery_properties_free(&p);
            exports_accel_plugin_discovery_list_filter_free(filters);
            return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_OUT_OF_MEMORY, "out of memory");
        }
        ret->ptr[0] = (exports_accel_plugin_discovery_discovered_t){.token = 0, .properties = p};
        ret->len = 1;
    } else {
        exports_accel_plugin_discovery_properties_free(&p);
    }
    exports_accel_plugin_discovery_list_filter_free(filters);
    return true;
}

bool exports_accel_plugin_fpga_open(uint64_t token, exports_accel_plugin_fpga_open_mode_t mode, uint64_t *ret,
                                    accelhost_error_t *err) {
    if (token != 0) {
        return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_NOT_FOUND, "no token %" PRIu64, token);
    }
    *ret = ++opened;
    accelhost_log(ACCEL_PLUGIN_LOG_LEVEL_INFO, "opened template0 (%" PRIu64 " times)", opened);
    return true;
}

bool exports_accel_plugin_fpga_close(uint64_t handle, accelhost_error_t *err) {
    return true;
}

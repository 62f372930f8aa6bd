// The C SDK for accelhost plugins.
//
// `plugin.h` is the binding wit-bindgen's C generator writes from wit/ at build time
// (`accelhost-sdk build` does it; `accelhost-sdk c-bindings -o DIR` writes a copy to read).
// It declares one `exports_accel_plugin_*` function per export of the `accel:plugin` world and
// one `accel_plugin_*` function per host import.
//
// This header adds what every plugin needs on top:
//
// - Every export has a default in accelhost.c, defined weak: `configure` accepts only an empty
//   config, `initialize` / `finalize` / `close` succeed, `supports-device` says yes,
//   `supports-host` matches local devices, and every other call fails with `unsupported`. A
//   plugin defines only the exports its devices do; its definitions replace the defaults at
//   link time.
// - Error helpers that fill the WIT `error` record.
// - The filter semantics every plugin shares, and string helpers.
//
// Ownership, as wit-bindgen's C bindings define it:
// - Strings and lists an export receives belong to the plugin: free them
//   (`plugin_string_free`, `exports_accel_plugin_discovery_list_filter_free`, ...).
// - What an export returns (in `*ret` or `*err`) must be heap memory (`plugin_string_dup`,
//   `malloc`); the bindings free it after the host copied it.
// - What an import returns belongs to the plugin (free it); what the plugin passes to an
//   import is only borrowed for the call.
// - Resources: an `own` handle is the plugin's until it is dropped (`*_drop_own`) or returned
//   to the host; `accel_plugin_dfl_borrow_port(port)` lends one to an import.

#ifndef ACCELHOST_H
#define ACCELHOST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef accel_plugin_types_error_t accelhost_error_t;
typedef accel_plugin_types_error_code_t accelhost_error_code_t;
typedef exports_accel_plugin_discovery_filter_t accelhost_filter_t;
typedef exports_accel_plugin_discovery_list_filter_t accelhost_filter_list_t;
typedef exports_accel_plugin_discovery_properties_t accelhost_properties_t;
typedef exports_accel_plugin_discovery_list_discovered_t accelhost_discovered_list_t;
typedef exports_accel_plugin_fpga_open_mode_t accelhost_open_mode_t;

// Fills `*err` with `code` and a printf-style message (allocated, as the bindings free it) and
// returns false, so a failing export reads `return accelhost_fail(err, CODE, "...", ...);`.
bool accelhost_fail(accelhost_error_t *err, accelhost_error_code_t code, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

// `accelhost_fail` with the code `unsupported`, naming the WIT call (`"map-mmio"`).
bool accelhost_unsupported(accelhost_error_t *err, const char *call);

// Writes a printf-style line to the host's log, tagged with the plugin's name.
void accelhost_log(accel_plugin_log_level_t level, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

// Whether the WIT string `s` equals the C string `text`.
bool accelhost_string_equals(const plugin_string_t *s, const char *text);

// A NUL-terminated copy of `s` (malloc'd; NULL if memory ran out).
char *accelhost_string_to_cstr(const plugin_string_t *s);

// Does a device on `device_host` match the host filter `filter`? `*` matches every host,
// `localhost` this machine, `^localhost` any other, and any other text must be equal.
bool accelhost_host_matches(const plugin_string_t *filter, const char *device_host);

// Does a device with `properties` match `filter`? Every field the filter sets must match.
bool accelhost_filter_matches(const accelhost_filter_t *filter, const accelhost_properties_t *properties);

// Whether `properties` match `filters`: any one of them, or all devices when there are none.
bool accelhost_any_filter_matches(const accelhost_filter_list_t *filters,
                                  const accelhost_properties_t *properties);

// An accelerator (what applications open) named `name` with the interface GUID `guid_high`,
// `guid_low`: an `fpga` on this machine with no ids, bus address, MMIO regions, interrupts,
// state or parent. Its strings are allocated; set the fields the device has.
accelhost_properties_t accelhost_accelerator(const char *name, uint64_t guid_high, uint64_t guid_low);

// What `enumerate` answers for a fixed list of devices: fills `*ret` with those of the `count`
// `devices` that match `filters`, each with its index as its token, and frees the others and
// `filters` (so an export ends with `return accelhost_discover(filters, devices, n, ret, err);`).
bool accelhost_discover(accelhost_filter_list_t *filters, accelhost_properties_t *devices, size_t count,
                        accelhost_discovered_list_t *ret, accelhost_error_t *err);

#ifdef __cplusplus
}
#endif

#endif

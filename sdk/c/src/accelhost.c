// The C SDK's helpers (accelhost.h) and the default of every export, defined weak so that a
// plugin's own definition replaces it at link time.

#include "accelhost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACCELHOST_DEFAULT __attribute__((weak))

// ---------------------------------------------------------------------------------------------
// Helpers

static bool fail_v(accelhost_error_t *err, accelhost_error_code_t code, const char *format, va_list args) {
    char message[1024];
    int len = vsnprintf(message, sizeof message, format, args);
    if (len < 0) {
        len = 0;
        message[0] = '\0';
    }
    err->code = code;
    plugin_string_dup(&err->message, message);
    return false;
}

bool accelhost_fail(accelhost_error_t *err, accelhost_error_code_t code, const char *format, ...) {
    va_list args;
    va_start(args, format);
    fail_v(err, code, format, args);
    va_end(args);
    return false;
}

bool accelhost_unsupported(accelhost_error_t *err, const char *call) {
    return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_UNSUPPORTED,
                          "%s is not supported by this plugin", call);
}

void accelhost_log(accel_plugin_log_level_t level, const char *format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    int len = vsnprintf(line, sizeof line, format, args);
    va_end(args);
    if (len < 0) {
        return;
    }
    plugin_string_t message;
    plugin_string_set(&message, line);
    accel_plugin_log_log(level, &message);
}

bool accelhost_string_equals(const plugin_string_t *s, const char *text) {
    size_t len = strlen(text);
    return s->len == len && (len == 0 || memcmp(s->ptr, text, len) == 0);
}

char *accelhost_string_to_cstr(const plugin_string_t *s) {
    char *copy = malloc(s->len + 1);
    if (copy != NULL) {
        if (s->len > 0) {
            memcpy(copy, s->ptr, s->len);
        }
        copy[s->len] = '\0';
    }
    return copy;
}

static bool strings_equal(const plugin_string_t *a, const plugin_string_t *b) {
    return a->len == b->len && (a->len == 0 || memcmp(a->ptr, b->ptr, a->len) == 0);
}

bool accelhost_host_matches(const plugin_string_t *filter, const char *device_host) {
    bool local = strcmp(device_host, "localhost") == 0;
    if (accelhost_string_equals(filter, "*")) {
        return true;
    }
    if (accelhost_string_equals(filter, "localhost")) {
        return local;
    }
    if (accelhost_string_equals(filter, "^localhost")) {
        return !local;
    }
    return accelhost_string_equals(filter, device_host);
}

bool accelhost_filter_matches(const accelhost_filter_t *f, const accelhost_properties_t *p) {
    if (f->object_type.is_some && f->object_type.val != p->object_type) {
        return false;
    }
    if (f->guid.is_some && (f->guid.val.high != p->guid.high || f->guid.val.low != p->guid.low)) {
        return false;
    }
    if (f->vendor_id.is_some && f->vendor_id.val != p->vendor_id) {
        return false;
    }
    if (f->device_id.is_some && f->device_id.val != p->device_id) {
        return false;
    }
    if (f->bus_address.is_some) {
        const accel_plugin_types_bus_address_t *want = &f->bus_address.val;
        const accel_plugin_types_bus_address_t *have = &p->bus_address.val;
        if (!p->bus_address.is_some || want->segment != have->segment || want->bus != have->bus ||
            want->device != have->device || want->function != have->function) {
            return false;
        }
    }
    if (f->device_type.is_some && !strings_equal(&f->device_type.val, &p->device_type)) {
        return false;
    }
    if (f->host.is_some) {
        char *host = accelhost_string_to_cstr(&p->host);
        bool matches = host != NULL && accelhost_host_matches(&f->host.val, host);
        free(host);
        if (!matches) {
            return false;
        }
    }
    return true;
}

bool accelhost_any_filter_matches(const accelhost_filter_list_t *filters, const accelhost_properties_t *p) {
    if (filters->len == 0) {
        return true;
    }
    for (size_t i = 0; i < filters->len; i++) {
        if (accelhost_filter_matches(&filters->ptr[i], p)) {
            return true;
        }
    }
    return false;
}

accelhost_properties_t accelhost_accelerator(const char *name, uint64_t guid_high, uint64_t guid_low) {
    accelhost_properties_t p = {0};
    p.object_type = ACCEL_PLUGIN_TYPES_OBJECT_TYPE_ACCELERATOR;
    plugin_string_dup(&p.name, name);
    p.guid = (accel_plugin_types_guid_t){.high = guid_high, .low = guid_low};
    plugin_string_dup(&p.device_type, "fpga");
    plugin_string_dup(&p.host, "localhost");
    return p;
}

bool accelhost_discover(accelhost_filter_list_t *filters, accelhost_properties_t *devices, size_t count,
                        accelhost_discovered_list_t *ret, accelhost_error_t *err) {
    ret->len = 0;
    ret->ptr = count > 0 ? malloc(count * sizeof *ret->ptr) : NULL;
    bool allocated = count == 0 || ret->ptr != NULL;
    for (size_t i = 0; i < count; i++) {
        if (allocated && accelhost_any_filter_matches(filters, &devices[i])) {
            ret->ptr[ret->len++] =
                (exports_accel_plugin_discovery_discovered_t){.token = i, .properties = devices[i]};
        } else {
            exports_accel_plugin_discovery_properties_free(&devices[i]);
        }
    }
    exports_accel_plugin_discovery_list_filter_free(filters);
    if (ret->len == 0) {
        free(ret->ptr);
        ret->ptr = NULL;
    }
    if (!allocated) {
        return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_OUT_OF_MEMORY, "out of memory listing %zu devices",
                              count);
    }
    return true;
}

// ---------------------------------------------------------------------------------------------
// The defaults of the exports. Each frees what it receives, as every export must.

ACCELHOST_DEFAULT bool exports_accel_plugin_lifecycle_configure(plugin_string_t *config, accelhost_error_t *err) {
    size_t start = 0, end = config->len;
    while (start < end && (config->ptr[start] == ' ' || config->ptr[start] == '\n' ||
                           config->ptr[start] == '\t' || config->ptr[start] == '\r')) {
        start++;
    }
    while (end > start && (config->ptr[end - 1] == ' ' || config->ptr[end - 1] == '\n' ||
                           config->ptr[end - 1] == '\t' || config->ptr[end - 1] == '\r')) {
        end--;
    }
    plugin_string_t trimmed = {config->ptr + start, end - start};
    bool empty = trimmed.len == 0 || accelhost_string_equals(&trimmed, "{}") ||
                 accelhost_string_equals(&trimmed, "null");
    if (!empty) {
        accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_INVALID_ARGUMENT,
                       "this plugin takes no configuration, got %.*s", (int)trimmed.len,
                       (const char *)trimmed.ptr);
    }
    plugin_string_free(config);
    return empty;
}

ACCELHOST_DEFAULT bool exports_accel_plugin_lifecycle_initialize(accelhost_error_t *err) {
    return true;
}

ACCELHOST_DEFAULT bool exports_accel_plugin_lifecycle_finalize(accelhost_error_t *err) {
    return true;
}

ACCELHOST_DEFAULT bool exports_accel_plugin_lifecycle_supports_device(plugin_string_t *device_type) {
    plugin_string_free(device_type);
    return true;
}

ACCELHOST_DEFAULT bool exports_accel_plugin_lifecycle_supports_host(plugin_string_t *host) {
    bool local = accelhost_host_matches(host, "localhost");
    plugin_string_free(host);
    return local;
}

ACCELHOST_DEFAULT bool exports_accel_plugin_discovery_enumerate(
    exports_accel_plugin_discovery_list_filter_t *filters,
    exports_accel_plugin_discovery_list_discovered_t *ret, accelhost_error_t *err) {
    exports_accel_plugin_discovery_list_filter_free(filters);
    return accelhost_unsupported(err, "enumerate");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_discovery_describe(
    uint64_t token, exports_accel_plugin_discovery_properties_t *ret, accelhost_error_t *err) {
    return accelhost_unsupported(err, "describe");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_open(uint64_t token, exports_accel_plugin_fpga_open_mode_t mode,
                                                      uint64_t *ret, accelhost_error_t *err) {
    return accelhost_unsupported(err, "open");
}

// A plugin that keeps nothing per handle has nothing to close.
ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_close(uint64_t handle, accelhost_error_t *err) {
    return true;
}

ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_map_mmio(uint64_t handle, uint32_t index,
                                                          exports_accel_plugin_fpga_own_region_t *ret,
                                                          accelhost_error_t *err) {
    return accelhost_unsupported(err, "map-mmio");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_prepare_buffer(
    uint64_t handle, uint64_t size, exports_accel_plugin_fpga_buffer_flags_t options,
    exports_accel_plugin_fpga_prepared_buffer_t *ret, accelhost_error_t *err) {
    return accelhost_unsupported(err, "prepare-buffer");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_release_buffer(uint64_t handle, uint64_t id, accelhost_error_t *err) {
    return accelhost_unsupported(err, "release-buffer");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_io_address(uint64_t handle, uint64_t id, uint64_t *ret,
                                                            accelhost_error_t *err) {
    return accelhost_unsupported(err, "io-address");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_reset(uint64_t handle, accelhost_error_t *err) {
    return accelhost_unsupported(err, "reset");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_reconfigure(uint64_t handle, uint32_t slot,
                                                             exports_accel_plugin_fpga_borrow_image_t image,
                                                             accelhost_error_t *err) {
    return accelhost_unsupported(err, "reconfigure");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_fpga_register_event(uint64_t handle,
                                                                exports_accel_plugin_fpga_event_kind_t kind,
                                                                uint32_t vector,
                                                                exports_accel_plugin_fpga_own_event_t *ret,
                                                                accelhost_error_t *err) {
    return accelhost_unsupported(err, "register-event");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_mem_alloc(uint64_t handle,
                                                              exports_accel_plugin_offload_memory_kind_t kind,
                                                              uint64_t size, uint32_t *maybe_bank,
                                                              exports_accel_plugin_offload_allocation_t *ret,
                                                              accelhost_error_t *err) {
    return accelhost_unsupported(err, "mem-alloc");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_mem_free(uint64_t handle, uint64_t id, accelhost_error_t *err) {
    return accelhost_unsupported(err, "mem-free");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_program_create(uint64_t handle,
                                                                   exports_accel_plugin_offload_borrow_image_t image,
                                                                   uint64_t *ret, accelhost_error_t *err) {
    return accelhost_unsupported(err, "program-create");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_program_release(uint64_t program, accelhost_error_t *err) {
    return accelhost_unsupported(err, "program-release");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_kernel_get(uint64_t program, plugin_string_t *name,
                                                               uint64_t *ret, accelhost_error_t *err) {
    plugin_string_free(name);
    return accelhost_unsupported(err, "kernel-get");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_queue_create(uint64_t handle, uint64_t *ret,
                                                                 accelhost_error_t *err) {
    return accelhost_unsupported(err, "queue-create");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_queue_release(uint64_t queue, accelhost_error_t *err) {
    return accelhost_unsupported(err, "queue-release");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_enqueue_memcpy(uint64_t queue,
                                                                   exports_accel_plugin_offload_memory_range_t *dst,
                                                                   exports_accel_plugin_offload_memory_range_t *src,
                                                                   uint64_t size,
                                                                   exports_accel_plugin_offload_own_event_t *ret,
                                                                   accelhost_error_t *err) {
    return accelhost_unsupported(err, "enqueue-memcpy");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_offload_enqueue_launch(
    uint64_t queue, uint64_t kernel, exports_accel_plugin_offload_list_kernel_argument_t *args,
    exports_accel_plugin_offload_launch_size_t *size, exports_accel_plugin_offload_own_event_t *ret,
    accelhost_error_t *err) {
    exports_accel_plugin_offload_list_kernel_argument_free(args);
    return accelhost_unsupported(err, "enqueue-launch");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_attributes_list_attributes(
    uint64_t token, exports_accel_plugin_attributes_list_attribute_info_t *ret, accelhost_error_t *err) {
    return accelhost_unsupported(err, "list-attributes");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_attributes_read_attribute(uint64_t token, plugin_string_t *name,
                                                                      plugin_string_t *ret,
                                                                      accelhost_error_t *err) {
    plugin_string_free(name);
    return accelhost_unsupported(err, "read-attribute");
}

ACCELHOST_DEFAULT bool exports_accel_plugin_attributes_write_attribute(uint64_t token, plugin_string_t *name,
                                                                       plugin_string_t *value,
                                                                       accelhost_error_t *err) {
    plugin_string_free(name);
    plugin_string_free(value);
    return accelhost_unsupported(err, "write-attribute");
}

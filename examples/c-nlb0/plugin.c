// A DFL plugin in C: every granted DFL port (an emulated NLB0 card, or a real /dev/dfl-port.N)
// as an OPAE-style accelerator, with open, close, MMIO mapping, shared buffers and reset on top
// of the host's `dfl` shim. It follows the shipped Rust plugin (guest-plugins/dfl): the same
// properties, error codes, exclusive opens and buffer ids. The exports it leaves out
// (reconfigure, events, the offload calls) answer `unsupported` through the SDK's defaults.

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accelhost.h"

#define DEVICE_TYPE "fpga"

// A port keeps the token it was first given, so tokens stay stable across enumerations.
typedef struct {
    char *path;
    uint64_t token;
} token_entry_t;

typedef struct {
    uint64_t id;
    uint64_t iova;
} buffer_entry_t;

// A port the application opened, with the buffers it prepared through it.
typedef struct {
    uint64_t handle;
    accel_plugin_dfl_own_port_t port;
    buffer_entry_t *buffers;
    size_t num_buffers;
    size_t buffer_capacity;
    uint64_t next_buffer;
} open_port_t;

static struct {
    bool initialized;
    token_entry_t *tokens;
    size_t num_tokens;
    size_t token_capacity;
    open_port_t *open;
    size_t num_open;
    size_t open_capacity;
    uint64_t next_handle;
} plugin;

// Makes room for one more element in a growable array; false when memory ran out.
static bool reserve_one(void **items, size_t count, size_t *capacity, size_t size) {
    if (count < *capacity) {
        return true;
    }
    size_t wanted = *capacity == 0 ? 4 : *capacity * 2;
    void *grown = realloc(*items, wanted * size);
    if (grown == NULL) {
        return false;
    }
    *items = grown;
    *capacity = wanted;
    return true;
}

static bool out_of_memory(accelhost_error_t *err) {
    return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_OUT_OF_MEMORY, "the c-nlb0 plugin ran out of memory");
}

static bool require_initialized(accelhost_error_t *err) {
    if (plugin.initialized) {
        return true;
    }
    return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_NOT_INITIALIZED, "the c-nlb0 plugin was not initialized");
}

// The token of `path`, given a new one the first time; false when memory ran out.
static bool token_for(const plugin_string_t *path, uint64_t *token) {
    for (size_t i = 0; i < plugin.num_tokens; i++) {
        if (accelhost_string_equals(path, plugin.tokens[i].path)) {
            *token = plugin.tokens[i].token;
            return true;
        }
    }
    if (!reserve_one((void **)&plugin.tokens, plugin.num_tokens, &plugin.token_capacity, sizeof *plugin.tokens)) {
        return false;
    }
    char *copy = accelhost_string_to_cstr(path);
    if (copy == NULL) {
        return false;
    }
    *token = plugin.num_tokens;
    plugin.tokens[plugin.num_tokens++] = (token_entry_t){copy, *token};
    return true;
}

// The granted port behind `token`, copied into `*desc` (free it with
// accel_plugin_dfl_port_desc_free).
static bool port_for_token(uint64_t token, accel_plugin_dfl_port_desc_t *desc, accelhost_error_t *err) {
    const char *path = NULL;
    for (size_t i = 0; i < plugin.num_tokens; i++) {
        if (plugin.tokens[i].token == token) {
            path = plugin.tokens[i].path;
        }
    }
    if (path == NULL) {
        return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_NOT_FOUND, "no dfl port has token %" PRIu64, token);
    }
    accel_plugin_dfl_list_port_desc_t ports;
    accel_plugin_dfl_list_ports(&ports);
    bool found = false;
    for (size_t i = 0; i < ports.len; i++) {
        if (!found && accelhost_string_equals(&ports.ptr[i].path, path)) {
            *desc = ports.ptr[i];
            found = true;
        } else {
            accel_plugin_dfl_port_desc_free(&ports.ptr[i]);
        }
    }
    // The elements are taken or freed above; an empty list's pointer was never allocated.
    if (ports.len > 0) {
        free(ports.ptr);
    }
    if (!found) {
        return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_NOT_FOUND, "dfl port %s is no longer granted", path);
    }
    return true;
}

static open_port_t *find_open(uint64_t handle, accelhost_error_t *err) {
    for (size_t i = 0; i < plugin.num_open; i++) {
        if (plugin.open[i].handle == handle) {
            return &plugin.open[i];
        }
    }
    accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_NOT_FOUND, "no open dfl port has handle %" PRIu64, handle);
    return NULL;
}

static void set_extra(plugin_tuple2_string_string_t *extra, const char *key, const char *value) {
    plugin_string_dup(&extra->f0, key);
    plugin_string_dup(&extra->f1, value);
}

// The properties of a granted port; false when memory ran out.
static bool port_properties(const accel_plugin_dfl_port_desc_t *desc, accelhost_properties_t *p) {
    // OPAE's probe: a port that cannot be opened shared is held exclusively by someone.
    accel_plugin_types_accelerator_state_t state = ACCEL_PLUGIN_TYPES_ACCELERATOR_STATE_ASSIGNED;
    uint32_t num_mmio = 0;
    accel_plugin_dfl_own_port_t probe;
    accelhost_error_t probe_err;
    plugin_string_t path = desc->path;
    if (accel_plugin_dfl_static_port_open(&path, false, &probe, &probe_err)) {
        accel_plugin_dfl_port_info_t info;
        accelhost_error_t info_err;
        if (accel_plugin_dfl_method_port_info(accel_plugin_dfl_borrow_port(probe), &info, &info_err)) {
            num_mmio = info.num_regions;
        } else {
            plugin_string_free(&info_err.message);
        }
        accel_plugin_dfl_port_drop_own(probe);
        state = ACCEL_PLUGIN_TYPES_ACCELERATOR_STATE_UNASSIGNED;
    } else {
        plugin_string_free(&probe_err.message);
    }

    char *full_path = accelhost_string_to_cstr(&desc->path);
    plugin_tuple2_string_string_t *extras = calloc(5, sizeof *extras);
    if (full_path == NULL || extras == NULL) {
        free(full_path);
        free(extras);
        return false;
    }
    const char *name = strncmp(full_path, "/dev/", 5) == 0 ? full_path + 5 : full_path;
    char port_id[16];
    snprintf(port_id, sizeof port_id, "%" PRIu32, desc->port_id);

    *p = (accelhost_properties_t){0};
    p->object_type = ACCEL_PLUGIN_TYPES_OBJECT_TYPE_ACCELERATOR;
    plugin_string_dup(&p->name, name);
    p->guid = desc->afu_id;
    p->vendor_id = desc->vendor_id;
    p->device_id = desc->device_id;
    p->bus_address.is_some = desc->bus_address.is_some;
    p->bus_address.val = desc->bus_address.val;
    p->socket_id = desc->socket_id;
    plugin_string_dup(&p->device_type, DEVICE_TYPE);
    plugin_string_dup(&p->host, "localhost");
    p->num_mmio = num_mmio;
    p->num_interrupts = 0;
    p->accelerator_state.is_some = true;
    p->accelerator_state.val = state;
    p->parent.is_some = false;
    set_extra(&extras[0], "interface", "dfl");
    set_extra(&extras[1], "path", full_path);
    set_extra(&extras[2], "port-id", port_id);
    set_extra(&extras[3], "emulated", desc->emulated ? "true" : "false");
    set_extra(&extras[4], "language", "c");
    p->extras.ptr = extras;
    p->extras.len = 5;
    free(full_path);
    return true;
}

bool exports_accel_plugin_lifecycle_initialize(accelhost_error_t *err) {
    plugin.initialized = true;
    return true;
}

bool exports_accel_plugin_lifecycle_finalize(accelhost_error_t *err) {
    for (size_t i = 0; i < plugin.num_open; i++) {
        accel_plugin_dfl_port_drop_own(plugin.open[i].port);
        free(plugin.open[i].buffers);
    }
    plugin.num_open = 0;
    plugin.initialized = false;
    return true;
}

bool exports_accel_plugin_lifecycle_supports_device(plugin_string_t *device_type) {
    bool supported = accelhost_string_equals(device_type, DEVICE_TYPE);
    plugin_string_free(device_type);
    return supported;
}

bool exports_accel_plugin_discovery_enumerate(exports_accel_plugin_discovery_list_filter_t *filters,
                                              exports_accel_plugin_discovery_list_discovered_t *ret,
                                              accelhost_error_t *err) {
    if (!require_initialized(err)) {
        exports_accel_plugin_discovery_list_filter_free(filters);
        return false;
    }
    accel_plugin_dfl_list_port_desc_t ports;
    accel_plugin_dfl_list_ports(&ports);
    bool ok = true;
    ret->len = 0;
    ret->ptr = ports.len == 0 ? NULL : calloc(ports.len, sizeof *ret->ptr);
    if (ports.len > 0 && ret->ptr == NULL) {
        ok = out_of_memory(err);
    }
    for (size_t i = 0; ok && i < ports.len; i++) {
        accelhost_properties_t properties;
        if (!port_properties(&ports.ptr[i], &properties)) {
            ok = out_of_memory(err);
        } else if (!accelhost_any_filter_matches(filters, &properties)) {
            exports_accel_plugin_discovery_properties_free(&properties);
        } else {
            uint64_t token;
            if (!token_for(&ports.ptr[i].path, &token)) {
                exports_accel_plugin_discovery_properties_free(&properties);
                ok = out_of_memory(err);
            } else {
                ret->ptr[ret->len++] = (exports_accel_plugin_discovery_discovered_t){token, properties};
            }
        }
    }
    if (!ok) {
        exports_accel_plugin_discovery_list_discovered_free(ret);
    } else if (ret->len == 0) {
        free(ret->ptr);
        ret->ptr = NULL;
    }
    accel_plugin_dfl_list_port_desc_free(&ports);
    exports_accel_plugin_discovery_list_filter_free(filters);
    return ok;
}

bool exports_accel_plugin_discovery_describe(uint64_t token, exports_accel_plugin_discovery_properties_t *ret,
                                             accelhost_error_t *err) {
    accel_plugin_dfl_port_desc_t desc;
    if (!require_initialized(err) || !port_for_token(token, &desc, err)) {
        return false;
    }
    bool ok = port_properties(&desc, ret) || out_of_memory(err);
    accel_plugin_dfl_port_desc_free(&desc);
    return ok;
}

bool exports_accel_plugin_fpga_open(uint64_t token, exports_accel_plugin_fpga_open_mode_t mode, uint64_t *ret,
                                    accelhost_error_t *err) {
    accel_plugin_dfl_port_desc_t desc;
    if (!require_initialized(err) || !port_for_token(token, &desc, err)) {
        return false;
    }
    if (!reserve_one((void **)&plugin.open, plugin.num_open, &plugin.open_capacity, sizeof *plugin.open)) {
        accel_plugin_dfl_port_desc_free(&desc);
        return out_of_memory(err);
    }
    accel_plugin_dfl_own_port_t port;
    bool opened = accel_plugin_dfl_static_port_open(&desc.path, mode == ACCEL_PLUGIN_TYPES_OPEN_MODE_EXCLUSIVE,
                                                    &port, err);
    accel_plugin_dfl_port_desc_free(&desc);
    if (!opened) {
        return false; // the host's error (busy, permission-denied) goes back as it is
    }
    *ret = ++plugin.next_handle;
    plugin.open[plugin.num_open++] = (open_port_t){.handle = *ret, .port = port};
    return true;
}

bool exports_accel_plugin_fpga_close(uint64_t handle, accelhost_error_t *err) {
    open_port_t *open = find_open(handle, err);
    if (open == NULL) {
        return false;
    }
    // Dropping the port closes it; the host then resets the AFU and removes its mappings.
    accel_plugin_dfl_port_drop_own(open->port);
    free(open->buffers);
    *open = plugin.open[--plugin.num_open];
    return true;
}

bool exports_accel_plugin_fpga_map_mmio(uint64_t handle, uint32_t index, exports_accel_plugin_fpga_own_region_t *ret,
                                        accelhost_error_t *err) {
    open_port_t *open = find_open(handle, err);
    if (open == NULL) {
        return false;
    }
    accel_plugin_dfl_port_info_t info;
    if (!accel_plugin_dfl_method_port_info(accel_plugin_dfl_borrow_port(open->port), &info, err)) {
        return false;
    }
    if (index >= info.num_regions) {
        return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_INVALID_ARGUMENT,
                              "MMIO region %" PRIu32 " does not exist: the port has %" PRIu32 " region(s)", index,
                              info.num_regions);
    }
    return accel_plugin_dfl_method_port_map_region(accel_plugin_dfl_borrow_port(open->port), index, ret, err);
}

bool exports_accel_plugin_fpga_prepare_buffer(uint64_t handle, uint64_t size,
                                              exports_accel_plugin_fpga_buffer_flags_t options,
                                              exports_accel_plugin_fpga_prepared_buffer_t *ret, accelhost_error_t *err) {
    if (size == 0) {
        return accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_INVALID_ARGUMENT, "a buffer needs a size above 0");
    }
    open_port_t *open = find_open(handle, err);
    if (open == NULL) {
        return false;
    }
    if (!reserve_one((void **)&open->buffers, open->num_buffers, &open->buffer_capacity, sizeof *open->buffers)) {
        return out_of_memory(err);
    }
    accel_plugin_dma_own_buffer_t buffer;
    if (!accel_plugin_dma_static_buffer_allocate(size, &buffer, err)) {
        return false; // out-of-memory past the plugin's DMA grant, from the host
    }
    uint64_t iova;
    if (!accel_plugin_dfl_method_port_dma_map(accel_plugin_dfl_borrow_port(open->port),
                                              accel_plugin_dma_borrow_buffer(buffer), &iova, err)) {
        accel_plugin_dma_buffer_drop_own(buffer);
        return false;
    }
    uint64_t id = ++open->next_buffer;
    open->buffers[open->num_buffers++] = (buffer_entry_t){id, iova};
    *ret = (exports_accel_plugin_fpga_prepared_buffer_t){.id = id, .buffer = buffer, .iova = iova};
    return true;
}

// The index of buffer `id` of `open`, or `num_buffers` with `*err` filled.
static size_t find_buffer(const open_port_t *open, uint64_t id, accelhost_error_t *err) {
    for (size_t i = 0; i < open->num_buffers; i++) {
        if (open->buffers[i].id == id) {
            return i;
        }
    }
    accelhost_fail(err, ACCEL_PLUGIN_TYPES_ERROR_CODE_NOT_FOUND, "no buffer %" PRIu64 " on handle %" PRIu64, id,
                   open->handle);
    return open->num_buffers;
}

bool exports_accel_plugin_fpga_release_buffer(uint64_t handle, uint64_t id, accelhost_error_t *err) {
    open_port_t *open = find_open(handle, err);
    if (open == NULL) {
        return false;
    }
    size_t index = find_buffer(open, id, err);
    if (index == open->num_buffers) {
        return false;
    }
    uint64_t iova = open->buffers[index].iova;
    open->buffers[index] = open->buffers[--open->num_buffers];
    return accel_plugin_dfl_method_port_dma_unmap(accel_plugin_dfl_borrow_port(open->port), iova, err);
}

bool exports_accel_plugin_fpga_io_address(uint64_t handle, uint64_t id, uint64_t *ret, accelhost_error_t *err) {
    open_port_t *open = find_open(handle, err);
    if (open == NULL) {
        return false;
    }
    size_t index = find_buffer(open, id, err);
    if (index == open->num_buffers) {
        return false;
    }
    *ret = open->buffers[index].iova;
    return true;
}

bool exports_accel_plugin_fpga_reset(uint64_t handle, accelhost_error_t *err) {
    open_port_t *open = find_open(handle, err);
    return open != NULL && accel_plugin_dfl_method_port_reset(accel_plugin_dfl_borrow_port(open->port), err);
}

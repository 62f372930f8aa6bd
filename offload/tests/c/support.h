/* What the Offload API test programs share: checks that print one line each and count the
 * failed ones, error reporting, reading a device image or module, and finding the XRT card. */
#ifndef ACCELHOST_OFFLOAD_TEST_SUPPORT_H
#define ACCELHOST_OFFLOAD_TEST_SUPPORT_H

#include <OffloadAPI.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed;

static inline void expect(int ok, const char* what) {
    printf("%s: %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) failed++;
}

/* Whether `result` is success (an error is said on stderr). */
static inline int ok(ol_result_t result) {
    if (result != OL_SUCCESS) fprintf(stderr, "error %d: %s\n", result->Code, result->Details);
    return result == OL_SUCCESS;
}

/* The file at `path` whole (its size in *size); NULL if it cannot be read. */
static inline void* read_file(const char* path, size_t* size) {
    FILE* file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    *size = (size_t)ftell(file);
    fseek(file, 0, SEEK_SET);
    void* bytes = malloc(*size);
    if (bytes && fread(bytes, 1, *size, file) != *size) {
        free(bytes);
        bytes = NULL;
    }
    fclose(file);
    return bytes;
}

/* The first platform's XRT card (xocl/emu:xocl0) and the host device, each a check; 0 when
 * either is missing. */
static inline int find_card(ol_device_handle_t* card, ol_device_handle_t* host) {
    expect(ok(olInit()), "olInit");
    ol_platform_handle_t platform;
    expect(ok(olGetPlatform(1, &platform)), "the platform");
    uint32_t count = 0;
    ol_device_handle_t devices[16];
    expect(ok(olGetDeviceCount(platform, &count)) && count <= 16 && ok(olGetDevice(platform, count, devices)),
           "its devices");
    *card = NULL;
    for (uint32_t i = 0; i < count; i++) {
        char name[256];
        if (ok(olGetDeviceInfo(devices[i], OL_DEVICE_INFO_NAME, sizeof name, name)) &&
            strcmp(name, "xocl/emu:xocl0") == 0)
            *card = devices[i];
    }
    if (!*card || !ok(olGetHostDevice(host))) {
        fprintf(stderr, "no XRT card or host device\n");
        return 0;
    }
    return 1;
}

#endif

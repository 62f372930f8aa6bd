/* What the C check programs share: one printed line per check, a device of the accelhost
 * platform by vendor id, and reading a file (an xclbin) whole. */
#ifndef ACCELHOST_OPENCL_CHECKS_H
#define ACCELHOST_OPENCL_CHECKS_H

#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures __attribute__((unused)) = 0;

/* Prints "ok: what" or "FAILED: what"; the program exits with the count of failures. */
static inline void expect(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) failures++;
}

/* The device with vendor id `vendor` (0x10ee: the XRT card; 0x1234: the chaos plugin's) of
 * the platform named "accelhost", or NULL. */
static inline cl_device_id accelhost_device(cl_uint vendor_id) {
    cl_platform_id platforms[16];
    cl_uint count = 0;
    if (clGetPlatformIDs(16, platforms, &count) != CL_SUCCESS) return NULL;
    for (cl_uint i = 0; i < count && i < 16; i++) {
        char name[64] = "";
        clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strcmp(name, "accelhost") != 0) continue;
        cl_device_id devices[16];
        cl_uint found = 0;
        clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 16, devices, &found);
        for (cl_uint d = 0; d < found && d < 16; d++) {
            cl_uint vendor = 0;
            clGetDeviceInfo(devices[d], CL_DEVICE_VENDOR_ID, sizeof vendor, &vendor, NULL);
            if (vendor == vendor_id) return devices[d];
        }
    }
    return NULL;
}

/* The bytes of the file at path (its size in *size), to free; NULL if it cannot be read. */
static inline unsigned char *read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    *size = (size_t)ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = malloc(*size);
    if (bytes && fread(bytes, 1, *size, file) != *size) {
        free(bytes);
        bytes = NULL;
    }
    fclose(file);
    return bytes;
}

#endif

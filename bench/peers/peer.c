/* The program `accelhost bench --peers` runs through every OpenCL ICD it finds, the same
 * binary for each (the ICD loader picks the implementation from OCL_ICD_VENDORS): context
 * creation, 64 MiB transfers each way, a one-element vadd's launch-to-finish latency and
 * queued launches per second. Usage: peer <xclbin|-> <launches> <transfer MiB>; with "-" the
 * kernel is built from OpenCL C source. Prints one "key value" line per figure; exits 1 with
 * the failing call on stderr. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* For the calls that return an object and report through their last argument. */
#define CREATED(name, status)                                                            \
    do {                                                                                 \
        if ((status) != CL_SUCCESS) {                                                    \
            fprintf(stderr, "%s failed: %d\n", name, (status));                          \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cl_int status_ = (call);                                                         \
        if (status_ != CL_SUCCESS) {                                                     \
            fprintf(stderr, "%s failed: %d\n", #call, status_);                          \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static const char *VADD_SOURCE =
    "__kernel void vadd(__global const uint *a, __global const uint *b,\n"
    "                   __global uint *c, uint n) {\n"
    "    for (uint i = get_global_id(0); i < n; i += get_global_size(0)) c[i] = a[i] + b[i];\n"
    "}\n";

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile of `n` samples, sorting them. */
static double quantile(double *samples, size_t n, double q) {
    qsort(samples, n, sizeof *samples, by_value);
    size_t at = (size_t)(q * (double)(n - 1) + 0.5);
    return samples[at];
}

static unsigned char *read_file(const char *path, size_t *size) {
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

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <xclbin|-> <launches> <transfer MiB>\n", argv[0]);
        return 2;
    }
    size_t launches = strtoul(argv[2], NULL, 0);
    size_t transfer = strtoul(argv[3], NULL, 0) << 20;
    if (launches < 2 || transfer == 0) {
        fprintf(stderr, "launches must be at least 2 and the transfer at least 1 MiB\n");
        return 2;
    }

    cl_platform_id platform;
    cl_uint count = 0;
    CHECK(clGetPlatformIDs(1, &platform, &count));
    cl_device_id device;
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    char name[256] = {0};
    CHECK(clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL));
    printf("device %s\n", name);

    cl_int err = CL_SUCCESS;
    double context_us[200];
    for (size_t i = 0; i < 200; i++) {
        double start = now_us();
        cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
        CREATED("clCreateContext", err);
        CHECK(clReleaseContext(context));
        context_us[i] = now_us() - start;
    }
    printf("context_us %.3f\n", quantile(context_us, 200, 0.5));

    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CREATED("clCreateContext", err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    CREATED("clCreateCommandQueue", err);

    /* Transfers: the same 64 MiB host array written to and read back from a device buffer,
     * blocking, best of five each way; the bytes read back are checked. */
    uint32_t *host = aligned_alloc(4096, transfer);
    uint32_t *back = aligned_alloc(4096, transfer);
    for (size_t i = 0; i < transfer / 4; i++) host[i] = (uint32_t)(i * 2654435761u);
    cl_mem big = clCreateBuffer(context, CL_MEM_READ_WRITE, transfer, NULL, &err);
    CREATED("clCreateBuffer", err);
    double best_write = 1e30, best_read = 1e30;
    for (int round = 0; round < 5; round++) {
        double start = now_us();
        CHECK(clEnqueueWriteBuffer(queue, big, CL_TRUE, 0, transfer, host, 0, NULL, NULL));
        double written = now_us();
        CHECK(clEnqueueReadBuffer(queue, big, CL_TRUE, 0, transfer, back, 0, NULL, NULL));
        double read = now_us();
        if (written - start < best_write) best_write = written - start;
        if (read - written < best_read) best_read = read - written;
    }
    if (memcmp(host, back, transfer) != 0) {
        fprintf(stderr, "the bytes read back differ from the bytes written\n");
        return 1;
    }
    printf("write_gbps %.3f\n", (double)transfer / best_write / 1e3);
    printf("read_gbps %.3f\n", (double)transfer / best_read / 1e3);
    CHECK(clReleaseMemObject(big));
    free(host);
    free(back);

    cl_program program;
    if (strcmp(argv[1], "-") == 0) {
        program = clCreateProgramWithSource(context, 1, &VADD_SOURCE, NULL, &err);
        CREATED("clCreateProgramWithSource", err);
    } else {
        size_t size = 0;
        unsigned char *image = read_file(argv[1], &size);
        if (!image) {
            fprintf(stderr, "cannot read %s\n", argv[1]);
            return 1;
        }
        const unsigned char *images[1] = {image};
        cl_int status = CL_SUCCESS;
        program = clCreateProgramWithBinary(context, 1, &device, &size, images, &status, &err);
        CREATED("clCreateProgramWithBinary", err);
        CHECK(status);
        free(image);
    }
    CHECK(clBuildProgram(program, 1, &device, NULL, NULL, NULL));
    cl_kernel kernel = clCreateKernel(program, "vadd", &err);
    CREATED("clCreateKernel", err);

    uint32_t a = 40, b = 2, n = 1;
    cl_mem in1 = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 4, &a, &err);
    CREATED("clCreateBuffer", err);
    cl_mem in2 = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 4, &b, &err);
    CREATED("clCreateBuffer", err);
    cl_mem out = clCreateBuffer(context, CL_MEM_WRITE_ONLY, 4, NULL, &err);
    CREATED("clCreateBuffer", err);
    CHECK(clSetKernelArg(kernel, 0, sizeof(cl_mem), &in1));
    CHECK(clSetKernelArg(kernel, 1, sizeof(cl_mem), &in2));
    CHECK(clSetKernelArg(kernel, 2, sizeof(cl_mem), &out));
    CHECK(clSetKernelArg(kernel, 3, sizeof(cl_uint), &n));
    size_t one = 1;

    /* Launch to finish: one launch, then clFinish, each timed. */
    double *latency = malloc(launches * sizeof *latency);
    for (size_t i = 0; i < launches; i++) {
        double start = now_us();
        CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &one, &one, 0, NULL, NULL));
        CHECK(clFinish(queue));
        latency[i] = now_us() - start;
    }
    printf("launch_p50_us %.3f\n", quantile(latency, launches, 0.5));
    printf("launch_p99_us %.3f\n", quantile(latency, launches, 0.99));
    free(latency);

    /* Queued launches: all enqueued, then one clFinish; best of three. */
    double best_rate = 0;
    for (int round = 0; round < 3; round++) {
        double start = now_us();
        for (size_t i = 0; i < launches; i++)
            CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &one, &one, 0, NULL, NULL));
        CHECK(clFinish(queue));
        double rate = (double)launches / ((now_us() - start) / 1e6);
        if (rate > best_rate) best_rate = rate;
    }
    printf("queued_per_s %.0f\n", best_rate);

    uint32_t sum = 0;
    CHECK(clEnqueueReadBuffer(queue, out, CL_TRUE, 0, 4, &sum, 0, NULL, NULL));
    if (sum != a + b) {
        fprintf(stderr, "vadd computed %u, not %u\n", sum, a + b);
        return 1;
    }

    CHECK(clReleaseMemObject(in1));
    CHECK(clReleaseMemObject(in2));
    CHECK(clReleaseMemObject(out));
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseProgram(program));
    CHECK(clReleaseCommandQueue(queue));
    CHECK(clReleaseContext(context));
    return 0;
}

/* The program `accelhost bench --peers` runs through every OpenCL ICD it finds, the same
 * binary for each (the ICD loader picks the implementation from OCL_ICD_VENDORS): context
 * creation, 64 MiB transfers each way, a one-element vadd's launch-to-finish latency and
 * queued launches per second. Usage: peer <xclbin|-> <launches> <transfer MiB>; with "-" the
 * kernel is built from OpenCL C source. `peer kernels` instead builds three kernels from
 * OpenCL C source and times their builds and runs: vadd of 16 Mi floats, a sum of 1 Mi
 * floats through local memory and barriers, a 512x512 matrix multiply of 16x16 tiles in local
 * memory; each result checked. Prints one "key value" line per figure; exits 1 with the
 * failing call on stderr. */
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

static const char *KERNELS_SOURCE[3] = {
    "__kernel void vadd(__global const float *a, __global const float *b, __global float *c) {\n"
    "    size_t i = get_global_id(0);\n"
    "    c[i] = a[i] + b[i];\n"
    "}\n",
    "__kernel void sum(__global const float *a, __local float *part, __global float *out) {\n"
    "    size_t l = get_local_id(0);\n"
    "    part[l] = a[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {\n"
    "        if (l < s) part[l] += part[l + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (l == 0) out[get_group_id(0)] = part[0];\n"
    "}\n",
    "#define T 16\n"
    "__kernel void mmult(__global const float *a, __global const float *b, __global float *c,\n"
    "                    int n) {\n"
    "    __local float ta[T][T], tb[T][T];\n"
    "    int x = get_local_id(0), y = get_local_id(1);\n"
    "    int col = get_global_id(0), row = get_global_id(1);\n"
    "    float acc = 0;\n"
    "    for (int k = 0; k < n; k += T) {\n"
    "        ta[y][x] = a[row * n + k + x];\n"
    "        tb[y][x] = b[(k + y) * n + col];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (int j = 0; j < T; j++) acc += ta[y][j] * tb[j][x];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    c[row * n + col] = acc;\n"
    "}\n",
};

/* Builds `source` for `device`, printing how long clBuildProgram took as `build_<name>_ms`. */
static cl_kernel built(cl_context context, cl_device_id device, const char *source,
                       const char *name) {
    cl_int err = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    CREATED("clCreateProgramWithSource", err);
    double start = now_us();
    err = clBuildProgram(program, 1, &device, NULL, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = {0};
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        fprintf(stderr, "clBuildProgram of %s failed: %d %s\n", name, err, log);
        exit(1);
    }
    printf("build_%s_ms %.3f\n", name, (now_us() - start) / 1e3);
    cl_kernel kernel = clCreateKernel(program, name, &err);
    CREATED("clCreateKernel", err);
    CHECK(clReleaseProgram(program));
    return kernel;
}

/* Runs `kernel` once unmeasured (a peer may compile it then), then three times, printing the
 * best launch-to-finish time as `<name>_ms`. */
static void timed(cl_command_queue queue, cl_kernel kernel, const char *name, cl_uint dims,
                  const size_t *global, const size_t *local) {
    double best = 1e30;
    for (int round = 0; round < 4; round++) {
        double start = now_us();
        CHECK(clEnqueueNDRangeKernel(queue, kernel, dims, NULL, global, local, 0, NULL, NULL));
        CHECK(clFinish(queue));
        double took = now_us() - start;
        if (round > 0 && took < best) best = took;
    }
    printf("%s_ms %.3f\n", name, best / 1e3);
}

static cl_mem filled(cl_context context, const float *values, size_t count) {
    cl_int err = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                   count * sizeof *values, (void *)values, &err);
    CREATED("clCreateBuffer", err);
    return buffer;
}

static int kernels(cl_device_id device) {
    enum { ELEMENTS = 16 << 20, SUMMED = 1 << 20, GROUP = 256, N = 512 };
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CREATED("clCreateContext", err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    CREATED("clCreateCommandQueue", err);
    cl_kernel vadd = built(context, device, KERNELS_SOURCE[0], "vadd");
    cl_kernel sum = built(context, device, KERNELS_SOURCE[1], "sum");
    cl_kernel mmult = built(context, device, KERNELS_SOURCE[2], "mmult");

    float *a = malloc(ELEMENTS * sizeof *a), *b = malloc(ELEMENTS * sizeof *b);
    float *c = malloc(ELEMENTS * sizeof *c);
    for (size_t i = 0; i < ELEMENTS; i++) {
        a[i] = (float)(i % 1000);
        b[i] = (float)(i % 7);
    }
    cl_mem da = filled(context, a, ELEMENTS), db = filled(context, b, ELEMENTS);
    cl_mem dc = filled(context, c, ELEMENTS);
    size_t global = ELEMENTS, local = GROUP;
    CHECK(clSetKernelArg(vadd, 0, sizeof da, &da));
    CHECK(clSetKernelArg(vadd, 1, sizeof db, &db));
    CHECK(clSetKernelArg(vadd, 2, sizeof dc, &dc));
    timed(queue, vadd, "vadd", 1, &global, &local);
    CHECK(clEnqueueReadBuffer(queue, dc, CL_TRUE, 0, ELEMENTS * sizeof *c, c, 0, NULL, NULL));
    for (size_t i = 0; i < ELEMENTS; i++) {
        if (c[i] != a[i] + b[i]) {
            fprintf(stderr, "vadd: element %zu is %f, not %f\n", i, c[i], a[i] + b[i]);
            return 1;
        }
    }

    cl_mem parts = clCreateBuffer(context, CL_MEM_READ_WRITE, SUMMED / GROUP * sizeof(float),
                                  NULL, &err);
    CREATED("clCreateBuffer", err);
    CHECK(clSetKernelArg(sum, 0, sizeof da, &da));
    CHECK(clSetKernelArg(sum, 1, GROUP * sizeof(float), NULL));
    CHECK(clSetKernelArg(sum, 2, sizeof parts, &parts));
    size_t summed = SUMMED;
    timed(queue, sum, "sum", 1, &summed, &local);
    CHECK(clEnqueueReadBuffer(queue, parts, CL_TRUE, 0, SUMMED / GROUP * sizeof(float), c, 0,
                              NULL, NULL));
    double total = 0, want = 0;
    for (size_t i = 0; i < SUMMED / GROUP; i++) total += c[i];
    for (size_t i = 0; i < SUMMED; i++) want += a[i];
    if (total != want) {
        fprintf(stderr, "sum: %f, not %f\n", total, want);
        return 1;
    }

    for (size_t i = 0; i < N * N; i++) {
        a[i] = (float)((i * 7) % 11) - 5;
        b[i] = (float)((i * 3) % 13) - 6;
    }
    cl_mem ma = filled(context, a, N * N), mb = filled(context, b, N * N);
    cl_mem mc = filled(context, c, N * N);
    int n = N;
    CHECK(clSetKernelArg(mmult, 0, sizeof ma, &ma));
    CHECK(clSetKernelArg(mmult, 1, sizeof mb, &mb));
    CHECK(clSetKernelArg(mmult, 2, sizeof mc, &mc));
    CHECK(clSetKernelArg(mmult, 3, sizeof n, &n));
    size_t square[2] = {N, N}, tile[2] = {16, 16};
    timed(queue, mmult, "mmult", 2, square, tile);
    CHECK(clEnqueueReadBuffer(queue, mc, CL_TRUE, 0, N * N * sizeof *c, c, 0, NULL, NULL));
    for (size_t row = 0; row < N; row += 97) {
        for (size_t col = 0; col < N; col += 89) {
            float want_c = 0;
            for (size_t k = 0; k < N; k++) want_c += a[row * N + k] * b[k * N + col];
            if (c[row * N + col] != want_c) {
                fprintf(stderr, "mmult: (%zu, %zu) is %f, not %f\n", row, col,
                        c[row * N + col], want_c);
                return 1;
            }
        }
    }
    cl_mem all[] = {da, db, dc, parts, ma, mb, mc};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) CHECK(clReleaseMemObject(all[i]));
    CHECK(clReleaseKernel(vadd));
    CHECK(clReleaseKernel(sum));
    CHECK(clReleaseKernel(mmult));
    CHECK(clReleaseCommandQueue(queue));
    CHECK(clReleaseContext(context));
    free(a);
    free(b);
    free(c);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "kernels") == 0) {
        cl_platform_id platform;
        CHECK(clGetPlatformIDs(1, &platform, NULL));
        cl_device_id device;
        CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
        char name[256] = {0};
        CHECK(clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL));
        printf("device %s\n", name);
        return kernels(device);
    }
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

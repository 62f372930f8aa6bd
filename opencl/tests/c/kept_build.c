/* A program built from OpenCL C source with the build option -DSTEP=<argv[1]>, run once over
 * 256 work-items and checked: each element i becomes i * 3 + STEP. Prints one line per check;
 * exit 0 when all hold. Run twice with the same step, the second build is the kept one. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "checks.h"
#include <stdio.h>

static const char *source =
    "__kernel void step(__global int *a) {\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = (int)i * 3 + STEP;\n"
    "}\n";

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: kept_build STEP\n");
        return 2;
    }
    int step = atoi(argv[1]);
    cl_device_id card = accelhost_device(0x10ee);
    if (!card) {
        fprintf(stderr, "the accelhost platform or its XRT card is missing\n");
        return 2;
    }
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &card, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, card, 0, &err);
    if (err != CL_SUCCESS) return 2;
    cl_program program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    char options[64];
    snprintf(options, sizeof options, "-DSTEP=%d", step);
    err = clBuildProgram(program, 1, &card, options, NULL, NULL);
    expect(err == CL_SUCCESS, "the program builds");
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(program, card, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "%s\n", log);
        return 1;
    }
    cl_kernel kernel = clCreateKernel(program, "step", &err);
    enum { N = 256 };
    int data[N];
    for (int i = 0; i < N; i++) data[i] = -1;
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof data,
                                   data, &err);
    clSetKernelArg(kernel, 0, sizeof buffer, &buffer);
    size_t global = N;
    err = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    expect(err == CL_SUCCESS, "the kernel is enqueued");
    clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof data, data, 0, NULL, NULL);
    int right = 1;
    for (int i = 0; i < N; i++) right &= data[i] == i * 3 + step;
    expect(right, "every element is i * 3 + STEP");
    clReleaseMemObject(buffer);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}

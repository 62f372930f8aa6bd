/* The Vitis hello-world host flow, in OpenCL C API calls only: find the platform and an
 * accelerator, load the vadd xclbin, run vadd on buffers that use the host's memory,
 * migrate, verify. Usage: vadd_host <xclbin> <elements>. Exit 0 when every element checks. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cl_int status_ = (call);                                                         \
        if (status_ != CL_SUCCESS) {                                                     \
            fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, status_); \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

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
    if (argc != 3) {
        fprintf(stderr, "usage: %s <xclbin> <elements>\n", argv[0]);
        return 2;
    }
    cl_uint elements = (cl_uint)strtoul(argv[2], NULL, 0);
    size_t bytes = (size_t)elements * sizeof(uint32_t);

    cl_uint count = 0;
    CHECK(clGetPlatformIDs(0, NULL, &count));
    cl_platform_id platforms[16];
    CHECK(clGetPlatformIDs(count < 16 ? count : 16, platforms, NULL));
    cl_platform_id platform = NULL;
    for (cl_uint i = 0; i < count && i < 16; i++) {
        char name[256];
        CHECK(clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name, name, NULL));
        if (strcmp(name, "accelhost") == 0) platform = platforms[i];
    }
    if (!platform) {
        fprintf(stderr, "no accelhost platform\n");
        return 1;
    }
    cl_device_id devices[16];
    cl_uint found = 0;
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 16, devices, &found));
    cl_device_id device = NULL;
    for (cl_uint i = 0; i < found && i < 16; i++) {
        cl_uint vendor = 0;
        CHECK(clGetDeviceInfo(devices[i], CL_DEVICE_VENDOR_ID, sizeof vendor, &vendor, NULL));
        if (vendor == 0x10ee) device = devices[i];
    }
    if (!device) {
        fprintf(stderr, "no Xilinx device\n");
        return 1;
    }
    char device_name[256];
    CHECK(clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof device_name, device_name, NULL));

    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue queue =
        clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &err);
    CHECK(err);

    size_t image_size = 0;
    unsigned char *image = read_file(argv[1], &image_size);
    if (!image) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 1;
    }
    const unsigned char *binaries[1] = {image};
    cl_int binary_status = -1;
    cl_program program = clCreateProgramWithBinary(context, 1, &device, &image_size, binaries,
                                                   &binary_status, &err);
    CHECK(err);
    CHECK(binary_status);
    CHECK(clBuildProgram(program, 1, &device, NULL, NULL, NULL));
    cl_kernel kernel = clCreateKernel(program, "vadd", &err);
    CHECK(err);

    uint32_t *in1 = aligned_alloc(4096, bytes + 4096);
    uint32_t *in2 = aligned_alloc(4096, bytes + 4096);
    uint32_t *out = aligned_alloc(4096, bytes + 4096);
    for (cl_uint i = 0; i < elements; i++) {
        in1[i] = i * 2654435761u;
        in2[i] = i ^ 0xA5A5A5A5u;
        out[i] = 0;
    }
    cl_mem buffer_in1 = clCreateBuffer(context, CL_MEM_USE_HOST_PTR | CL_MEM_READ_ONLY, bytes,
                                       in1, &err);
    CHECK(err);
    cl_mem buffer_in2 = clCreateBuffer(context, CL_MEM_USE_HOST_PTR | CL_MEM_READ_ONLY, bytes,
                                       in2, &err);
    CHECK(err);
    cl_mem buffer_out = clCreateBuffer(context, CL_MEM_USE_HOST_PTR | CL_MEM_WRITE_ONLY, bytes,
                                       out, &err);
    CHECK(err);
    CHECK(clSetKernelArg(kernel, 0, sizeof(cl_mem), &buffer_in1));
    CHECK(clSetKernelArg(kernel, 1, sizeof(cl_mem), &buffer_in2));
    CHECK(clSetKernelArg(kernel, 2, sizeof(cl_mem), &buffer_out));
    CHECK(clSetKernelArg(kernel, 3, sizeof(cl_uint), &elements));

    cl_mem inputs[2] = {buffer_in1, buffer_in2};
    CHECK(clEnqueueMigrateMemObjects(queue, 2, inputs, 0, 0, NULL, NULL));
    cl_event run;
    CHECK(clEnqueueTask(queue, kernel, 0, NULL, &run));
    CHECK(clEnqueueMigrateMemObjects(queue, 1, &buffer_out, CL_MIGRATE_MEM_OBJECT_HOST, 1,
                                     &run, NULL));
    CHECK(clFinish(queue));

    cl_int run_status = -1;
    CHECK(clGetEventInfo(run, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof run_status, &run_status,
                         NULL));
    cl_ulong start = 0, end = 0;
    CHECK(clGetEventProfilingInfo(run, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL));
    CHECK(clGetEventProfilingInfo(run, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL));

    cl_uint mismatches = 0;
    for (cl_uint i = 0; i < elements; i++) {
        if (out[i] != in1[i] + in2[i]) mismatches++;
    }
    printf("vadd of %u elements on %s: %u mismatches, status %d, %s\n", elements, device_name,
           mismatches, run_status, end >= start && end > 0 ? "profiled" : "not profiled");

    CHECK(clReleaseEvent(run));
    CHECK(clReleaseMemObject(buffer_in1));
    CHECK(clReleaseMemObject(buffer_in2));
    CHECK(clReleaseMemObject(buffer_out));
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseProgram(program));
    CHECK(clReleaseCommandQueue(queue));
    CHECK(clReleaseContext(context));
    free(in1);
    free(in2);
    free(out);
    free(image);
    return mismatches == 0 && run_status == CL_COMPLETE ? 0 : 1;
}

/* A Vitis OpenCL host that finds its card as the xcl2 helper does: the platform whose
 * CL_PLATFORM_NAME is exactly "Xilinx" (anything else is "Failed to find Xilinx platform"),
 * its CL_DEVICE_TYPE_ACCELERATOR devices, a context and an out-of-order profiling queue on
 * the first, the xclbin loaded, and one kernel per compute unit by Xilinx's name for it
 * ("vadd:{vadd_1}", "vadd:{vadd_2}"), each adding half of the vectors. Then what a wrong
 * compute-unit name gets. Usage: xcl2_host <xclbin> <elements>; exit 0 when every check held. */
#define CL_TARGET_OPENCL_VERSION 120
#include "checks.h"

#include <stdint.h>

#define UNITS 2

/* The platform named exactly "Xilinx", as xcl2's get_devices("Xilinx") takes it. */
static cl_platform_id xilinx_platform(void) {
    cl_uint count = 0;
    if (clGetPlatformIDs(0, NULL, &count) != CL_SUCCESS || count == 0) return NULL;
    cl_platform_id platforms[16];
    if (clGetPlatformIDs(count < 16 ? count : 16, platforms, NULL) != CL_SUCCESS) return NULL;
    for (cl_uint i = 0; i < count && i < 16; i++) {
        char name[256] = "";
        clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strcmp(name, "Xilinx") == 0) return platforms[i];
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <xclbin> <elements>\n", argv[0]);
        return 2;
    }
    cl_uint elements = (cl_uint)strtoul(argv[2], NULL, 0);
    size_t bytes = (size_t)elements * sizeof(uint32_t);

    cl_platform_id platform = xilinx_platform();
    if (!platform) {
        printf("Failed to find Xilinx platform\n");
        return 1;
    }
    cl_device_id devices[16];
    cl_uint found = 0;
    cl_int err = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ACCELERATOR, 16, devices, &found);
    expect(err == CL_SUCCESS && found >= 1, "the Xilinx platform has accelerator devices");
    if (err != CL_SUCCESS || found == 0) return 1;
    cl_device_id device = devices[0];
    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    expect(type == CL_DEVICE_TYPE_ACCELERATOR, "its device says it is an accelerator");
    cl_uint all = 0;
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &all);
    expect(all == found, "asking for all devices lists the same devices");
    cl_platform_id owner = NULL;
    clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof owner, &owner, NULL);
    expect(owner == platform, "the device's platform is the Xilinx platform");
    char device_name[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof device_name, device_name, NULL);

    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    expect(err == CL_SUCCESS, "clCreateContext");
    cl_command_queue queue = clCreateCommandQueue(
        context, device, CL_QUEUE_PROFILING_ENABLE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
        &err);
    expect(err == CL_SUCCESS, "clCreateCommandQueue, out of order and profiling");

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
    expect(err == CL_SUCCESS && binary_status == CL_SUCCESS, "clCreateProgramWithBinary");
    expect(clBuildProgram(program, 1, &device, NULL, NULL, NULL) == CL_SUCCESS,
           "clBuildProgram");
    expect(clUnloadPlatformCompiler(platform) == CL_SUCCESS,
           "clUnloadPlatformCompiler takes the hint");

    /* One kernel per compute unit, as the multiple-compute-unit hosts name them. */
    cl_kernel kernels[UNITS];
    for (int unit = 0; unit < UNITS; unit++) {
        char name[64];
        snprintf(name, sizeof name, "vadd:{vadd_%d}", unit + 1);
        kernels[unit] = clCreateKernel(program, name, &err);
        char what[96];
        snprintf(what, sizeof what, "clCreateKernel(\"%s\")", name);
        expect(err == CL_SUCCESS && kernels[unit] != NULL, what);
        if (!kernels[unit]) return 1;
        char function[64] = "";
        clGetKernelInfo(kernels[unit], CL_KERNEL_FUNCTION_NAME, sizeof function, function, NULL);
        expect(strcmp(function, "vadd") == 0, "the kernel's function name is vadd");
    }
    cl_kernel both = clCreateKernel(program, "vadd:{vadd_1,vadd_2}", &err);
    expect(err == CL_SUCCESS && both != NULL, "clCreateKernel(\"vadd:{vadd_1,vadd_2}\")");
    if (both) clReleaseKernel(both);

    uint32_t *in1 = aligned_alloc(4096, bytes + 4096);
    uint32_t *in2 = aligned_alloc(4096, bytes + 4096);
    uint32_t *out = aligned_alloc(4096, bytes + 4096);
    for (cl_uint i = 0; i < elements; i++) {
        in1[i] = i * 2654435761u;
        in2[i] = i ^ 0x5A5A5A5Au;
        out[i] = 0;
    }
    /* Each unit adds its half, in buffers of its own over the host's memory. */
    cl_uint half = elements / UNITS;
    cl_event runs[UNITS];
    cl_mem buffers[UNITS][3];
    for (int unit = 0; unit < UNITS; unit++) {
        size_t offset = (size_t)unit * half;
        cl_uint size = unit == UNITS - 1 ? elements - half * (UNITS - 1) : half;
        size_t chunk = (size_t)size * sizeof(uint32_t);
        uint32_t *hosts[3] = {in1 + offset, in2 + offset, out + offset};
        cl_mem_flags flags[3] = {CL_MEM_READ_ONLY, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY};
        for (int arg = 0; arg < 3; arg++) {
            buffers[unit][arg] = clCreateBuffer(context, CL_MEM_USE_HOST_PTR | flags[arg], chunk,
                                                hosts[arg], &err);
            expect(err == CL_SUCCESS, "clCreateBuffer over the host's memory");
            clSetKernelArg(kernels[unit], arg, sizeof(cl_mem), &buffers[unit][arg]);
        }
        clSetKernelArg(kernels[unit], 3, sizeof(cl_uint), &size);
        cl_event migrated;
        expect(clEnqueueMigrateMemObjects(queue, 2, buffers[unit], 0, 0, NULL, &migrated) ==
                   CL_SUCCESS,
               "clEnqueueMigrateMemObjects to the card");
        expect(clEnqueueTask(queue, kernels[unit], 1, &migrated, &runs[unit]) == CL_SUCCESS,
               "clEnqueueTask after the inputs' migration");
        expect(clEnqueueMigrateMemObjects(queue, 1, &buffers[unit][2],
                                          CL_MIGRATE_MEM_OBJECT_HOST, 1, &runs[unit],
                                          NULL) == CL_SUCCESS,
               "clEnqueueMigrateMemObjects back after the run");
        clReleaseEvent(migrated);
    }
    expect(clFinish(queue) == CL_SUCCESS, "clFinish");
    for (int unit = 0; unit < UNITS; unit++) {
        cl_int status = -1;
        clGetEventInfo(runs[unit], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                       NULL);
        expect(status == CL_COMPLETE, "the unit's run completed");
        clReleaseEvent(runs[unit]);
    }
    cl_uint mismatches = 0;
    for (cl_uint i = 0; i < elements; i++) {
        if (out[i] != in1[i] + in2[i]) mismatches++;
    }
    printf("vadd of %u elements on %s through vadd:{vadd_1} and vadd:{vadd_2}: %u mismatches\n",
           elements, device_name, mismatches);
    expect(mismatches == 0 && elements > 0, "every element is the sum");

    /* Names that do not pick units of this image: refused, each with a message on stderr. */
    const char *wrong[] = {"vadd:{vadd_9}", "vadd:vadd_1", "vadd:{}", "nokernel:{vadd_1}"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        err = CL_SUCCESS;
        cl_kernel none = clCreateKernel(program, wrong[i], &err);
        char what[96];
        snprintf(what, sizeof what, "clCreateKernel(\"%s\") is CL_INVALID_KERNEL_NAME", wrong[i]);
        expect(none == NULL && err == CL_INVALID_KERNEL_NAME, what);
        fflush(stdout);
    }

    for (int unit = 0; unit < UNITS; unit++) {
        for (int arg = 0; arg < 3; arg++) clReleaseMemObject(buffers[unit][arg]);
        clReleaseKernel(kernels[unit]);
    }
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    free(image);
    free(in1);
    free(in2);
    free(out);
    printf("%d failed\n", failures);
    return failures == 0 ? 0 : 1;
}

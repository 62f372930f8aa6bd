/* Sub-buffers on the XRT card: regions of one buffer's memory that read, write, copy, map
 * and serve as kernel arguments at their origin; their information; overlap, alignment and
 * access rules; a sub-buffer keeps its parent alive. vadd runs on three regions of one
 * buffer. Usage: sub_buffers <xclbin>. Prints one line per check; exit 0 when all hold. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "checks.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096
#define PAGES 8

static cl_mem region_of(cl_mem parent, cl_mem_flags flags, size_t origin, size_t size, cl_int *err) {
    cl_buffer_region region = {origin, size};
    return clCreateSubBuffer(parent, flags, CL_BUFFER_CREATE_TYPE_REGION, &region, err);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <xclbin>\n", argv[0]);
        return 2;
    }
    cl_device_id card = accelhost_device(0x10ee);
    if (!card) {
        fprintf(stderr, "the accelhost platform or its XRT card is missing\n");
        return 2;
    }
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &card, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, card, 0, &err);
    cl_mem parent = clCreateBuffer(context, CL_MEM_READ_WRITE, PAGES * PAGE, NULL, &err);
    if (err != CL_SUCCESS) return 2;
    unsigned char *data = malloc(PAGES * PAGE), *back = malloc(PAGES * PAGE);
    for (size_t i = 0; i < PAGES * PAGE; i++) data[i] = (unsigned char)(i * 31 + 7);
    clEnqueueWriteBuffer(queue, parent, CL_TRUE, 0, PAGES * PAGE, data, 0, NULL, NULL);

    /* Reads, writes and information at the origin. */
    cl_mem second = region_of(parent, 0, PAGE, PAGE, &err);
    expect(err == CL_SUCCESS && second != NULL, "a sub-buffer of the second page");
    memset(back, 0, PAGE);
    clEnqueueReadBuffer(queue, second, CL_TRUE, 0, PAGE, back, 0, NULL, NULL);
    expect(memcmp(back, data + PAGE, PAGE) == 0, "it reads the parent's second page");
    size_t offset = 0, size = 0;
    cl_mem associated = NULL;
    cl_mem_flags flags = 0;
    clGetMemObjectInfo(second, CL_MEM_OFFSET, sizeof offset, &offset, NULL);
    clGetMemObjectInfo(second, CL_MEM_SIZE, sizeof size, &size, NULL);
    clGetMemObjectInfo(second, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof associated, &associated, NULL);
    clGetMemObjectInfo(second, CL_MEM_FLAGS, sizeof flags, &flags, NULL);
    expect(offset == PAGE && size == PAGE && associated == parent,
           "its offset, size and associated buffer");
    expect(flags & CL_MEM_READ_WRITE, "it takes the parent's access when it names none");
    clGetMemObjectInfo(parent, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof associated, &associated, NULL);
    expect(associated == NULL, "a buffer has no associated buffer");
    unsigned char ones[100];
    memset(ones, 0xAB, sizeof ones);
    clEnqueueWriteBuffer(queue, second, CL_TRUE, 10, sizeof ones, ones, 0, NULL, NULL);
    memcpy(data + PAGE + 10, ones, sizeof ones);
    clEnqueueReadBuffer(queue, parent, CL_TRUE, 0, PAGES * PAGE, back, 0, NULL, NULL);
    expect(memcmp(back, data, PAGES * PAGE) == 0,
           "a write through it lands at its origin in the parent, and nowhere else");

    /* Copies and overlap. */
    cl_mem fourth = region_of(parent, CL_MEM_READ_ONLY, 3 * PAGE, PAGE, &err);
    expect(err == CL_SUCCESS, "a read-only sub-buffer of a read-write buffer");
    expect(clEnqueueCopyBuffer(queue, fourth, second, 0, 0, PAGE, 0, NULL, NULL) == CL_SUCCESS,
           "a copy between two regions of one buffer that do not overlap");
    clFinish(queue);
    memcpy(data + PAGE, data + 3 * PAGE, PAGE);
    clEnqueueReadBuffer(queue, parent, CL_TRUE, 0, PAGES * PAGE, back, 0, NULL, NULL);
    expect(memcmp(back, data, PAGES * PAGE) == 0, "copied at both origins");
    expect(clEnqueueCopyBuffer(queue, second, parent, 0, PAGE + 100, 200, 0, NULL, NULL) ==
               CL_MEM_COPY_OVERLAP,
           "a copy between a region and its parent that overlap");

    /* Maps at the origin. */
    unsigned char *mapped = clEnqueueMapBuffer(queue, second, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                               0, PAGE, 0, NULL, NULL, &err);
    expect(err == CL_SUCCESS && mapped && memcmp(mapped, data + PAGE, PAGE) == 0,
           "a map shows the region");
    if (mapped) {
        mapped[0] = 0x5A;
        data[PAGE] = 0x5A;
        clEnqueueUnmapMemObject(queue, second, mapped, 0, NULL, NULL);
    }
    clEnqueueReadBuffer(queue, parent, CL_TRUE, 0, PAGES * PAGE, back, 0, NULL, NULL);
    expect(memcmp(back, data, PAGES * PAGE) == 0, "the unmap writes back at the origin");

    /* Refusals. */
    expect(region_of(parent, 0, 100, PAGE, &err) == NULL && err == CL_MISALIGNED_SUB_BUFFER_OFFSET,
           "an origin off the base address alignment");
    expect(region_of(parent, 0, 7 * PAGE, 2 * PAGE, &err) == NULL && err == CL_INVALID_VALUE,
           "a region past the end");
    expect(region_of(parent, 0, 0, 0, &err) == NULL && err == CL_INVALID_BUFFER_SIZE,
           "an empty region");
    expect(region_of(second, 0, 0, PAGE, &err) == NULL && err == CL_INVALID_MEM_OBJECT,
           "a region of a sub-buffer");
    expect(region_of(fourth, 0, 0, PAGE, &err) == NULL && err == CL_INVALID_MEM_OBJECT,
           "a region of a read-only sub-buffer");
    cl_buffer_region region = {0, PAGE};
    expect(clCreateSubBuffer(parent, 0, 0x1221, &region, &err) == NULL && err == CL_INVALID_VALUE,
           "an unknown create type");
    expect(clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, NULL, &err) == NULL &&
               err == CL_INVALID_VALUE,
           "no region");
    cl_mem readonly = clCreateBuffer(context, CL_MEM_READ_ONLY, 2 * PAGE, NULL, &err);
    expect(region_of(readonly, CL_MEM_READ_WRITE, 0, PAGE, &err) == NULL && err == CL_INVALID_VALUE,
           "a region that would widen its parent's access");
    expect(region_of(parent, CL_MEM_USE_HOST_PTR, 0, PAGE, &err) == NULL && err == CL_INVALID_VALUE,
           "host-pointer flags on a region");
    clReleaseMemObject(readonly);

    /* vadd on three regions of one buffer, with the parent released first. */
    size_t image_size = 0;
    unsigned char *image = read_file(argv[1], &image_size);
    const unsigned char *binaries[1] = {image};
    cl_program program =
        clCreateProgramWithBinary(context, 1, &card, &image_size, binaries, NULL, &err);
    clBuildProgram(program, 1, &card, NULL, NULL, NULL);
    cl_kernel kernel = clCreateKernel(program, "vadd", &err);
    expect(err == CL_SUCCESS, "the vadd kernel");
    cl_uint elements = 2 * PAGE / 4;
    cl_mem in1 = region_of(parent, 0, 0, 2 * PAGE, &err);
    cl_mem in2 = region_of(parent, 0, 2 * PAGE, 2 * PAGE, &err);
    cl_mem out = region_of(parent, 0, 4 * PAGE, 2 * PAGE, &err);
    clReleaseMemObject(second);
    clReleaseMemObject(fourth);
    clReleaseMemObject(parent);
    clSetKernelArg(kernel, 0, sizeof(cl_mem), &in1);
    clSetKernelArg(kernel, 1, sizeof(cl_mem), &in2);
    clSetKernelArg(kernel, 2, sizeof(cl_mem), &out);
    clSetKernelArg(kernel, 3, sizeof(cl_uint), &elements);
    expect(clEnqueueTask(queue, kernel, 0, NULL, NULL) == CL_SUCCESS, "vadd on sub-buffers");
    uint32_t *sum = malloc(2 * PAGE);
    clEnqueueReadBuffer(queue, out, CL_TRUE, 0, 2 * PAGE, sum, 0, NULL, NULL);
    uint32_t a[2 * PAGE / 4], b[2 * PAGE / 4];
    memcpy(a, data, 2 * PAGE);
    memcpy(b, data + 2 * PAGE, 2 * PAGE);
    cl_uint wrong = 0;
    for (cl_uint i = 0; i < elements; i++)
        if (sum[i] != a[i] + b[i]) wrong++;
    printf("vadd on sub-buffers: %u mismatches of %u\n", wrong, elements);
    expect(wrong == 0, "each region was read and written at its origin, after the parent's release");

    clReleaseMemObject(in1);
    clReleaseMemObject(in2);
    clReleaseMemObject(out);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    free(image);
    free(sum);
    free(data);
    free(back);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}

/* The XRT card's largest allocation: what CL_DEVICE_MAX_MEM_ALLOC_SIZE says, and that a
 * buffer or a USM allocation one byte larger is CL_INVALID_BUFFER_SIZE while the program goes
 * on. Prints the card's address bits, global memory and largest allocation, then one line per
 * check; exit 0 when all hold. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "checks.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* clDeviceMemAllocINTEL (cl_intel_unified_shared_memory), looked up as a program does. */
typedef void *(*device_mem_alloc_fn)(cl_context, cl_device_id, const cl_ulong *, size_t, cl_uint,
                                     cl_int *);

int main(void) {
    cl_device_id card = accelhost_device(0x10ee);
    if (!card) {
        fprintf(stderr, "the accelhost platform or its XRT card is missing\n");
        return 2;
    }
    cl_uint address_bits = 0;
    cl_ulong global = 0, largest = 0;
    cl_platform_id platform = NULL;
    clGetDeviceInfo(card, CL_DEVICE_ADDRESS_BITS, sizeof address_bits, &address_bits, NULL);
    clGetDeviceInfo(card, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    clGetDeviceInfo(card, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof largest, &largest, NULL);
    clGetDeviceInfo(card, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
    printf("address bits %u\nglobal memory %llu\nlargest allocation %llu\n", address_bits,
           (unsigned long long)global, (unsigned long long)largest);
    expect(largest > 0 && largest <= global, "the largest allocation is within global memory");
    expect(address_bits == 64 || largest < (1ull << address_bits),
           "the largest allocation is within what the kernels address");

    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &card, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, card, 0, &err);
    if (err != CL_SUCCESS) return 2;
    expect(clCreateBuffer(context, CL_MEM_READ_WRITE, (size_t)largest + 1, NULL, &err) == NULL &&
               err == CL_INVALID_BUFFER_SIZE,
           "a buffer one byte past the largest allocation");
    expect(clCreateBuffer(context, CL_MEM_READ_WRITE, SIZE_MAX, NULL, &err) == NULL &&
               err == CL_INVALID_BUFFER_SIZE,
           "a buffer of SIZE_MAX bytes");
    device_mem_alloc_fn device_mem_alloc = (device_mem_alloc_fn)(uintptr_t)
        clGetExtensionFunctionAddressForPlatform(platform, "clDeviceMemAllocINTEL");
    expect(device_mem_alloc != NULL, "clDeviceMemAllocINTEL is there");
    if (device_mem_alloc) {
        err = CL_SUCCESS;
        expect(device_mem_alloc(context, card, NULL, (size_t)largest + 1, 0, &err) == NULL &&
                   err == CL_INVALID_BUFFER_SIZE,
               "a USM allocation one byte past the largest allocation");
    }

    /* The program goes on: a buffer within the limit round-trips. */
    unsigned char data[4096], back[4096];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 13 + 5);
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof data, NULL, &err);
    expect(err == CL_SUCCESS && buffer != NULL, "a 4 KiB buffer after the refusals");
    if (buffer) {
        memset(back, 0, sizeof back);
        clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, sizeof data, data, 0, NULL, NULL);
        clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL);
        expect(memcmp(data, back, sizeof data) == 0, "it reads back what was written");
        clReleaseMemObject(buffer);
    }
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}

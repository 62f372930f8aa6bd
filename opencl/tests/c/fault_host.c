/* A plugin that faults under an OpenCL program: the chaos plugin traps in mem-alloc, so
 * clCreateBuffer on its device must return an OpenCL error, and the program must go on to
 * copy data through the XRT card. Prints both outcomes; exit 0 when the fault was an error
 * code and the copy came back exact. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "checks.h"
#include <stdio.h>
#include <string.h>

int main(void) {
    cl_device_id chaos = accelhost_device(0x1234);
    cl_device_id card = accelhost_device(0x10ee);
    if (!chaos || !card) {
        fprintf(stderr, "the accelhost platform, the chaos device or the XRT card is missing\n");
        return 1;
    }

    cl_int err = CL_SUCCESS;
    cl_context faulty = clCreateContext(NULL, 1, &chaos, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "context on the chaos device: %d\n", err);
        return 1;
    }
    cl_int fault = CL_SUCCESS;
    cl_mem lost = clCreateBuffer(faulty, CL_MEM_READ_WRITE, 4096, NULL, &fault);
    printf("clCreateBuffer on the faulting plugin: %d (%s)\n", fault, lost ? "a buffer" : "NULL");
    clReleaseContext(faulty);

    cl_context context = clCreateContext(NULL, 1, &card, NULL, NULL, &err);
    if (err != CL_SUCCESS) return 1;
    cl_command_queue queue = clCreateCommandQueue(context, card, 0, &err);
    if (err != CL_SUCCESS) return 1;
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, 4096, NULL, &err);
    if (err != CL_SUCCESS) return 1;
    unsigned char data[4096], back[4096];
    for (int i = 0; i < 4096; i++) data[i] = (unsigned char)(i * 7 + 3);
    cl_int wrote = clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, 4096, data, 0, NULL, NULL);
    cl_int read = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, 4096, back, 0, NULL, NULL);
    int exact = wrote == CL_SUCCESS && read == CL_SUCCESS && memcmp(data, back, 4096) == 0;
    printf("then a copy through the XRT card: %s\n", exact ? "exact" : "wrong");
    clReleaseMemObject(buffer);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    return fault < 0 && !lost && exact ? 0 : 1;
}

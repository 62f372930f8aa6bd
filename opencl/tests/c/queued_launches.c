/* Launches enqueued without an event, on the XRT card: they go to the device in batches, yet
 * run in order and before any later command; a blocking read, a marker, clFlush, clFinish and
 * the queue's release each send what is held back; a launch that fails on the device is
 * clFinish's error once, and the queue goes on. Usage: queued_launches <xclbin>. Prints one
 * line per check; exit 0 when all hold. An alarm ends the program if anything hangs. */
#define _DEFAULT_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "checks.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ELEMENTS 64
#define LAUNCHES 1000

static cl_kernel kernel;

/* Enqueues out = in1 + in2 over `elements` elements, with no event. */
static cl_int add(cl_command_queue queue, cl_mem in1, cl_mem in2, cl_mem out, cl_uint elements) {
    clSetKernelArg(kernel, 0, sizeof(cl_mem), &in1);
    clSetKernelArg(kernel, 1, sizeof(cl_mem), &in2);
    clSetKernelArg(kernel, 2, sizeof(cl_mem), &out);
    clSetKernelArg(kernel, 3, sizeof(cl_uint), &elements);
    return clEnqueueTask(queue, kernel, 0, NULL, NULL);
}

/* Whether every element of `buffer`, read blocking through `queue`, is `value`. */
static int all_are(cl_command_queue queue, cl_mem buffer, cl_uint value) {
    cl_uint got[ELEMENTS];
    if (clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL) !=
        CL_SUCCESS)
        return 0;
    for (int i = 0; i < ELEMENTS; i++)
        if (got[i] != value) {
            printf("element %d is %u, not %u\n", i, got[i], value);
            return 0;
        }
    return 1;
}

static void fill(cl_command_queue queue, cl_mem buffer, cl_uint value) {
    cl_uint words[ELEMENTS];
    for (int i = 0; i < ELEMENTS; i++) words[i] = value;
    clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, sizeof words, words, 0, NULL, NULL);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    alarm(60);
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
    size_t image_size = 0;
    unsigned char *image = read_file(argv[1], &image_size);
    if (!image) return 2;
    const unsigned char *binaries[1] = {image};
    cl_program program =
        clCreateProgramWithBinary(context, 1, &card, &image_size, binaries, NULL, &err);
    clBuildProgram(program, 1, &card, NULL, NULL, NULL);
    kernel = clCreateKernel(program, "vadd", &err);
    if (err != CL_SUCCESS) return 2;
    size_t bytes = ELEMENTS * sizeof(cl_uint);
    cl_mem a = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem b = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem c = clCreateBuffer(context, CL_MEM_READ_WRITE, bytes, NULL, &err);

    /* Ping-pong: c = a + b, then a = c + b, ...: each launch reads what the one before wrote,
     * so a launch run out of order, twice or not at all leaves another sum. */
    fill(queue, a, 1);
    fill(queue, b, 1);
    int accepted = 1;
    for (int i = 0; i < LAUNCHES; i++)
        accepted &= (i % 2 == 0 ? add(queue, a, b, c, ELEMENTS) : add(queue, c, b, a, ELEMENTS)) ==
                    CL_SUCCESS;
    expect(accepted, "1000 launches without events are accepted");
    expect(all_are(queue, a, 1 + LAUNCHES),
           "a blocking read after them sees all 1000, run once each and in order");

    add(queue, a, b, c, ELEMENTS);
    cl_event marker = NULL;
    expect(clEnqueueMarkerWithWaitList(queue, 0, NULL, &marker) == CL_SUCCESS &&
               clWaitForEvents(1, &marker) == CL_SUCCESS,
           "a marker after a launch without an event finishes");
    clReleaseEvent(marker);
    cl_uint sum[ELEMENTS];
    cl_command_queue reader = clCreateCommandQueue(context, card, 0, &err);
    expect(clEnqueueReadBuffer(reader, c, CL_TRUE, 0, bytes, sum, 0, NULL, NULL) == CL_SUCCESS &&
               sum[0] == 2 + LAUNCHES && sum[ELEMENTS - 1] == 2 + LAUNCHES,
           "the marker's queue sent the launch before it");

    add(queue, c, b, a, ELEMENTS);
    expect(clFlush(queue) == CL_SUCCESS, "clFlush");
    /* Nothing else touches this queue: only the flush can have sent the launch. */
    int seen = 0;
    for (int tries = 0; tries < 1000 && !seen; tries++) {
        seen = clEnqueueReadBuffer(reader, a, CL_TRUE, 0, bytes, sum, 0, NULL, NULL) ==
                   CL_SUCCESS &&
               sum[0] == 3 + LAUNCHES;
        if (!seen) usleep(10000);
    }
    expect(seen, "clFlush sent the launch: another queue sees what it wrote");

    /* Past its buffers: the card refuses it when it runs. */
    expect(add(queue, a, b, c, 1 << 20) == CL_SUCCESS,
           "a launch that will fail on the device is accepted without an event");
    err = clFinish(queue);
    printf("clFinish after it: %d\n", err);
    expect(err != CL_SUCCESS, "clFinish reports the failed launch");
    expect(clFinish(queue) == CL_SUCCESS, "and only once");
    fill(queue, a, 40);
    fill(queue, b, 2);
    add(queue, a, b, c, ELEMENTS);
    expect(all_are(queue, c, 42), "the queue goes on after the failure");

    /* Released with a launch held back: the release sends it. */
    fill(queue, a, 7);
    add(queue, a, b, c, ELEMENTS);
    expect(clReleaseCommandQueue(queue) == CL_SUCCESS, "the queue is released");
    expect(all_are(reader, c, 9), "its last launch ran");

    clReleaseCommandQueue(reader);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    clReleaseKernel(kernel);
    clReleaseProgram(program);
    clReleaseContext(context);
    free(image);
    printf("%d failed\n", failures);
    return failures != 0;
}

/* Rectangular reads, writes and copies on the XRT card: rows placed by their pitches on both
 * sides, the bytes between rows left as they were, copies between interleaved columns of one
 * buffer, and the refusals (an empty or outlying region, a short pitch, overlap, no memory).
 * Prints one line per check; exit 0 when all hold. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "checks.h"
#include <stdio.h>
#include <string.h>

int main(void) {
    cl_device_id card = accelhost_device(0x10ee);
    if (!card) {
        fprintf(stderr, "the accelhost platform or its XRT card is missing\n");
        return 2;
    }
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &card, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, card, 0, &err);
    if (err != CL_SUCCESS) return 2;

    /* A 64 x 64 image; read a 16 x 10 block at (8, 4) into a 32-byte-pitch host image at
     * (4, 2). */
    static unsigned char image[64 * 64], host[32 * 16], expected[32 * 16];
    for (int i = 0; i < 64 * 64; i++) image[i] = (unsigned char)(i * 13 + 1);
    cl_mem picture = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                    sizeof image, image, &err);
    memset(host, 0xEE, sizeof host);
    memcpy(expected, host, sizeof host);
    for (int y = 0; y < 10; y++) memcpy(expected + (2 + y) * 32 + 4, image + (4 + y) * 64 + 8, 16);
    size_t at[3] = {8, 4, 0}, to[3] = {4, 2, 0}, block[3] = {16, 10, 1};
    cl_int read = clEnqueueReadBufferRect(queue, picture, CL_TRUE, at, to, block, 64, 0, 32, 0,
                                          host, 0, NULL, NULL);
    expect(read == CL_SUCCESS && memcmp(host, expected, sizeof host) == 0,
           "a 16 x 10 block read into a host image of another pitch, and nothing else written");

    /* A 4 x 3 x 2 box written into a 16 x 16 x 4 volume at (2, 5, 1): the bytes around it
     * keep their values. */
    static unsigned char volume[16 * 16 * 4], box[4 * 3 * 2], back[16 * 16 * 4];
    for (int i = 0; i < (int)sizeof volume; i++) volume[i] = (unsigned char)(i * 7 + 3);
    for (int i = 0; i < (int)sizeof box; i++) box[i] = (unsigned char)(0xA0 + i);
    cl_mem space = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                  sizeof volume, volume, &err);
    size_t corner[3] = {2, 5, 1}, origin[3] = {0, 0, 0}, extent[3] = {4, 3, 2};
    cl_int wrote = clEnqueueWriteBufferRect(queue, space, CL_TRUE, corner, origin, extent, 16,
                                            256, 0, 0, box, 0, NULL, NULL);
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 3; y++)
            memcpy(volume + (1 + z) * 256 + (5 + y) * 16 + 2, box + z * 12 + y * 4, 4);
    clEnqueueReadBuffer(queue, space, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL);
    expect(wrote == CL_SUCCESS && memcmp(back, volume, sizeof back) == 0,
           "a 4 x 3 x 2 box written into a volume, the bytes between its rows kept");

    /* Interleaved columns of one buffer: even 4-byte columns onto odd ones. */
    static unsigned char columns[8 * 8], after[8 * 8];
    for (int i = 0; i < 64; i++) columns[i] = (unsigned char)i;
    cl_mem grid = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 sizeof columns, columns, &err);
    size_t even[3] = {0, 0, 0}, odd[3] = {4, 0, 0}, shifted[3] = {3, 0, 0}, column[3] = {4, 8, 1};
    expect(clEnqueueCopyBufferRect(queue, grid, grid, even, odd, column, 8, 0, 8, 0, 0, NULL,
                                   NULL) == CL_SUCCESS,
           "a copy between interleaved columns of one buffer");
    for (int y = 0; y < 8; y++) memcpy(columns + y * 8 + 4, columns + y * 8, 4);
    clEnqueueReadBuffer(queue, grid, CL_TRUE, 0, sizeof after, after, 0, NULL, NULL);
    expect(memcmp(after, columns, sizeof after) == 0, "each row's even half is now its odd half");
    expect(clEnqueueCopyBufferRect(queue, grid, grid, even, shifted, column, 8, 0, 8, 0, 0, NULL,
                                   NULL) == CL_MEM_COPY_OVERLAP,
           "columns that share bytes");
    expect(clEnqueueCopyBufferRect(queue, picture, space, at, corner, extent, 64, 0, 16, 256, 0,
                                   NULL, NULL) == CL_SUCCESS,
           "a copy between two buffers with their own pitches");
    /* The source's slice pitch is its default: 3 rows of 64 bytes. */
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 3; y++)
            memcpy(volume + (1 + z) * 256 + (5 + y) * 16 + 2, image + 4 * 64 + 8 + z * 192 + y * 64,
                   4);
    clEnqueueReadBuffer(queue, space, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL);
    expect(memcmp(back, volume, sizeof back) == 0,
           "the box's rows came from the source's pitches and went to the target's");

    /* Refusals. */
    size_t empty[3] = {0, 1, 1}, outlying[3] = {16, 61, 1};
    expect(clEnqueueReadBufferRect(queue, picture, CL_TRUE, at, to, empty, 64, 0, 32, 0, host, 0,
                                   NULL, NULL) == CL_INVALID_VALUE,
           "an empty region");
    expect(clEnqueueReadBufferRect(queue, picture, CL_TRUE, at, origin, outlying, 64, 0, 0, 0,
                                   host, 0, NULL, NULL) == CL_INVALID_VALUE,
           "a region past the buffer's end");
    expect(clEnqueueReadBufferRect(queue, picture, CL_TRUE, at, to, block, 8, 0, 32, 0, host, 0,
                                   NULL, NULL) == CL_INVALID_VALUE,
           "a row pitch shorter than a row");
    expect(clEnqueueWriteBufferRect(queue, space, CL_TRUE, corner, origin, extent, 16, 20, 0, 0,
                                    box, 0, NULL, NULL) == CL_INVALID_VALUE,
           "a slice pitch shorter than a slice");
    expect(clEnqueueWriteBufferRect(queue, space, CL_TRUE, corner, origin, extent, 16, 256, 0, 0,
                                    NULL, 0, NULL, NULL) == CL_INVALID_VALUE,
           "no host memory");
    expect(clEnqueueReadBufferRect(queue, picture, CL_TRUE, NULL, to, block, 64, 0, 32, 0, host,
                                   0, NULL, NULL) == CL_INVALID_VALUE,
           "no buffer origin");

    clReleaseMemObject(grid);
    clReleaseMemObject(space);
    clReleaseMemObject(picture);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}

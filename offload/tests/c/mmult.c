/* A program of LLVM's Offload API running kernels of its own: mmult and forever from
 * tests/kernels/mmult.cpp in the xclbin of argv[1] (a program from a device image, its kernels
 * by name, launches with packed arguments). Multiplies 64x64 and 17x17 int matrices, each
 * checked against the host's product; then forever, which only the card's kernel deadline
 * ends, fails its event, and the card multiplies again. Prints one line per check and
 * "N failed" last. */
#include "support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* mmult's arguments as the xclbin describes them, packed as a C struct. */
struct mmult_args {
    void* a;
    void* b;
    void* c;
    int size;
};

static const ol_kernel_launch_size_args_t ONCE = {1, 1, 1, 1, 1, 1, 1};

/* Multiplies size x size matrices on the card; the mismatched cells, or -1 on an error. */
static int multiply(ol_device_handle_t card, ol_device_handle_t host, ol_kernel_handle_t mmult, int size) {
    size_t bytes = (size_t)size * size * sizeof(int);
    int *a = malloc(bytes), *b = malloc(bytes), *c = calloc((size_t)size * size, sizeof(int));
    for (int i = 0; i < size * size; i++) {
        a[i] = (i * 5 + 3) % 17 - 8;
        b[i] = (i * 11 + 1) % 13 - 6;
    }
    void *da, *db, *dc;
    ol_queue_handle_t queue;
    ol_event_handle_t done;
    int wrong = -1;
    if (ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &da)) &&
        ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &db)) &&
        ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &dc)) && ok(olCreateQueue(card, &queue)) &&
        ok(olEnqueueMemcpy(queue, da, card, a, host, bytes, NULL)) &&
        ok(olEnqueueMemcpy(queue, db, card, b, host, bytes, NULL))) {
        struct mmult_args args = {da, db, dc, size};
        if (ok(olEnqueueKernelLaunch(queue, mmult, &args, sizeof args, &ONCE, NULL)) &&
            ok(olEnqueueMemcpy(queue, c, host, dc, card, bytes, &done)) && ok(olWaitEvent(done))) {
            wrong = 0;
            for (int row = 0; row < size; row++)
                for (int col = 0; col < size; col++) {
                    int sum = 0;
                    for (int k = 0; k < size; k++) sum += a[row * size + k] * b[k * size + col];
                    wrong += c[row * size + col] != sum;
                }
        }
    }
    free(a);
    free(b);
    free(c);
    return wrong;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s XCLBIN\n", argv[0]);
        return 2;
    }
    ol_device_handle_t card, host;
    if (!find_card(&card, &host)) return 1;
    size_t image_size = 0;
    void* image = read_file(argv[1], &image_size);
    ol_program_handle_t program;
    ol_kernel_handle_t mmult, forever;
    expect(image && ok(olCreateProgram(card, image, image_size, &program)) &&
               ok(olCreateKernel(program, "mmult", &mmult)) &&
               ok(olCreateKernel(program, "forever", &forever)),
           "the program and its kernels");
    free(image);
    int wrong = multiply(card, host, mmult, 64);
    printf("mmult 64x64: %d mismatches\n", wrong);
    expect(wrong == 0, "the largest product");
    wrong = multiply(card, host, mmult, 17);
    printf("mmult 17x17: %d mismatches\n", wrong);
    expect(wrong == 0, "an odd product");

    void* flag;
    int zero = 0;
    ol_queue_handle_t queue;
    ol_event_handle_t endless;
    expect(ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, 4096, &flag)) && ok(olCreateQueue(card, &queue)) &&
               ok(olEnqueueMemcpy(queue, flag, card, &zero, host, sizeof zero, NULL)) &&
               ok(olEnqueueKernelLaunch(queue, forever, &flag, sizeof flag, &ONCE, &endless)),
           "an endless kernel launched");
    ol_result_t waited = olWaitEvent(endless);
    expect(waited != OL_SUCCESS, "its event fails at the card's deadline");
    if (waited != OL_SUCCESS) printf("the endless kernel: %s\n", waited->Details);
    wrong = multiply(card, host, mmult, 33);
    printf("mmult 33x33 after it: %d mismatches\n", wrong);
    expect(wrong == 0, "the card goes on");
    printf("%d failed\n", failed);
    return failed != 0;
}

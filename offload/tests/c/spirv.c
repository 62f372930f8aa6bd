/* A program of LLVM's Offload API running SPIR-V (argv[1], from tests/kernels/spirv_kernels.cl)
 * on the XRT card: olCreateProgram builds it, scaled_add runs over 4,096 work-items in groups
 * of 64 with a float and a uint argument, group_sums over 16 groups of 32 with local memory
 * and barriers; from_an_integer, which writes through a pointer made from an integer far past
 * its memory, fails its event, and the card runs scaled_add again. through_a_view (argv[2],
 * from tests/kernels/struct_view.ll) takes a struct by value holding device pointers, one in
 * a struct inside it; the same struct holding an address of no allocation is refused at the
 * launch. A module that is not SPIR-V nor an image is refused. Prints one line per check and
 * "N failed" last. */
#include "support.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* scaled_add's own arguments, packed as a C struct. */
struct scaled_add_args {
    void* a;
    void* b;
    void* c;
    float k;
    uint32_t n;
};

/* group_sums's: a local argument's value is its byte count. */
struct group_sums_args {
    void* in;
    void* out;
    uint32_t scratch;
};

enum { N = 4096, GROUPS = 16, LOCAL = 32 };

/* through_a_view's struct, as the host lays it out (tests/kernels/struct_view.ll). */
struct view {
    int32_t scale;
    int64_t offset;
    int32_t* data;
    struct {
        int16_t tag;
        float* weights;
    } inner;
};

struct view_args {
    int32_t* out;
    struct view view;
};

enum { VIEWED = 256, OFFSET = 5 };

/* through_a_view over VIEWED work-items with data at `data` (a device address, or not): the
 * mismatches, or -1 when the launch or the copy back failed (its details in `said`). */
static int through_a_view(ol_device_handle_t card, ol_device_handle_t host, ol_kernel_handle_t kernel,
                          int32_t* data, const int32_t* values, float* weights, int32_t* out,
                          const char** said) {
    static int32_t got[VIEWED];
    ol_queue_handle_t queue;
    ol_event_handle_t done;
    ol_kernel_launch_size_args_t sizes = {1, VIEWED / 64, 1, 1, 64, 1, 1};
    struct view_args args = {out, {3, OFFSET, data, {-7, weights}}};
    if (!ok(olCreateQueue(card, &queue))) return -1;
    ol_result_t launched = olEnqueueKernelLaunch(queue, kernel, &args, sizeof args, &sizes, NULL);
    if (launched != OL_SUCCESS) {
        *said = launched->Details;
        return -1;
    }
    if (!ok(olEnqueueMemcpy(queue, got, host, out, card, sizeof got, &done)) || !ok(olWaitEvent(done)))
        return -1;
    int wrong = 0;
    for (int i = 0; i < VIEWED; i++) wrong += got[i] != values[i + OFFSET] * 3 - 7 + i * 2;
    return wrong;
}

/* c = a * 3 + b over N work-items in groups of 64; the mismatches, or -1 on an error. */
static int scaled_add(ol_device_handle_t card, ol_device_handle_t host, ol_kernel_handle_t kernel) {
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) a[i] = (float)i / 8, b[i] = (float)(N - i), c[i] = -1;
    void *da, *db, *dc;
    ol_queue_handle_t queue;
    ol_event_handle_t done;
    int wrong = -1;
    ol_kernel_launch_size_args_t sizes = {1, N / 64, 1, 1, 64, 1, 1};
    if (ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, sizeof a, &da)) &&
        ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, sizeof b, &db)) &&
        ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, sizeof c, &dc)) && ok(olCreateQueue(card, &queue)) &&
        ok(olEnqueueMemcpy(queue, da, card, a, host, sizeof a, NULL)) &&
        ok(olEnqueueMemcpy(queue, db, card, b, host, sizeof b, NULL))) {
        struct scaled_add_args args = {da, db, dc, 3.0f, N};
        if (ok(olEnqueueKernelLaunch(queue, kernel, &args, sizeof args, &sizes, NULL)) &&
            ok(olEnqueueMemcpy(queue, c, host, dc, card, sizeof c, &done)) && ok(olWaitEvent(done))) {
            wrong = 0;
            for (int i = 0; i < N; i++) wrong += c[i] != a[i] * 3.0f + b[i];
        }
    }
    return wrong;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s SPIRV STRUCT_VIEW_SPIRV\n", argv[0]);
        return 2;
    }
    ol_device_handle_t card, host;
    if (!find_card(&card, &host)) return 1;
    size_t module_size = 0;
    void* module = read_file(argv[1], &module_size);
    ol_program_handle_t program;
    ol_kernel_handle_t add, sums, stray;
    expect(module && ok(olCreateProgram(card, module, module_size, &program)) &&
               ok(olCreateKernel(program, "scaled_add", &add)) &&
               ok(olCreateKernel(program, "group_sums", &sums)) &&
               ok(olCreateKernel(program, "from_an_integer", &stray)),
           "the SPIR-V program and its kernels");

    int wrong = scaled_add(card, host, add);
    printf("scaled_add of %d elements: %d mismatches\n", N, wrong);
    expect(wrong == 0, "scaled_add over its work-items");

    static int numbers[GROUPS * LOCAL], got[GROUPS];
    for (int i = 0; i < GROUPS * LOCAL; i++) numbers[i] = i * 7 - 300;
    void *din, *dout;
    ol_queue_handle_t queue;
    ol_event_handle_t done;
    ol_kernel_launch_size_args_t groups = {1, GROUPS, 1, 1, LOCAL, 1, 1};
    struct group_sums_args sum_args = {0, 0, LOCAL * sizeof(int)};
    int summed = ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, sizeof numbers, &din)) &&
                 ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, sizeof got, &dout)) &&
                 ok(olCreateQueue(card, &queue)) &&
                 ok(olEnqueueMemcpy(queue, din, card, numbers, host, sizeof numbers, NULL));
    sum_args.in = din;
    sum_args.out = dout;
    summed = summed && ok(olEnqueueKernelLaunch(queue, sums, &sum_args, sizeof sum_args, &groups, NULL)) &&
             ok(olEnqueueMemcpy(queue, got, host, dout, card, sizeof got, &done)) && ok(olWaitEvent(done));
    wrong = 0;
    for (int g = 0; summed && g < GROUPS; g++) {
        int sum = 0;
        for (int l = 0; l < LOCAL; l++) sum += numbers[g * LOCAL + l];
        wrong += got[g] != sum;
    }
    expect(summed && wrong == 0, "group_sums through local memory and barriers");

    uint64_t far = 0xFFFFFF00u;
    ol_kernel_launch_size_args_t one = {1, 1, 1, 1, 1, 1, 1};
    ol_event_handle_t strayed;
    ol_result_t waited = OL_SUCCESS;
    if (ok(olEnqueueKernelLaunch(queue, stray, &far, sizeof far, &one, &strayed)))
        waited = olWaitEvent(strayed);
    expect(waited != OL_SUCCESS, "a pointer made from an integer fails its event");
    if (waited != OL_SUCCESS) printf("the stray kernel: %s\n", waited->Details);
    wrong = scaled_add(card, host, add);
    printf("scaled_add after it: %d mismatches\n", wrong);
    expect(wrong == 0, "the card goes on");

    size_t view_size = 0;
    void* view_module = read_file(argv[2], &view_size);
    ol_program_handle_t view_program;
    ol_kernel_handle_t view;
    static int32_t values[VIEWED + OFFSET];
    static float weights[VIEWED];
    for (int i = 0; i < VIEWED + OFFSET; i++) values[i] = i * 11;
    for (int i = 0; i < VIEWED; i++) weights[i] = (float)(i * 2);
    void *dvalues, *dweights, *dviewed;
    const char* said = NULL;
    int viewed = view_module && ok(olCreateProgram(card, view_module, view_size, &view_program)) &&
                 ok(olCreateKernel(view_program, "through_a_view", &view)) &&
                 ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, sizeof values, &dvalues)) &&
                 ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, sizeof weights, &dweights)) &&
                 ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, VIEWED * sizeof(int32_t), &dviewed)) &&
                 ok(olCreateQueue(card, &queue)) &&
                 ok(olEnqueueMemcpy(queue, dvalues, card, values, host, sizeof values, NULL)) &&
                 ok(olEnqueueMemcpy(queue, dweights, card, weights, host, sizeof weights, &done)) &&
                 ok(olWaitEvent(done));
    wrong = viewed ? through_a_view(card, host, view, dvalues, values, dweights, dviewed, &said) : -1;
    printf("through_a_view of %d elements: %d mismatches\n", VIEWED, wrong);
    expect(wrong == 0, "a struct by value holding device pointers");
    said = NULL;
    wrong = viewed ? through_a_view(card, host, view, (int32_t*)(uintptr_t)0x12345000u, values, dweights,
                                    dviewed, &said)
                   : 0;
    expect(wrong == -1 && said, "a struct holding an address of no allocation is refused");
    if (said) printf("the struct's stray pointer: %s\n", said);
    wrong = viewed ? through_a_view(card, host, view, dvalues, values, dweights, dviewed, &said) : -1;
    expect(wrong == 0, "and the next launch runs, exact");

    static const uint32_t not_spirv[8] = {0x07230203u, 0x00010600u, 0, 16, 0, 0, 0, 0};
    ol_program_handle_t refused;
    ol_result_t result = olCreateProgram(card, (void*)not_spirv, sizeof not_spirv, &refused);
    expect(result != OL_SUCCESS && strstr(result->Details, "SPIR-V 1.6"),
           "SPIR-V of a later version is refused, naming it");
    printf("%d failed\n", failed);
    return failed != 0;
}

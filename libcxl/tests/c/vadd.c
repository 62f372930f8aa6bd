/* A libcxl program in the dedicated-mode flow of the afu-walkthrough's capi-vadd host, on
 * accelhost's embedded default (the vadd AFU at afu0.1): a control block whose address is
 * the WED, two input vectors of 1 Mi elements, the AFU's done flag polled, the sum checked.
 * Then the AFU's one context: a second open fails with ENOSPC while the first is open, and
 * succeeds once it is freed. Everything the AFU reads and writes is big-endian. Prints one
 * line per step; a failure prints what failed and exits 1; prints "vadd: PASSED" and exits 0
 * when all went well. */
#define _DEFAULT_SOURCE
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <libcxl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEDICATED_PATH "/dev/cxl/afu0.1d"
#define ELEMENTS (1u << 20)
#define TIMEOUT_S 15
#define BLOCK_ALIGN 128
#define PAGE_BYTES 4096

/* The AFU's control block; every field big-endian. */
struct control_block {
    uint64_t size; /* number of u32 elements */
    uint64_t input1;
    uint64_t input2;
    uint64_t output;
    volatile uint64_t done; /* the AFU writes nonzero when it has finished */
    uint64_t clock_count;
    uint64_t reserved[10];
};
_Static_assert(sizeof(struct control_block) == 128, "the control block is 128 bytes");

static _Noreturn void fail_call(const char *call) {
    int err = errno;
    printf("FAILED: %s: errno %d (%s)\n", call, err, strerror(err));
    exit(1);
}

static void check(bool ok, const char *what) {
    if (!ok) {
        printf("FAILED: %s\n", what);
        exit(1);
    }
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void sleep_1ms(void) {
    struct timespec tick = {0, 1000 * 1000};
    nanosleep(&tick, NULL);
}

static uint32_t *vector_alloc(void) {
    uint32_t *vector = aligned_alloc(PAGE_BYTES, ELEMENTS * sizeof(uint32_t));
    check(vector != NULL, "aligned_alloc of a vector");
    return vector;
}

static struct cxl_afu_h *open_dedicated(void) {
    struct cxl_afu_h *afu = cxl_afu_open_dev(DEDICATED_PATH);
    if (!afu) fail_call("cxl_afu_open_dev(" DEDICATED_PATH ")");
    return afu;
}

/* Polls the done flag; whether the AFU set it in time. */
static bool wait_done(const struct control_block *block) {
    double deadline = seconds_now() + TIMEOUT_S;
    while (be64toh(block->done) == 0) {
        if (seconds_now() >= deadline) return false;
        sleep_1ms();
    }
    __sync_synchronize();
    return true;
}

static size_t mismatches(const uint32_t *output) {
    size_t wrong = 0;
    for (uint32_t i = 0; i < ELEMENTS; i++) wrong += be32toh(output[i]) != 2 * (i << 8);
    return wrong;
}

/* A second open of the one dedicated context fails while the first is open; once that one
 * is freed, the context can be opened again. */
static void one_context(struct cxl_afu_h *first) {
    errno = 0;
    struct cxl_afu_h *second = cxl_afu_open_dev(DEDICATED_PATH);
    int err = errno;
    if (second != NULL || err != ENOSPC) {
        printf("FAILED: a second open of %s: %s, errno %d (%s); expected NULL, ENOSPC\n",
               DEDICATED_PATH, second ? "opened" : "NULL", err, strerror(err));
        exit(1);
    }
    printf("second open while the first is open: ok (ENOSPC)\n");
    cxl_afu_free(first);
    cxl_afu_free(open_dedicated());
    printf("open after free: ok\n");
}

int main(void) {
    struct cxl_afu_h *afu = open_dedicated();
    int pe = cxl_afu_get_process_element(afu);
    if (pe < 0) fail_call("cxl_afu_get_process_element");
    check(pe == 0, "the dedicated context's process element is 0");
    printf("open: ok (pe %d)\n", pe);

    uint32_t *input1 = vector_alloc();
    uint32_t *input2 = vector_alloc();
    uint32_t *output = vector_alloc();
    for (uint32_t i = 0; i < ELEMENTS; i++) {
        input1[i] = htobe32(i << 8);
        input2[i] = htobe32(i << 8);
    }
    memset(output, 0, ELEMENTS * sizeof(uint32_t));

    struct control_block *block = aligned_alloc(BLOCK_ALIGN, sizeof *block);
    check(block != NULL, "aligned_alloc of the control block");
    memset(block, 0, sizeof *block);
    block->size = htobe64(ELEMENTS);
    block->input1 = htobe64((uint64_t)(uintptr_t)input1);
    block->input2 = htobe64((uint64_t)(uintptr_t)input2);
    block->output = htobe64((uint64_t)(uintptr_t)output);
    __sync_synchronize();

    if (cxl_afu_attach(afu, (uint64_t)(uintptr_t)block) != 0) fail_call("cxl_afu_attach");
    printf("attach: ok\n");
    check(wait_done(block), "the AFU set done within 15 s");

    size_t wrong = mismatches(output);
    printf("vadd: %u elements, %zu mismatches\n", ELEMENTS, wrong);
    check(wrong == 0, "every sum matches");
    uint64_t clocks = be64toh(block->clock_count);
    check(clocks != 0, "the AFU wrote a clock count");
    printf("clock_count: ok (%" PRIu64 ")\n", clocks);

    one_context(afu);
    free(block);
    free(input1);
    free(input2);
    free(output);
    printf("vadd: PASSED\n");
    return 0;
}

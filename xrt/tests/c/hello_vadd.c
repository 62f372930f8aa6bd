/* A program of XRT's native C API in the hello-world flow: card 0, the xclbin, one buffer in
 * the bank of each of vadd's buffer arguments, mapped and filled, synced to the card, one run
 * with every argument at once, a wait, the result synced back and compared. Then the same
 * kernel through a run whose arguments are set one by one, buffers written and read instead
 * of mapped, a completion callback, threads running it at once, and the calls a program
 * gets wrong, each with its error. Prints one line per check and "N failed" last; exits 0
 * when none failed. argv[1]: the xclbin. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#define COUNT 4096
#define THREADS 4
#define ROUNDS 25

static int failed;
static atomic_int completions;

static void expect(int ok, const char* what) {
    printf("%s: %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) failed++;
}

static int mismatches(const unsigned* a, const unsigned* b, const unsigned* sum, int count) {
    int wrong = 0;
    for (int i = 0; i < count; i++) wrong += sum[i] != a[i] + b[i];
    return wrong;
}

static void on_completion(xrtRunHandle run, enum ert_cmd_state state, void* data) {
    (void)run;
    if (state == ERT_CMD_STATE_COMPLETED && data == &completions) atomic_fetch_add(&completions, 1);
}

/* Waits up to 5 s for the completion callbacks to reach `count`. */
static int completions_reach(int count) {
    for (int waited = 0; waited < 500 && atomic_load(&completions) < count; waited++) {
        struct timespec tick = {0, 10 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    return atomic_load(&completions) == count;
}

struct worker {
    xrtDeviceHandle device;
    xrtKernelHandle kernel;
    unsigned seed;
    int wrong; /* mismatched elements over every round, or -1 when a call failed */
};

/* One thread's rounds: buffers of its own, vadd on its own numbers, checked each round. */
static void* rounds(void* arg) {
    struct worker* w = arg;
    size_t bytes = COUNT * sizeof(unsigned);
    xrtBufferHandle in1 = xrtBOAlloc(w->device, bytes, 0, xrtKernelArgGroupId(w->kernel, 0));
    xrtBufferHandle in2 = xrtBOAlloc(w->device, bytes, 0, xrtKernelArgGroupId(w->kernel, 1));
    xrtBufferHandle out = xrtBOAlloc(w->device, bytes, 0, xrtKernelArgGroupId(w->kernel, 2));
    if (!in1 || !in2 || !out) {
        w->wrong = -1;
        return NULL;
    }
    unsigned *a = xrtBOMap(in1), *b = xrtBOMap(in2), *sum = xrtBOMap(out);
    for (int round = 0; round < ROUNDS && w->wrong >= 0; round++) {
        for (int i = 0; i < COUNT; i++) {
            a[i] = w->seed * 1000003u + (unsigned)(round * COUNT + i);
            b[i] = w->seed ^ (unsigned)i;
        }
        xrtBOSync(in1, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
        xrtBOSync(in2, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
        xrtRunHandle run = xrtKernelRun(w->kernel, in1, in2, out, COUNT);
        if (!run || xrtRunWait(run) != ERT_CMD_STATE_COMPLETED ||
            xrtBOSync(out, XCL_BO_SYNC_BO_FROM_DEVICE, bytes, 0) != 0) {
            w->wrong = -1;
            break;
        }
        xrtRunClose(run);
        w->wrong += mismatches(a, b, sum, COUNT);
    }
    xrtBOFree(in1);
    xrtBOFree(in2);
    xrtBOFree(out);
    return NULL;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s XCLBIN\n", argv[0]);
        return 2;
    }
    xrtDeviceHandle device = xrtDeviceOpen(0);
    if (!device) {
        perror("xrtDeviceOpen(0)");
        return 1;
    }
    if (xrtDeviceLoadXclbinFile(device, argv[1]) != 0) {
        perror("xrtDeviceLoadXclbinFile");
        return 1;
    }
    xuid_t uuid;
    expect(xrtDeviceGetXclbinUUID(device, uuid) == 0, "the loaded xclbin's uuid");
    xrtKernelHandle kernel = xrtPLKernelOpen(device, uuid, "vadd");
    if (!kernel) {
        perror("xrtPLKernelOpen");
        return 1;
    }
    size_t bytes = COUNT * sizeof(unsigned);
    xrtBufferHandle in1 = xrtBOAlloc(device, bytes, XCL_BO_FLAGS_NONE, xrtKernelArgGroupId(kernel, 0));
    xrtBufferHandle in2 = xrtBOAlloc(device, bytes, XCL_BO_FLAGS_NONE, xrtKernelArgGroupId(kernel, 1));
    xrtBufferHandle out = xrtBOAlloc(device, bytes, XCL_BO_FLAGS_NONE, xrtKernelArgGroupId(kernel, 2));
    if (!in1 || !in2 || !out) {
        perror("xrtBOAlloc");
        return 1;
    }
    expect(xrtBOSize(in1) == bytes, "a buffer's size");
    expect(xrtBOAddress(in1) != xrtBOAddress(out), "buffers have their own device addresses");

    unsigned* a = xrtBOMap(in1);
    unsigned* b = xrtBOMap(in2);
    unsigned* sum = xrtBOMap(out);
    for (int i = 0; i < COUNT; i++) {
        a[i] = (unsigned)i;
        b[i] = 3u * (unsigned)i + 1u;
        sum[i] = 0;
    }
    expect(xrtBOSync(in1, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0) == 0 &&
               xrtBOSync(in2, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0) == 0,
           "inputs synced to the card");
    xrtRunHandle run = xrtKernelRun(kernel, in1, in2, out, COUNT);
    expect(run != NULL, "xrtKernelRun started");
    expect(xrtRunWait(run) == ERT_CMD_STATE_COMPLETED, "the run completed");
    expect(xrtRunState(run) == ERT_CMD_STATE_COMPLETED, "its state says so");
    int before = mismatches(a, b, sum, COUNT);
    expect(before == COUNT, "the host memory is untouched before the sync back");
    expect(xrtBOSync(out, XCL_BO_SYNC_BO_FROM_DEVICE, bytes, 0) == 0, "the result synced back");
    int wrong = mismatches(a, b, sum, COUNT);
    printf("vadd of %d elements: %d mismatches\n", COUNT, wrong);
    expect(wrong == 0, "vadd is exact");

    /* The same kernel again, its arguments set one by one, half the elements, buffers
     * written and read through calls. */
    unsigned host_a[COUNT], host_b[COUNT], host_sum[COUNT];
    for (int i = 0; i < COUNT; i++) {
        host_a[i] = 7u * (unsigned)i;
        host_b[i] = 0xfff0u + (unsigned)i;
    }
    expect(xrtBOWrite(in1, host_a, bytes, 0) == 0 && xrtBOWrite(in2, host_b, bytes, 0) == 0,
           "inputs written");
    xrtBOSync(in1, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
    xrtBOSync(in2, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
    xrtRunHandle again = xrtRunOpen(kernel);
    expect(xrtRunState(again) == ERT_CMD_STATE_NEW, "a new run is NEW");
    expect(xrtRunStart(again) != 0 && errno == EINVAL, "a run with arguments unset does not start");
    expect(xrtRunSetArg(again, 0, in1) == 0 && xrtRunSetArg(again, 1, in2) == 0 &&
               xrtRunSetArg(again, 2, out) == 0 && xrtRunSetArg(again, 3, COUNT / 2) == 0,
           "arguments set one by one");
    expect(xrtRunSetCallback(again, ERT_CMD_STATE_COMPLETED, on_completion, &completions) == 0,
           "a completion callback registered");
    expect(xrtRunStart(again) == 0, "the run started");
    expect(xrtRunWaitFor(again, 10000) == ERT_CMD_STATE_COMPLETED, "a timed wait completed");
    expect(completions_reach(1), "the callback was called once, with COMPLETED");
    memset(host_sum, 0, sizeof host_sum);
    xrtBOSync(out, XCL_BO_SYNC_BO_FROM_DEVICE, bytes, 0);
    expect(xrtBORead(out, host_sum, bytes, 0) == 0, "the result read");
    int half = mismatches(host_a, host_b, host_sum, COUNT / 2);
    int rest = 0; /* beyond the count: the first run's sums, 4i + 1 */
    for (int i = COUNT / 2; i < COUNT; i++) rest += host_sum[i] != 4u * (unsigned)i + 1u;
    printf("second run of %d elements: %d mismatches, %d beyond it changed\n", COUNT / 2, half,
           rest);
    expect(half == 0 && rest == 0, "the second run is exact and stops at its count");

    /* Threads running the kernel at once, each with its own buffers and numbers. */
    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (struct worker){device, kernel, (unsigned)t + 1u, 0};
        pthread_create(&threads[t], NULL, rounds, &workers[t]);
    }
    int threads_wrong = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        threads_wrong += workers[t].wrong < 0 ? COUNT * ROUNDS : workers[t].wrong;
    }
    printf("%d threads x %d runs at once: %d mismatches\n", THREADS, ROUNDS, threads_wrong);
    expect(threads_wrong == 0, "runs from threads at once are exact");

    /* What a program gets wrong. */
    errno = 0;
    expect(xrtDeviceOpen(99) == NULL && errno == ENODEV, "no card 99: NULL, ENODEV");
    expect(xrtKernelArgGroupId(kernel, 3) == -1 && errno == EINVAL, "a value argument has no group");
    expect(xrtKernelArgGroupId(kernel, 9) == -1 && errno == EINVAL, "no argument 9");
    expect(xrtBOSync(in1, XCL_BO_SYNC_BO_TO_DEVICE, bytes + 1, 0) == -1 && errno == EINVAL,
           "a sync past the end");
    expect(xrtBOWrite(in1, host_a, 16, bytes - 8) == -1 && errno == EINVAL, "a write past the end");
    expect(xrtRunSetArg(again, 3, 1, 2) == 0, "extra varargs are not read");
    expect(xrtRunSetArg(again, 7, 1) == -1 && errno == EINVAL, "a run has no argument 7");
    expect(xrtRunSetArg(again, 0, (void*)0x1234) == -1 && errno == EINVAL,
           "a stale buffer handle is refused, not read");
    xuid_t other;
    memcpy(other, uuid, sizeof other);
    other[15] ^= 1;
    expect(xrtPLKernelOpen(device, other, "vadd") == NULL && errno == EINVAL,
           "a kernel of another xclbin");
    expect(xrtPLKernelOpen(device, uuid, "vmul") == NULL && errno == ENOENT, "a kernel the xclbin lacks");
    expect(xrtDeviceLoadXclbinFile(device, "/nonexistent.xclbin") == -1 && errno == ENOENT,
           "an xclbin that is not there");
    expect(xrtBOAlloc(device, bytes, XCL_BO_FLAGS_P2P, 0) == NULL && errno == EOPNOTSUPP,
           "a P2P buffer is not supported");
    expect(xrtBOAlloc(device, bytes, XCL_BO_FLAGS_DEV_ONLY | XCL_BO_FLAGS_HOST_ONLY, 0) == NULL &&
               errno == EINVAL,
           "a buffer with neither side");
    xrtBufferHandle part = xrtBOSubAlloc(out, 16, 32);
    expect(part != NULL && xrtBOAddress(part) == xrtBOAddress(out) + 32, "a sub-buffer at its offset");
    expect(xrtBOSubAlloc(out, 16, bytes) == NULL && errno == EINVAL, "a sub-buffer past the end");

    expect(xrtRunClose(run) == 0 && xrtRunClose(again) == 0, "runs closed");
    expect(xrtRunClose(run) == -1 && errno == EINVAL, "a closed run is refused");
    expect(xrtBOFree(part) == 0 && xrtBOFree(in1) == 0 && xrtBOFree(in2) == 0 && xrtBOFree(out) == 0,
           "buffers freed");
    expect(xrtKernelClose(kernel) == 0 && xrtDeviceClose(device) == 0, "kernel and device closed");
    printf("%d failed\n", failed);
    return failed == 0 ? 0 : 1;
}

/* An Offload program over a plugin that lies (the chaos plugin's device, vendor
 * "PCI vendor 0x1234"), one class of lie per run, chosen by argv[1]:
 *   short    2 MiB of host memory: the plugin answers 4 KiB; olMemAlloc must fail.
 *   repeat   two host allocations: the plugin gives one id twice; the second must fail, the
 *            first stay whole and writable.
 *   pending  a launch (of vadd, from the xclbin argv[2]) whose event never completes: olWaitEvent and olWaitQueue must return an
 *            error by the plugin's event deadline.
 *   kept N   N launches whose events the program keeps (against a plugin that fails each
 *            with a message of its own, and against an honest one, to compare peak RSS).
 *   stale    a queue released, then queues made until one could land on its handle: the old
 *            handle stays an error and the new queues untouched.
 * Then a copy goes through the XRT card, verified. Prints one line per check ("ok: ..." or
 * "FAILED: ..."), the wait times and the peak RSS, "N failed" last; exits with the failures. */
#define _POSIX_C_SOURCE 200809L
#include <OffloadAPI.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static int failed;

static void expect(int ok, const char* what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) failed++;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static long peak_rss_kib(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

/* The device whose vendor is `vendor`, or NULL. */
static ol_device_handle_t device_of(const char* vendor) {
    ol_platform_handle_t platform;
    uint32_t count = 0;
    ol_device_handle_t devices[16];
    if (olGetPlatform(1, &platform) || olGetDeviceCount(platform, &count) || count > 16 ||
        olGetDevice(platform, count, devices))
        return NULL;
    for (uint32_t i = 0; i < count; i++) {
        char name[64];
        if (!olGetDeviceInfo(devices[i], OL_DEVICE_INFO_VENDOR, sizeof name, name) && strcmp(name, vendor) == 0)
            return devices[i];
    }
    return NULL;
}

static const ol_kernel_launch_size_args_t ONCE = {1, 1, 1, 1, 1, 1, 1};

struct vadd_args {
    void* in1;
    void* in2;
    void* out;
    uint32_t count;
};

/* Reads the file at `path` whole (its size in *size); NULL if it cannot. */
static void* read_file(const char* path, size_t* size) {
    FILE* file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    *size = (size_t)ftell(file);
    fseek(file, 0, SEEK_SET);
    void* bytes = malloc(*size);
    if (bytes && fread(bytes, 1, *size, file) != *size) {
        free(bytes);
        bytes = NULL;
    }
    fclose(file);
    return bytes;
}

/* The vadd kernel of the xclbin at `xclbin` on `device`, with its arguments: three 4 KiB
 * allocations of the device. */
static ol_kernel_handle_t vadd_of(ol_device_handle_t device, const char* xclbin, struct vadd_args* args) {
    size_t size = 0;
    void* image = read_file(xclbin, &size);
    ol_program_handle_t program;
    ol_kernel_handle_t kernel;
    int made = image && !olCreateProgram(device, image, size, &program) && !olCreateKernel(program, "vadd", &kernel) &&
               !olMemAlloc(device, OL_ALLOC_TYPE_DEVICE, 4096, &args->in1) &&
               !olMemAlloc(device, OL_ALLOC_TYPE_DEVICE, 4096, &args->in2) &&
               !olMemAlloc(device, OL_ALLOC_TYPE_DEVICE, 4096, &args->out);
    free(image);
    args->count = 1024;
    return made ? kernel : NULL;
}

/* A pattern copied into the XRT card's memory and back: whether it came back exact. */
static int card_copies(ol_device_handle_t card, ol_device_handle_t host) {
    ol_queue_handle_t queue;
    void* memory;
    unsigned char data[4096], back[4096];
    for (int i = 0; i < 4096; i++) data[i] = (unsigned char)(i * 7 + 3);
    return !olCreateQueue(card, &queue) && !olMemAlloc(card, OL_ALLOC_TYPE_SHARED, sizeof data, &memory) &&
           !olEnqueueMemcpy(queue, memory, card, data, host, sizeof data, NULL) &&
           !olEnqueueMemcpy(queue, back, host, memory, card, sizeof back, NULL) && !olWaitQueue(queue) &&
           memcmp(data, back, sizeof data) == 0;
}

static void stale(ol_device_handle_t card) {
    ol_queue_handle_t old;
    expect(!olCreateQueue(card, &old) && !olReleaseQueue(old), "a queue made and released");
    static ol_queue_handle_t made[2000];
    int landed = 0, count = 0;
    for (; count < 2000 && !landed; count++) {
        if (olCreateQueue(card, &made[count])) break;
        landed = made[count] == old;
    }
    printf("%d queues made after it; one has its handle: %s\n", count, landed ? "yes" : "no");
    expect(!landed, "no later queue has the released queue's handle");
    ol_result_t again = olReleaseQueue(old);
    expect(again && again->Code == OL_ERRC_INVALID_QUEUE, "releasing the released queue again is an error");
    expect(olWaitQueue(old) != NULL, "waiting on it is an error");
    expect(count > 0 && !olWaitQueue(made[count - 1]) && !olReleaseQueue(made[count - 1]),
           "the newest queue is untouched");
    for (int i = 0; i + 1 < count; i++) olReleaseQueue(made[i]);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s short|repeat|pending XCLBIN|kept XCLBIN N|stale\n", argv[0]);
        return 2;
    }
    const char* mode = argv[1];
    if (olInit()) return 2;
    ol_device_handle_t liar = device_of("PCI vendor 0x1234");
    ol_device_handle_t card = device_of("Xilinx");
    ol_device_handle_t host;
    if (!liar || !card || olGetHostDevice(&host)) {
        fprintf(stderr, "the lying device or the XRT card is missing\n");
        return 2;
    }
    long rss_before = peak_rss_kib();
    if (strcmp(mode, "short") == 0) {
        void* memory = NULL;
        ol_result_t refused = olMemAlloc(liar, OL_ALLOC_TYPE_HOST, 2 << 20, &memory);
        printf("2 MiB of host memory from the liar: %s%s\n", refused ? "an error: " : "a pointer",
               refused ? refused->Details : "");
        expect(refused != NULL, "the short buffer is an error, never a pointer");
    } else if (strcmp(mode, "repeat") == 0) {
        unsigned char *first = NULL, *second = NULL;
        expect(!olMemAlloc(liar, OL_ALLOC_TYPE_HOST, 8192, (void**)&first), "the first allocation");
        if (first) memset(first, 0x6b, 8192);
        ol_result_t refused = olMemAlloc(liar, OL_ALLOC_TYPE_HOST, 8192, (void**)&second);
        printf("the second allocation: %s%s\n", refused ? "an error: " : "a pointer",
               refused ? refused->Details : "");
        expect(refused != NULL, "an id given twice is an error");
        int whole = first != NULL;
        for (int i = 0; first && i < 8192; i++) whole &= first[i] == 0x6b;
        if (first) first[8191] = 1;
        expect(whole, "the first allocation stays whole and writable");
    } else if (strcmp(mode, "pending") == 0) {
        ol_queue_handle_t queue;
        struct vadd_args args;
        ol_kernel_handle_t kernel = vadd_of(liar, argv[2], &args);
        expect(kernel && !olCreateQueue(liar, &queue), "a kernel and a queue of the liar");
        ol_event_handle_t event = NULL;
        ol_result_t launched = olEnqueueKernelLaunch(queue, kernel, &args, sizeof args, &ONCE, &event);
        if (launched) printf("the launch: %s\n", launched->Details);
        expect(!launched, "the launch is queued");
        double began = now_ms();
        ol_result_t waited = olWaitEvent(event);
        printf("olWaitEvent returned %s after %.0f ms: %s\n", waited ? "an error" : "success",
               now_ms() - began, waited ? waited->Details : "");
        expect(waited != NULL, "olWaitEvent is an error");
        began = now_ms();
        ol_result_t finished = olWaitQueue(queue);
        printf("olWaitQueue returned %s after %.0f ms\n", finished ? "an error" : "success", now_ms() - began);
    } else if (strcmp(mode, "kept") == 0 && argc > 3) {
        long count = atol(argv[3]);
        ol_queue_handle_t queue;
        struct vadd_args args;
        ol_kernel_handle_t kernel = vadd_of(liar, argv[2], &args);
        if (!kernel || olCreateQueue(liar, &queue)) return 2;
        ol_event_handle_t* events = calloc((size_t)count, sizeof *events);
        long queued = 0;
        for (long i = 0; i < count; i++) queued += !olEnqueueKernelLaunch(queue, kernel, &args, sizeof args, &ONCE, &events[i]);
        olWaitQueue(queue);
        printf("%ld launches queued, their events kept\n", queued);
        printf("peak rss growth KiB: %ld\n", peak_rss_kib() - rss_before);
        for (long i = 0; i < count; i++)
            if (events[i]) olReleaseEvent(events[i]);
        free(events);
    } else if (strcmp(mode, "stale") == 0) {
        stale(card);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    expect(card_copies(card, host), "then a copy through the XRT card is exact");
    printf("%d failed\n", failed);
    return failed;
}

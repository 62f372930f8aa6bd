/* A program of LLVM's Offload API (OffloadAPI.h 0.0.1) in its canonical flow: init, the
 * platform and its devices with their info, the host device, device allocations, a queue,
 * memcpy in, a program from a device image (argv[1], an xclbin) and its kernel by name, a
 * launch with packed arguments, an event, memcpy out, checked byte for byte (the program
 * comes before the allocations: an XRT card's memory banks are its program's); then shared
 * and host allocations, device-to-device copies, reference counts, the code-location
 * variants, threads with their own queues, and the calls a program gets wrong, each with
 * its error code. Prints one line per check and "N failed" last; exits 0 when none failed. */
#define _POSIX_C_SOURCE 200809L
#include "support.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 8192
#define THREADS 4
#define ROUNDS 20

/* Whether `result` is an error with `code`. */
static int error(ol_result_t result, ol_errc_t code) {
    if (result == OL_SUCCESS) return 0;
    fprintf(stderr, "expected error %d: %s\n", result->Code, result->Details);
    return result->Code == code && result->Details != NULL;
}

/* vadd's arguments as the xclbin describes them, packed as a C struct. */
struct vadd_args {
    void* in1;
    void* in2;
    void* out;
    int size;
};

static const ol_kernel_launch_size_args_t ONCE = {1, 1, 1, 1, 1, 1, 1};

static ol_device_handle_t card;
static ol_kernel_handle_t vadd;

/* One thread's rounds: its own queue and allocations, vadd checked each round. */
static void* rounds(void* seed_arg) {
    unsigned seed = (unsigned)(size_t)seed_arg;
    ol_device_handle_t host;
    ol_queue_handle_t queue;
    void *a, *b, *sum;
    size_t bytes = COUNT * sizeof(unsigned);
    if (!ok(olGetHostDevice(&host)) || !ok(olCreateQueue(card, &queue)) ||
        !ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &a)) ||
        !ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &b)) ||
        !ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &sum)))
        return (void*)1;
    unsigned* x = malloc(bytes);
    unsigned* y = malloc(bytes);
    unsigned* z = malloc(bytes);
    size_t wrong = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < COUNT; i++) {
            x[i] = seed * 7919u + (unsigned)(round * COUNT + i);
            y[i] = seed ^ (unsigned)(i * 3);
        }
        struct vadd_args args = {a, b, sum, COUNT};
        if (!ok(olEnqueueMemcpy(queue, a, card, x, host, bytes, NULL)) ||
            !ok(olEnqueueMemcpy(queue, b, card, y, host, bytes, NULL)) ||
            !ok(olEnqueueKernelLaunch(queue, vadd, &args, sizeof args, &ONCE, NULL)) ||
            !ok(olEnqueueMemcpy(queue, z, host, sum, card, bytes, NULL)) || !ok(olWaitQueue(queue))) {
            wrong = COUNT;
            break;
        }
        for (int i = 0; i < COUNT; i++) wrong += z[i] != x[i] + y[i];
    }
    olMemFree(card, OL_ALLOC_TYPE_DEVICE, a);
    olMemFree(card, OL_ALLOC_TYPE_DEVICE, b);
    olMemFree(card, OL_ALLOC_TYPE_DEVICE, sum);
    olReleaseQueue(queue);
    free(x);
    free(y);
    free(z);
    return (void*)wrong;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s XCLBIN\n", argv[0]);
        return 2;
    }
    expect(ok(olInit()), "olInit");

    uint32_t platforms = 0;
    ol_platform_handle_t platform;
    expect(ok(olGetPlatformCount(&platforms)) && platforms == 1, "one platform");
    expect(ok(olGetPlatform(1, &platform)), "olGetPlatform");
    size_t size = 0;
    char text[256];
    expect(ok(olGetPlatformInfoSize(platform, OL_PLATFORM_INFO_NAME, &size)) && size == strlen("accelhost") + 1,
           "the platform name's size");
    expect(ok(olGetPlatformInfo(platform, OL_PLATFORM_INFO_NAME, sizeof text, text)) && strcmp(text, "accelhost") == 0,
           "the platform is accelhost");
    ol_platform_backend_t backend = OL_PLATFORM_BACKEND_CUDA;
    expect(ok(olGetPlatformInfo(platform, OL_PLATFORM_INFO_BACKEND, sizeof backend, &backend)) &&
               backend == OL_PLATFORM_BACKEND_UNKNOWN,
           "its backend is neither CUDA nor AMDGPU");

    uint32_t count = 0;
    expect(ok(olGetDeviceCount(platform, &count)) && count > 0, "devices");
    ol_device_handle_t devices[16];
    expect(count <= 16 && ok(olGetDevice(platform, count, devices)), "olGetDevice");
    card = NULL;
    for (uint32_t i = 0; i < count; i++) {
        char name[256];
        ol_platform_handle_t owner = NULL;
        if (ok(olGetDeviceInfo(devices[i], OL_DEVICE_INFO_NAME, sizeof name, name)) &&
            ok(olGetDeviceInfo(devices[i], OL_DEVICE_INFO_PLATFORM, sizeof owner, &owner)) && owner == platform) {
            printf("device %u: %s\n", i, name);
            if (strcmp(name, "xocl/emu:xocl0") == 0) card = devices[i];
        }
    }
    expect(card != NULL, "the XRT card is a device");
    if (!card) return 1;
    expect(ok(olGetDeviceInfo(card, OL_DEVICE_INFO_VENDOR, sizeof text, text)) && strcmp(text, "Xilinx") == 0,
           "its vendor");
    ol_device_handle_t host;
    expect(ok(olGetHostDevice(&host)), "the host device");

    /* The flow: a program (an XRT card's memory banks come with it) and its kernel,
     * allocations, a queue, memcpy in, a launch, an event, memcpy out. */
    size_t image_size = 0;
    void* image = read_file(argv[1], &image_size);
    ol_program_handle_t program;
    expect(image && ok(olCreateProgram(card, image, image_size, &program)), "a program from the xclbin");
    free(image);
    expect(ok(olCreateKernel(program, "vadd", &vadd)), "the vadd kernel");
    size_t bytes = COUNT * sizeof(unsigned);
    void *in1, *in2, *out;
    expect(ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &in1)) &&
               ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &in2)) &&
               ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &out)),
           "three device allocations");
    ol_queue_handle_t queue;
    expect(ok(olCreateQueue(card, &queue)), "a queue");
    unsigned* a = malloc(bytes);
    unsigned* b = malloc(bytes);
    unsigned* sum = calloc(COUNT, sizeof(unsigned));
    for (int i = 0; i < COUNT; i++) {
        a[i] = (unsigned)i * 2654435761u;
        b[i] = 0x01010101u + (unsigned)i;
    }
    expect(ok(olEnqueueMemcpy(queue, in1, card, a, host, bytes, NULL)) &&
               ok(olEnqueueMemcpy(queue, in2, card, b, host, bytes, NULL)),
           "memcpy host to device");
    struct vadd_args args = {in1, in2, out, COUNT};
    ol_event_handle_t launched;
    expect(ok(olEnqueueKernelLaunch(queue, vadd, &args, sizeof args, &ONCE, &launched)), "the launch");
    expect(ok(olWaitEvent(launched)), "its event");
    ol_event_handle_t copied;
    expect(ok(olEnqueueMemcpy(queue, sum, host, out, card, bytes, &copied)) && ok(olWaitEvent(copied)),
           "memcpy device to host");
    int wrong = 0;
    for (int i = 0; i < COUNT; i++) wrong += sum[i] != a[i] + b[i];
    printf("vadd of %d elements: %d mismatches\n", COUNT, wrong);
    expect(wrong == 0, "vadd is exact");

    /* Device to device, shared and host allocations. */
    void *copy, *shared, *pinned;
    expect(ok(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, bytes, &copy)) &&
               ok(olEnqueueMemcpy(queue, copy, card, out, card, bytes, NULL)),
           "memcpy device to device");
    expect(ok(olMemAlloc(card, OL_ALLOC_TYPE_SHARED, bytes, &shared)) &&
               ok(olMemAlloc(card, OL_ALLOC_TYPE_HOST, bytes, &pinned)),
           "shared and host allocations");
    memset(pinned, 0, bytes);
    expect(ok(olEnqueueMemcpy(queue, shared, card, copy, card, bytes, NULL)) &&
               ok(olEnqueueMemcpy(queue, pinned, host, shared, card, bytes, NULL)) && ok(olWaitQueue(queue)),
           "through shared memory into a host allocation");
    expect(memcmp(pinned, sum, bytes) == 0 && memcmp(shared, sum, bytes) == 0,
           "both read the sums directly");

    /* Reference counts. */
    expect(ok(olRetainEvent(copied)) && ok(olReleaseEvent(copied)) && ok(olReleaseEvent(copied)),
           "an event retained and released twice");
    expect(error(olReleaseEvent(copied), OL_ERRC_INVALID_EVENT), "then it is gone");
    expect(ok(olRetainKernel(vadd)) && ok(olReleaseKernel(vadd)), "a kernel retained and released");
    expect(ok(olRetainProgram(program)) && ok(olReleaseProgram(program)), "a program retained and released");

    /* Threads with their own queues and allocations, one kernel. */
    pthread_t threads[THREADS];
    for (size_t t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, rounds, (void*)(t + 1));
    size_t threads_wrong = 0;
    for (int t = 0; t < THREADS; t++) {
        void* result;
        pthread_join(threads[t], &result);
        threads_wrong += (size_t)result;
    }
    printf("%d threads x %d launches at once: %zu mismatches\n", THREADS, ROUNDS, threads_wrong);
    expect(threads_wrong == 0, "launches from threads at once are exact");

    /* What a program gets wrong. */
    void* nothing = NULL;
    expect(error(olMemAlloc(card, OL_ALLOC_TYPE_DEVICE, 0, &nothing), OL_ERRC_INVALID_SIZE), "a 0-byte allocation");
    expect(error(olMemAlloc(card, (ol_alloc_type_t)7, 64, &nothing), OL_ERRC_INVALID_ENUMERATION),
           "an allocation type that is none");
    expect(error(olMemAlloc(host, OL_ALLOC_TYPE_HOST, 64, &nothing), OL_ERRC_INVALID_DEVICE),
           "the host device allocates nothing");
    expect(error(olMemAlloc(NULL, OL_ALLOC_TYPE_HOST, 64, &nothing), OL_ERRC_INVALID_NULL_HANDLE), "a NULL device");
    expect(error(olMemAlloc((ol_device_handle_t)&nothing, OL_ALLOC_TYPE_HOST, 64, &nothing), OL_ERRC_INVALID_DEVICE),
           "a pointer that is no device");
    ol_queue_handle_t none;
    expect(error(olCreateQueue(host, &none), OL_ERRC_INVALID_DEVICE), "the host device has no queues");
    expect(error(olGetPlatform(0, &platform), OL_ERRC_INVALID_SIZE), "olGetPlatform of 0 entries");
    expect(error(olGetPlatformInfo(platform, OL_PLATFORM_INFO_NAME, 3, text), OL_ERRC_INVALID_SIZE),
           "a name into 3 bytes");
    expect(error(olGetDeviceInfo(card, (ol_device_info_t)99, sizeof text, text), OL_ERRC_UNSUPPORTED_ENUMERATION),
           "a device property that is none");
    ol_kernel_handle_t missing;
    expect(error(olCreateKernel(program, "vmul", &missing), OL_ERRC_INVALID_KERNEL_NAME), "a kernel the program lacks");
    char stack[64];
    expect(error(olEnqueueMemcpy(queue, stack, card, in1, card, 64, NULL), OL_ERRC_INVALID_ARGUMENT),
           "a device copy to memory that is not the device's");
    expect(error(olEnqueueMemcpy(queue, stack, host, in1, host, 64, NULL), OL_ERRC_INVALID_ARGUMENT),
           "device memory paired with the host device");
    expect(error(olEnqueueMemcpy(queue, in1, card, a, host, bytes + 1, NULL), OL_ERRC_INVALID_ARGUMENT),
           "a copy past the allocation's end");
    expect(error(olEnqueueMemcpy(queue, in1, card, a, host, 0, NULL), OL_ERRC_INVALID_SIZE), "a 0-byte copy");
    struct vadd_args stray = {in1, stack, out, COUNT};
    expect(error(olEnqueueKernelLaunch(queue, vadd, &stray, sizeof stray, &ONCE, NULL), OL_ERRC_INVALID_ARGUMENT),
           "a launch with a pointer outside the device's allocations");
    expect(error(olEnqueueKernelLaunch(queue, vadd, &args, 20, &ONCE, NULL), OL_ERRC_INVALID_SIZE),
           "a launch with too few argument bytes");
    ol_kernel_launch_size_args_t wide = {1, 64, 1, 1, 1, 1, 1};
    expect(error(olEnqueueKernelLaunch(queue, vadd, &args, sizeof args, &wide, NULL), OL_ERRC_UNSUPPORTED_FEATURE),
           "a launch of 64 work items");
    expect(error(olMemFree(card, OL_ALLOC_TYPE_HOST, in1), OL_ERRC_INVALID_ARGUMENT), "a free with the wrong type");
    expect(error(olMemFree(card, OL_ALLOC_TYPE_DEVICE, (char*)in1 + 8), OL_ERRC_INVALID_ARGUMENT),
           "a free inside an allocation");
    ol_code_location_t here = {"main", "flow.c", 42, 7};
    ol_result_t located = olMemAllocWithCodeLoc(card, OL_ALLOC_TYPE_DEVICE, 0, &nothing, &here);
    expect(located != OL_SUCCESS && strstr(located->Details, "main (flow.c:42:7)") != NULL,
           "an error of a WithCodeLoc call names the location");
    expect(error(olMemAllocWithCodeLoc(card, OL_ALLOC_TYPE_DEVICE, 0, &nothing, &here), OL_ERRC_INVALID_SIZE) &&
               olMemAllocWithCodeLoc(card, OL_ALLOC_TYPE_DEVICE, 0, &nothing, &here) == located,
           "the same error is the same struct");

    expect(ok(olMemFree(card, OL_ALLOC_TYPE_DEVICE, in1)) && ok(olMemFree(card, OL_ALLOC_TYPE_DEVICE, in2)) &&
               ok(olMemFree(card, OL_ALLOC_TYPE_DEVICE, out)) && ok(olMemFree(card, OL_ALLOC_TYPE_DEVICE, copy)) &&
               ok(olMemFree(card, OL_ALLOC_TYPE_SHARED, shared)) && ok(olMemFree(card, OL_ALLOC_TYPE_HOST, pinned)),
           "allocations freed");
    expect(error(olMemFree(card, OL_ALLOC_TYPE_DEVICE, in1), OL_ERRC_INVALID_ARGUMENT), "a second free");
    expect(ok(olReleaseEvent(launched)) && ok(olReleaseKernel(vadd)) && ok(olReleaseProgram(program)) &&
               ok(olReleaseQueue(queue)),
           "everything released");
    expect(error(olWaitQueue(queue), OL_ERRC_INVALID_QUEUE), "a released queue");
    expect(ok(olShutDown()), "olShutDown");
    free(a);
    free(b);
    free(sum);
    printf("%d failed\n", failed);
    return failed == 0 ? 0 : 1;
}

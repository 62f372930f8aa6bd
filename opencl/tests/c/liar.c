/* An OpenCL program over a plugin that lies (the chaos plugin's `lie` list, device vendor
 * 0x1234), one class of lie per run, chosen by argv[1]:
 *   short    USM host memory of 2 MiB: the plugin answers 4 KiB; the allocation must fail.
 *   repeat   two USM host allocations: the plugin gives one id twice; the second must fail
 *            and the first stay whole and writable.
 *   pending  a launch whose event never completes: clWaitForEvents and clFinish must return
 *            an error by the plugin's event deadline.
 *   kept N   N launches whose events the program keeps (run against a plugin that fails each
 *            with a message of its own, and against an honest one, to compare peak RSS); what
 *            clFinish returns and how many events have an error status.
 *   stale    a buffer released, then buffers made until one could land on its handle: the
 *            old handle stays an error and the new buffers untouched.
 * Then data goes through the XRT card (vendor 0x10ee), verified. Prints one line per check
 * ("ok: ..." or "FAILED: ..."), the wait times and the peak RSS; exits with the failures. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include "checks.h"
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

typedef void *(*host_alloc_fn)(cl_context, const cl_ulong *, size_t, cl_uint, cl_int *);
typedef cl_int (*mem_free_fn)(cl_context, void *);

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

static cl_platform_id platform_of(cl_device_id device) {
    cl_platform_id platform = NULL;
    clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
    return platform;
}

/* A kernel of a made-up program on `context`'s device (the chaos plugin takes any image). */
static cl_kernel any_kernel(cl_context context, cl_device_id device) {
    const unsigned char image[16] = "not an xclbin";
    const unsigned char *binaries[1] = {image};
    size_t lengths[1] = {sizeof image};
    cl_int err = CL_SUCCESS;
    cl_program program = clCreateProgramWithBinary(context, 1, &device, lengths, binaries, NULL, &err);
    if (err != CL_SUCCESS) return NULL;
    cl_kernel kernel = clCreateKernel(program, "any", &err);
    clReleaseProgram(program);
    return err == CL_SUCCESS ? kernel : NULL;
}

/* Copies a pattern through a buffer on the XRT card and back: whether it came back exact. */
static int card_copies(cl_device_id card) {
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &card, NULL, NULL, &err);
    if (err != CL_SUCCESS) return 0;
    cl_command_queue queue = clCreateCommandQueue(context, card, 0, &err);
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, 4096, NULL, &err);
    unsigned char data[4096], back[4096];
    for (int i = 0; i < 4096; i++) data[i] = (unsigned char)(i * 7 + 3);
    int exact = err == CL_SUCCESS &&
                clEnqueueWriteBuffer(queue, buffer, CL_TRUE, 0, 4096, data, 0, NULL, NULL) == CL_SUCCESS &&
                clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, 4096, back, 0, NULL, NULL) == CL_SUCCESS &&
                memcmp(data, back, 4096) == 0;
    clReleaseMemObject(buffer);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    return exact;
}

static void stale(cl_device_id card) {
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &card, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, card, 0, &err);
    cl_mem old = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, NULL, &err);
    expect(err == CL_SUCCESS && clReleaseMemObject(old) == CL_SUCCESS, "a buffer made and released");
    static cl_mem made[2000];
    int landed = 0, count = 0;
    for (; count < 2000 && !landed; count++) {
        made[count] = clCreateBuffer(context, CL_MEM_READ_WRITE, 64, NULL, &err);
        landed = made[count] == old;
    }
    printf("%d buffers made after it; one has its handle: %s\n", count, landed ? "yes" : "no");
    expect(!landed, "no later buffer has the released buffer's handle");
    unsigned char data[64], back[64];
    memset(data, 0x5a, sizeof data);
    cl_mem last = made[count - 1];
    clEnqueueWriteBuffer(queue, last, CL_TRUE, 0, 64, data, 0, NULL, NULL);
    cl_int again = clReleaseMemObject(old);
    expect(again == CL_INVALID_MEM_OBJECT, "releasing the released buffer again is CL_INVALID_MEM_OBJECT");
    size_t size = 0;
    expect(clGetMemObjectInfo(old, CL_MEM_SIZE, sizeof size, &size, NULL) == CL_INVALID_MEM_OBJECT,
           "asking about it is CL_INVALID_MEM_OBJECT");
    expect(clEnqueueReadBuffer(queue, last, CL_TRUE, 0, 64, back, 0, NULL, NULL) == CL_SUCCESS &&
               memcmp(data, back, 64) == 0,
           "the newest buffer is untouched");
    for (int i = 0; i < count; i++) clReleaseMemObject(made[i]);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s short|repeat|pending|kept N|stale\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    cl_device_id liar = accelhost_device(0x1234);
    cl_device_id card = accelhost_device(0x10ee);
    if (!liar || !card) {
        fprintf(stderr, "the lying device or the XRT card is missing\n");
        return 2;
    }
    cl_platform_id platform = platform_of(liar);
    host_alloc_fn host_alloc =
        (host_alloc_fn)clGetExtensionFunctionAddressForPlatform(platform, "clHostMemAllocINTEL");
    mem_free_fn mem_free = (mem_free_fn)clGetExtensionFunctionAddressForPlatform(platform, "clMemFreeINTEL");
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &liar, NULL, NULL, &err);
    if (err != CL_SUCCESS || !host_alloc || !mem_free) return 2;
    long rss_before = peak_rss_kib();

    if (strcmp(mode, "short") == 0) {
        void *memory = host_alloc(context, NULL, 2 << 20, 0, &err);
        printf("2 MiB of host memory from the liar: %s, %d\n", memory ? "a pointer" : "NULL", err);
        expect(!memory && err != CL_SUCCESS, "the short buffer is an error, never a pointer");
    } else if (strcmp(mode, "repeat") == 0) {
        unsigned char *first = host_alloc(context, NULL, 8192, 0, &err);
        expect(first && err == CL_SUCCESS, "the first allocation");
        if (first) memset(first, 0x6b, 8192);
        void *second = host_alloc(context, NULL, 8192, 0, &err);
        printf("the second allocation: %s, %d\n", second ? "a pointer" : "NULL", err);
        expect(!second && err != CL_SUCCESS, "an id given twice is an error");
        int whole = first != NULL;
        for (int i = 0; first && i < 8192; i++) whole &= first[i] == 0x6b;
        if (first) first[8191] = 1;
        expect(whole, "the first allocation stays whole and writable");
    } else if (strcmp(mode, "pending") == 0) {
        cl_command_queue queue = clCreateCommandQueue(context, liar, 0, &err);
        cl_kernel kernel = any_kernel(context, liar);
        expect(kernel != NULL, "a kernel of the liar");
        cl_event event = NULL;
        expect(clEnqueueTask(queue, kernel, 0, NULL, &event) == CL_SUCCESS, "the launch is queued");
        double began = now_ms();
        cl_int waited = clWaitForEvents(1, &event);
        printf("clWaitForEvents returned %d after %.0f ms\n", waited, now_ms() - began);
        expect(waited != CL_SUCCESS, "clWaitForEvents is an error");
        began = now_ms();
        cl_int finished = clFinish(queue);
        printf("clFinish returned %d after %.0f ms\n", finished, now_ms() - began);
        expect(finished != CL_SUCCESS, "clFinish is an error");
        cl_int status = CL_COMPLETE;
        clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
        expect(status < 0, "the launch's event has an error status");
        clReleaseEvent(event);
        clReleaseKernel(kernel);
        clReleaseCommandQueue(queue);
    } else if (strcmp(mode, "kept") == 0 && argc > 2) {
        long count = atol(argv[2]);
        cl_command_queue queue = clCreateCommandQueue(context, liar, 0, &err);
        cl_kernel kernel = any_kernel(context, liar);
        cl_event *events = calloc((size_t)count, sizeof *events);
        long queued = 0;
        for (long i = 0; i < count; i++)
            queued += clEnqueueTask(queue, kernel, 0, NULL, &events[i]) == CL_SUCCESS;
        cl_int finished = clFinish(queue);
        long failed = 0;
        for (long i = 0; i < count; i++) {
            cl_int status = CL_COMPLETE;
            if (events[i])
                clGetEventInfo(events[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                               &status, NULL);
            failed += status < 0;
        }
        printf("%ld launches queued, their events kept\n", queued);
        printf("clFinish returned %d; %ld events with an error status\n", finished, failed);
        printf("peak rss growth KiB: %ld\n", peak_rss_kib() - rss_before);
        for (long i = 0; i < count; i++)
            if (events[i]) clReleaseEvent(events[i]);
        free(events);
    } else if (strcmp(mode, "stale") == 0) {
        stale(card);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    clReleaseContext(context);
    expect(card_copies(card), "then a copy through the XRT card is exact");
    printf("%d failed\n", failures);
    return failures;
}

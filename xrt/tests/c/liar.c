/* An XRT program over a plugin that lies (the chaos plugin dressed as an XRT card, card 1),
 * one class of lie per run, chosen by argv[1] (argv[2]: the vadd xclbin):
 *   short    a 2 MiB buffer: the plugin answers 4 KiB of host memory; xrtBOAlloc must fail,
 *            so no xrtBOMap ever hands out a pointer past the memory.
 *   repeat   two buffers: the plugin gives one id twice; the second must fail, and the
 *            first stay mapped, whole and writable.
 *   pending  a run whose event never completes: xrtRunWait must return by the plugin's event
 *            deadline with ERT_CMD_STATE_ERROR.
 *   path     xclbin paths that are no files: /dev/zero, a FIFO (argv[3]), a directory; each
 *            refused at once, never read nor waited on.
 *   stale    a buffer freed, then buffers made until one could land on its handle: the old
 *            handle stays an error and the new buffers untouched.
 * Then vadd runs on card 0, verified. Prints one line per check ("ok: ..." or "FAILED: ...")
 * and "N failed" last; exits with the failures. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#define COUNT 1024

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

/* vadd of COUNT elements on `device` (its xclbin loaded): whether every sum is right. */
static int vadd_exact(xrtDeviceHandle device) {
    xuid_t uuid;
    if (xrtDeviceGetXclbinUUID(device, uuid) != 0) return 0;
    xrtKernelHandle kernel = xrtPLKernelOpen(device, uuid, "vadd");
    if (!kernel) return 0;
    size_t bytes = COUNT * sizeof(unsigned);
    xrtBufferHandle in1 = xrtBOAlloc(device, bytes, 0, xrtKernelArgGroupId(kernel, 0));
    xrtBufferHandle in2 = xrtBOAlloc(device, bytes, 0, xrtKernelArgGroupId(kernel, 1));
    xrtBufferHandle out = xrtBOAlloc(device, bytes, 0, xrtKernelArgGroupId(kernel, 2));
    if (!in1 || !in2 || !out) return 0;
    unsigned *a = xrtBOMap(in1), *b = xrtBOMap(in2), *sum = xrtBOMap(out);
    for (int i = 0; i < COUNT; i++) {
        a[i] = (unsigned)i * 3u;
        b[i] = (unsigned)i + 11u;
    }
    xrtBOSync(in1, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
    xrtBOSync(in2, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
    xrtRunHandle run = xrtKernelRun(kernel, in1, in2, out, COUNT);
    int ok = run && xrtRunWait(run) == ERT_CMD_STATE_COMPLETED &&
             xrtBOSync(out, XCL_BO_SYNC_BO_FROM_DEVICE, bytes, 0) == 0;
    for (int i = 0; ok && i < COUNT; i++) ok = sum[i] == a[i] + b[i];
    if (run) xrtRunClose(run);
    xrtBOFree(in1);
    xrtBOFree(in2);
    xrtBOFree(out);
    xrtKernelClose(kernel);
    return ok;
}

static void pending(xrtDeviceHandle liar, const char* xclbin) {
    expect(xrtDeviceLoadXclbinFile(liar, xclbin) == 0, "the xclbin loads on the liar");
    xuid_t uuid;
    xrtDeviceGetXclbinUUID(liar, uuid);
    xrtKernelHandle kernel = xrtPLKernelOpen(liar, uuid, "vadd");
    size_t bytes = COUNT * sizeof(unsigned);
    xrtBufferHandle in1 = xrtBOAlloc(liar, bytes, 0, 0);
    xrtBufferHandle in2 = xrtBOAlloc(liar, bytes, 0, 0);
    xrtBufferHandle out = xrtBOAlloc(liar, bytes, 0, 0);
    expect(kernel && in1 && in2 && out, "a kernel and buffers of the liar");
    xrtRunHandle run = xrtKernelRun(kernel, in1, in2, out, COUNT);
    expect(run != NULL, "the run starts");
    double began = now_ms();
    int state = run ? (int)xrtRunWait(run) : -1;
    printf("xrtRunWait returned %d after %.0f ms\n", state, now_ms() - began);
    expect(state == ERT_CMD_STATE_ERROR, "xrtRunWait is ERT_CMD_STATE_ERROR");
}

static void paths(xrtDeviceHandle liar, const char* fifo) {
    const char* names[] = {"/dev/zero", fifo, "/"};
    for (int i = 0; i < 3; i++) {
        double began = now_ms();
        errno = 0;
        int loaded = xrtDeviceLoadXclbinFile(liar, names[i]);
        int why = errno;
        char what[256];
        snprintf(what, sizeof what, "loading %s is refused at once (%s, %.0f ms)", names[i],
                 strerror(why), now_ms() - began);
        expect(loaded != 0 && why != 0 && now_ms() - began < 2000, what);
        errno = 0;
        xrtXclbinHandle file = xrtXclbinAllocFilename(names[i]);
        snprintf(what, sizeof what, "xrtXclbinAllocFilename(%s) is refused (%s)", names[i],
                 strerror(errno));
        expect(!file && errno != 0, what);
    }
}

static void stale(xrtDeviceHandle card) {
    xrtBufferHandle old = xrtBOAlloc(card, 4096, 0, 0);
    expect(old && xrtBOFree(old) == 0, "a buffer made and freed");
    static xrtBufferHandle made[2000];
    int landed = 0, count = 0;
    for (; count < 2000 && !landed; count++) {
        made[count] = xrtBOAlloc(card, 4096, 0, 0);
        landed = made[count] == old;
    }
    printf("%d buffers made after it; one has its handle: %s\n", count, landed ? "yes" : "no");
    expect(!landed, "no later buffer has the freed buffer's handle");
    xrtBufferHandle last = made[count - 1];
    unsigned char data[64], back[64];
    memset(data, 0x3c, sizeof data);
    xrtBOWrite(last, data, sizeof data, 0);
    errno = 0;
    expect(xrtBOFree(old) != 0 && errno == EINVAL, "freeing the freed buffer again is EINVAL");
    expect(xrtBOSize(old) == 0 || errno == EINVAL, "asking about it is an error");
    expect(xrtBORead(last, back, sizeof back, 0) == 0 && memcmp(data, back, sizeof data) == 0,
           "the newest buffer is untouched");
    for (int i = 0; i < count; i++) xrtBOFree(made[i]);
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s short|repeat|pending|path|stale XCLBIN [FIFO]\n", argv[0]);
        return 2;
    }
    const char* mode = argv[1];
    xrtDeviceHandle card = xrtDeviceOpen(0);
    xrtDeviceHandle liar = xrtDeviceOpen(1);
    if (!card || !liar) {
        perror("xrtDeviceOpen");
        return 2;
    }
    if (strcmp(mode, "short") == 0) {
        errno = 0;
        xrtBufferHandle bo = xrtBOAlloc(liar, 2 << 20, 0, 0);
        printf("a 2 MiB buffer of the liar: %s, errno %s\n", bo ? "a handle" : "NULL", strerror(errno));
        expect(!bo && errno != 0, "the short buffer is an error");
        expect(!bo || !xrtBOMap(bo), "no pointer is handed out for it");
    } else if (strcmp(mode, "repeat") == 0) {
        xrtBufferHandle first = xrtBOAlloc(liar, 8192, XCL_BO_FLAGS_HOST_ONLY, 0);
        unsigned char* mapped = first ? xrtBOMap(first) : NULL;
        expect(mapped != NULL, "the first buffer, mapped");
        if (mapped) memset(mapped, 0x6b, 8192);
        errno = 0;
        xrtBufferHandle second = xrtBOAlloc(liar, 8192, XCL_BO_FLAGS_HOST_ONLY, 0);
        printf("the second buffer: %s, errno %s\n", second ? "a handle" : "NULL", strerror(errno));
        expect(!second && errno != 0, "an id given twice is an error");
        int whole = mapped != NULL;
        for (int i = 0; mapped && i < 8192; i++) whole &= mapped[i] == 0x6b;
        if (mapped) mapped[8191] = 1;
        expect(whole, "the first buffer stays whole and writable");
    } else if (strcmp(mode, "pending") == 0) {
        pending(liar, argv[2]);
    } else if (strcmp(mode, "path") == 0 && argc > 3) {
        paths(liar, argv[3]);
    } else if (strcmp(mode, "stale") == 0) {
        expect(xrtDeviceLoadXclbinFile(card, argv[2]) == 0, "the xclbin loads on card 0");
        stale(card);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    expect(xrtDeviceLoadXclbinFile(card, argv[2]) == 0 && vadd_exact(card),
           "then vadd on card 0 is exact");
    xrtDeviceClose(liar);
    xrtDeviceClose(card);
    printf("%d failed\n", failed);
    return failed;
}

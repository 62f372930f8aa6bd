/* A program of XRT's native C API running a kernel of its own: mmult from
 * tests/kernels/mmult.cpp, built into the xclbin of argv[1]. Multiplies matrices of two sizes
 * (one the kernel's largest, one odd) and compares each with the host's product; then runs
 * `forever`, which only the card's kernel deadline ends, expects that run to fail, and
 * multiplies once more. Prints one line per check and "N failed" last; exits 0 when none
 * failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#define MAX_SIZE 64

static int failed;

static void expect(int ok, const char* what) {
    printf("%s: %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) failed++;
}

/* Runs mmult on size x size matrices of known values; returns the mismatched cells, or -1
 * when a call failed. */
static int multiply(xrtDeviceHandle device, xrtKernelHandle kernel, int size, int seed) {
    size_t bytes = (size_t)size * size * sizeof(int);
    xrtBufferHandle a = xrtBOAlloc(device, bytes, 0, xrtKernelArgGroupId(kernel, 0));
    xrtBufferHandle b = xrtBOAlloc(device, bytes, 0, xrtKernelArgGroupId(kernel, 1));
    xrtBufferHandle c = xrtBOAlloc(device, bytes, 0, xrtKernelArgGroupId(kernel, 2));
    if (!a || !b || !c) return -1;
    int *ha = xrtBOMap(a), *hb = xrtBOMap(b), *hc = xrtBOMap(c);
    for (int i = 0; i < size * size; i++) {
        ha[i] = (i * 7 + seed) % 23 - 11;
        hb[i] = (i * 13 + seed * 3) % 19 - 9;
        hc[i] = 12345;
    }
    xrtBOSync(a, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
    xrtBOSync(b, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0);
    xrtRunHandle run = xrtKernelRun(kernel, a, b, c, size);
    int wrong = -1;
    if (run && xrtRunWait(run) == ERT_CMD_STATE_COMPLETED &&
        xrtBOSync(c, XCL_BO_SYNC_BO_FROM_DEVICE, bytes, 0) == 0) {
        wrong = 0;
        for (int row = 0; row < size; row++)
            for (int col = 0; col < size; col++) {
                int sum = 0;
                for (int k = 0; k < size; k++) sum += ha[row * size + k] * hb[k * size + col];
                wrong += hc[row * size + col] != sum;
            }
    }
    if (run) xrtRunClose(run);
    xrtBOFree(a);
    xrtBOFree(b);
    xrtBOFree(c);
    return wrong;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s XCLBIN\n", argv[0]);
        return 2;
    }
    xrtDeviceHandle device = xrtDeviceOpen(0);
    if (!device || xrtDeviceLoadXclbinFile(device, argv[1]) != 0) {
        perror("opening card 0 with the xclbin");
        return 1;
    }
    xuid_t uuid;
    xrtDeviceGetXclbinUUID(device, uuid);
    xrtKernelHandle mmult = xrtPLKernelOpen(device, uuid, "mmult");
    xrtKernelHandle forever = xrtPLKernelOpen(device, uuid, "forever");
    if (!mmult || !forever) {
        perror("xrtPLKernelOpen");
        return 1;
    }
    int wrong = multiply(device, mmult, MAX_SIZE, 1);
    printf("mmult %dx%d: %d mismatches\n", MAX_SIZE, MAX_SIZE, wrong);
    expect(wrong == 0, "the largest product");
    wrong = multiply(device, mmult, 17, 5);
    printf("mmult 17x17: %d mismatches\n", wrong);
    expect(wrong == 0, "an odd product");

    xrtBufferHandle flag = xrtBOAlloc(device, 4096, 0, xrtKernelArgGroupId(forever, 0));
    memset(xrtBOMap(flag), 0, 4096);
    xrtBOSync(flag, XCL_BO_SYNC_BO_TO_DEVICE, 4096, 0);
    xrtRunHandle run = xrtKernelRun(forever, flag);
    enum ert_cmd_state state = run ? xrtRunWait(run) : ERT_CMD_STATE_COMPLETED;
    printf("forever ended in state %d\n", (int)state);
    expect(run && state != ERT_CMD_STATE_COMPLETED, "an endless kernel fails its run");
    if (run) xrtRunClose(run);
    xrtBOFree(flag);

    wrong = multiply(device, mmult, 33, 9);
    printf("mmult 33x33 after it: %d mismatches\n", wrong);
    expect(wrong == 0, "the card goes on");

    xrtKernelClose(forever);
    xrtKernelClose(mmult);
    xrtDeviceClose(device);
    printf("%d failed\n", failed);
    return failed != 0;
}

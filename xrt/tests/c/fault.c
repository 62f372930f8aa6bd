/* A plugin that faults under an XRT program: card 1 is the chaos plugin, which traps in
 * mem-alloc, so xrtBOAlloc on it must return NULL with errno set, and the program must go
 * on to load the xclbin (argv[1]) on card 0 and copy through it. Prints both outcomes;
 * exits 0 when the fault was an error and the copy came back exact. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s XCLBIN\n", argv[0]);
        return 2;
    }
    xrtDeviceHandle chaos = xrtDeviceOpen(1);
    if (!chaos) {
        perror("xrtDeviceOpen(1)");
        return 1;
    }
    errno = 0;
    xrtBufferHandle lost = xrtBOAlloc(chaos, 4096, 0, 0);
    int fault = errno;
    printf("xrtBOAlloc on the faulting plugin: %s, errno %s\n", lost ? "a buffer" : "NULL",
           strerror(fault));
    xrtDeviceClose(chaos);

    xrtDeviceHandle card = xrtDeviceOpen(0);
    if (!card) {
        perror("xrtDeviceOpen(0)");
        return 1;
    }
    if (xrtDeviceLoadXclbinFile(card, argv[1]) != 0) {
        perror("xrtDeviceLoadXclbinFile");
        return 1;
    }
    xrtBufferHandle bo = xrtBOAlloc(card, 4096, 0, 0);
    if (!bo) {
        perror("xrtBOAlloc on card 0");
        return 1;
    }
    unsigned char data[4096], back[4096];
    for (int i = 0; i < 4096; i++) data[i] = (unsigned char)(i * 7 + 3);
    int exact = xrtBOWrite(bo, data, sizeof data, 0) == 0 &&
                xrtBOSync(bo, XCL_BO_SYNC_BO_TO_DEVICE, sizeof data, 0) == 0 &&
                memset(xrtBOMap(bo), 0, sizeof data) &&
                xrtBOSync(bo, XCL_BO_SYNC_BO_FROM_DEVICE, sizeof data, 0) == 0 &&
                xrtBORead(bo, back, sizeof back, 0) == 0 && memcmp(data, back, sizeof data) == 0;
    printf("then a copy through card 0: %s\n", exact ? "exact" : "wrong");
    xrtBOFree(bo);
    xrtDeviceClose(card);
    return !lost && fault != 0 && exact ? 0 : 1;
}

/* A plugin that faults under an Offload program: the chaos plugin's device traps in
 * mem-alloc, so olMemAlloc on it must return an error, and the program must go on to copy
 * through the XRT card. Prints both outcomes; exits 0 when the fault was an error and the
 * copy came back exact. */
#include <OffloadAPI.h>
#include <stdio.h>
#include <string.h>

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

int main(void) {
    if (olInit()) return 1;
    ol_device_handle_t chaos = device_of("PCI vendor 0x1234");
    ol_device_handle_t card = device_of("Xilinx");
    ol_device_handle_t host;
    if (!chaos || !card || olGetHostDevice(&host)) {
        fprintf(stderr, "the chaos device or the XRT card is missing\n");
        return 1;
    }
    void* lost = NULL;
    ol_result_t fault = olMemAlloc(chaos, OL_ALLOC_TYPE_SHARED, 4096, &lost);
    printf("olMemAlloc on the faulting plugin: %s\n", fault ? "an error" : "success");
    if (fault) printf("code %d, details: %s\n", fault->Code, fault->Details);

    ol_queue_handle_t queue;
    void* memory;
    unsigned char data[4096], back[4096];
    for (int i = 0; i < 4096; i++) data[i] = (unsigned char)(i * 7 + 3);
    int exact = !olCreateQueue(card, &queue) && !olMemAlloc(card, OL_ALLOC_TYPE_SHARED, sizeof data, &memory) &&
                !olEnqueueMemcpy(queue, memory, card, data, host, sizeof data, NULL) &&
                !olEnqueueMemcpy(queue, back, host, memory, card, sizeof back, NULL) && !olWaitQueue(queue) &&
                memcmp(data, back, sizeof data) == 0;
    printf("then a copy through the XRT card: %s\n", exact ? "exact" : "wrong");
    return fault && fault->Code == OL_ERRC_UNKNOWN && exact ? 0 : 1;
}

/* Lists the adapters and AFUs libcxl finds, then opens the device node given as the first
   argument (if any) and reports the result: what a program sees of the config's AFUs. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libcxl.h>

int main(int argc, char **argv) {
    struct cxl_adapter_h *adapter;
    struct cxl_afu_h *afu;
    errno = 0;
    cxl_for_each_adapter(adapter) {
        long major = 0, minor = 0;
        if (cxl_get_caia_version(adapter, &major, &minor) != 0) {
            printf("FAILED: cxl_get_caia_version: %s\n", strerror(errno));
            return 1;
        }
        printf("adapter %s (CAIA %ld.%ld):", cxl_adapter_dev_name(adapter), major, minor);
        cxl_for_each_adapter_afu(adapter, afu) printf(" %s", cxl_afu_dev_name(afu));
        printf("\n");
    }
    if (errno != 0) printf("enumeration: %s\n", strerror(errno));
    if (argc > 1) {
        afu = cxl_afu_open_dev(argv[1]);
        if (afu == NULL) {
            printf("open %s: NULL, errno %s\n", argv[1], strerror(errno));
        } else {
            printf("open %s: process element %d\n", argv[1], cxl_afu_get_process_element(afu));
            cxl_afu_free(afu);
        }
    }
    return 0;
}

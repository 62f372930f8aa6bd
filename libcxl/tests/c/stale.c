/* A context freed, then contexts opened until one could land on its handle: the old handle
   stays an error (EINVAL) for every call, and the newest context is untouched. Prints one line
   per check ("ok: ..." or "FAILED: ...") and "N failed" last; exits with the failures. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libcxl.h>

static int failed;

static void expect(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) failed++;
}

int main(void) {
    struct cxl_afu_h *old = cxl_afu_open_dev("/dev/cxl/afu0.0s");
    expect(old != NULL, "a slave context of the memcpy AFU");
    cxl_afu_free(old);
    static struct cxl_afu_h *made[2000];
    int landed = 0, count = 0;
    for (; count < 2000 && !landed; count++) {
        made[count] = cxl_afu_open_dev("/dev/cxl/afu0.0s");
        if (!made[count]) break;
        landed = made[count] == old;
    }
    printf("%d contexts opened after it; one has its handle: %s\n", count, landed ? "yes" : "no");
    expect(!landed, "no later context has the freed context's handle");
    errno = 0;
    expect(cxl_afu_opened(old) < 0 && errno == EINVAL, "asking about the freed context is EINVAL");
    errno = 0;
    cxl_afu_free(old);
    expect(errno == EINVAL, "freeing it again is EINVAL");
    expect(count > 0 && cxl_afu_opened(made[count - 1]) == 1, "the newest context is untouched");
    for (int i = 0; i < count; i++) cxl_afu_free(made[i]);
    printf("%d failed\n", failed);
    return failed;
}

/* errno through libcxl's enumeration, as libcxl leaves it: every step that succeeds, the last
   one (NULL, the end of the list) included, leaves errno 0 whatever it was before, so a
   program that checks errno after `cxl_for_each_*` sees no error; a step that fails leaves
   its error. With the argument "none" (a config without CAPI AFUs) the first step of each
   enumeration is NULL with ENODEV, as libcxl's is without /sys/class/cxl. Prints one line per
   check ("ok: ..." or "FAILED: ...") and "N failed" last; exits with the failures. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libcxl.h>

static int failed;

static void expect(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) failed++;
}

/* `got` (errno, read right after the call: printing may change it) is `want`. */
static void expect_errno(int got, int want, const char *what) {
    if (got != want) printf("  errno %d (%s), expected %d\n", got, strerror(got), want);
    expect(got == want, what);
}

static void with_afus(void) {
    struct cxl_adapter_h *adapter;
    struct cxl_afu_h *afu;
    int adapters = 0, steps_clear = 1, card_afus = 0, afu_steps_clear = 1, err, afu_end = -1;

    /* Each step starts from an error the program left in errno, as a failed call leaves
       one. */
    errno = ENOENT;
    for (adapter = cxl_adapter_next(NULL); adapter; adapter = cxl_adapter_next(adapter)) {
        steps_clear &= errno == 0;
        adapters++;
        errno = ENOENT;
        for (afu = cxl_adapter_afu_next(adapter, NULL); afu; afu = cxl_adapter_afu_next(adapter, afu)) {
            afu_steps_clear &= errno == 0;
            card_afus++;
            errno = ENOENT;
        }
        afu_end = errno;
        errno = ENOENT;
    }
    err = errno;
    expect(adapters == 1 && card_afus == 2, "one adapter with 2 AFUs");
    expect(steps_clear, "each cxl_adapter_next that gave an adapter left errno 0");
    expect(afu_steps_clear, "each cxl_adapter_afu_next that gave an AFU left errno 0");
    expect_errno(afu_end, 0, "the end of cxl_for_each_adapter_afu leaves errno 0");
    expect_errno(err, 0, "the end of cxl_for_each_adapter leaves errno 0");

    int afus = 0;
    afu_steps_clear = 1;
    errno = ENOENT;
    for (afu = cxl_afu_next(NULL); afu; afu = cxl_afu_next(afu)) {
        afu_steps_clear &= errno == 0;
        afus++;
        errno = ENOENT;
    }
    err = errno;
    expect(afus == 2, "cxl_for_each_afu lists 2 AFUs");
    expect(afu_steps_clear, "each cxl_afu_next that gave an AFU left errno 0");
    expect_errno(err, 0, "the end of cxl_for_each_afu leaves errno 0");

    /* Stopping early: the handle is the program's to free. */
    errno = ENOENT;
    afu = cxl_afu_next(NULL);
    err = errno;
    expect(afu != NULL, "cxl_afu_next(NULL) gives the first AFU");
    expect_errno(err, 0, "and leaves errno 0");
    cxl_afu_free(afu);

    /* A failed call between two enumerations: the enumeration clears its error. */
    afu = cxl_afu_open_dev("/dev/cxl/afu9.9s");
    err = errno;
    expect(afu == NULL, "opening a node that is not there fails");
    expect_errno(err, ENODEV, "with ENODEV");
    errno = ENODEV;
    afus = 0;
    cxl_for_each_afu(afu) afus++;
    err = errno;
    expect(afus == 2, "the AFUs are listed again after it");
    expect_errno(err, 0, "and the enumeration leaves errno 0");

    /* Bad input is an error, not an end: NULL with EINVAL. */
    static char forged[64];
    errno = 0;
    adapter = cxl_adapter_next((struct cxl_adapter_h *)forged);
    err = errno;
    expect(adapter == NULL, "cxl_adapter_next of a pointer it never gave is NULL");
    expect_errno(err, EINVAL, "with EINVAL");
    errno = 0;
    afu = cxl_afu_next((struct cxl_afu_h *)forged);
    err = errno;
    expect(afu == NULL, "cxl_afu_next of a pointer it never gave is NULL");
    expect_errno(err, EINVAL, "with EINVAL");
    errno = 0;
    afu = cxl_adapter_afu_next(NULL, NULL);
    err = errno;
    expect(afu == NULL, "cxl_adapter_afu_next without an adapter is NULL");
    expect_errno(err, EINVAL, "with EINVAL");
    struct cxl_afu_h *opened = cxl_afu_open_dev("/dev/cxl/afu0.0s");
    expect(opened != NULL, "a slave context opened by its node");
    errno = 0;
    afu = cxl_afu_next(opened);
    err = errno;
    expect(afu == NULL, "cxl_afu_next of an opened context is NULL");
    expect_errno(err, EINVAL, "with EINVAL");
    cxl_afu_free(opened);
    /* A finished enumeration's handle is freed: stepping it again is an error. */
    struct cxl_adapter_h *done = cxl_adapter_next(NULL);
    expect(cxl_adapter_next(done) == NULL, "the one adapter is the last");
    errno = 0;
    adapter = cxl_adapter_next(done);
    err = errno;
    expect(adapter == NULL, "stepping a finished enumeration again is NULL");
    expect_errno(err, EINVAL, "with EINVAL");
}

static void without_afus(void) {
    errno = ENOENT;
    struct cxl_adapter_h *adapter = cxl_adapter_next(NULL);
    int err = errno;
    expect(adapter == NULL, "cxl_adapter_next(NULL) is NULL without adapters");
    expect_errno(err, ENODEV, "with ENODEV");
    errno = ENOENT;
    struct cxl_afu_h *afu = cxl_afu_next(NULL);
    err = errno;
    expect(afu == NULL, "cxl_afu_next(NULL) is NULL without adapters");
    expect_errno(err, ENODEV, "with ENODEV");
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "none") == 0)
        without_afus();
    else
        with_afus();
    printf("%d failed\n", failed);
    return failed;
}

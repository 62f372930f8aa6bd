/* OpenCL C's asynchronous copies between global and local memory, appended to a program that
 * names them (written in OpenCL C: their event_t has no C spelling; weak, so that programs
 * linked together may each carry them). A work-group's work-items run one at a time, the
 * first of them first at every call, so the first copies everything at once and the copy is
 * done before any other work-item reaches its wait; waiting and prefetching do nothing. */
#define ACCELHOST_COPIES_OF(T)                                                                 \
    __attribute__((weak, overloadable)) event_t async_work_group_copy(                        \
        __local T *dst, const __global T *src, size_t n, event_t e) {                          \
        if (get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0)             \
            for (size_t i = 0; i < n; i++) dst[i] = src[i];                                    \
        return e;                                                                              \
    }                                                                                          \
    __attribute__((weak, overloadable)) event_t async_work_group_copy(                        \
        __global T *dst, const __local T *src, size_t n, event_t e) {                          \
        if (get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0)             \
            for (size_t i = 0; i < n; i++) dst[i] = src[i];                                    \
        return e;                                                                              \
    }                                                                                          \
    __attribute__((weak, overloadable)) event_t async_work_group_strided_copy(                \
        __local T *dst, const __global T *src, size_t n, size_t stride, event_t e) {           \
        if (get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0)             \
            for (size_t i = 0; i < n; i++) dst[i] = src[i * stride];                           \
        return e;                                                                              \
    }                                                                                          \
    __attribute__((weak, overloadable)) event_t async_work_group_strided_copy(                \
        __global T *dst, const __local T *src, size_t n, size_t stride, event_t e) {           \
        if (get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0)             \
            for (size_t i = 0; i < n; i++) dst[i * stride] = src[i];                           \
        return e;                                                                              \
    }                                                                                          \
    __attribute__((weak, overloadable)) void prefetch(const __global T *p, size_t n) {}
#define ACCELHOST_COPIES_OF_WIDTHS(T)                                                          \
    ACCELHOST_COPIES_OF(T) ACCELHOST_COPIES_OF(T##2) ACCELHOST_COPIES_OF(T##3)                 \
    ACCELHOST_COPIES_OF(T##4) ACCELHOST_COPIES_OF(T##8) ACCELHOST_COPIES_OF(T##16)
ACCELHOST_COPIES_OF_WIDTHS(char)
ACCELHOST_COPIES_OF_WIDTHS(uchar)
ACCELHOST_COPIES_OF_WIDTHS(short)
ACCELHOST_COPIES_OF_WIDTHS(ushort)
ACCELHOST_COPIES_OF_WIDTHS(int)
ACCELHOST_COPIES_OF_WIDTHS(uint)
ACCELHOST_COPIES_OF_WIDTHS(long)
ACCELHOST_COPIES_OF_WIDTHS(ulong)
ACCELHOST_COPIES_OF_WIDTHS(float)
ACCELHOST_COPIES_OF_WIDTHS(double)
__attribute__((weak, overloadable)) void wait_group_events(int count, event_t *events) {}

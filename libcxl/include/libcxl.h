/* accelhost's libcxl: the API of IBM's libcxl 1.7 (the CAPI user library) over accelhost's
 * CAPI AFUs, emulated or real. Adapters and AFUs are the cxl cards of the library's lookup;
 * see the README section "libcxl". Calls that fail return -1 (or NULL) with errno set. */
#ifndef ACCELHOST_LIBCXL_H
#define ACCELHOST_LIBCXL_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <misc/cxl.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CXL_KERNEL_API_VERSION 1

#define CXL_SYSFS_CLASS "/sys/class/cxl"
#define CXL_DEV_DIR "/dev/cxl"

/* Handles; their contents are the library's. */
struct cxl_adapter_h;
struct cxl_afu_h;

/* Adapters (cards): NULL starts the walk, each call moves the handle to the next adapter,
 * and past the last one the handle is freed and NULL returned. */
struct cxl_adapter_h *cxl_adapter_next(struct cxl_adapter_h *adapter);
/* The adapter's name, such as "card0"; owned by the library. */
char *cxl_adapter_dev_name(struct cxl_adapter_h *adapter);
/* Frees an adapter handle kept after leaving a walk early. */
void cxl_adapter_free(struct cxl_adapter_h *adapter);

#define cxl_for_each_adapter(adapter) \
    for (adapter = cxl_adapter_next(NULL); adapter; adapter = cxl_adapter_next(adapter))

/* AFUs of one adapter, or of every adapter, walked as adapters are. */
struct cxl_afu_h *cxl_adapter_afu_next(struct cxl_adapter_h *adapter, struct cxl_afu_h *afu);
struct cxl_afu_h *cxl_afu_next(struct cxl_afu_h *afu);
/* The AFU's name, such as "afu0.0" (or "afu0.0s" once opened); owned by the library. */
char *cxl_afu_dev_name(struct cxl_afu_h *afu);

#define cxl_for_each_adapter_afu(adapter, afu) \
    for (afu = cxl_adapter_afu_next(adapter, NULL); afu; afu = cxl_adapter_afu_next(adapter, afu))

#define cxl_for_each_afu(afu) \
    for (afu = cxl_afu_next(NULL); afu; afu = cxl_afu_next(afu))

/* Which node of an AFU to open: afuC.Sd, afuC.Sm or afuC.Ss. */
enum cxl_views {
    CXL_VIEW_DEDICATED = 0,
    CXL_VIEW_MASTER,
    CXL_VIEW_SLAVE
};

/* Opens a context on a node path such as "/dev/cxl/afu0.0s". */
struct cxl_afu_h *cxl_afu_open_dev(char *path);
/* Opens a context on the given view of an enumerated AFU; a new handle. */
struct cxl_afu_h *cxl_afu_open_h(struct cxl_afu_h *afu, enum cxl_views view);
/* A handle for a file descriptor of an open context. */
struct cxl_afu_h *cxl_afu_fd_to_h(int fd);
/* Detaches, unmaps and closes the context, and frees the handle. */
void cxl_afu_free(struct cxl_afu_h *afu);
/* 1 when the handle has an open context, 0 when not. */
int cxl_afu_opened(struct cxl_afu_h *afu);

/* The argument of a start of work, built field by field (zeroed when allocated). */
struct cxl_ioctl_start_work *cxl_work_alloc(void);
int cxl_work_free(struct cxl_ioctl_start_work *work);
int cxl_work_get_amr(struct cxl_ioctl_start_work *work, __u64 *valp);
int cxl_work_get_num_irqs(struct cxl_ioctl_start_work *work, __s16 *valp);
int cxl_work_get_wed(struct cxl_ioctl_start_work *work, __u64 *valp);
int cxl_work_set_amr(struct cxl_ioctl_start_work *work, __u64 amr);
int cxl_work_set_num_irqs(struct cxl_ioctl_start_work *work, __s16 num_irqs);
int cxl_work_set_wed(struct cxl_ioctl_start_work *work, __u64 wed);
#if defined CXL_START_WORK_TID
/* The thread id the start of work returned, for cxl_afu_host_thread_wait. */
int cxl_work_get_tid(struct cxl_ioctl_start_work *work, __u16 *valp);
int cxl_work_enable_wait(struct cxl_ioctl_start_work *work);
int cxl_work_disable_wait(struct cxl_ioctl_start_work *work);
#endif

/* Starts work on the context with a work element descriptor (and, with _full, the number
 * of interrupts and the AMR). */
int cxl_afu_attach(struct cxl_afu_h *afu, __u64 wed);
int cxl_afu_attach_work(struct cxl_afu_h *afu, struct cxl_ioctl_start_work *work);
int cxl_afu_attach_full(struct cxl_afu_h *afu, __u64 wed, __u16 num_interrupts, __u64 amr);
/* The context's process element. */
int cxl_afu_get_process_element(struct cxl_afu_h *afu);
/* The context's file descriptor, readable when an event is pending. */
int cxl_afu_fd(struct cxl_afu_h *afu);
/* The sysfs path of the AFU's PCI function, malloc'd into *pathp. */
int cxl_afu_sysfs_pci(struct cxl_afu_h *afu, char **pathp);

/* Mode bits of cxl_get_mode and cxl_get_modes_supported. */
#ifndef CXL_MODE_DEDICATED
#define CXL_MODE_DEDICATED 0x1
#endif
#ifndef CXL_MODE_DIRECTED
#define CXL_MODE_DIRECTED 0x2
#endif
#ifndef CXL_MODE_TIME_SLICED
#define CXL_MODE_TIME_SLICED 0x4
#endif

enum cxl_prefault_mode {
    CXL_PREFAULT_MODE_NONE = 0,
    CXL_PREFAULT_MODE_WED,
    CXL_PREFAULT_MODE_ALL
};

enum cxl_image {
    CXL_IMAGE_FACTORY = 0,
    CXL_IMAGE_USER
};

/* AFU attributes. A configuration record query takes the record's number. */
int cxl_get_api_version(struct cxl_afu_h *afu, long *valp);
int cxl_get_api_version_compatible(struct cxl_afu_h *afu, long *valp);
int cxl_get_cr_class(struct cxl_afu_h *afu, long cr_num, long *valp);
int cxl_get_cr_device(struct cxl_afu_h *afu, long cr_num, long *valp);
int cxl_get_cr_vendor(struct cxl_afu_h *afu, long cr_num, long *valp);
int cxl_get_irqs_max(struct cxl_afu_h *afu, long *valp);
int cxl_set_irqs_max(struct cxl_afu_h *afu, long value);
int cxl_get_irqs_min(struct cxl_afu_h *afu, long *valp);
int cxl_get_mmio_size(struct cxl_afu_h *afu, long *valp);
int cxl_get_mode(struct cxl_afu_h *afu, long *valp);
int cxl_set_mode(struct cxl_afu_h *afu, long value);
int cxl_get_modes_supported(struct cxl_afu_h *afu, long *valp);
int cxl_get_prefault_mode(struct cxl_afu_h *afu, enum cxl_prefault_mode *valp);
int cxl_set_prefault_mode(struct cxl_afu_h *afu, enum cxl_prefault_mode value);
/* Of a master: one per-process area's length, and where the first one starts. */
int cxl_get_pp_mmio_len(struct cxl_afu_h *afu, long *valp);
int cxl_get_pp_mmio_off(struct cxl_afu_h *afu, long *valp);

/* Adapter attributes. */
int cxl_get_base_image(struct cxl_adapter_h *adapter, long *valp);
int cxl_get_caia_version(struct cxl_adapter_h *adapter, long *majorp, long *minorp);
int cxl_get_image_loaded(struct cxl_adapter_h *adapter, enum cxl_image *valp);
int cxl_get_psl_revision(struct cxl_adapter_h *adapter, long *valp);
int cxl_get_psl_timebase_synced(struct cxl_adapter_h *adapter, long *valp);
int cxl_get_tunneled_ops_supported(struct cxl_adapter_h *adapter, long *valp);

/* Events of a context. cxl_event_pending is 1 when one is waiting, 0 when not; the read
 * calls block until one comes. cxl_read_expected_event fails when the event is not of
 * `type` (or, for an AFU interrupt, not interrupt `irq`). */
int cxl_event_pending(struct cxl_afu_h *afu);
int cxl_read_event(struct cxl_afu_h *afu, struct cxl_event *event);
int cxl_read_expected_event(struct cxl_afu_h *afu, struct cxl_event *event, __u32 type,
                            __u16 irq);
int cxl_fprint_event(FILE *stream, struct cxl_event *event);
int cxl_fprint_unknown_event(FILE *stream, struct cxl_event *event);

/* Byte order of the AFU's registers, given when mapping them. */
#define CXL_MMIO_BIG_ENDIAN 0x1
#define CXL_MMIO_LITTLE_ENDIAN 0x2
#define CXL_MMIO_HOST_ENDIAN 0x3
#define CXL_MMIO_ENDIAN_MASK 0x3
#define CXL_MMIO_FLAGS 0x3

/* The context's problem-state area, once work has started. Offsets are in bytes, aligned
 * to the access size and inside the mapping. */
int cxl_mmio_map(struct cxl_afu_h *afu, __u32 flags);
int cxl_mmio_unmap(struct cxl_afu_h *afu);
int cxl_mmio_ptr(struct cxl_afu_h *afu, void **mmio_ptrp);
int cxl_mmio_write64(struct cxl_afu_h *afu, uint64_t offset, uint64_t data);
int cxl_mmio_read64(struct cxl_afu_h *afu, uint64_t offset, uint64_t *data);
int cxl_mmio_write32(struct cxl_afu_h *afu, uint64_t offset, uint32_t data);
int cxl_mmio_read32(struct cxl_afu_h *afu, uint64_t offset, uint32_t *data);
/* An MMIO read that gives all ones (what a failed access reads) raises SIGBUS; once this
 * handler is installed, the read fails with EIO instead, the value still stored. */
int cxl_mmio_install_sigbus_handler(void);

/* The AFU's error buffer. */
int cxl_errinfo_size(struct cxl_afu_h *afu, size_t *valp);
ssize_t cxl_errinfo_read(struct cxl_afu_h *afu, void *dst, off_t off, size_t len);

#if defined CXL_START_WORK_TID
/* Waits (POWER9 `wait`) until *uword is non-zero; needs cxl_work_enable_wait. */
int cxl_afu_host_thread_wait(struct cxl_afu_h *afu, volatile __u64 *uword);
#endif

#ifdef __cplusplus
}
#endif

#endif /* ACCELHOST_LIBCXL_H */

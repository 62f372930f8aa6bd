/* accelhost's XRT native API: buffer flags and sync directions, as XRT defines them. */
#ifndef ACCELHOST_XRT_MEM_H
#define ACCELHOST_XRT_MEM_H

/* Bits 0-15: the memory bank; 16-23: the slot; 24-31: the kind of buffer. */
#define XRT_BO_FLAGS_MEMIDX_MASK (0xFFFFFFUL)
#define XCL_BO_FLAGS_NONE (0)
#define XCL_BO_FLAGS_CACHEABLE (1U << 24)
#define XCL_BO_FLAGS_KERNBUF (1U << 25)
#define XCL_BO_FLAGS_SGL (1U << 26)
#define XCL_BO_FLAGS_SVM (1U << 27)
#define XCL_BO_FLAGS_DEV_ONLY (1U << 28)
#define XCL_BO_FLAGS_HOST_ONLY (1U << 29)
#define XCL_BO_FLAGS_P2P (1U << 30)
#define XCL_BO_FLAGS_EXECBUF (1U << 31)

#define XRT_BO_FLAGS_NONE XCL_BO_FLAGS_NONE
#define XRT_BO_FLAGS_CACHEABLE XCL_BO_FLAGS_CACHEABLE
#define XRT_BO_FLAGS_DEV_ONLY XCL_BO_FLAGS_DEV_ONLY
#define XRT_BO_FLAGS_HOST_ONLY XCL_BO_FLAGS_HOST_ONLY
#define XRT_BO_FLAGS_P2P XCL_BO_FLAGS_P2P
#define XRT_BO_FLAGS_SVM XCL_BO_FLAGS_SVM
#define XRT_BO_FLAGS_CARVEOUT XCL_BO_FLAGS_KERNBUF

/* Which way xrtBOSync moves a buffer's bytes. */
enum xclBOSyncDirection {
  XCL_BO_SYNC_BO_TO_DEVICE = 0,
  XCL_BO_SYNC_BO_FROM_DEVICE = 1,
  XCL_BO_SYNC_BO_GMIO_TO_AIE = 2,
  XCL_BO_SYNC_BO_AIE_TO_GMIO = 3,
};

#endif

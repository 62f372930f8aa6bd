/* A libcxl program in the flow of cxl-tests' memcpy_afu_ctx, on accelhost's embedded
 * default (card0: the memcpy AFU at afu0.0, AFU-directed; the vadd AFU at afu0.1,
 * dedicated): the adapters and AFUs and their attributes; the master context and its CFG
 * register; four threads, each with a slave context whose queue gets COPY and IRQ elements
 * (then INCR and compare-and-swap); a translation fault; the calls a program gets wrong, with
 * their errno; and MMIO reads of all ones, which raise SIGBUS without libcxl's handler and
 * fail with EIO with it. Prints one line per step. A failure prints what failed and exits 1;
 * every wait gives up after 10 s. Prints "memcpy: PASSED" and exits 0 when all went well. */
#define _DEFAULT_SOURCE
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <libcxl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MASTER_PATH "/dev/cxl/afu0.0m"
#define SLAVE_PATH "/dev/cxl/afu0.0s"

#define THREADS 4
#define ROUNDS 25
#define IRQS_PER_SLAVE 4
#define TIMEOUT_S 10

#define PAGE_BYTES 4096
#define LINE_BYTES 128
#define ELEMENTS_PER_LINE 4
#define QUEUE_LINES 4095
#define COPY_MAX 65535
#define GUARD 0xEE

/* Work element cmd: VALID | the producer's wrap phase | the command. */
#define CMD_VALID 0x80
#define CMD_WRAP 0x40
#define CMD_COPY 0
#define CMD_IRQ 1
#define CMD_INCR 4
#define CMD_ATOMIC 5
#define CAS_NOT_EQUAL_8 0x10
#define CAS_EQUAL_8 0x11

/* Work element status, written by the AFU. */
#define STATUS_COMPLETE 0x80
#define STATUS_TRANS_FAULT 0x40

/* A slave's per-process registers, and the master's global CFG. */
#define REG_WED 0x00
#define REG_PH 0x08
#define REG_STATUS 0x10
#define REG_PCTRL 0x18
#define REG_CFG 0x00
#define PH_SHIFT 48
#define STATUS_STOPPED 0x0800000000000000ull
#define PCTRL_RESTART 0x8000000000000000ull
#define CFG_STOP_ON_INVALID_CMD 0x2000000000000000ull
#define SLAVE_MMIO_BYTES 0x1000

/* The AFU reads everything big-endian. */
struct work_element {
    volatile uint8_t cmd;
    volatile uint8_t status;
    uint16_t length;
    uint8_t cmd_extra;
    uint8_t reserved1;
    uint16_t reserved2;
    uint64_t atomic_op1;
    uint64_t src; /* also the second atomic operand */
    uint64_t dst;
};
_Static_assert(sizeof(struct work_element) == 32, "a work element is 32 bytes");

struct queue {
    struct work_element *elements;
    size_t count;
    size_t next;
    uint8_t phase; /* 0 or CMD_WRAP */
};

/* A started slave context with its queue. */
struct context {
    struct cxl_afu_h *afu;
    struct queue queue;
    int pe;
};

struct slave {
    pthread_t thread;
    int index;
    unsigned seed;
    int pe;
    int copies;
    int mismatches;
};

static _Noreturn void fail_call(const char *call) {
    int err = errno;
    printf("FAILED: %s: errno %d (%s)\n", call, err, strerror(err));
    exit(1);
}

static void check(bool ok, const char *what) {
    if (!ok) {
        printf("FAILED: %s\n", what);
        exit(1);
    }
}

static void check_call(int rc, const char *call) {
    if (rc != 0) fail_call(call);
}

/* `failed` tells whether the call returned its error value; errno must then be `want`. */
static void expect_failure(bool failed, int want, const char *what) {
    int err = errno;
    if (!failed || err != want) {
        printf("bad call %s: FAILED (%s, errno %d: %s; expected errno %d)\n", what,
               failed ? "failed" : "succeeded", err, strerror(err), want);
        exit(1);
    }
    printf("bad call %s: ok\n", what);
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void pause_briefly(void) {
    struct timespec tick = {0, 20 * 1000};
    nanosleep(&tick, NULL);
}

static uint64_t read_reg(struct cxl_afu_h *afu, uint64_t offset) {
    uint64_t value;
    check_call(cxl_mmio_read64(afu, offset, &value), "cxl_mmio_read64");
    return value;
}

static void write_reg(struct cxl_afu_h *afu, uint64_t offset, uint64_t value) {
    check_call(cxl_mmio_write64(afu, offset, value), "cxl_mmio_write64");
}

static void queue_init(struct queue *q) {
    size_t bytes = (size_t)QUEUE_LINES * LINE_BYTES;
    size_t rounded = (bytes + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
    q->elements = aligned_alloc(PAGE_BYTES, rounded);
    check(q->elements != NULL, "aligned_alloc of a work queue");
    memset(q->elements, 0, rounded);
    q->count = (size_t)QUEUE_LINES * ELEMENTS_PER_LINE;
    q->next = 0;
    q->phase = 0;
}

static uint64_t queue_wed(const struct queue *q) {
    return ((uint64_t)(uintptr_t)q->elements & ~0xFFFull) | (QUEUE_LINES & 0xFFF);
}

/* Fills the next element and hands it to the AFU: cmd is written last, after a barrier. */
static struct work_element *push(struct queue *q, uint8_t command, uint16_t length,
                                 uint8_t extra, uint64_t op1, uint64_t src, uint64_t dst) {
    struct work_element *we = &q->elements[q->next];
    we->length = htobe16(length);
    we->cmd_extra = extra;
    we->reserved1 = 0;
    we->reserved2 = 0;
    we->atomic_op1 = htobe64(op1);
    we->src = htobe64(src);
    we->dst = htobe64(dst);
    we->status = 0;
    __sync_synchronize();
    we->cmd = CMD_VALID | q->phase | command;
    q->next++;
    if (q->next == q->count) {
        q->next = 0;
        q->phase ^= CMD_WRAP;
    }
    return we;
}

static struct work_element *push_copy(struct queue *q, const void *src, void *dst,
                                      uint16_t length) {
    return push(q, CMD_COPY, length, 0, 0, (uintptr_t)src, (uintptr_t)dst);
}

static struct work_element *push_irq(struct queue *q, uint16_t irq) {
    return push(q, CMD_IRQ, irq, 0, 0, 0, 0);
}

static struct work_element *push_incr(struct queue *q, const uint32_t *src, uint32_t *dst) {
    return push(q, CMD_INCR, sizeof *dst, 0, 0, (uintptr_t)src, (uintptr_t)dst);
}

static struct work_element *push_cas(struct queue *q, uint8_t op, uint64_t *dst,
                                     uint64_t compare, uint64_t swap) {
    return push(q, CMD_ATOMIC, sizeof *dst, op, compare, swap, (uintptr_t)dst);
}

/* The element's status once the AFU wrote it. */
static uint8_t wait_status(const struct work_element *we) {
    double deadline = seconds_now() + TIMEOUT_S;
    while (we->status == 0) {
        check(seconds_now() < deadline, "a work element completed within 10 s");
        pause_briefly();
    }
    __sync_synchronize();
    return we->status;
}

static void check_status(uint8_t status, uint8_t want, const char *what) {
    if (status != want) {
        printf("FAILED: %s: status 0x%02x, expected 0x%02x\n", what, status, want);
        exit(1);
    }
}

/* Waits until the context's file descriptor has an event. */
static void wait_event(struct cxl_afu_h *afu) {
    int fd = cxl_afu_fd(afu);
    if (fd < 0) fail_call("cxl_afu_fd");
    fd_set readable;
    FD_ZERO(&readable);
    FD_SET(fd, &readable);
    struct timeval timeout = {TIMEOUT_S, 0};
    int ready = select(fd + 1, &readable, NULL, NULL, &timeout);
    if (ready < 0) fail_call("select");
    check(ready == 1, "an event came within 10 s");
}

/* Waits until the AFU has stopped the process, then restarts it. */
static void restart_when_stopped(struct cxl_afu_h *afu) {
    double deadline = seconds_now() + TIMEOUT_S;
    while ((read_reg(afu, REG_STATUS) & STATUS_STOPPED) == 0) {
        check(seconds_now() < deadline, "the process stopped within 10 s");
        pause_briefly();
    }
    write_reg(afu, REG_PCTRL, PCTRL_RESTART);
}

/* Starts work on `afu` with the queue's WED and `irqs` interrupts. */
static int attach_queue(struct cxl_afu_h *afu, const struct queue *q, int16_t irqs) {
    struct cxl_ioctl_start_work *work = cxl_work_alloc();
    if (!work) fail_call("cxl_work_alloc");
    check_call(cxl_work_set_wed(work, queue_wed(q)), "cxl_work_set_wed");
    check_call(cxl_work_set_num_irqs(work, irqs), "cxl_work_set_num_irqs");
    int rc = cxl_afu_attach_work(afu, work);
    int err = errno;
    check_call(cxl_work_free(work), "cxl_work_free");
    errno = err;
    return rc;
}

/* Opens a slave, starts it on a fresh queue, maps its registers and checks that they hold
 * its process element and WED. */
static void slave_open(struct context *ctx, int16_t irqs) {
    ctx->afu = cxl_afu_open_dev(SLAVE_PATH);
    if (!ctx->afu) fail_call("cxl_afu_open_dev(" SLAVE_PATH ")");
    ctx->pe = cxl_afu_get_process_element(ctx->afu);
    if (ctx->pe < 0) fail_call("cxl_afu_get_process_element");
    queue_init(&ctx->queue);
    check_call(attach_queue(ctx->afu, &ctx->queue, irqs), "cxl_afu_attach_work");
    check_call(cxl_mmio_map(ctx->afu, CXL_MMIO_BIG_ENDIAN), "cxl_mmio_map");
    check(read_reg(ctx->afu, REG_PH) >> PH_SHIFT == (uint64_t)ctx->pe,
          "the PH register holds the process element");
    check(read_reg(ctx->afu, REG_WED) == queue_wed(&ctx->queue),
          "the WED register reads back the WED");
}

static void slave_close(struct context *ctx) {
    check_call(cxl_mmio_unmap(ctx->afu), "cxl_mmio_unmap");
    cxl_afu_free(ctx->afu);
    free(ctx->queue.elements);
}

static long afu_value(int (*getter)(struct cxl_afu_h *, long *), struct cxl_afu_h *afu,
                      const char *call) {
    long value;
    check_call(getter(afu, &value), call);
    return value;
}

/* The attributes of the enumerated memcpy AFU, and a slave opened from its handle. */
static void check_memcpy_afu(struct cxl_afu_h *afu) {
    check(afu_value(cxl_get_irqs_min, afu, "cxl_get_irqs_min") == 2, "afu0.0 irqs_min is 2");
    check(afu_value(cxl_get_irqs_max, afu, "cxl_get_irqs_max") == 2037,
          "afu0.0 irqs_max is 2037");
    check(afu_value(cxl_get_modes_supported, afu, "cxl_get_modes_supported") & CXL_MODE_DIRECTED,
          "afu0.0 supports AFU-directed mode");
    check(afu_value(cxl_get_mode, afu, "cxl_get_mode") == CXL_MODE_DIRECTED,
          "afu0.0 is in AFU-directed mode");
    check(afu_value(cxl_get_api_version_compatible, afu, "cxl_get_api_version_compatible") == 1,
          "api_version_compatible is 1");
    long vendor;
    check_call(cxl_get_cr_vendor(afu, 0, &vendor), "cxl_get_cr_vendor");
    check(vendor == 0x1014, "configuration record 0's vendor is IBM (0x1014)");
    struct cxl_afu_h *slave = cxl_afu_open_h(afu, CXL_VIEW_SLAVE);
    if (!slave) fail_call("cxl_afu_open_h(CXL_VIEW_SLAVE)");
    check(cxl_afu_opened(slave) == 1, "cxl_afu_opened on the slave opened from afu0.0");
    cxl_afu_free(slave);
}

static void enumerate(void) {
    struct cxl_adapter_h *adapter;
    struct cxl_afu_h *afu;
    bool card0 = false, memcpy_afu = false, vadd_afu = false;
    cxl_for_each_adapter(adapter) {
        const char *name = cxl_adapter_dev_name(adapter);
        check(name != NULL, "cxl_adapter_dev_name gives a name");
        printf("enumerate: adapter %s\n", name);
        if (strcmp(name, "card0") != 0) continue;
        card0 = true;
        long major, minor;
        check_call(cxl_get_caia_version(adapter, &major, &minor), "cxl_get_caia_version");
        check(major == 1 && minor == 2, "card0's CAIA version is 1.2");
        cxl_for_each_adapter_afu(adapter, afu) {
            const char *afu_name = cxl_afu_dev_name(afu);
            check(afu_name != NULL, "cxl_afu_dev_name gives a name");
            printf("enumerate: %s afu %s\n", name, afu_name);
            if (strcmp(afu_name, "afu0.0") == 0) {
                memcpy_afu = true;
                check_memcpy_afu(afu);
            } else if (strcmp(afu_name, "afu0.1") == 0) {
                vadd_afu = true;
            }
        }
    }
    check(card0 && memcpy_afu && vadd_afu, "card0 with afu0.0 and afu0.1 enumerated");
    int afus = 0;
    cxl_for_each_afu(afu) afus++;
    check(afus == 2, "cxl_for_each_afu lists 2 AFUs");
    printf("enumerate: ok\n");
}

/* Opens the master, starts it with a zeroed work and maps its registers. */
static struct cxl_afu_h *master_open(void) {
    struct cxl_afu_h *master = cxl_afu_open_dev(MASTER_PATH);
    if (!master) fail_call("cxl_afu_open_dev(" MASTER_PATH ")");
    struct cxl_ioctl_start_work *work = cxl_work_alloc();
    if (!work) fail_call("cxl_work_alloc");
    check_call(cxl_afu_attach_work(master, work), "cxl_afu_attach_work (master)");
    check_call(cxl_work_free(work), "cxl_work_free");
    check_call(cxl_mmio_map(master, CXL_MMIO_BIG_ENDIAN), "cxl_mmio_map (master)");
    return master;
}

static void master_stop_on_invalid(struct cxl_afu_h *master) {
    uint64_t cfg = read_reg(master, REG_CFG) | CFG_STOP_ON_INVALID_CMD;
    write_reg(master, REG_CFG, cfg);
    check(read_reg(master, REG_CFG) == cfg, "CFG reads back with Stop_on_Invalid_Cmd set");
    printf("master: ok (CFG 0x%016" PRIx64 ")\n", cfg);
}

static void fill_pattern(uint8_t *buf, size_t len, int index, int round) {
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 7 + (size_t)round * 13 + (size_t)index * 101 + 1);
}

/* A COPY of `length` bytes, then interrupt `irq`, which stops the process until restarted.
 * Whether dst then holds the copy and nothing past it. */
static bool copy_round(struct context *ctx, const uint8_t *src, uint8_t *dst, uint16_t length,
                       uint16_t irq) {
    struct work_element *copy = push_copy(&ctx->queue, src, dst, length);
    struct work_element *interrupt = push_irq(&ctx->queue, irq);
    wait_event(ctx->afu);
    struct cxl_event event;
    check_call(cxl_read_expected_event(ctx->afu, &event, CXL_EVENT_AFU_INTERRUPT, irq),
               "cxl_read_expected_event");
    restart_when_stopped(ctx->afu);
    check_status(copy->status, STATUS_COMPLETE, "COPY");
    check_status(interrupt->status, STATUS_COMPLETE, "IRQ");
    return memcmp(src, dst, length) == 0 && dst[length] == GUARD;
}

/* Memory the AFU's INCR and compare-and-swap work on. */
struct scratch {
    uint32_t incr_src;
    uint32_t incr_dst;
    uint64_t cas;
};

static void incr_and_cas(struct context *ctx) {
    struct scratch *s = malloc(sizeof *s);
    check(s != NULL, "malloc");
    s->incr_src = htobe32(41);
    s->incr_dst = 0;
    s->cas = htobe64(7);
    check_status(wait_status(push_incr(&ctx->queue, &s->incr_src, &s->incr_dst)),
                 STATUS_COMPLETE, "INCR");
    check(be32toh(s->incr_dst) == 42, "INCR wrote 41 + 1");
    check_status(wait_status(push_cas(&ctx->queue, CAS_EQUAL_8, &s->cas, 7, 9)), STATUS_COMPLETE,
                 "CAS_EQUAL_8");
    check(be64toh(s->cas) == 9, "CAS_EQUAL_8 swapped 7 for 9");
    check_status(wait_status(push_cas(&ctx->queue, CAS_NOT_EQUAL_8, &s->cas, 9, 11)),
                 STATUS_COMPLETE, "CAS_NOT_EQUAL_8");
    check(be64toh(s->cas) == 9, "CAS_NOT_EQUAL_8 left an equal value alone");
    free(s);
}

static void *slave_rounds(void *arg) {
    struct slave *s = arg;
    struct context ctx;
    slave_open(&ctx, IRQS_PER_SLAVE);
    s->pe = ctx.pe;
    uint8_t *src = malloc(COPY_MAX + 1);
    uint8_t *dst = malloc(COPY_MAX + 1);
    check(src != NULL && dst != NULL, "malloc of the copy buffers");
    for (int round = 0; round < ROUNDS; round++) {
        uint16_t length = (uint16_t)(rand_r(&s->seed) % COPY_MAX + 1);
        uint16_t irq = (uint16_t)(round % IRQS_PER_SLAVE + 1);
        fill_pattern(src, COPY_MAX + 1, s->index, round);
        memset(dst, GUARD, COPY_MAX + 1);
        if (!copy_round(&ctx, src, dst, length, irq)) s->mismatches++;
        s->copies++;
    }
    incr_and_cas(&ctx);
    free(src);
    free(dst);
    slave_close(&ctx);
    return NULL;
}

static void run_slaves(void) {
    struct slave slaves[THREADS];
    for (int i = 0; i < THREADS; i++) {
        slaves[i] = (struct slave){.index = i, .seed = 0x5eed0000u + (unsigned)i};
        int err = pthread_create(&slaves[i].thread, NULL, slave_rounds, &slaves[i]);
        if (err != 0) {
            errno = err;
            fail_call("pthread_create");
        }
    }
    for (int i = 0; i < THREADS; i++) {
        int err = pthread_join(slaves[i].thread, NULL);
        if (err != 0) {
            errno = err;
            fail_call("pthread_join");
        }
    }
    for (int i = 0; i < THREADS; i++) {
        printf("slave pe %d: %d copies, %d mismatches\n", slaves[i].pe, slaves[i].copies,
               slaves[i].mismatches);
        check(slaves[i].copies == ROUNDS && slaves[i].mismatches == 0, "every copy matched");
        for (int j = 0; j < i; j++)
            check(slaves[i].pe != slaves[j].pe, "each slave has its own process element");
    }
    printf("slaves: ok (distinct process elements, INCR and compare-and-swap)\n");
}

/* A COPY from a page that is no longer mapped: a data-storage fault that stops the process;
 * after a restart the context copies again. */
static void fault(void) {
    struct context ctx;
    slave_open(&ctx, IRQS_PER_SLAVE);
    uint8_t *src = malloc(PAGE_BYTES);
    uint8_t *dst = malloc(PAGE_BYTES);
    check(src != NULL && dst != NULL, "malloc");
    /* A page the program may not read, kept reserved so that no other mapping takes its
     * address while the AFU is pointed at it. */
    void *gone = mmap(NULL, PAGE_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (gone == MAP_FAILED) fail_call("mmap");
    check_status(wait_status(push_copy(&ctx.queue, gone, dst, 256)),
                 STATUS_COMPLETE | STATUS_TRANS_FAULT, "COPY from an inaccessible page");
    check(cxl_event_pending(ctx.afu) == 1, "cxl_event_pending says an event waits");
    struct cxl_event event;
    check_call(cxl_read_event(ctx.afu, &event), "cxl_read_event");
    if (event.header.type != CXL_EVENT_DATA_STORAGE) cxl_fprint_event(stdout, &event);
    check(event.header.type == CXL_EVENT_DATA_STORAGE, "the event is a data-storage fault");
    check(event.fault.addr == (uint64_t)(uintptr_t)gone, "the fault names the page's address");
    check_call(munmap(gone, PAGE_BYTES), "munmap");
    check((read_reg(ctx.afu, REG_STATUS) & STATUS_STOPPED) != 0, "the fault stopped the process");
    write_reg(ctx.afu, REG_PCTRL, PCTRL_RESTART);
    fill_pattern(src, PAGE_BYTES, THREADS, 0);
    memset(dst, GUARD, PAGE_BYTES);
    check_status(wait_status(push_copy(&ctx.queue, src, dst, PAGE_BYTES)), STATUS_COMPLETE,
                 "COPY after the restart");
    check(memcmp(src, dst, PAGE_BYTES) == 0, "the copy after the restart matches");
    free(src);
    free(dst);
    slave_close(&ctx);
    printf("fault: ok (data-storage fault at %p, then a good copy)\n", gone);
}

static void bad_opens(void) {
    errno = 0;
    expect_failure(cxl_afu_open_dev("/dev/cxl/afu9.9s") == NULL, ENODEV,
                   "cxl_afu_open_dev(afu9.9s)");
    errno = 0;
    expect_failure(cxl_afu_open_dev("/dev/cxl/afu0.1s") == NULL, ENODEV,
                   "cxl_afu_open_dev(afu0.1s) on a dedicated AFU");
    errno = 0;
    expect_failure(cxl_afu_open_dev("/tmp") == NULL, ENODEV, "cxl_afu_open_dev(/tmp)");
}

/* MMIO and attach calls out of order or out of range, on one slave. */
static void bad_context_calls(void) {
    struct context ctx;
    ctx.afu = cxl_afu_open_dev(SLAVE_PATH);
    if (!ctx.afu) fail_call("cxl_afu_open_dev(" SLAVE_PATH ")");
    queue_init(&ctx.queue);
    uint64_t value;
    errno = 0;
    expect_failure(cxl_mmio_map(ctx.afu, CXL_MMIO_BIG_ENDIAN) == -1, EIO,
                   "cxl_mmio_map before attach");
    errno = 0;
    expect_failure(cxl_mmio_read64(ctx.afu, REG_PH, &value) == -1, EINVAL,
                   "cxl_mmio_read64 before map");
    errno = 0;
    expect_failure(attach_queue(ctx.afu, &ctx.queue, 3000) == -1, EINVAL,
                   "cxl_afu_attach_work with 3000 interrupts");
    check_call(attach_queue(ctx.afu, &ctx.queue, IRQS_PER_SLAVE), "cxl_afu_attach_work");
    errno = 0;
    expect_failure(cxl_afu_attach(ctx.afu, queue_wed(&ctx.queue)) == -1, EIO,
                   "a second cxl_afu_attach");
    errno = 0;
    expect_failure(cxl_mmio_map(ctx.afu, 0x4) == -1, ENODEV, "cxl_mmio_map with flags 0x4");
    check_call(cxl_mmio_map(ctx.afu, CXL_MMIO_BIG_ENDIAN), "cxl_mmio_map");
    errno = 0;
    expect_failure(cxl_mmio_read64(ctx.afu, 0x4, &value) == -1, EINVAL,
                   "cxl_mmio_read64 at 0x4");
    errno = 0;
    expect_failure(cxl_mmio_read64(ctx.afu, SLAVE_MMIO_BYTES, &value) == -1, EINVAL,
                   "cxl_mmio_read64 at 0x1000");
    uint32_t half;
    errno = 0;
    expect_failure(cxl_mmio_read32(ctx.afu, 0x2, &half) == -1, EINVAL, "cxl_mmio_read32 at 0x2");
    check_call(cxl_mmio_read32(ctx.afu, REG_PH, &half), "cxl_mmio_read32 at 0x8");
    check(half == (uint32_t)(read_reg(ctx.afu, REG_PH) >> 32),
          "cxl_mmio_read32 at 0x8 reads PH's high half");
    printf("cxl_mmio_read32 at 0x8: ok (0x%08" PRIx32 ")\n", half);

    struct work_element *irq = push_irq(&ctx.queue, 1);
    wait_event(ctx.afu);
    struct cxl_event event;
    check(cxl_read_expected_event(ctx.afu, &event, CXL_EVENT_AFU_INTERRUPT, 2) == -1,
          "cxl_read_expected_event refuses interrupt 1 when expecting 2");
    printf("bad call cxl_read_expected_event(irq 2) given irq 1: ok\n");
    restart_when_stopped(ctx.afu);
    check_status(irq->status, STATUS_COMPLETE, "IRQ");
    slave_close(&ctx);
}

/* Handles that are not handles. */
static void bad_handles(void) {
    uint64_t value;
    errno = 0;
    expect_failure(cxl_afu_attach(NULL, 0) == -1, EINVAL, "cxl_afu_attach(NULL)");
    errno = 0;
    expect_failure(cxl_mmio_read64(NULL, 0, &value) == -1, EINVAL, "cxl_mmio_read64(NULL)");
    errno = 0;
    expect_failure(cxl_afu_get_process_element(NULL) == -1, EINVAL,
                   "cxl_afu_get_process_element(NULL)");
    void *stranger = calloc(1, 64);
    check(stranger != NULL, "calloc");
    errno = 0;
    expect_failure(cxl_afu_get_process_element((struct cxl_afu_h *)stranger) == -1, EINVAL,
                   "cxl_afu_get_process_element on memory that is not a handle");
    free(stranger);
    errno = 0;
    expect_failure(cxl_afu_fd_to_h(0) == NULL, ENODEV, "cxl_afu_fd_to_h(0)");
}

/* In a child process, where libcxl's SIGBUS handler was never installed: a read of all
 * ones must raise SIGBUS. The alarm bounds the child if the library hangs. */
static _Noreturn void sigbus_child(void) {
    alarm(TIMEOUT_S);
    struct cxl_afu_h *master = master_open();
    uint64_t value;
    write_reg(master, REG_CFG, UINT64_MAX);
    int rc = cxl_mmio_read64(master, REG_CFG, &value);
    printf("FAILED: cxl_mmio_read64 of all ones returned %d without raising SIGBUS\n", rc);
    fflush(stdout);
    _exit(1);
}

static void sigbus_without_handler(void) {
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) fail_call("fork");
    if (child == 0) sigbus_child();
    int status;
    if (waitpid(child, &status, 0) != child) fail_call("waitpid");
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) {
        printf("all ones without a handler: ok (SIGBUS)\n");
        return;
    }
    if (WIFSIGNALED(status))
        printf("FAILED: the child died of signal %d, not SIGBUS\n", WTERMSIG(status));
    else
        printf("FAILED: the child exited with %d, not by SIGBUS\n", WEXITSTATUS(status));
    exit(1);
}

static void all_ones_with_handler(struct cxl_afu_h *master) {
    check_call(cxl_mmio_install_sigbus_handler(), "cxl_mmio_install_sigbus_handler");
    uint64_t cfg = read_reg(master, REG_CFG);
    write_reg(master, REG_CFG, UINT64_MAX);
    uint64_t value = 0;
    errno = 0;
    int rc = cxl_mmio_read64(master, REG_CFG, &value);
    int err = errno;
    if (rc != -1 || err != EIO || value != UINT64_MAX) {
        printf("FAILED: cxl_mmio_read64 of all ones: %d, errno %d (%s), value 0x%016" PRIx64
               "; expected -1, EIO, all ones\n",
               rc, err, strerror(err), value);
        exit(1);
    }
    write_reg(master, REG_CFG, cfg);
    check(read_reg(master, REG_CFG) == cfg, "CFG reads back after it was restored");
    printf("all ones with the handler: ok (EIO)\n");
}

int main(void) {
    /* First, while no thread of the library runs yet: the child starts its own emulated AFUs. */
    sigbus_without_handler();
    enumerate();
    struct cxl_afu_h *master = master_open();
    master_stop_on_invalid(master);
    run_slaves();
    fault();
    bad_opens();
    bad_context_calls();
    bad_handles();
    all_ones_with_handler(master);
    check_call(cxl_mmio_unmap(master), "cxl_mmio_unmap (master)");
    cxl_afu_free(master);
    printf("memcpy: PASSED\n");
    return 0;
}

/* The runtime of OpenCL C kernels on the emulated XRT card: the work-item functions over the
 * NDRange the current launch runs, and the built-in functions provided so far, defined with
 * the names OpenCL's overloads mangle to. Compiled once per process (for each set of parts
 * programs name); each build links it with its kernels' exported loops, which call the two
 * hidden functions below. */
#define HIDDEN __attribute__((visibility("hidden")))

typedef unsigned long size_t;
#define OVL __attribute__((overloadable))

static unsigned work_dim;
static size_t global_size[3], local_size[3], global_offset[3], group[3], local[3], groups[3];
/* This instance runs share `share` of `shares` equal shares of the launch's work-groups (the
 * card runs a large launch's shares at once, each in an instance of its own); the groups of
 * its share it has not finished. */
static unsigned share, shares = 1;
static unsigned long long groups_left;

/* Makes this instance run the `index`th of `count` shares of the next launch's work-groups. */
HIDDEN void __accelhost_set_share(unsigned index, unsigned count) {
    if (count == 0 || index >= count) __builtin_trap();
    share = index;
    shares = count;
}

/* Starts a launch: 0 when its range is not one the card runs (the door checks first), 2 when
 * this instance's share of it has no work-group, 1 otherwise. */
HIDDEN int __accelhost_begin(unsigned dim, unsigned g0, unsigned g1, unsigned g2, unsigned l0,
                             unsigned l1, unsigned l2, unsigned o0, unsigned o1, unsigned o2) {
    size_t g[3] = {g0, g1, g2}, l[3] = {l0, l1, l2}, o[3] = {o0, o1, o2};
    if (dim < 1 || dim > 3) return 0;
    work_dim = dim;
    for (int d = 0; d < 3; d++) {
        if (d >= (int)dim) g[d] = l[d] = 1, o[d] = 0;
        if (l[d] == 0 || g[d] == 0 || g[d] % l[d] != 0) return 0;
        global_size[d] = g[d];
        local_size[d] = l[d];
        global_offset[d] = o[d];
        groups[d] = g[d] / l[d];
        local[d] = 0;
    }
    unsigned long long total, first = 0, each;
    if (__builtin_mul_overflow((unsigned long long)groups[0] * groups[1], groups[2], &total)) {
        /* More groups than a count holds: the first share runs them all, till its deadline. */
        if (share != 0) return 2;
        total = each = ~0ull;
    } else {
        each = total / shares + (total % shares != 0);
        first = each * share;
        if (first >= total) return 2;
    }
    groups_left = total - first < each ? total - first : each;
    group[0] = first % groups[0];
    group[1] = first / groups[0] % groups[1];
    group[2] = first / groups[0] / groups[1];
    return 1;
}

/* Moves to the next work-group of this instance's share, its first work-item. */
HIDDEN int __accelhost_next_group(void) {
    local[0] = local[1] = local[2] = 0;
    if (--groups_left == 0) return 0;
    for (int d = 0; d < 3; d++) {
        if (++group[d] < groups[d]) return 1;
        group[d] = 0;
    }
    return 0;
}

/* A kernel without barriers runs each row of its work-group (the work-items that differ in x)
 * as a counted loop in the kernel's own module, which the compiler can keep in registers and
 * vectorize: the length of a row, the x of the work-item that runs next, and the move to the
 * next row (y, then z, then the next work-group), x back at 0. */
HIDDEN size_t __accelhost_row_length(void) { return local_size[0]; }
HIDDEN void __accelhost_set_x(size_t x) { local[0] = x; }
HIDDEN int __accelhost_next_row(void) {
    local[0] = 0;
    for (int d = 1; d < 3; d++) {
        if (++local[d] < local_size[d]) return 1;
        local[d] = 0;
    }
    return __accelhost_next_group();
}

/* The current work-item's ids: what the work-item functions answer, and what split kernels
 * read through the hidden functions below. */
static size_t local_id(unsigned d) { return d < 3 ? local[d] : 0; }
static size_t global_id(unsigned d) {
    return d < 3 ? group[d] * local_size[d] + local[d] + global_offset[d] : 0;
}

/* Memory fences order nothing: a work-group's work-items run one at a time. */
void OVL mem_fence(unsigned flags) {}
void OVL read_mem_fence(unsigned flags) {}
void OVL write_mem_fence(unsigned flags) {}

#ifdef USES_BARRIER
/* Work-groups whose work-items meet at barriers. Each work-item runs on a stack of its own
 * until a barrier, where binaryen's asyncify (applied to the linked module) unwinds it into
 * its save area; the group's loop runs the next work-item, and once every one waits (or
 * returned) resumes them in order, until all returned. The loop calls, per work-item,
 * __accelhost_resume, the work-item's function on the stack it names, and
 * __accelhost_suspended. */
__attribute__((import_module("asyncify"), import_name("start_unwind"))) void asyncify_start_unwind(void *);
__attribute__((import_module("asyncify"), import_name("stop_unwind"))) void asyncify_stop_unwind(void);
__attribute__((import_module("asyncify"), import_name("start_rewind"))) void asyncify_start_rewind(void *);
__attribute__((import_module("asyncify"), import_name("stop_rewind"))) void asyncify_stop_rewind(void);

enum { FRESH, WAITING, DONE };
struct item {
    char stack[ITEM_STACK];
    unsigned state, sp;
    /* asyncify's save area: where the next saved byte goes, where it ends, then the bytes */
    char *save_at, *save_end;
    char save[ITEM_SAVE - 16];
};
static struct item *items;
static unsigned item_count, item_now, items_left;
static int unwinding, rewinding;

HIDDEN unsigned __accelhost_get_sp(void) {
    unsigned sp;
    __asm__ volatile(".globaltype __stack_pointer, i32\n\tglobal.get __stack_pointer\n\tlocal.set %0"
                     : "=r"(sp) : : "memory");
    return sp;
}

HIDDEN void __accelhost_set_sp(unsigned sp) {
    __asm__ volatile(".globaltype __stack_pointer, i32\n\tlocal.get %0\n\tglobal.set __stack_pointer"
                     : : "r"(sp) : "memory");
}

/* The bytes a work-group's work-items take, or 0 when the group is larger than the card
 * runs with barriers. */
HIDDEN unsigned __accelhost_items_bytes(void) {
    size_t n = local_size[0] * local_size[1] * local_size[2];
    return n <= MAX_ITEMS ? n * sizeof(struct item) : 0;
}

/* Starts the current work-group with its work-items' records at `area`. */
HIDDEN void __accelhost_group_begin(void *area) {
    items = area;
    item_count = items_left = local_size[0] * local_size[1] * local_size[2];
    for (unsigned i = 0; i < item_count; i++) items[i].state = FRESH;
    item_now = item_count - 1;
}

/* The stack the next work-item runs on (set up to resume it if it waits at a barrier), or
 * 0 when every work-item of the group returned. */
HIDDEN unsigned __accelhost_resume(void) {
    if (items_left == 0) return 0;
    do item_now = (item_now + 1) % item_count; while (items[item_now].state == DONE);
    local[0] = item_now % local_size[0];
    local[1] = item_now / local_size[0] % local_size[1];
    local[2] = item_now / (local_size[0] * local_size[1]);
    struct item *it = &items[item_now];
    if (it->state == FRESH) return (unsigned)(it->stack + ITEM_STACK);
    rewinding = 1;
    asyncify_start_rewind(&it->save_at);
    return it->sp;
}

/* After the work-item's function returned: it waits at a barrier, or it is done. */
HIDDEN void __accelhost_suspended(void) {
    struct item *it = &items[item_now];
    if (unwinding) {
        asyncify_stop_unwind();
        unwinding = 0;
        it->state = WAITING;
    } else {
        it->state = DONE;
        items_left--;
    }
}

__attribute__((noinline)) void OVL barrier(unsigned flags) {
    if (rewinding) {
        rewinding = 0;
        asyncify_stop_rewind();
        return;
    }
    struct item *it = &items[item_now];
    it->sp = __accelhost_get_sp();
    it->save_at = it->save;
    it->save_end = it->save + sizeof it->save;
    unwinding = 1;
    asyncify_start_unwind(&it->save_at);
}
#endif

#ifdef USES_OPENCL_2_GROUPS
/* OpenCL 2.0's sub-group and work-group functions, which SPIR-V programs call (OpenCL C 1.2
 * has neither). Each work-item is a sub-group of its own. A work-group function meets its
 * group's work-items at barriers (so its kernel's work-items are suspendable: the build
 * names USES_BARRIER with this part): each puts its value in the group's slots between two
 * barriers, then reads them; the first barrier of the next call keeps a slot from being
 * overwritten before every work-item has read it. */
static unsigned long long group_slots[MAX_ITEMS];
static size_t local_linear(void) { return (local[2] * local_size[1] + local[1]) * local_size[0] + local[0]; }
static size_t group_items(void) { return local_size[0] * local_size[1] * local_size[2]; }
unsigned OVL get_sub_group_size(void) { return 1; }
unsigned OVL get_max_sub_group_size(void) { return 1; }
unsigned OVL get_num_sub_groups(void) { return (unsigned)group_items(); }
unsigned OVL get_enqueued_num_sub_groups(void) { return (unsigned)group_items(); }
unsigned OVL get_sub_group_id(void) { return (unsigned)local_linear(); }
unsigned OVL get_sub_group_local_id(void) { return 0; }
void OVL sub_group_barrier(unsigned flags) {}
void OVL work_group_barrier(unsigned flags) { barrier(flags); }
void OVL work_group_barrier(unsigned flags, int scope) { barrier(flags); }
int OVL sub_group_all(int p) { return p != 0; }
int OVL sub_group_any(int p) { return p != 0; }
static void group_put(unsigned long long bits) {
    barrier(0);
    group_slots[local_linear()] = bits;
    barrier(0);
}
int OVL work_group_all(int p) {
    group_put(p != 0);
    for (size_t i = 0, n = group_items(); i < n; i++)
        if (!group_slots[i]) return 0;
    return 1;
}
int OVL work_group_any(int p) {
    group_put(p != 0);
    for (size_t i = 0, n = group_items(); i < n; i++)
        if (group_slots[i]) return 1;
    return 0;
}
#define GROUP_FUNCTIONS(T, N, LOWEST, HIGHEST)                                                  \
    static T N##_at(size_t i) {                                                                 \
        union { unsigned long long bits; T value; } slot = {i < MAX_ITEMS ? group_slots[i] : 0}; \
        return slot.value;                                                                      \
    }                                                                                           \
    static void N##_put(T x) {                                                                  \
        union { unsigned long long bits; T value; } slot = {0};                                 \
        slot.value = x;                                                                         \
        group_put(slot.bits);                                                                   \
    }                                                                                           \
    T OVL sub_group_broadcast(T x, unsigned id) { return x; }                                   \
    T OVL intel_sub_group_shuffle(T x, unsigned id) { return x; }                               \
    T OVL intel_sub_group_shuffle_xor(T x, unsigned mask) { return x; }                         \
    T OVL sub_group_reduce_add(T x) { return x; }                                               \
    T OVL sub_group_reduce_min(T x) { return x; }                                               \
    T OVL sub_group_reduce_max(T x) { return x; }                                               \
    T OVL sub_group_scan_inclusive_add(T x) { return x; }                                       \
    T OVL sub_group_scan_inclusive_min(T x) { return x; }                                       \
    T OVL sub_group_scan_inclusive_max(T x) { return x; }                                       \
    T OVL sub_group_scan_exclusive_add(T x) { return 0; }                                       \
    T OVL sub_group_scan_exclusive_min(T x) { return HIGHEST; }                                 \
    T OVL sub_group_scan_exclusive_max(T x) { return LOWEST; }                                  \
    T OVL work_group_broadcast(T x, size_t l) { N##_put(x); return N##_at(l); }                 \
    T OVL work_group_broadcast(T x, size_t l0, size_t l1) {                                     \
        N##_put(x);                                                                             \
        return N##_at(l1 * local_size[0] + l0);                                                 \
    }                                                                                           \
    T OVL work_group_broadcast(T x, size_t l0, size_t l1, size_t l2) {                          \
        N##_put(x);                                                                             \
        return N##_at((l2 * local_size[1] + l1) * local_size[0] + l0);                          \
    }                                                                                           \
    static T N##_fold(T x, int op, size_t end) {                                                \
        N##_put(x);                                                                             \
        T r = op == 0 ? (T)0 : op < 0 ? HIGHEST : LOWEST;                                       \
        for (size_t i = 0; i < end; i++) {                                                      \
            T v = N##_at(i);                                                                    \
            r = op == 0 ? r + v : op < 0 ? (v < r ? v : r) : (v > r ? v : r);                   \
        }                                                                                       \
        return r;                                                                               \
    }                                                                                           \
    T OVL work_group_reduce_add(T x) { return N##_fold(x, 0, group_items()); }                  \
    T OVL work_group_reduce_min(T x) { return N##_fold(x, -1, group_items()); }                 \
    T OVL work_group_reduce_max(T x) { return N##_fold(x, 1, group_items()); }                  \
    T OVL work_group_scan_inclusive_add(T x) { return N##_fold(x, 0, local_linear() + 1); }     \
    T OVL work_group_scan_inclusive_min(T x) { return N##_fold(x, -1, local_linear() + 1); }    \
    T OVL work_group_scan_inclusive_max(T x) { return N##_fold(x, 1, local_linear() + 1); }     \
    T OVL work_group_scan_exclusive_add(T x) { return N##_fold(x, 0, local_linear()); }         \
    T OVL work_group_scan_exclusive_min(T x) { return N##_fold(x, -1, local_linear()); }        \
    T OVL work_group_scan_exclusive_max(T x) { return N##_fold(x, 1, local_linear()); }
GROUP_FUNCTIONS(int, int_, (-2147483647 - 1), 2147483647)
GROUP_FUNCTIONS(unsigned int, uint_, 0u, 4294967295u)
GROUP_FUNCTIONS(long long, long_, (-9223372036854775807ll - 1), 9223372036854775807ll)
GROUP_FUNCTIONS(unsigned long long, ulong_, 0ull, 18446744073709551615ull)
GROUP_FUNCTIONS(float, float_, -__builtin_inff(), __builtin_inff())
GROUP_FUNCTIONS(double, double_, -__builtin_inf(), __builtin_inf())
#endif

#ifdef USES_GROUPS
/* Work-groups of kernels split at their barriers when compiled: each call of such a kernel
 * runs its whole work-group, looping over its work-items (x fastest) once per stretch
 * between barriers, and keeps each work-item's variables that live across a barrier in
 * arrays of the group's size on its stack. */
static unsigned long long group_items, group_taken;

/* The work-items of the current work-group, as the split kernel starts it. */
HIDDEN unsigned __accelhost_group_items(void) {
    size_t n = local_size[0] * local_size[1] * local_size[2];
    if (n > MAX_ITEMS) __builtin_trap();
    group_items = n;
    group_taken = 0;
    return n;
}

/* Accounts for an array of `each` bytes per work-item, aligned to `align`: more than
 * GROUP_PRIVATE_BYTES in all ends the launch. */
HIDDEN void __accelhost_group_take(unsigned each, unsigned align) {
    unsigned long long bytes = (((unsigned long long)each + 15) & ~15ull) * group_items + align;
    if (bytes > GROUP_PRIVATE_BYTES - group_taken) __builtin_trap();
    group_taken += bytes;
}

/* What a split kernel's loops read once per work-group: the group's size in dimension `d`,
 * and the global id of its first work-item there (the rest are that plus their local id). */
HIDDEN size_t __accelhost_local_size(unsigned d) { return local_size[d]; }
HIDDEN size_t __accelhost_group_base(unsigned d) {
    return group[d] * local_size[d] + global_offset[d];
}

/* The work-item a split kernel's loop runs now, for the functions that read it from memory. */
HIDDEN void __accelhost_set_item(size_t x, size_t y, size_t z) {
    local[0] = x;
    local[1] = y;
    local[2] = z;
}

/* A stretch's work-items share where they stopped until one of them, the `count`th, stops
 * elsewhere: the split kernel then writes each one's stop in `points` (at the address given),
 * the first `count` here. Out of the loops, which run it at most once a stretch. */
__attribute__((noinline)) HIDDEN void __accelhost_stops_apart(unsigned points, unsigned count,
                                                               int stop) {
    int *each = (int *)points;
    for (unsigned i = 0; i < count; i++) each[i] = stop;
}

/* The work-items of a stretch whose stops are apart, which all stop at the same place when
 * they run it: those of the `count` in `points` that stopped at `from` now stopped at `to`. */
__attribute__((noinline)) HIDDEN void __accelhost_stops_moved(unsigned points, unsigned count,
                                                               int from, int to) {
    int *each = (int *)points;
    for (unsigned i = 0; i < count; i++) {
        if (each[i] == from) each[i] = to;
    }
}

/* get_local_id and get_global_id as helpers of split kernels read them: from memory, which
 * changes from one work-item to the next within a call (OpenCL's declarations say they read
 * none). */
HIDDEN size_t __accelhost_local_id(unsigned d) { return local_id(d); }
HIDDEN size_t __accelhost_global_id(unsigned d) { return global_id(d); }
#endif

unsigned OVL get_work_dim(void) { return work_dim; }
size_t OVL get_global_size(unsigned d) { return d < 3 ? global_size[d] : 1; }
size_t OVL get_local_size(unsigned d) { return d < 3 ? local_size[d] : 1; }
size_t OVL get_enqueued_local_size(unsigned d) { return d < 3 ? local_size[d] : 1; }
size_t OVL get_num_groups(unsigned d) { return d < 3 ? groups[d] : 1; }
size_t OVL get_group_id(unsigned d) { return d < 3 ? group[d] : 0; }
size_t OVL get_local_id(unsigned d) { return local_id(d); }
size_t OVL get_global_offset(unsigned d) { return d < 3 ? global_offset[d] : 0; }
size_t OVL get_global_id(unsigned d) { return global_id(d); }

/* Math on floats and doubles, scalar and per element of each vector width. */
#define VECTORS(T)                                     \
    typedef T T##2 __attribute__((ext_vector_type(2))); \
    typedef T T##3 __attribute__((ext_vector_type(3))); \
    typedef T T##4 __attribute__((ext_vector_type(4))); \
    typedef T T##8 __attribute__((ext_vector_type(8))); \
    typedef T T##16 __attribute__((ext_vector_type(16)));
VECTORS(float)
VECTORS(double)

#define EACH1(V, N, name)                                     \
    V OVL name(V x) {                                         \
        V r;                                                  \
        for (int i = 0; i < N; i++) r[i] = name(x[i]);        \
        return r;                                             \
    }
#define EACH2(V, N, name)                                     \
    V OVL name(V x, V y) {                                    \
        V r;                                                  \
        for (int i = 0; i < N; i++) r[i] = name(x[i], y[i]);  \
        return r;                                             \
    }
#define EACH3(V, N, name)                                           \
    V OVL name(V x, V y, V z) {                                     \
        V r;                                                        \
        for (int i = 0; i < N; i++) r[i] = name(x[i], y[i], z[i]);  \
        return r;                                                   \
    }
#define WIDTHS(EACH, T, name) \
    EACH(T##2, 2, name) EACH(T##3, 3, name) EACH(T##4, 4, name) EACH(T##8, 8, name) EACH(T##16, 16, name)

#define UNARY(name, f, d)                                    \
    float OVL name(float x) { return f(x); }                 \
    double OVL name(double x) { return d(x); }               \
    WIDTHS(EACH1, float, name) WIDTHS(EACH1, double, name)
#define BINARY(name, f, d)                                   \
    float OVL name(float x, float y) { return f(x, y); }     \
    double OVL name(double x, double y) { return d(x, y); }  \
    WIDTHS(EACH2, float, name) WIDTHS(EACH2, double, name)
#define TERNARY(name, f, d)                                                      \
    float OVL name(float x, float y, float z) { return f(x, y, z); }             \
    double OVL name(double x, double y, double z) { return d(x, y, z); }         \
    WIDTHS(EACH3, float, name) WIDTHS(EACH3, double, name)

static float madf(float x, float y, float z) { return x * y + z; }
static double madd(double x, double y, double z) { return x * y + z; }
static float rsqrtf(float x) { return 1.0f / __builtin_sqrtf(x); }
static double rsqrtd(double x) { return 1.0 / __builtin_sqrt(x); }
static float recipf(float x) { return 1.0f / x; }
static double recipd(double x) { return 1.0 / x; }

UNARY(sqrt, __builtin_sqrtf, __builtin_sqrt)
UNARY(native_sqrt, __builtin_sqrtf, __builtin_sqrt)
UNARY(rsqrt, rsqrtf, rsqrtd)
UNARY(native_rsqrt, rsqrtf, rsqrtd)
UNARY(native_recip, recipf, recipd)
UNARY(fabs, __builtin_fabsf, __builtin_fabs)
UNARY(floor, __builtin_floorf, __builtin_floor)
UNARY(ceil, __builtin_ceilf, __builtin_ceil)
UNARY(trunc, __builtin_truncf, __builtin_trunc)
UNARY(round, __builtin_roundf, __builtin_round)
UNARY(exp, __builtin_expf, __builtin_exp)
UNARY(native_exp, __builtin_expf, __builtin_exp)
UNARY(exp2, __builtin_exp2f, __builtin_exp2)
UNARY(log, __builtin_logf, __builtin_log)
UNARY(native_log, __builtin_logf, __builtin_log)
UNARY(log2, __builtin_log2f, __builtin_log2)
UNARY(logb, __builtin_logbf, __builtin_logb)
UNARY(sin, __builtin_sinf, __builtin_sin)
UNARY(native_sin, __builtin_sinf, __builtin_sin)
UNARY(cos, __builtin_cosf, __builtin_cos)
UNARY(native_cos, __builtin_cosf, __builtin_cos)
UNARY(tan, __builtin_tanf, __builtin_tan)
UNARY(atan, __builtin_atanf, __builtin_atan)
UNARY(tanh, __builtin_tanhf, __builtin_tanh)
BINARY(pow, __builtin_powf, __builtin_pow)
BINARY(fmin, __builtin_fminf, __builtin_fmin)
BINARY(fmax, __builtin_fmaxf, __builtin_fmax)
BINARY(fmod, __builtin_fmodf, __builtin_fmod)
UNARY(sinh, __builtin_sinhf, __builtin_sinh)
UNARY(cosh, __builtin_coshf, __builtin_cosh)
UNARY(asin, __builtin_asinf, __builtin_asin)
UNARY(acos, __builtin_acosf, __builtin_acos)
UNARY(asinh, __builtin_asinhf, __builtin_asinh)
UNARY(acosh, __builtin_acoshf, __builtin_acosh)
UNARY(atanh, __builtin_atanhf, __builtin_atanh)
UNARY(log10, __builtin_log10f, __builtin_log10)
UNARY(log1p, __builtin_log1pf, __builtin_log1p)
UNARY(expm1, __builtin_expm1f, __builtin_expm1)
UNARY(cbrt, __builtin_cbrtf, __builtin_cbrt)
UNARY(rint, __builtin_rintf, __builtin_rint)
BINARY(atan2, __builtin_atan2f, __builtin_atan2)
BINARY(hypot, __builtin_hypotf, __builtin_hypot)
BINARY(copysign, __builtin_copysignf, __builtin_copysign)
BINARY(fdim, __builtin_fdimf, __builtin_fdim)
TERNARY(mad, madf, madd)
TERNARY(fma, __builtin_fmaf, __builtin_fma)

/* The common functions: degrees, radians, sign, step and mix. */
static float degreesf(float x) { return x * 57.295779513082320876f; }
static double degreesd(double x) { return x * 57.295779513082320876; }
static float radiansf(float x) { return x * 0.017453292519943295f; }
static double radiansd(double x) { return x * 0.017453292519943295; }
static float signf(float x) { return x > 0 ? 1.0f : x < 0 ? -1.0f : x == x ? x : 0.0f; }
static double signd(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x == x ? x : 0.0; }
static float stepf(float edge, float x) { return x < edge ? 0.0f : 1.0f; }
static double stepd(double edge, double x) { return x < edge ? 0.0 : 1.0; }
static float mixf(float x, float y, float a) { return x + (y - x) * a; }
static double mixd(double x, double y, double a) { return x + (y - x) * a; }
UNARY(degrees, degreesf, degreesd)
UNARY(radians, radiansf, radiansd)
UNARY(sign, signf, signd)
BINARY(step, stepf, stepd)
TERNARY(mix, mixf, mixd)
float OVL ldexp(float x, int n) { return __builtin_ldexpf(x, n); }
double OVL ldexp(double x, int n) { return __builtin_ldexp(x, n); }

/* Classification of scalars: 1 when it holds. */
#define CLASSIFY(name, holds)                  \
    int OVL name(float x) { return holds; }    \
    int OVL name(double x) { return holds; }
CLASSIFY(isnan, __builtin_isnan(x))
CLASSIFY(isinf, __builtin_isinf(x))
CLASSIFY(isfinite, __builtin_isfinite(x))
CLASSIFY(signbit, __builtin_signbit(x) != 0)

/* Vectors of every scalar type OpenCL C has but half. */
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef long long llong; /* OpenCL's long: the build defines long as long long */
typedef unsigned long long ullong;
VECTORS(char)
VECTORS(uchar)
VECTORS(short)
VECTORS(ushort)
VECTORS(int)
VECTORS(uint)
VECTORS(llong)
VECTORS(ullong)

/* Classification of vectors: each lane -1 (every bit set) when it holds, else 0; an int
 * lane for a float, a long one for a double. */
#define CLASSIFY_EACH(R, V, N, name)                              \
    R OVL name(V x) {                                             \
        R r;                                                      \
        for (int i = 0; i < N; i++) r[i] = name(x[i]) ? -1 : 0;   \
        return r;                                                 \
    }
#define CLASSIFY_WIDTHS(R, V, name)                                                          \
    CLASSIFY_EACH(R##2, V##2, 2, name) CLASSIFY_EACH(R##3, V##3, 3, name)                  \
    CLASSIFY_EACH(R##4, V##4, 4, name) CLASSIFY_EACH(R##8, V##8, 8, name)                  \
    CLASSIFY_EACH(R##16, V##16, 16, name)
#define CLASSIFY_VECTORS(name) CLASSIFY_WIDTHS(int, float, name) CLASSIFY_WIDTHS(llong, double, name)
CLASSIFY_VECTORS(isnan)
CLASSIFY_VECTORS(isinf)
CLASSIFY_VECTORS(isfinite)
CLASSIFY_VECTORS(signbit)

/* convert_T and convert_TN between any two scalar types, with OpenCL's default rounding:
 * toward zero into integers (out of range saturates: the build has nontrapping-fptoint),
 * to nearest even into floating point (the _sat and _rt* forms are at the end). The
 * build defines USES_convert_T for each T a program converts to, and USES_VLOADSTOREN for
 * each width it loads or stores: each group costs every build compile time. */
#define CONVERT(name, D, S)                                                                  \
    D OVL convert_##name(S x) { return (D)x; }                                               \
    D##2 OVL convert_##name##2(S##2 x) { return __builtin_convertvector(x, D##2); }          \
    D##3 OVL convert_##name##3(S##3 x) { return __builtin_convertvector(x, D##3); }          \
    D##4 OVL convert_##name##4(S##4 x) { return __builtin_convertvector(x, D##4); }          \
    D##8 OVL convert_##name##8(S##8 x) { return __builtin_convertvector(x, D##8); }          \
    D##16 OVL convert_##name##16(S##16 x) { return __builtin_convertvector(x, D##16); }
#define CONVERT_FROM_ALL(name, D)                                                            \
    CONVERT(name, D, char) CONVERT(name, D, uchar) CONVERT(name, D, short)                   \
    CONVERT(name, D, ushort) CONVERT(name, D, int) CONVERT(name, D, uint)                    \
    CONVERT(name, D, llong) CONVERT(name, D, ullong) CONVERT(name, D, float)                 \
    CONVERT(name, D, double)
#ifdef USES_convert_char
CONVERT_FROM_ALL(char, char)
#endif
#ifdef USES_convert_uchar
CONVERT_FROM_ALL(uchar, uchar)
#endif
#ifdef USES_convert_short
CONVERT_FROM_ALL(short, short)
#endif
#ifdef USES_convert_ushort
CONVERT_FROM_ALL(ushort, ushort)
#endif
#ifdef USES_convert_int
CONVERT_FROM_ALL(int, int)
#endif
#ifdef USES_convert_uint
CONVERT_FROM_ALL(uint, uint)
#endif
#ifdef USES_convert_long
CONVERT_FROM_ALL(long, llong)
#endif
#ifdef USES_convert_ulong
CONVERT_FROM_ALL(ulong, ullong)
#endif
#ifdef USES_convert_float
CONVERT_FROM_ALL(float, float)
#endif
#ifdef USES_convert_double
CONVERT_FROM_ALL(double, double)
#endif

/* vloadN and vstoreN, element by element (p need only be aligned to its scalar type), for
 * each address space a pointer can have here: __local is private on this card. */
#define GLOBAL __attribute__((opencl_global))
#define CONSTANT __attribute__((opencl_constant))
#define PRIVATE __attribute__((opencl_private))
#define LOCAL __attribute__((opencl_local))
#define VLOAD(T, N, AS)                                                   \
    T##N OVL vload##N(size_t offset, const AS T *p) {                    \
        T##N r;                                                           \
        for (int i = 0; i < N; i++) r[i] = p[offset * N + i];             \
        return r;                                                         \
    }
#define VSTORE(T, N, AS)                                                  \
    void OVL vstore##N(T##N data, size_t offset, AS T *p) {               \
        for (int i = 0; i < N; i++) p[offset * N + i] = data[i];          \
    }
#define VLOADSTORE_N(T, N) \
    VLOAD(T, N, GLOBAL) VLOAD(T, N, CONSTANT) VLOAD(T, N, PRIVATE) VLOAD(T, N, LOCAL) \
        VSTORE(T, N, GLOBAL) VSTORE(T, N, PRIVATE) VSTORE(T, N, LOCAL)
#define VLOADSTORE(N)                                                                      \
    VLOADSTORE_N(char, N) VLOADSTORE_N(uchar, N) VLOADSTORE_N(short, N)                    \
    VLOADSTORE_N(ushort, N) VLOADSTORE_N(int, N) VLOADSTORE_N(uint, N)                     \
    VLOADSTORE_N(llong, N) VLOADSTORE_N(ullong, N) VLOADSTORE_N(float, N)                  \
    VLOADSTORE_N(double, N)
#ifdef USES_VLOADSTORE2
VLOADSTORE(2)
#endif
#ifdef USES_VLOADSTORE3
VLOADSTORE(3)
#endif
#ifdef USES_VLOADSTORE4
VLOADSTORE(4)
#endif
#ifdef USES_VLOADSTORE8
VLOADSTORE(8)
#endif
#ifdef USES_VLOADSTORE16
VLOADSTORE(16)
#endif

/* Integer min, max and clamp. */
#define INTEGER(T)                                                        \
    T OVL min(T x, T y) { return x < y ? x : y; }                         \
    T OVL max(T x, T y) { return x > y ? x : y; }                         \
    T OVL clamp(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }
INTEGER(int)
INTEGER(unsigned int)
INTEGER(long long)
INTEGER(unsigned long long)
float OVL min(float x, float y) { return __builtin_fminf(x, y); }
float OVL max(float x, float y) { return __builtin_fmaxf(x, y); }
float OVL clamp(float x, float lo, float hi) { return __builtin_fminf(__builtin_fmaxf(x, lo), hi); }
double OVL min(double x, double y) { return __builtin_fmin(x, y); }
double OVL max(double x, double y) { return __builtin_fmax(x, y); }

/* Bit counts of each integer type: set bits, and leading and (OpenCL 2.0's ctz, which SYCL's
 * sorts call) trailing zeros, the width for 0. */
#define BITS(T, U, W)                                                                       \
    T OVL popcount(T x) { return (T)__builtin_popcountll((U)x); }                           \
    T OVL clz(T x) { return (U)x == 0 ? (T)(W) : (T)(__builtin_clzll((U)x) - (64 - (W))); } \
    T OVL ctz(T x) { return (U)x == 0 ? (T)(W) : (T)__builtin_ctzll((U)x); }
BITS(char, unsigned char, 8)
BITS(unsigned char, unsigned char, 8)
BITS(short, unsigned short, 16)
BITS(unsigned short, unsigned short, 16)
BITS(int, unsigned int, 32)
BITS(unsigned int, unsigned int, 32)
BITS(long long, unsigned long long, 64)
BITS(unsigned long long, unsigned long long, 64)

/* Integer abs: the magnitude, unsigned (C's abs is another function: these overload it). */
#pragma clang diagnostic ignored "-Wincompatible-library-redeclaration"
unsigned char OVL abs(char x) { return x < 0 ? -(unsigned char)x : x; }
unsigned char OVL abs(unsigned char x) { return x; }
unsigned short OVL abs(short x) { return x < 0 ? -(unsigned short)x : x; }
unsigned short OVL abs(unsigned short x) { return x; }
unsigned int OVL abs(int x) { return x < 0 ? -(unsigned int)x : x; }
unsigned int OVL abs(unsigned int x) { return x; }
unsigned long long OVL abs(long long x) { return x < 0 ? -(unsigned long long)x : x; }
unsigned long long OVL abs(unsigned long long x) { return x; }

/* The math functions with a half-turn unit, and those that also give a result through a
 * pointer (to __global or private memory; __local is private on this card). */
static float pif(float x) { return x * 3.14159265358979323846f; }
static double pid(double x) { return x * 3.14159265358979323846; }
static float sinpif(float x) { return __builtin_sinf(pif(x)); }
static double sinpid(double x) { return __builtin_sin(pid(x)); }
static float cospif(float x) { return __builtin_cosf(pif(x)); }
static double cospid(double x) { return __builtin_cos(pid(x)); }
static float asinpif(float x) { return __builtin_asinf(x) / 3.14159265358979323846f; }
static double asinpid(double x) { return __builtin_asin(x) / 3.14159265358979323846; }
static float acospif(float x) { return __builtin_acosf(x) / 3.14159265358979323846f; }
static double acospid(double x) { return __builtin_acos(x) / 3.14159265358979323846; }
static float atanpif(float x) { return __builtin_atanf(x) / 3.14159265358979323846f; }
static double atanpid(double x) { return __builtin_atan(x) / 3.14159265358979323846; }
static float atan2pif(float y, float x) { return __builtin_atan2f(y, x) / 3.14159265358979323846f; }
static double atan2pid(double y, double x) { return __builtin_atan2(y, x) / 3.14159265358979323846; }
UNARY(sinpi, sinpif, sinpid)
UNARY(cospi, cospif, cospid)
UNARY(asinpi, asinpif, asinpid)
UNARY(acospi, acospif, acospid)
UNARY(atanpi, atanpif, atanpid)
BINARY(atan2pi, atan2pif, atan2pid)
#define THROUGH_POINTER(AS)                                                                   \
    float OVL sincos(float x, AS float *c) { *c = __builtin_cosf(x); return __builtin_sinf(x); } \
    double OVL sincos(double x, AS double *c) { *c = __builtin_cos(x); return __builtin_sin(x); } \
    float OVL modf(float x, AS float *i) { *i = __builtin_truncf(x); return __builtin_copysignf(__builtin_isinf(x) ? 0.0f : x - *i, x); } \
    double OVL modf(double x, AS double *i) { *i = __builtin_trunc(x); return __builtin_copysign(__builtin_isinf(x) ? 0.0 : x - *i, x); } \
    float OVL frexp(float x, AS int *e) { int n; float m = __builtin_frexpf(x, &n); *e = n; return m; } \
    double OVL frexp(double x, AS int *e) { int n; double m = __builtin_frexp(x, &n); *e = n; return m; } \
    float OVL fract(float x, AS float *i) { *i = __builtin_floorf(x); return __builtin_fminf(x - *i, 0x1.fffffep-1f); } \
    double OVL fract(double x, AS double *i) { *i = __builtin_floor(x); return __builtin_fmin(x - *i, 0x1.fffffffffffffp-1); }
THROUGH_POINTER(GLOBAL)
THROUGH_POINTER(PRIVATE)
THROUGH_POINTER(LOCAL)

#ifdef USES_ATOMICS
/* OpenCL C 1.2's atomic functions on 32-bit integers in global and local memory, also
 * under the names of the int32 atomics extensions (atom_add, ...), and the int64 atomics
 * extensions' on 64-bit integers (atom_add, ..., atom_min, ...). A launch of a program
 * that names them runs in one instance (its work-groups are not shared out), whose
 * work-items run one at a time: a read, then a write, is atomic there. */
#define ATOMIC_OP(name, T, AS, result)                              \
    T OVL atomic_##name(volatile AS T *p, T v) {                    \
        T old = *p;                                                 \
        *p = (result);                                              \
        return old;                                                 \
    }                                                               \
    T OVL atom_##name(volatile AS T *p, T v) { return atomic_##name(p, v); }
#define ATOMICS_OF(T, AS)                                                        \
    ATOMIC_OP(add, T, AS, old + v)                                               \
    ATOMIC_OP(sub, T, AS, old - v)                                               \
    ATOMIC_OP(xchg, T, AS, v)                                                    \
    ATOMIC_OP(min, T, AS, old < v ? old : v)                                     \
    ATOMIC_OP(max, T, AS, old > v ? old : v)                                     \
    ATOMIC_OP(and, T, AS, old & v)                                               \
    ATOMIC_OP(or, T, AS, old | v)                                                \
    ATOMIC_OP(xor, T, AS, old ^ v)                                               \
    T OVL atomic_inc(volatile AS T *p) { T old = *p; *p = old + 1; return old; } \
    T OVL atomic_dec(volatile AS T *p) { T old = *p; *p = old - 1; return old; } \
    T OVL atomic_cmpxchg(volatile AS T *p, T cmp, T v) {                         \
        T old = *p;                                                              \
        if (old == cmp) *p = v;                                                  \
        return old;                                                              \
    }                                                                            \
    T OVL atom_inc(volatile AS T *p) { return atomic_inc(p); }                   \
    T OVL atom_dec(volatile AS T *p) { return atomic_dec(p); }                   \
    T OVL atom_cmpxchg(volatile AS T *p, T cmp, T v) { return atomic_cmpxchg(p, cmp, v); }
ATOMICS_OF(int, GLOBAL)
ATOMICS_OF(uint, GLOBAL)
ATOMICS_OF(int, LOCAL)
ATOMICS_OF(uint, LOCAL)
ATOMICS_OF(llong, GLOBAL)
ATOMICS_OF(ullong, GLOBAL)
ATOMICS_OF(llong, LOCAL)
ATOMICS_OF(ullong, LOCAL)
float OVL atomic_xchg(volatile GLOBAL float *p, float v) { float old = *p; *p = v; return old; }
float OVL atomic_xchg(volatile LOCAL float *p, float v) { float old = *p; *p = v; return old; }
#endif

#ifdef USES_SHUFFLE
/* shuffle and shuffle2: a vector of the elements of one vector, or of two one after the
 * other, that a mask's elements pick (only their bits that index them count). */
#define SHUFFLE_TO(T, U, M, N)                                                               \
    T##N OVL shuffle(T##M x, U##N mask) {                                                    \
        T##N r;                                                                              \
        for (int i = 0; i < N; i++) r[i] = x[mask[i] % M];                                   \
        return r;                                                                            \
    }                                                                                        \
    T##N OVL shuffle2(T##M x, T##M y, U##N mask) {                                           \
        T##N r;                                                                              \
        for (int i = 0; i < N; i++) {                                                        \
            U k = mask[i] % (2 * M);                                                         \
            r[i] = k < M ? x[k] : y[k - M];                                                  \
        }                                                                                    \
        return r;                                                                            \
    }
#define SHUFFLE_FROM(T, U, M)                                                                \
    SHUFFLE_TO(T, U, M, 2) SHUFFLE_TO(T, U, M, 4) SHUFFLE_TO(T, U, M, 8) SHUFFLE_TO(T, U, M, 16)
#define SHUFFLES(T, U)                                                                       \
    SHUFFLE_FROM(T, U, 2) SHUFFLE_FROM(T, U, 4) SHUFFLE_FROM(T, U, 8) SHUFFLE_FROM(T, U, 16)
SHUFFLES(char, uchar)
SHUFFLES(uchar, uchar)
SHUFFLES(short, ushort)
SHUFFLES(ushort, ushort)
SHUFFLES(int, uint)
SHUFFLES(uint, uint)
SHUFFLES(llong, ullong)
SHUFFLES(ullong, ullong)
SHUFFLES(float, uint)
SHUFFLES(double, ullong)
#endif

#ifdef USES_HALF
/* vload_half, vstore_half and their vector and aligned forms: halves kept in memory, read
 * into floats, and written from floats or doubles rounded to nearest even (also as _rte),
 * toward zero (_rtz), toward +infinity (_rtp) or toward -infinity (_rtn). The conversions are
 * bit by bit, so that no conversion routine of the compiler is needed; a float is written
 * as the double it is exactly, so that each value is rounded once. */
static float half_to_float(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    unsigned bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else {
        unsigned shifts = 0;
        do {
            man <<= 1;
            shifts++;
        } while (!(man & 0x400u));
        bits = sign | ((113 - shifts) << 23) | ((man & 0x3ffu) << 13);
    }
    return __builtin_bit_cast(float, bits);
}

enum { RTE, RTZ, RTP, RTN };

static unsigned short double_to_half(double d, int mode) {
    unsigned long long x = __builtin_bit_cast(unsigned long long, d);
    unsigned short sign = (unsigned short)((x >> 48) & 0x8000u);
    int exp = (int)((x >> 52) & 0x7ff);
    unsigned long long man = x & ((1ull << 52) - 1);
    if (exp == 0x7ff) return sign | 0x7c00u | (man ? 0x200u | (unsigned)(man >> 42) : 0);
    /* Past the largest half: infinity, or the largest half where rounding goes toward zero. */
    unsigned short largest = sign | 0x7bffu, infinity = sign | 0x7c00u;
    int toward_zero = mode == RTZ || (mode == RTP && sign) || (mode == RTN && !sign);
    int e = exp - 1023 + 15;
    if (e >= 0x1f) return toward_zero ? largest : infinity;
    unsigned long long full = exp ? man | (1ull << 52) : man;
    /* The half's significand: 11 bits of the double's 53 where the half is normal, fewer
     * where it is subnormal. */
    unsigned shift = e >= 1 ? 42 : 42 + (unsigned)(1 - e);
    unsigned long long kept = shift < 64 ? full >> shift : 0;
    unsigned long long rest = shift < 64 ? full & ((1ull << shift) - 1) : full;
    int more = 0;
    if (rest != 0) {
        if (mode == RTE) {
            unsigned long long halfway = shift < 65 ? 1ull << (shift - 1) : ~0ull;
            more = shift < 65 && (rest > halfway || (rest == halfway && (kept & 1)));
        } else {
            more = !toward_zero;
        }
    }
    unsigned bits = (unsigned)(e >= 1 ? ((unsigned long long)(e - 1) << 10) + kept : kept);
    bits += (unsigned)more;
    if (bits >= 0x7c00u) return toward_zero ? largest : infinity;
    return sign | (unsigned short)bits;
}

#define HALF_SCALAR(AS)                                                                      \
    float OVL vload_half(size_t offset, const AS __fp16 *p) {                                \
        return half_to_float(((const AS unsigned short *)p)[offset]);                        \
    }
#define HALF_STORE_SCALAR_OF(AS, T, suffix, mode)                                            \
    void OVL vstore_half##suffix(T data, size_t offset, AS __fp16 *p) {                      \
        ((AS unsigned short *)p)[offset] = double_to_half(data, mode);                       \
    }
/* `step` is N, or 4 for the aligned forms of 3 elements. */
#define HALF_LOAD(AS, name, N, step)                                                         \
    float##N OVL name##N(size_t offset, const AS __fp16 *p) {                                \
        float##N r;                                                                          \
        for (int i = 0; i < N; i++)                                                          \
            r[i] = half_to_float(((const AS unsigned short *)p)[offset * step + i]);         \
        return r;                                                                            \
    }
#define HALF_STORE_OF(AS, T, name, N, step, suffix, mode)                                    \
    void OVL name##N##suffix(T##N data, size_t offset, AS __fp16 *p) {                       \
        for (int i = 0; i < N; i++)                                                          \
            ((AS unsigned short *)p)[offset * step + i] = double_to_half(data[i], mode);     \
    }
#define HALF_MODES(WHAT, ...)                                                                \
    WHAT(__VA_ARGS__, , RTE) WHAT(__VA_ARGS__, _rte, RTE) WHAT(__VA_ARGS__, _rtz, RTZ)       \
        WHAT(__VA_ARGS__, _rtp, RTP) WHAT(__VA_ARGS__, _rtn, RTN)
#define HALF_STORE(AS, name, N, step)                                                        \
    HALF_MODES(HALF_STORE_OF, AS, float, name, N, step)                                      \
    HALF_MODES(HALF_STORE_OF, AS, double, name, N, step)
#define HALF_WIDTHS(AS, WHAT, name, name3step)                                               \
    WHAT(AS, name, 2, 2) WHAT(AS, name, 3, name3step) WHAT(AS, name, 4, 4)                   \
        WHAT(AS, name, 8, 8) WHAT(AS, name, 16, 16)
#define HALF_LOADS(AS)                                                                       \
    HALF_SCALAR(AS) HALF_WIDTHS(AS, HALF_LOAD, vload_half, 3)                                \
        HALF_WIDTHS(AS, HALF_LOAD, vloada_half, 4)
#define HALF_STORES(AS)                                                                      \
    HALF_MODES(HALF_STORE_SCALAR_OF, AS, float)                                              \
    HALF_MODES(HALF_STORE_SCALAR_OF, AS, double)                                             \
    HALF_WIDTHS(AS, HALF_STORE, vstore_half, 3)                                              \
    HALF_WIDTHS(AS, HALF_STORE, vstorea_half, 4)
HALF_LOADS(GLOBAL)
HALF_LOADS(CONSTANT)
HALF_LOADS(PRIVATE)
HALF_LOADS(LOCAL)
HALF_STORES(GLOBAL)
HALF_STORES(PRIVATE)
HALF_STORES(LOCAL)
#endif

/* convert_T_sat, convert_T_rte/_rtz/_rtp/_rtn and convert_T_sat_rt* (into integers), and
 * convert_T_rt* into floating point, for every source type and width. The build defines
 * USES_convert_T_modes for each T a program converts to with a mode. */
#define IS_FLT(S) (__builtin_types_compatible_p(S, float) || __builtin_types_compatible_p(S, double))
#define ROUNDED(S, x, round) __builtin_choose_expr(IS_FLT(S), (S)round((double)(x)), (x))
#define SAT_FLT(D, S, lo, hi, v) \
    ((v) != (v) ? (D)0 : (v) <= (S)(lo) ? (D)(lo) : (v) >= (S)(hi) ? (D)(hi) : (D)(v))
#define SAT_INT(D, S, lo, hi, v)                                                              \
    (((S)-1 < (S)0)                                                                           \
         ? ((long long)(v) < (long long)(lo)                                                  \
                ? (D)(lo)                                                                     \
                : ((unsigned long long)(hi) <= 0x7fffffffffffffffull &&                       \
                   (long long)(v) > (long long)(hi))                                          \
                      ? (D)(hi)                                                               \
                      : (D)(v))                                                               \
         : ((unsigned long long)(v) > (unsigned long long)(hi) ? (D)(hi) : (D)(v)))
#define SAT(D, S, lo, hi, v) \
    __builtin_choose_expr(IS_FLT(S), SAT_FLT(D, S, lo, hi, v), SAT_INT(D, S, lo, hi, v))
#define MODE_FN(name, D, S, suffix, expr)                                                   \
    D OVL convert_##name##suffix(S x) { return (expr); }                                    \
    MODE_VEC(name, D, S, suffix, 2) MODE_VEC(name, D, S, suffix, 3)                        \
    MODE_VEC(name, D, S, suffix, 4) MODE_VEC(name, D, S, suffix, 8)                        \
    MODE_VEC(name, D, S, suffix, 16)
#define MODE_VEC(name, D, S, suffix, N)                                                     \
    D##N OVL convert_##name##N##suffix(S##N v) {                                            \
        D##N r;                                                                             \
        for (int i = 0; i < N; i++) r[i] = convert_##name##suffix(v[i]);                    \
        return r;                                                                           \
    }
#define INT_MODES(name, D, S, lo, hi)                                                          \
    MODE_FN(name, D, S, _rte, (D)ROUNDED(S, x, __builtin_rint))                                \
    MODE_FN(name, D, S, _rtz, (D)ROUNDED(S, x, __builtin_trunc))                               \
    MODE_FN(name, D, S, _rtp, (D)ROUNDED(S, x, __builtin_ceil))                                \
    MODE_FN(name, D, S, _rtn, (D)ROUNDED(S, x, __builtin_floor))                               \
    MODE_FN(name, D, S, _sat, SAT(D, S, lo, hi, ROUNDED(S, x, __builtin_trunc)))               \
    MODE_FN(name, D, S, _sat_rte, SAT(D, S, lo, hi, ROUNDED(S, x, __builtin_rint)))            \
    MODE_FN(name, D, S, _sat_rtz, SAT(D, S, lo, hi, ROUNDED(S, x, __builtin_trunc)))           \
    MODE_FN(name, D, S, _sat_rtp, SAT(D, S, lo, hi, ROUNDED(S, x, __builtin_ceil)))            \
    MODE_FN(name, D, S, _sat_rtn, SAT(D, S, lo, hi, ROUNDED(S, x, __builtin_floor)))
#define INT_MODES_FROM_ALL(name, D, lo, hi)                                                    \
    INT_MODES(name, D, char, lo, hi) INT_MODES(name, D, uchar, lo, hi)                         \
    INT_MODES(name, D, short, lo, hi) INT_MODES(name, D, ushort, lo, hi)                       \
    INT_MODES(name, D, int, lo, hi) INT_MODES(name, D, uint, lo, hi)                           \
    INT_MODES(name, D, llong, lo, hi) INT_MODES(name, D, ullong, lo, hi)                       \
    INT_MODES(name, D, float, lo, hi) INT_MODES(name, D, double, lo, hi)

/* Into floating point: converted to nearest, then moved one step toward the mode's side
 * when that passed the exact value (compared exactly: through double for floating and
 * 32-bit sources, through 64-bit integers for 64-bit ones). */
#if defined(USES_convert_float_modes) || defined(USES_convert_double_modes)
static float step_up_f(float f) {
    unsigned b = __builtin_bit_cast(unsigned, f);
    if ((b << 1) == 0) return __builtin_bit_cast(float, 1u);
    return __builtin_bit_cast(float, (b >> 31) ? b - 1 : b + 1);
}
static float step_down_f(float f) {
    unsigned b = __builtin_bit_cast(unsigned, f);
    if ((b << 1) == 0) return __builtin_bit_cast(float, 0x80000001u);
    return __builtin_bit_cast(float, (b >> 31) ? b + 1 : b - 1);
}
static double step_up_d(double f) {
    unsigned long long b = __builtin_bit_cast(unsigned long long, f);
    if ((b << 1) == 0) return __builtin_bit_cast(double, 1ull);
    return __builtin_bit_cast(double, (b >> 63) ? b - 1 : b + 1);
}
static double step_down_d(double f) {
    unsigned long long b = __builtin_bit_cast(unsigned long long, f);
    if ((b << 1) == 0) return __builtin_bit_cast(double, 0x8000000000000001ull);
    return __builtin_bit_cast(double, (b >> 63) ? b + 1 : b - 1);
}
#define EXACT_CMP(D, S)                                                                     \
    static int cmp_##D##_##S(D f, S x) {                                                    \
        if (IS_FLT(S) || sizeof(S) <= 4) {                                                  \
            double a = (double)f, b = (double)x;                                            \
            return (a > b) - (a < b);                                                       \
        }                                                                                   \
        if ((S)-1 < (S)0) {                                                                 \
            if (f >= 0x1p63) return 1;                                                      \
            long long a = (long long)f, b = (long long)x;                                   \
            return (a > b) - (a < b);                                                       \
        }                                                                                   \
        if (f >= 0x1p64) return 1;                                                          \
        unsigned long long a = (unsigned long long)f, b = (unsigned long long)x;            \
        return (a > b) - (a < b);                                                           \
    }
#define FLOAT_MODES(name, D, S, up, down)                                                   \
    EXACT_CMP(D, S)                                                                         \
    MODE_FN(name, D, S, _rte, (D)x)                                                         \
    MODE_FN(name, D, S, _rtz, ({                                                            \
                D f = (D)x;                                                                 \
                int c = cmp_##D##_##S(f, x);                                                \
                f > 0 && c > 0 ? down(f) : f < 0 && c < 0 ? up(f) : f;                      \
            }))                                                                             \
    MODE_FN(name, D, S, _rtp, ({                                                            \
                D f = (D)x;                                                                 \
                cmp_##D##_##S(f, x) < 0 ? up(f) : f;                                        \
            }))                                                                             \
    MODE_FN(name, D, S, _rtn, ({                                                            \
                D f = (D)x;                                                                 \
                cmp_##D##_##S(f, x) > 0 ? down(f) : f;                                      \
            }))
#define FLOAT_MODES_FROM_ALL(name, D, up, down)                                                \
    FLOAT_MODES(name, D, char, up, down) FLOAT_MODES(name, D, uchar, up, down)                 \
    FLOAT_MODES(name, D, short, up, down) FLOAT_MODES(name, D, ushort, up, down)               \
    FLOAT_MODES(name, D, int, up, down) FLOAT_MODES(name, D, uint, up, down)                   \
    FLOAT_MODES(name, D, llong, up, down) FLOAT_MODES(name, D, ullong, up, down)               \
    FLOAT_MODES(name, D, float, up, down) FLOAT_MODES(name, D, double, up, down)
#endif

#ifdef USES_convert_char_modes
INT_MODES_FROM_ALL(char, char, -128, 127)
#endif
#ifdef USES_convert_uchar_modes
INT_MODES_FROM_ALL(uchar, uchar, 0, 255)
#endif
#ifdef USES_convert_short_modes
INT_MODES_FROM_ALL(short, short, -32768, 32767)
#endif
#ifdef USES_convert_ushort_modes
INT_MODES_FROM_ALL(ushort, ushort, 0, 65535)
#endif
#ifdef USES_convert_int_modes
INT_MODES_FROM_ALL(int, int, -2147483647 - 1, 2147483647)
#endif
#ifdef USES_convert_uint_modes
INT_MODES_FROM_ALL(uint, uint, 0, 4294967295u)
#endif
#ifdef USES_convert_long_modes
INT_MODES_FROM_ALL(long, llong, -9223372036854775807ll - 1, 9223372036854775807ll)
#endif
#ifdef USES_convert_ulong_modes
INT_MODES_FROM_ALL(ulong, ullong, 0, 18446744073709551615ull)
#endif
#ifdef USES_convert_float_modes
FLOAT_MODES_FROM_ALL(float, float, step_up_f, step_down_f)
#endif
#ifdef USES_convert_double_modes
FLOAT_MODES_FROM_ALL(double, double, step_up_d, step_down_d)
#endif

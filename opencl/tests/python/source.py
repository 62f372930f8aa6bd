"""OpenCL C from source on the XRT card, through PyOpenCL: kernels over 1-D and 2-D NDRanges
with offsets and local sizes, float, double and long scalars, the work-group sizes OpenCL
refuses, build logs that name what is wrong, and an endless kernel that the card's deadline
ends while the program goes on; several programs at once, their kernels launched in turns;
work-groups that share __local memory and meet at barriers, and what must not hang them;
vectors, structs and narrow numbers by value; launches large enough that the card runs their
work-groups in shares over its cores, each work-group once; programs compiled apart, with
embedded headers, and linked, and the links that must fail; kernels named as SYCL names them,
hundreds of characters long.
Prints one line per check and "N failed" last."""

import gc
import sys

import numpy as np
import pyopencl as cl

failed = 0


def expect(ok, what):
    global failed
    print(f"{what}: {'ok' if ok else 'FAILED'}")
    failed += not ok


def release():
    gc.collect()


def build_log(context, source):
    """What a failed build says, its log among it (None when it builds)."""
    try:
        cl.Program(context, source).build()
    except cl.Error as error:
        return str(error)
    return None


SOURCE = """
__kernel void where(__global int *out, int width) {
    int x = get_global_id(0) - get_global_offset(0);
    int y = get_global_id(1) - get_global_offset(1);
    out[y * width + x] = get_group_id(0) * 1000000 + get_local_id(0) * 10000
        + get_global_id(1) * 10 + (get_work_dim() == 2)
        + (get_global_size(0) == 48) * 100 + (get_num_groups(1) == 5) * 200;
}

__kernel void axpb(__global const float *a, __global double *r, float k, double b, long big) {
    int i = get_global_id(0);
    r[i] = sqrt(a[i]) * k + b + (double)(big >> 40);
}

__kernel void endless(__global volatile int *flag) { while (flag[0] == 0) {} }

__kernel void one(__global int *x) { x[get_global_id(0)] = 1; }

__kernel void more_math(__global const float *x, __global float *r, __global const double *d,
                        __global int *classes) {
    int i = get_global_id(0);
    float v = x[i];
    r[i] = sinh(v) + cosh(v) + asin(v * 0.5f) + atan2(v, 2.0f) + log10(v + 1.0f) + cbrt(v)
        + hypot(v, 3.0f) + ldexp(v, 3) + mix(v, 2.0f, 0.25f) + step(0.5f, v)
        + sign(v - 0.5f) + degrees(v) + logb(v + 3.0f);
    classes[i] = isnan(d[i]) + isinf(d[i]) * 2 + isfinite(d[i]) * 4 + signbit(d[i]) * 8
        + (isnan((float2)((float)d[i], 0.0f)).x == -1) * 16
        + (isinf((double4)(1.0, d[i], 0.0, 2.0)).y == -1L) * 32;
}

__kernel void vectors(__global const uint *u, __global float *f, __global const float *g,
                      __global int *n) {
    int i = get_global_id(0);
    vstore4(convert_float4(vload4(i, u)) * 0.5f, i, f);
    n[i] = convert_int(g[i]);
    n[4 + i] = (int)((convert_long4(vload4(i, u)) * 4294967296l).w >> 32);
}

__kernel void through(__global const float *x, __global float *out, __global float *whole,
                      __global int *ints) {
    int i = get_global_id(0);
    float c;
    int e;
    float s = sincos(x[i], &c);
    float m = frexp(x[i], &e);
    out[i] = s + c * 10.0f + m * 100.0f + atan2pi(x[i], 1.0f) * 1000.0f
        + modf(x[i], &whole[i]) * 10000.0f;
    ints[i] = e * 1000 + abs(-i);
}

__kernel void maybe(__global int *out, __global const int *in) {
    int i = get_global_id(0);
    out[i] = in ? in[i] : -1;
}
"""


GROUPS = """
__kernel void group_sums(__global const float *a, __local float *scratch, __global float *out) {
    __local float first[1];
    size_t l = get_local_id(1) * get_local_size(0) + get_local_id(0);
    size_t n = get_local_size(0) * get_local_size(1);
    size_t g = get_global_id(1) * get_global_size(0) + get_global_id(0);
    if (l == 0) first[0] = a[g];
    scratch[l] = a[g];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = n / 2; s > 0; s >>= 1) {
        if (l < s) scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        out[get_group_id(1) * get_num_groups(0) + get_group_id(0)] = scratch[0] + first[0] * 0.5f;
}

typedef int count_t;

__kernel void private_across(__global int *out, const count_t n) {
    int mine[64];
    int l = get_local_id(0);
    for (int i = 0; i < n; i++) mine[i] = l * i;
    barrier(CLK_LOCAL_MEM_FENCE);
    int sum = 0;
    for (int i = 0; i < n; i++) sum += mine[i];
    out[get_global_id(0)] = sum;
}

__kernel void divergent(__global int *out) {
    if (get_local_id(0) % 2) barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = 7;
}

__kernel void two_ways(__global int *out) {
    size_t l = get_local_id(0);
    int v = (int)l;
    if (l % 2) {
        v += 100;
        barrier(CLK_LOCAL_MEM_FENCE);
        v += 1000;
    } else {
        v += 200;
        barrier(CLK_LOCAL_MEM_FENCE);
        v += 2000;
    }
    out[get_global_id(0)] = v;
}

__kernel void ids_across(__global uint *out, __local uint *seen) {
    size_t x = get_local_id(0), y = get_local_id(1), z = get_local_id(2);
    size_t l = (z * get_local_size(1) + y) * get_local_size(0) + x;
    size_t n = get_local_size(0) * get_local_size(1) * get_local_size(2);
    seen[l] = (uint)l;
    barrier(CLK_LOCAL_MEM_FENCE);
    size_t i = ((get_global_id(2) - get_global_offset(2)) * get_global_size(1)
                + get_global_id(1) - get_global_offset(1)) * get_global_size(0)
               + get_global_id(0) - get_global_offset(0);
    out[i] = seen[n - 1 - l] * 1000000u + (uint)(get_global_id(0) * 10000 + get_global_id(1) * 100
                                                 + get_global_id(2));
}

__kernel void endless_after(__global volatile int *flag, __local int *wait) {
    wait[get_local_id(0)] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    while (flag[0] == 0) {}
}

__kernel void private_beyond(__global int *out) {
    int mine[2048];
    int l = get_local_id(0);
    for (int i = 0; i < 2048; i++) mine[i] = l + i;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = mine[l];
}
"""

# A barrier reached through a function the kernel calls: the card suspends its work-items
# there (the program is not split at barriers when compiled).
THROUGH_HELPER = """
void meet(void) { barrier(CLK_LOCAL_MEM_FENCE); }

__kernel void reversed(__global int *out, __local int *tmp) {
    int l = get_local_id(0);
    tmp[l] = l * 3;
    meet();
    out[get_global_id(0)] = tmp[get_local_size(0) - 1 - l];
}
"""


def groups(context, queue):
    """Work-groups that share __local memory and meet at barriers."""
    flags = cl.mem_flags
    program = cl.Program(context, GROUPS).build()
    group_sums, divergent = (cl.Kernel(program, name) for name in ("group_sums", "divergent"))
    a = np.arange(32 * 8, dtype=np.float32)
    buffer_a = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
    out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 8)
    group_sums(queue, (32, 8), (8, 4), buffer_a, cl.LocalMemory(4 * 32), out)
    got = np.empty(8, dtype=np.float32)
    cl.enqueue_copy(queue, got, out)
    tiles = a.reshape(2, 4, 4, 8).transpose(0, 2, 1, 3).reshape(8, 32)
    want = tiles.sum(1) + tiles[:, 0] * 0.5
    expect(np.allclose(got, want), "a 2-D work-group sums through __local memory and barriers")

    big = np.arange(2048, dtype=np.float32)
    buffer_big = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=big)
    out_big = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 2)
    group_sums(queue, (2048, 1), (1024, 1), buffer_big, cl.LocalMemory(4 * 1024),
                       out_big)
    got = np.empty(2, dtype=np.float32)
    cl.enqueue_copy(queue, got, out_big)
    want = big.reshape(2, 1024).sum(1) + big[::1024] * 0.5
    expect(np.allclose(got, want), "and so does a work-group of 1024")

    ids = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 96)
    program.ids_across(queue, (4, 6, 4), (2, 3, 2), ids, cl.LocalMemory(4 * 12),
                       global_offset=(5, 7, 9))
    got = np.empty(96, dtype=np.uint32)
    cl.enqueue_copy(queue, got, ids)
    gz, gy, gx = np.meshgrid(np.arange(4), np.arange(6), np.arange(4), indexing="ij")
    local = ((gz % 2) * 3 + gy % 3) * 2 + gx % 2
    want = (11 - local) * 1000000 + (gx + 5) * 10000 + (gy + 7) * 100 + (gz + 9)
    expect(np.array_equal(got, want.ravel().astype(np.uint32)),
           "a 3-D work-group with an offset reads its ids on both sides of a barrier")

    sums = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 64)
    program.private_across(queue, (64,), (32,), sums, np.int32(64))
    got = np.empty(64, dtype=np.int32)
    cl.enqueue_copy(queue, got, sums)
    want = (np.arange(64) % 32) * sum(range(64))
    expect(np.array_equal(got, want), "each work-item keeps its private memory across a barrier "
           "(and a const argument of a typedef'd type is a number)")

    reversed_out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 64)
    cl.Program(context, THROUGH_HELPER).build().reversed(
        queue, (64,), (32,), reversed_out, cl.LocalMemory(4 * 32))
    got = np.empty(64, dtype=np.int32)
    cl.enqueue_copy(queue, got, reversed_out)
    want = (31 - np.arange(64) % 32) * 3
    expect(np.array_equal(got, want), "a barrier reached through a function the kernel calls")

    beyond = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 1024)
    event = program.private_beyond(queue, (1024,), (1024,), beyond)
    try:
        event.wait()
    except cl.Error:
        pass
    expect(event.command_execution_status < 0,
           "more private memory across a barrier than the card gives a work-group fails its launch")
    queue = cl.CommandQueue(context)

    sevens = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 16)
    divergent(queue, (16,), (8,), sevens).wait()
    got = np.empty(16, dtype=np.int32)
    cl.enqueue_copy(queue, got, sevens)
    expect(np.all(got == 7), "a barrier only some work-items reach does not hang the group")
    program.two_ways(queue, (16,), (8,), sevens).wait()
    cl.enqueue_copy(queue, got, sevens)
    lanes = np.arange(16) % 8
    want = lanes + np.where(lanes % 2 == 1, 1100, 2200)
    expect(np.array_equal(got, want), "work-items at two barriers each go on from their own")

    try:
        group_sums(queue, (32, 8), (8, 4), buffer_a, np.int32(7), out)
        expect(False, "a __local argument given a value is refused")
    except cl.Error as error:
        expect("INVALID_ARG_VALUE" in str(error), "a __local argument given a value is refused")

    try:
        group_sums(queue, (32, 8), (8, 4), buffer_a, cl.LocalMemory(1 << 30), out)
        expect(False, "more __local memory than the card gives is refused")
    except cl.Error as error:
        expect("OUT_OF_RESOURCES" in str(error), "more __local memory than the card gives is refused")

    queue = cl.CommandQueue(context)
    flag = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                     hostbuf=np.zeros(4, dtype=np.int32))
    event = program.endless_after(queue, (64,), (64,), flag, cl.LocalMemory(4 * 64))
    try:
        event.wait()
    except cl.Error:
        pass
    expect(event.command_execution_status < 0, "an endless work-group fails at the deadline")
    queue = cl.CommandQueue(context)
    divergent(queue, (16,), (8,), sevens).wait()
    cl.enqueue_copy(queue, got, sevens)
    expect(np.all(got == 7), "and the card goes on")
    return queue


VALUES = """
typedef struct { float re, im; } complex_t;
typedef struct { int a; char b; } odd_t;
typedef struct { double w[3]; int n; } wide_t;

__kernel void by_value(__global float *out, complex_t c, float4 v, char small, odd_t o,
                       wide_t w, double2 d, long big) {
    int i = get_global_id(0);
    out[i * 8 + 0] = c.re;
    out[i * 8 + 1] = c.im;
    out[i * 8 + 2] = v.x + v.y * 10 + v.z * 100 + v.w * 1000;
    out[i * 8 + 3] = small;
    out[i * 8 + 4] = o.a + o.b;
    out[i * 8 + 5] = w.w[0] + w.w[1] + w.w[2] + w.n;
    out[i * 8 + 6] = d.x - d.y;
    out[i * 8 + 7] = i + (big >> 40);
}

__kernel void many(__global int *out, MANY_PARAMS) { out[get_global_id(0)] = MANY_SUM; }
"""


SHARED = """
__kernel void ids(__global uint *out) {
    size_t i = (get_global_id(2) * get_global_size(1) + get_global_id(1)) * get_global_size(0)
        + get_global_id(0);
    out[i] = (get_group_id(0) + get_group_id(1) * 64 + get_group_id(2) * 4096) * 256
        + get_local_id(0) + get_local_id(1) * 16 + (get_num_groups(2) == 3) * 128;
}

__kernel void tile_sums(__global const float *a, __local float *scratch, __global float *out) {
    size_t l = get_local_id(1) * get_local_size(0) + get_local_id(0);
    scratch[l] = a[get_global_id(1) * get_global_size(0) + get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) * get_local_size(1) / 2; s > 0; s >>= 1) {
        if (l < s) scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[get_group_id(1) * get_num_groups(0) + get_group_id(0)] = scratch[0];
}
"""


ATOMICS = """
__kernel void histogram(__global const uint *keys, __global uint *bins) {
    uint key = keys[get_global_id(0)];
    for (uint i = 0; i < 64; i++) atomic_inc(&bins[(key + i) & 15]);
}

__kernel void local_histogram(__global const uint *keys, __global uint *bins,
                              __local uint *mine) {
    size_t l = get_local_id(0);
    if (l < 16) mine[l] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_inc(&mine[keys[get_global_id(0)] & 15]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < 16) atomic_add(&bins[l], mine[l]);
}
"""

# A program of its own: its IR names cmpxchg, which alone keeps a launch from being shared.
ATOMIC_EXTREMES = """
__kernel void extremes(__global const int *values, __global int *out) {
    int v = values[get_global_id(0)];
    atomic_min(&out[0], v);
    atomic_max(&out[1], v);
    atomic_cmpxchg(&out[2], 0, 1);
    atomic_sub(&out[3], 1);
}
"""

# The same functions under the names of the int32 atomics extensions, which the card lists.
ATOM_FUNCTIONS = """
#pragma OPENCL EXTENSION cl_khr_global_int32_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_global_int32_extended_atomics : enable
#pragma OPENCL EXTENSION cl_khr_local_int32_base_atomics : enable
__kernel void tallies(__global const int *values, __global int *out, __local uint *seen) {
    int v = values[get_global_id(0)];
    if (get_local_id(0) == 0) seen[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    atom_inc(&seen[0]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) atom_add(&out[0], (int)seen[0]);
    atom_min(&out[1], v);
    atom_max(&out[2], v);
    atom_cmpxchg(&out[3], 0, 7);
    atom_xor(&out[4], v);
}
"""

ATOM64_FUNCTIONS = """
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
__kernel void wide_tallies(__global const long *values, __global long *out, __local long *sum) {
    long v = values[get_global_id(0)];
    if (get_local_id(0) == 0) sum[0] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    atom_add(&sum[0], v);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) atom_add(&out[0], sum[0]);
    atom_min(&out[1], v);
    atom_max(&out[2], v);
    atom_inc(&out[3]);
    atom_cmpxchg(&out[4], 0L, v);
}
"""


ASYNC_COPIES = """
__kernel void doubled_tiles(__global const float *in, __global float *out, __local float *tile) {
    size_t n = get_local_size(0), base = get_group_id(0) * n;
    event_t in_done = async_work_group_copy(tile, in + base, n, 0);
    wait_group_events(1, &in_done);
    tile[get_local_id(0)] *= 2.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    event_t out_done = async_work_group_strided_copy(out + get_group_id(0), tile, n,
                                                     get_num_groups(0), 0);
    wait_group_events(1, &out_done);
    prefetch(in, n);
}
"""


CONVERSION_MODES = """
__kernel void modes(__global const float *f, __global const int *i, __global const long *l,
                    __global const double *d, __global int *out, __global float *fout) {
    for (int k = 0; k < 8; k++) {
        out[k] = convert_short_sat(f[k]);
        out[8 + k] = convert_int_sat_rte(f[k]);
        out[16 + k] = convert_int_rtp(f[k]);
        out[24 + k] = convert_int_rtn(f[k]);
        out[32 + k] = convert_uchar_sat(i[k]);
        out[40 + k] = (int)convert_uint_sat(l[k]);
        fout[k] = convert_float_rtz(i[k]);
        fout[8 + k] = convert_float_rtp(i[k]);
        fout[16 + k] = convert_float_rtn(i[k]);
        fout[24 + k] = convert_float_rtz(d[k]);
        fout[32 + k] = convert_float_rtp(d[k]);
    }
    short4 s = convert_short4_sat(vload4(0, i));
    vstore4(convert_int4(s), 12, out);
}
"""


def conversion_modes(context, queue):
    """convert_T_sat and convert_T_rt*: saturation, NaN to 0, and each rounding mode, into
    integers and into floats (which round away from the nearest value when the mode says)."""
    program = cl.Program(context, CONVERSION_MODES).build()
    flags = cl.mem_flags
    f = np.array([-1000.5, -128.7, -2.5, 2.5, 126.6, 1e10, np.nan, -np.inf], dtype=np.float32)
    i = np.array([-5, 300, 100, 16777217, -16777217, 40000, -40000, 7], dtype=np.int32)
    l = np.array([-1, 5_000_000_000, 7, 4294967295, 0, -(1 << 40), 1 << 40, 12], dtype=np.int64)
    d = np.array([0.1, -0.1, 1.0, 3.4e38 * 10, 1e-50, -1e-50, 2.0 / 3, 0.0], dtype=np.float64)
    buffers = [cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
               for a in (f, i, l, d)]
    out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 52)
    fout = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 40)
    program.modes(queue, (1,), None, *buffers, out, fout)
    got = np.empty(52, dtype=np.int32)
    got_f = np.empty(40, dtype=np.float32)
    cl.enqueue_copy(queue, got, out)
    cl.enqueue_copy(queue, got_f, fout)

    def saturated(values, low, high, rounded):
        with np.errstate(invalid="ignore"):
            r = rounded(np.nan_to_num(values.astype(np.float64), nan=0.0))
        return np.clip(r, low, high).astype(np.int64)

    expect(np.array_equal(got[0:8], saturated(f, -32768, 32767, np.trunc)), "convert_short_sat")
    expect(np.array_equal(got[8:16], saturated(f, -2**31, 2**31 - 1, np.rint)),
           "convert_int_sat_rte (ties to even)")
    finite = np.isfinite(f) & (np.abs(f) < 2**31)
    expect(np.array_equal(got[16:24][finite], np.ceil(f[finite])), "convert_int_rtp")
    expect(np.array_equal(got[24:32][finite], np.floor(f[finite])), "convert_int_rtn")
    expect(np.array_equal(got[32:40], np.clip(i, 0, 255)), "convert_uchar_sat from int")
    expect(np.array_equal(got[40:48].view(np.uint32), np.clip(l, 0, 2**32 - 1)),
           "convert_uint_sat from long")
    expect(np.array_equal(got[48:52], np.clip(i[:4], -32768, 32767)), "convert_short4_sat")

    def directed(values, toward):
        nearest = values.astype(np.float32)
        exact = values.astype(np.float64) if values.dtype != np.int64 else values
        with np.errstate(over="ignore"):
            past = {"zero": np.abs(nearest.astype(np.float64)) > np.abs(exact),
                    "up": nearest.astype(np.float64) < exact,
                    "down": nearest.astype(np.float64) > exact}[toward]
            step = {"zero": np.float32(0), "up": np.float32(np.inf),
                    "down": np.float32(-np.inf)}[toward]
            return np.where(past, np.nextafter(nearest, step), nearest)

    expect(np.array_equal(got_f[0:8], directed(i, "zero")), "convert_float_rtz from int")
    expect(np.array_equal(got_f[8:16], directed(i, "up")), "convert_float_rtp from int")
    expect(np.array_equal(got_f[16:24], directed(i, "down")), "convert_float_rtn from int")
    expect(np.array_equal(got_f[24:32], directed(d, "zero")),
           "convert_float_rtz from double (past the largest float: the largest float)")
    expect(np.array_equal(got_f[32:40], directed(d, "up")), "convert_float_rtp from double")


HALVES = """
__kernel void halves(__global const half *in, __global float *read, __global half *out,
                     __global half *out4) {
    size_t i = get_global_id(0);
    read[i] = vload_half(i, in);
    vstore_half(read[i] * 3.0f, i, out);
    if (i % 4 == 0) vstorea_half4_rte(vload_half4(i / 4, in) * 3.0f, i / 4, out4);
}

__kernel void rounded(__global const float *f, __global const double *d, __global half *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    vstore_half_rte(f[i], i, out);
    vstore_half_rtz(f[i], n + i, out);
    vstore_half_rtp(f[i], 2 * n + i, out);
    vstore_half_rtn(f[i], 3 * n + i, out);
    vstore_half(d[i], 4 * n + i, out);
    vstore_half_rtz(d[i], 5 * n + i, out);
    vstorea_half2_rtp((double2)(d[i], 0), 6 * n / 2 + i, out);
    vstore_half_rtn(d[i], 8 * n + i, out);
}
"""


def half_loads_and_stores(context, queue):
    """vload_half and vstore_half: halves read as floats and written rounded to nearest even,
    subnormals, infinities and NaN included."""
    program = cl.Program(context, HALVES).build()
    flags = cl.mem_flags
    rng = np.random.default_rng(11)
    values = np.concatenate([
        rng.standard_normal(4000).astype(np.float16) * np.float16(100),
        np.array([0, -0.0, 6e-8, -6e-8, 3e-5, 65504, -65504, np.inf, -np.inf, np.nan,
                  1e-7, 2.5e-5, 0.1, 1 / 3, 21000, 22000], dtype=np.float16),
    ]).astype(np.float16)
    buffer_in = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=values)
    read = cl.Buffer(context, flags.WRITE_ONLY, size=values.size * 4)
    out = cl.Buffer(context, flags.WRITE_ONLY, size=values.nbytes)
    out4 = cl.Buffer(context, flags.WRITE_ONLY, size=values.nbytes)
    program.halves(queue, values.shape, None, buffer_in, read, out, out4)
    got_read = np.empty(values.size, dtype=np.float32)
    got_out = np.empty_like(values)
    got_out4 = np.empty_like(values)
    cl.enqueue_copy(queue, got_read, read)
    cl.enqueue_copy(queue, got_out, out)
    cl.enqueue_copy(queue, got_out4, out4)
    want_read = values.astype(np.float32)
    with np.errstate(over="ignore"):
        want_out = (want_read * np.float32(3)).astype(np.float16)
    expect(np.array_equal(got_read, want_read, equal_nan=True),
           "vload_half reads every half as NumPy does")
    same = lambda got: np.array_equal(got.view(np.uint16), want_out.view(np.uint16)) \
        or np.array_equal(got, want_out, equal_nan=True)
    expect(same(got_out) and same(got_out4),
           "vstore_half and vstorea_half4_rte round to nearest even as NumPy does")

    # Each rounding mode, from floats and from doubles: a value between two halves, its
    # negative, values past the largest half, the largest half, a double that a float would
    # round onto the halfway point, and one just past the smallest subnormal half.
    near = [1.0006, -1.0006, 70000.0, -70000.0, 65504.0, 1 + 2**-11 + 2**-40, 6e-8, -6e-8, 0.0]
    n = len(near)
    buffer_f = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR,
                         hostbuf=np.array(near, dtype=np.float32))
    buffer_d = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR,
                         hostbuf=np.array(near, dtype=np.float64))
    rounded = cl.Buffer(context, flags.WRITE_ONLY, size=2 * 9 * n)
    program.rounded(queue, (n,), None, buffer_f, buffer_d, rounded)
    got = np.empty(9 * n, dtype=np.uint16)
    cl.enqueue_copy(queue, got, rounded)
    rte_f = [0x3c01, 0xbc01, 0x7c00, 0xfc00, 0x7bff, 0x3c00, 0x0001, 0x8001, 0]
    rte_d = [0x3c01, 0xbc01, 0x7c00, 0xfc00, 0x7bff, 0x3c01, 0x0001, 0x8001, 0]
    rtz = [0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7bff, 0x3c00, 0x0001, 0x8001, 0]
    rtp = [0x3c01, 0xbc00, 0x7c00, 0xfbff, 0x7bff, 0x3c01, 0x0002, 0x8001, 0]
    rtn = [0x3c00, 0xbc01, 0x7bff, 0xfc00, 0x7bff, 0x3c00, 0x0001, 0x8002, 0]
    rtp_d = got[6 * n:8 * n].reshape(n, 2)
    for what, have, want in [
        ("_rte from floats", got[:n], rte_f), ("_rtz from floats", got[n:2 * n], rtz),
        ("_rtp from floats", got[2 * n:3 * n], rtp), ("_rtn from floats", got[3 * n:4 * n], rtn),
        ("from doubles, rounded once", got[4 * n:5 * n], rte_d),
        ("_rtz from doubles", got[5 * n:6 * n], rtz), ("vstorea_half2_rtp from doubles",
                                                      rtp_d[:, 0], rtp),
        ("_rtn from doubles", got[8 * n:9 * n], rtn),
    ]:
        expect(list(have) == want, f"vstore_half{what}: {[hex(h) for h in have]}")
    with np.errstate(over="ignore"):
        numpy_d = np.array(near).astype(np.float16).view(np.uint16)
        numpy_f = np.array(near, dtype=np.float32).astype(np.float16).view(np.uint16)
    expect(list(numpy_d) == rte_d and list(numpy_f) == rte_f,
           "and the expected halves to nearest even are NumPy's")


SHUFFLES = """
__kernel void shuffles(__global const float8 *f, __global const uchar16 *c,
                       __global const long2 *l, __global float4 *f_out,
                       __global uchar16 *c_out, __global long8 *l_out) {
    f_out[0] = shuffle(f[0], (uint4)(7, 0, 9, 3));
    c_out[0] = shuffle2(c[0], c[1], (uchar16)(31, 0, 16, 15, 1, 17, 48, 2, 3, 4, 5, 6, 7, 8, 9, 10));
    l_out[0] = shuffle2(l[0], l[1], (ulong8)(3, 2, 1, 0, 4, 5, 6, 7));
}
"""


def shuffles(context, queue):
    """shuffle and shuffle2: elements picked by a mask, only its bits that index counting."""
    flags = cl.mem_flags
    program = cl.Program(context, SHUFFLES).build()
    f = np.arange(8, dtype=np.float32) + np.float32(0.5)
    c = np.arange(32, dtype=np.uint8) * np.uint8(3)
    lv = np.array([-1, 2**40, 7, -(2**50)], dtype=np.int64)
    ins = [cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a) for a in (f, c, lv)]
    outs = [cl.Buffer(context, flags.WRITE_ONLY, size=n) for n in (16, 16, 64)]
    program.shuffles(queue, (1,), None, *ins, *outs)
    got_f, got_c, got_l = (np.empty(4, np.float32), np.empty(16, np.uint8), np.empty(8, np.int64))
    for got, out in zip((got_f, got_c, got_l), outs):
        cl.enqueue_copy(queue, got, out)
    expect(np.array_equal(got_f, f[[7, 0, 9 % 8, 3]]), "shuffle picks a float8's elements")
    mask = np.array([31, 0, 16, 15, 1, 17, 48, 2, 3, 4, 5, 6, 7, 8, 9, 10]) % 32
    expect(np.array_equal(got_c, c[mask]), "shuffle2 picks from two uchar16s one after the other")
    expect(np.array_equal(got_l, lv[[3, 2, 1, 0, 0, 1, 2, 3]]),
           "and from two long2s, a mask's higher bits ignored")


def async_copies(context, queue):
    """async_work_group_copy into __local memory, and a strided copy out of it."""
    program = cl.Program(context, ASYNC_COPIES).build()
    flags = cl.mem_flags
    values = np.arange(8 * 64, dtype=np.float32)
    buffer_in = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=values)
    out = cl.Buffer(context, flags.WRITE_ONLY, size=values.nbytes)
    program.doubled_tiles(queue, values.shape, (64,), buffer_in, out, cl.LocalMemory(4 * 64))
    got = np.empty_like(values)
    cl.enqueue_copy(queue, got, out)
    want = (values * 2).reshape(8, 64).T.reshape(-1)
    expect(np.array_equal(got, want),
           "async_work_group_copy in, a strided copy out, wait_group_events and prefetch")


def atomics(context, queue):
    """OpenCL C's atomic functions, over a launch large enough to be shared out were it not
    for them: every increment lands."""
    program = cl.Program(context, ATOMICS).build()
    flags = cl.mem_flags
    keys = np.random.default_rng(3).integers(0, 1 << 30, 1 << 20, dtype=np.uint32)
    buffer_keys = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=keys)
    # 64 KiB, so that the card maps the counts rather than copying them: both would be shared
    # out with the keys' 4 MiB, were it not for the atomics.
    bins = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                     hostbuf=np.zeros(16384, dtype=np.uint32))
    program.histogram(queue, keys.shape, (256,), buffer_keys, bins)
    program.local_histogram(queue, keys.shape, (256,), buffer_keys, bins, cl.LocalMemory(4 * 16))
    got = np.empty(16384, dtype=np.uint32)
    cl.enqueue_copy(queue, got, bins)
    want = 4 * keys.size + np.bincount(keys & 15, minlength=16)
    expect(np.array_equal(got[:16], want),
           "atomic_inc on __global and __local memory and atomic_add count every key")

    values = np.random.default_rng(5).integers(-1000, 1000, 4096, dtype=np.int32)
    buffer_values = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=values)
    start = np.array([1 << 30, -(1 << 30), 0, 0], dtype=np.int32)
    out = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=start)
    cl.Program(context, ATOMIC_EXTREMES).build().extremes(
        queue, values.shape, None, buffer_values, out)
    got = np.empty(4, dtype=np.int32)
    cl.enqueue_copy(queue, got, out)
    expect(list(got) == [values.min(), values.max(), 1, -4096],
           "atomic_min, atomic_max, atomic_cmpxchg and atomic_sub")

    listed = queue.device.extensions.split()
    expect(all(name in listed for name in (
        "cl_khr_global_int32_base_atomics", "cl_khr_global_int32_extended_atomics",
        "cl_khr_local_int32_base_atomics", "cl_khr_local_int32_extended_atomics")),
        "the card lists the int32 atomics extensions")
    start = np.array([0, 1 << 30, -(1 << 30), 0, 0], dtype=np.int32)
    out = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=start)
    cl.Program(context, ATOM_FUNCTIONS).build().tallies(
        queue, values.shape, (64,), buffer_values, out, cl.LocalMemory(4))
    got = np.empty(5, dtype=np.int32)
    cl.enqueue_copy(queue, got, out)
    expect(list(got) == [values.size, values.min(), values.max(), 7,
                         np.bitwise_xor.reduce(values)],
           "atom_inc, atom_add, atom_min, atom_max, atom_cmpxchg and atom_xor")

    # 64-bit values whose sums and extremes a 32-bit atomic would wrap or cut.
    expect("cl_khr_int64_base_atomics" in listed and "cl_khr_int64_extended_atomics" in listed,
           "the card lists the int64 atomics extensions")
    wide = np.random.default_rng(7).integers(-(1 << 40), 1 << 40, 4096, dtype=np.int64)
    buffer_wide = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=wide)
    start = np.array([1 << 41, 1 << 50, -(1 << 50), 0, 0], dtype=np.int64)
    out = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=start)
    cl.Program(context, ATOM64_FUNCTIONS).build().wide_tallies(
        queue, wide.shape, (64,), buffer_wide, out, cl.LocalMemory(8))
    got = np.empty(5, dtype=np.int64)
    cl.enqueue_copy(queue, got, out)
    expect(list(got[:4]) == [(1 << 41) + wide.sum(), wide.min(), wide.max(), wide.size]
           and got[4] in wide,
           "64-bit atom_add over __local and __global memory, atom_min, atom_max, atom_inc "
           "and atom_cmpxchg")


def shares(context, queue):
    """Launches of 1 MiB and more, which the card splits into shares of their work-groups
    run at once: every work-group runs once, with its own ids, and no share's work is lost."""
    program = cl.Program(context, SHARED).build()
    # 31 x 31 x 3 work-groups: the shares split inside a row of groups.
    out = np.zeros((3, 248, 496), dtype=np.uint32)
    buffer_out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, size=out.nbytes)
    program.ids(queue, (496, 248, 3), (16, 8, 1), buffer_out)
    cl.enqueue_copy(queue, out, buffer_out)
    z, y, x = np.indices(out.shape)
    want = ((x // 16) + (y // 8) * 64 + z * 4096) * 256 + x % 16 + (y % 8) * 16 + 128
    expect(np.array_equal(out, want), "a large 3-D launch runs every work-group once, in shares")

    a = np.random.default_rng(7).random((512, 512), dtype=np.float32)
    flags = cl.mem_flags
    buffer_a = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
    sums = cl.Buffer(context, flags.WRITE_ONLY, size=32 * 32 * 4)
    program.tile_sums(queue, (512, 512), (16, 16), buffer_a, cl.LocalMemory(4 * 256), sums)
    got = np.empty((32, 32), dtype=np.float32)
    cl.enqueue_copy(queue, got, sums)
    want = a.reshape(32, 16, 32, 16).sum(axis=(1, 3))
    expect(np.allclose(got, want, rtol=1e-4), "a large launch meeting at barriers sums each tile once, in shares")


def values(context, queue):
    """Vectors and structs by value, and numbers narrower than a word."""
    flags = cl.mem_flags
    source = (VALUES.replace("MANY_PARAMS", ", ".join(f"int a{i}" for i in range(48)))
              .replace("MANY_SUM", " + ".join(f"a{i}" for i in range(48))))
    program = cl.Program(context, source).build()
    by_value = cl.Kernel(program, "by_value")
    complex_t = np.dtype([("re", np.float32), ("im", np.float32)])
    odd_t = np.dtype([("a", np.int32), ("b", np.int8)], align=True)
    wide_t = np.dtype([("w", np.float64, 3), ("n", np.int32)], align=True)
    out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 8 * 4)
    by_value(queue, (4,), None, out,
             np.array((1.5, -2.5), dtype=complex_t),
             np.array([1, 2, 3, 4], dtype=np.float32),
             np.int8(-7),
             np.array((40, 2), dtype=odd_t),
             np.array(([0.5, 0.25, 0.125], 3), dtype=wide_t),
             np.array([10.0, 4.0], dtype=np.float64), np.int64(-3 << 40))
    got = np.empty((4, 8), dtype=np.float32)
    cl.enqueue_copy(queue, got, out)
    want = [1.5, -2.5, 4321, -7, 42, 3.875, 6]
    expect(all(np.allclose(got[i], want + [i - 3]) for i in range(4)),
           "vectors, structs (of 8 bytes, odd sizes and 32), a char and a long by value")
    try:
        by_value(queue, (4,), None, out, np.zeros(3, dtype=np.float32),
                 np.array([1, 2, 3, 4], dtype=np.float32), np.int8(0),
                 np.array((0, 0), dtype=odd_t), np.array(([0, 0, 0], 0), dtype=wide_t),
                 np.zeros(2, dtype=np.float64), np.int64(0))
        expect(False, "a value of the wrong size is refused")
    except cl.Error as error:
        expect("INVALID_ARG_SIZE" in str(error), "a value of the wrong size is refused")

    sums = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 2)
    cl.Kernel(program, "many")(queue, (2,), None, sums, *(np.int32(i) for i in range(48)))
    got = np.empty(2, dtype=np.int32)
    cl.enqueue_copy(queue, got, sums)
    expect(np.all(got == sum(range(48))), "a kernel of 49 arguments")
    expect(sorted(k.function_name for k in program.all_kernels()) == ["by_value", "many"],
           "clCreateKernelsInProgram gives every kernel of the program")


def long_names(context, queue):
    """Kernels named as SYCL names them (their mangled C++ types, hundreds of characters, two
    alike but for their ends) build, answer their names and run; a name past the card's
    limit is refused, saying so."""
    stem = "_ZTSZZ4mainENKUlRN4sycl3_V17handlerEE_clES2_EUlNS0_4itemILi1ELb1EEEE_" + "x" * 150
    add, scale = stem + "_add", stem + "_scale"
    program = cl.Program(context, f"""
        __kernel void {add}(__global int *x) {{ x[get_global_id(0)] += 3; }}
        __kernel void {scale}(__global int *x) {{ x[get_global_id(0)] *= 5; }}
        __kernel void short_one(__global int *x) {{ x[get_global_id(0)] -= 1; }}
    """).build()
    expect(sorted(program.kernel_names.split(";")) == sorted([add, scale, "short_one"]),
           "a program lists its kernels of 220 characters by their whole names")
    kernels = [cl.Kernel(program, name) for name in (add, scale, "short_one")]
    expect(kernels[0].function_name == add, "a kernel of 220 characters answers its whole name")
    data = np.arange(64, dtype=np.int32)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=data)
    for kernel in kernels:
        kernel(queue, (64,), None, buffer)
    got = np.empty_like(data)
    cl.enqueue_copy(queue, got, buffer)
    expect(np.array_equal(got, (data + 3) * 5 - 1),
           "kernels of 220 characters, alike but for their ends, each run their own code")
    del kernels, program
    release()
    log = build_log(context, f"__kernel void {'y' * 1025}(__global int *x) {{ x[0] = 1; }}")
    refused = log is not None and "at most 1024 characters" in log
    expect(refused, "a kernel name of 1025 characters is refused, and the log says the limit")
    if not refused:
        print(log)


def whole_platform(platform):
    """A context of every device of the platform, as the SYCL runtime makes: each device says
    it has a compiler, a build naming them all builds for the card and runs there, and a
    launch on a device that runs no kernels is refused, saying why."""
    devices = platform.get_devices()
    expect(len(devices) > 1 and all(d.compiler_available for d in devices),
           "every device of the platform says it has a compiler")
    context = cl.Context(devices)
    card = next(d for d in devices if d.vendor_id == 0x10EE)
    other = next(d for d in devices if d.vendor_id != 0x10EE)
    program = cl.Program(context, "__kernel void inc(__global int *x) { x[get_global_id(0)]++; }")
    # PyOpenCL's build cache keeps a binary per device named, and the program answers the
    # card's alone (CL_PROGRAM_DEVICES): built without it.
    program.build(devices=devices, cache_dir=False)
    data = np.arange(16, dtype=np.int32)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                       hostbuf=data)
    card_queue = cl.CommandQueue(context, card)
    program.inc(card_queue, data.shape, None, buffer)
    got = np.empty_like(data)
    cl.enqueue_copy(card_queue, got, buffer)
    expect(np.array_equal(got, data + 1),
           "a program built for every device of the platform runs on the card")
    try:
        program.inc(cl.CommandQueue(context, other), data.shape, None, buffer)
        expect(False, "a launch on a device that runs no kernels is refused")
    except cl.Error as error:
        expect("INVALID_PROGRAM_EXECUTABLE" in str(error),
               "a launch on a device that runs no kernels is refused")
    del program, context
    release()


def linked(context, queue):
    """clCompileProgram with an embedded header and clLinkProgram: a kernel calling a
    function another program defines, and the links that must fail."""
    library = cl.Program(context, "float scaled(float x) { return x * FACTOR; }").compile(
        options=["-DFACTOR=3.0f"])
    binary_type = library.get_build_info(context.devices[0],
                                         cl.program_build_info.BINARY_TYPE)
    expect(binary_type == cl.program_binary_type.COMPILED_OBJECT,
           "a compiled program is a compiled object")
    header = cl.Program(context, "#define OFFSET 2.0f\ninline float twice(float x) { return 2 * x; }")
    main = cl.Program(context, """
        #include "shape/offset.h"
        float scaled(float x);
        __kernel void apply(__global float *x) {
            int i = get_global_id(0);
            x[i] = twice(scaled(x[i])) + OFFSET;
        }
    """).compile(headers=[("shape/offset.h", header)])
    try:
        cl.Kernel(main, "apply")
        expect(False, "a compiled program has no kernels to launch before it is linked")
    except cl.Error as error:
        expect("INVALID_PROGRAM_EXECUTABLE" in str(error),
               "a compiled program has no kernels to launch before it is linked")
    program = cl.link_program(context, [library, main])
    x = np.arange(64, dtype=np.float32)
    buffer_x = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
    program.apply(queue, x.shape, None, buffer_x)
    got = np.empty_like(x)
    cl.enqueue_copy(queue, got, buffer_x)
    expect(np.array_equal(got, x * 6 + 2),
           "a kernel calls a function of another program and its header's, linked")

    twice_defined = cl.Program(context, "float scaled(float x) { return x; }").compile()
    for programs, options, says, what in [
        ([library, twice_defined, main], [], "LINK_PROGRAM_FAILURE", "a function defined twice"),
        ([main], [], "LINK_PROGRAM_FAILURE", "a function defined by no program"),
        ([library, main], ["-create-library"], "INVALID_LINKER_OPTIONS", "a library"),
        ([header], [], "INVALID_OPERATION", "a program never compiled"),
    ]:
        try:
            cl.link_program(context, programs, options=options)
            expect(False, f"{what} is refused")
        except cl.Error as error:
            expect(says in str(error), f"{what} is refused")
    for name in ["../offset.h", "/etc/hostname"]:
        try:
            cl.Program(context, '#include "x.h"\nfloat f(void) { return 1; }').compile(
                headers=[(name, header)])
            expect(False, f"a header named {name} is refused")
        except cl.Error as error:
            expect("COMPILE_PROGRAM_FAILURE" in str(error), f"a header named {name} is refused")


def main():
    platform = next(p for p in cl.get_platforms() if p.name == "accelhost")
    device = next(d for d in platform.get_devices() if d.vendor_id == 0x10EE)
    expect(device.compiler_available, "the card says it has a compiler")
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    flags = cl.mem_flags

    # What the build refuses, named in what it says; nothing is loaded meanwhile.
    for source, says, what in [
        ("__kernel void k(__global int *x) { x[0] = 1 }", "expected ';'", "a syntax error"),
        ('#include "/etc/hostname"\n__kernel void k(__global int *x) { x[0] = 1; }',
         "not by path", "an include by path"),
        ('#define P "/etc/hostname"\n#include P\n__kernel void k(__global int *x) {}',
         "outside its -I folders", "an include through a macro"),
        ("__kernel void k(__global float *x) { x[0] = lgamma_r(x[0], (__private int *)0); }",
         "not provided by the devices yet: lgamma_r", "a built-in not provided"),
        ("__kernel void k(struct { int a, b; } p, __global int *x) { x[0] = p.a; }",
         "vectors and named structs", "an argument of an unnamed struct"),
    ]:
        log = build_log(context, source) or ""
        expect(says in log, f"{what} is refused, and what it says names why")
        if says not in log:
            print(log)
        release()

    program = cl.Program(context, SOURCE).build()
    kernels = {name: cl.Kernel(program, name)
               for name in ("where", "axpb", "endless", "one", "more_math", "vectors",
                            "maybe", "through")}

    # 2-D, offsets and a local size: each work-item writes where it is.
    width, height = 48, 20
    out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * width * height)
    kernels["where"](queue, (width, height), (16, 4), out, np.int32(width),
                     global_offset=(3, 7))
    got = np.empty(width * height, dtype=np.int32)
    cl.enqueue_copy(queue, got, out)
    x, y = np.meshgrid(np.arange(width), np.arange(height))
    want = ((x // 16) * 1000000 + (x % 16) * 10000 + (y + 7) * 10 + 1 + 100 + 200).ravel()
    expect(np.array_equal(got, want), "a 2-D NDRange with offsets and local sizes")
    try:
        kernels["where"](queue, (width, height), (5, 4), out, np.int32(width))
        expect(False, "a local size that does not divide the global size is refused")
    except cl.Error as error:
        expect("INVALID_WORK_GROUP_SIZE" in str(error),
               "a local size that does not divide the global size is refused")

    # Scalars of each width and kind.
    n = 1000
    a = np.linspace(0, 1, n, dtype=np.float32)
    buffer_a = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
    result = cl.Buffer(context, flags.WRITE_ONLY, size=8 * n)
    kernels["axpb"](queue, (n,), None, buffer_a, result, np.float32(2.5), np.float64(0.125),
                    np.int64(3 << 40))
    r = np.empty(n, dtype=np.float64)
    cl.enqueue_copy(queue, r, result)
    expect(np.allclose(r, np.sqrt(a) * 2.5 + 0.125 + 3), "float, double and long scalars")

    # Math, common and classification built-ins, against NumPy.
    v = np.linspace(0, 1.5, 6, dtype=np.float32)
    d = np.array([np.nan, np.inf, -np.inf, 1.0, -0.0, -2.5])
    buffer_v = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=v)
    buffer_d = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=d)
    math_out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 6)
    classes_out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 6)
    kernels["more_math"](queue, (6,), None, buffer_v, math_out, buffer_d, classes_out)
    got = np.empty(6, dtype=np.float32)
    classes = np.empty(6, dtype=np.int32)
    cl.enqueue_copy(queue, got, math_out)
    cl.enqueue_copy(queue, classes, classes_out)
    want = (np.sinh(v) + np.cosh(v) + np.arcsin(v * 0.5) + np.arctan2(v, 2) + np.log10(v + 1)
            + np.cbrt(v) + np.hypot(v, 3) + np.ldexp(v, 3) + (v + (2 - v) * 0.25)
            + (v >= 0.5) + np.sign(v - 0.5) + np.degrees(v) + np.floor(np.log2(v + 3)))
    expect(np.allclose(got, want, rtol=1e-5), "math and common built-ins")
    expect(list(classes) == [17, 34, 42, 4, 12, 12],
           f"isnan, isinf, isfinite and signbit, of scalars and vectors ({list(classes)})")

    # Vector loads, stores and conversions; a float past int's range saturates.
    u = np.arange(16, dtype=np.uint32) * 3
    g = np.array([-2.7, 2.7, 3e9, -0.5], dtype=np.float32)
    buffer_u = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=u)
    buffer_g = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=g)
    halves = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 16)
    truncated = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 8)
    kernels["vectors"](queue, (4,), None, buffer_u, halves, buffer_g, truncated)
    got_halves = np.empty(16, dtype=np.float32)
    got_ints = np.empty(8, dtype=np.int32)
    cl.enqueue_copy(queue, got_halves, halves)
    cl.enqueue_copy(queue, got_ints, truncated)
    expect(np.array_equal(got_halves, u.astype(np.float32) * 0.5),
           "vload4, convert_float4 and vstore4")
    expect(list(got_ints[:4]) == [-2, 2, 2**31 - 1, 0], "convert_int truncates and saturates")
    expect(list(got_ints[4:]) == list(u[3::4]), "long vectors are 64 bits a lane")

    # Built-ins that give a result through a pointer, to private and to global memory.
    x = np.array([0.3, 1.5, 2.25, 7.75, -3.5], dtype=np.float32)
    buffer_x = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    through_out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 5)
    wholes = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 5)
    through_ints = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 5)
    kernels["through"](queue, (5,), None, buffer_x, through_out, wholes, through_ints)
    got = np.empty(5, dtype=np.float32)
    got_wholes = np.empty(5, dtype=np.float32)
    got_ints = np.empty(5, dtype=np.int32)
    for out, host in ((through_out, got), (wholes, got_wholes), (through_ints, got_ints)):
        cl.enqueue_copy(queue, host, out)
    mantissas, exponents = np.frexp(x)
    fractions, whole_parts = np.modf(x)
    want = (np.sin(x) + np.cos(x) * 10 + mantissas * 100 + np.arctan2(x, 1) / np.pi * 1000
            + fractions * 10000)
    expect(np.allclose(got, want, atol=1e-2) and np.array_equal(got_wholes, whole_parts)
           and list(got_ints) == list(exponents * 1000 + np.arange(5)),
           "sincos, frexp, modf, atan2pi and integer abs")

    # A NULL buffer argument is a null pointer in the kernel.
    maybe_out = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 8)
    maybe_in = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR,
                         hostbuf=np.arange(8, dtype=np.int32))
    got = np.empty(8, dtype=np.int32)
    kernels["maybe"](queue, (8,), None, maybe_out, None)
    cl.enqueue_copy(queue, got, maybe_out)
    expect(np.all(got == -1), "a NULL buffer argument is a null pointer")
    kernels["maybe"](queue, (8,), None, maybe_out, maybe_in)
    cl.enqueue_copy(queue, got, maybe_out)
    expect(np.array_equal(got, np.arange(8)), "and a buffer set after it is the buffer")

    # An endless kernel ends at the card's deadline; the card goes on.
    flag = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                     hostbuf=np.zeros(4, dtype=np.int32))
    event = kernels["endless"](queue, (1,), None, flag)
    try:
        event.wait()
    except cl.Error:
        pass
    expect(event.command_execution_status < 0, "an endless kernel fails at the deadline")
    queue = cl.CommandQueue(context)
    ones = cl.Buffer(context, flags.WRITE_ONLY, size=4 * 64)
    kernels["one"](queue, (64,), None, ones)
    got = np.empty(64, dtype=np.int32)
    cl.enqueue_copy(queue, got, ones)
    expect(np.all(got == 1), "the card goes on")

    # Programs side by side: each built while the others' kernels are alive, then launched
    # in turns on one buffer (a real card holds one image; the emulated one holds many).
    programs = [
        cl.Program(context, f"__kernel void add{k}(__global int *x) {{ x[get_global_id(0)] += {k}; }}")
        .build()
        for k in (1, 20, 300)
    ]
    adders = [getattr(p, f"add{k}") for p, k in zip(programs, (1, 20, 300))]
    counts = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                       hostbuf=np.zeros(16, dtype=np.int32))
    for _ in range(3):
        for adder in adders:
            adder(queue, (16,), None, counts)
        kernels["one"](queue, (1,), None, ones)
    got = np.empty(16, dtype=np.int32)
    cl.enqueue_copy(queue, got, counts)
    expect(np.all(got == 3 * 321), "three programs built one after another run in turns")

    # Two programs of one source are one image on the card: releasing the first leaves the
    # second's kernels running (PyOpenCL rebuilds its scans so).
    twice = "__kernel void twice(__global int *x) { x[get_global_id(0)] *= 2; }"
    first = cl.Program(context, twice).build()
    first_twice = cl.Kernel(first, "twice")
    second = cl.Program(context, twice).build()
    second_twice = cl.Kernel(second, "twice")
    first_twice(queue, (16,), None, counts)
    queue.finish()
    del first_twice, first
    release()
    second_twice(queue, (16,), None, counts)
    cl.enqueue_copy(queue, got, counts)
    expect(np.all(got == 4 * 3 * 321), "a program built twice runs after its first build is released")

    queue = groups(context, queue)
    values(context, queue)
    atomics(context, queue)
    async_copies(context, queue)
    half_loads_and_stores(context, queue)
    shuffles(context, queue)
    conversion_modes(context, queue)
    shares(context, queue)
    linked(context, queue)
    long_names(context, queue)
    whole_platform(platform)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""SPIR-V programs on the XRT card (clCreateProgramWithIL). Through dpctl and the SYCL
runtime, unmodified: the SPIR-V test files dpctl's wheel carries (OpenCL C's multi_kernel, and
the SYCL compiler's local-accessor kernels of ten element types, with their generic pointers
and instrumentation stubs), their kernels submitted with USM pointers, scalars and local
accessors. Through PyOpenCL: SPIR-V that clang and LLVM's translator make here from OpenCL C
(math, vectors, 64-bit numbers, atomics, __local memory and barriers, an asynchronous copy),
the device's IL versions and the program's IL read back, modules that are not SPIR-V refused
by name, a struct by value holding USM pointers (SPIR that clang makes into SPIR-V here,
submitted as bytes through dpctl), and kernels that try to leave their arguments (a pointer made from an integer, a
generic pointer past every buffer) failing their own launches while the program goes on.
Prints one line per check and "N failed" last. Usage: spirv.py CLANG TRANSLATOR."""

import ctypes
import gc
import os
import struct
import subprocess
import sys
import tempfile

import dpctl
import dpctl.memory as dpm
import dpctl.program as dpctl_program
import numpy as np
import pyopencl as cl
import pyopencl.cltypes

failed = 0


def expect(ok, what):
    global failed
    print(f"{what}: {'ok' if ok else 'FAILED'}")
    failed += not ok


def dpctl_input(name):
    folder = os.path.join(os.path.dirname(dpctl.__file__), "tests", "input_files")
    with open(os.path.join(folder, name), "rb") as module:
        return module.read()


def through_sycl():
    queue = dpctl.SyclQueue("opencl")
    expect(queue.sycl_device.vendor == "Xilinx" or "xocl" in queue.sycl_device.name,
           f"the SYCL queue is on the card ({queue.sycl_device.name})")

    program = dpctl_program.create_program_from_spirv(queue, dpctl_input("multi_kernel.spv"))
    n = 1000
    a = np.arange(n, dtype="i4")
    b = np.arange(n, dtype="i4") * 3 + 1
    on_card = [dpm.MemoryUSMDevice(a.nbytes, queue=queue) for _ in range(3)]
    queue.memcpy(dest=on_card[0], src=a, count=a.nbytes)
    queue.memcpy(dest=on_card[1], src=b, count=b.nbytes)
    c = np.zeros_like(a)
    queue.submit(program.get_sycl_kernel("add"), on_card, [n]).wait()
    queue.memcpy(dest=c, src=on_card[2], count=c.nbytes)
    expect(np.array_equal(c, a + b), "dpctl's multi_kernel.spv: add over USM")
    queue.submit(program.get_sycl_kernel("axpy"), on_card + [dpctl_int(7)], [n], [8]).wait()
    queue.memcpy(dest=c, src=on_card[2], count=c.nbytes)
    expect(np.array_equal(c, a + 7 * b), "dpctl's multi_kernel.spv: axpy with a scalar")

    for module, kinds in [
        ("local_accessor_kernel_inttys_fp32.spv",
         [("a", "i1"), ("h", "u1"), ("s", "i2"), ("t", "u2"), ("i", "i4"), ("j", "u4"),
          ("l", "i8"), ("m", "u8"), ("f", "f4")]),
        ("local_accessor_kernel_fp64.spv", [("d", "f8")]),
    ]:
        program = dpctl_program.create_program_from_spirv(queue, dpctl_input(module))
        for mangled, dtype in kinds:
            kernel = program.get_sycl_kernel(f"_ZTS14SyclKernel_SLMI{mangled}E")
            # Each work-item writes (its id + 1) times the sum of its work-group's local
            # memory, 2 from each work-item: small enough for 8-bit elements.
            lws, groups = (4, 2) if dtype[1] == "1" else (32, 10)
            x = np.ones(lws * groups, dtype=dtype)
            usm = dpm.MemoryUSMDevice(x.nbytes, queue=queue)
            queue.memcpy(dest=usm, src=x, count=x.nbytes)
            queue.submit(kernel, [usm, dpctl.LocalAccessor(dtype, (lws,))], [x.size],
                         [lws]).wait()
            result = np.empty_like(x)
            queue.memcpy(dest=result, src=usm, count=x.nbytes)
            wanted = (np.arange(1, x.size + 1) * (2 * lws)).astype(dtype)
            expect(np.array_equal(result, wanted),
                   f"the SYCL compiler's local-accessor kernel of {dtype} ({module})")


def dpctl_int(value):
    return ctypes.c_int(value)


def struct_view():
    """tests/kernels/struct_view.ll, the SPIR of a kernel taking a struct holding pointers."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "..", "tests", "kernels", "struct_view.ll")) as ir:
        return ir.read()


def struct_pointers_through_sycl(clang, translator):
    """A struct by value holding USM pointers, through the SYCL runtime as bytes: the card
    reaches what they point to; a pointer made from an integer is refused, naming the struct,
    and the next launch runs."""
    queue = dpctl.SyclQueue("opencl")
    program = dpctl_program.create_program_from_spirv(
        queue, spirv_of(clang, translator, struct_view(), "ir"))
    kernel = program.get_sycl_kernel("through_a_view")
    n, offset, scale, tag = 256, 5, 3, -7
    data = np.arange(n + offset, dtype="i4") * 11
    weights = np.arange(n, dtype="f4") * 2
    on_card = {name: dpm.MemoryUSMDevice(array.nbytes, queue=queue)
               for name, array in [("data", data), ("weights", weights)]}
    queue.memcpy(dest=on_card["data"], src=data, count=data.nbytes)
    queue.memcpy(dest=on_card["weights"], src=weights, count=weights.nbytes)
    out = dpm.MemoryUSMDevice(n * 4, queue=queue)

    def view(data_address, weights_address):
        return dpctl.RawKernelArg(struct.pack("<iiqQhxxxxxxQ", scale, 0, offset, data_address,
                                              tag, weights_address))

    def run(data_address):
        queue.submit(kernel, [out, view(data_address, on_card["weights"]._pointer)],
                     [n]).wait()
        got = np.empty(n, dtype="i4")
        queue.memcpy(dest=got, src=out, count=got.nbytes)
        return got

    wanted = data[offset:] * scale + tag + weights.astype("i4")
    expect(np.array_equal(run(on_card["data"]._pointer), wanted),
           "a struct by value holding USM pointers, one in a struct inside it")
    try:
        run(0x1234_5000)
        said = None
    except Exception as error:  # the SYCL runtime's error, whatever its class
        said = str(error)
    expect(said is not None, f"a struct holding a pointer made from an integer is refused ({said})")
    expect(np.array_equal(run(on_card["data"]._pointer), wanted), "the next launch runs, exact")


SOURCE = r"""
__kernel void math(__global const float *a, __global float *r, __global long *wide,
                   __global int *count, ulong big, char small) {
    size_t i = get_global_id(0);
    r[i] = sin(a[i]) * 2.0f + sqrt(a[i]) + fmax(a[i], 1.5f) + small;
    wide[i] = abs((long)i - (long)(big >> 3)) + (long)popcount(big) + clz((uint)i + 1u);
    atomic_add(count, 1);
    if (i % 4 == 0) {
        float4 v = vload4(i / 4, a);
        vstore4(v * 2.0f + (float4)(1.0f, 2.0f, 3.0f, 4.0f), i / 4 + get_global_size(0) / 4, r);
    }
}

__kernel void group_sums(__global const int *in, __global int *out, __local int *scratch) {
    size_t l = get_local_id(0);
    __local int copied[64];
    event_t e = async_work_group_copy(copied, in + get_group_id(0) * get_local_size(0),
                                      get_local_size(0), 0);
    wait_group_events(1, &e);
    scratch[l] = copied[l];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (l < s) scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[get_group_id(0)] = scratch[0];
}

__kernel void from_an_integer(__global int *a, ulong where) {
    a[get_global_id(0)] = 1;
    *(__global int *)where = 7;
}

__kernel void fine(__global int *a) { a[get_global_id(0)] = get_global_id(0) * 3; }

typedef struct { int a; float b; long c; } Big;
typedef struct { short x, y; } Small;
__kernel void by_value(__global float *out, Big big, Small small, int4 v, float2 f) {
    out[get_global_id(0)] = big.a + big.b + big.c + small.x * small.y + v.w + f.y
        + get_global_id(0);
}
"""

# SPIR IR with two specialization constants (as a SYCL compiler writes them), an int 7
# defaulting to 5 and a float 9 defaulting to 1.5.
CONSTANTS = r"""
target triple = "spir64-unknown-unknown"

define spir_kernel void @constants(i32 addrspace(1)* %out, float addrspace(1)* %f) {
  %a = call spir_func i32 @_Z20__spirv_SpecConstantii(i32 7, i32 5)
  store i32 %a, i32 addrspace(1)* %out
  %b = call spir_func float @_Z20__spirv_SpecConstantif(i32 9, float 1.5)
  store float %b, float addrspace(1)* %f
  ret void
}
declare spir_func i32 @_Z20__spirv_SpecConstantii(i32, i32)
declare spir_func float @_Z20__spirv_SpecConstantif(i32, float)
!opencl.ocl.version = !{!0}
!opencl.spir.version = !{!0}
!0 = !{i32 1, i32 2}
"""

# OpenCL 2.0's work-group and sub-group functions, which SYCL kernels call.
COLLECTIVES = r"""
__kernel void collectives(__global const int *in, __global int *sums, __global int *scans,
                          __global long *wide, __global float *top, __global int *subs) {
    size_t i = get_global_id(0);
    int x = in[i];
    sums[i] = work_group_reduce_add(x);
    scans[i] = work_group_scan_inclusive_add(x) * 1000 + work_group_scan_exclusive_min(x);
    wide[i] = work_group_reduce_max((long)x * 100000000L) + work_group_broadcast((long)x, 3);
    top[i] = work_group_reduce_max((float)x / 2);
    subs[i] = get_sub_group_size() * 1000 + get_sub_group_local_id() * 100
        + (work_group_all(x > -1000) ? 1 : 0) + (work_group_any(x == 5) ? 2 : 0)
        + sub_group_reduce_add(x) * 10000;
}
"""

# OpenCL 2.0's ctz, which SYCL's sorts call, on 32-bit and 64-bit integers.
TRAILING_ZEROS = r"""
__kernel void trailing_zeros(__global const long *in, __global int *narrow, __global long *wide) {
    size_t i = get_global_id(0);
    narrow[i] = ctz((int)in[i]);
    wide[i] = ctz(in[i]);
}
"""

GENERIC = r"""
__kernel void through_generic(__global int *a, int far) {
    int *anywhere = (int *)a;
    anywhere[far] = 7;
}
"""


def spirv_of(clang, translator, source, std, *flags):
    """SPIR-V of OpenCL C `source` in the language version `std`, or of SPIR IR when `std` is
    "ir"."""
    with tempfile.TemporaryDirectory() as work:
        source_file = os.path.join(work, "k.ll" if std == "ir" else "k.cl")
        with open(source_file, "w") as out:
            out.write(source)
        # SPIR is taken as a SYCL compiler hands it on, already optimized: clang's optimizer
        # would lay its struct accesses out anew.
        language = ["-x", "ir", "-O0"] if std == "ir" else [
            "-x", "cl", f"-cl-std={std}", "-Xclang", "-finclude-default-header", "-O2"]
        subprocess.run([clang, *language, *flags, "--target=spir64-unknown-unknown",
                        "-emit-llvm", "-c", source_file, "-o", os.path.join(work, "k.bc")],
                       check=True)
        subprocess.run([translator, os.path.join(work, "k.bc"), "-o",
                        os.path.join(work, "k.spv")], check=True)
        with open(os.path.join(work, "k.spv"), "rb") as spv:
            return spv.read()


def program_il(program):
    """CL_PROGRAM_IL through the ICD loader (PyOpenCL reads it as text)."""
    opencl = ctypes.CDLL("libOpenCL.so.1")
    opencl.clGetProgramInfo.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_size_t,
                                        ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
    handle = ctypes.c_void_p(program.int_ptr)
    size = ctypes.c_size_t()
    if opencl.clGetProgramInfo(handle, 0x1169, 0, None, ctypes.byref(size)) != 0:
        return None
    out = ctypes.create_string_buffer(size.value)
    if opencl.clGetProgramInfo(handle, 0x1169, size, out, None) != 0:
        return None
    return out.raw


def launch_fails(queue, kernel, size, *args):
    kernel.set_args(*args)
    try:
        cl.enqueue_nd_range_kernel(queue, kernel, (size,), None).wait()
    except cl.Error as error:
        return str(error)
    return None


def through_pyopencl(clang, translator):
    platform = next(p for p in cl.get_platforms() if p.name == "accelhost")
    device = next(d for d in platform.get_devices() if d.vendor_id == 0x10EE)
    versions = device.get_info(cl.device_info.IL_VERSION)
    expect("SPIR-V_1.0" in versions and "SPIR-V_1.4" in versions,
           f"the card takes SPIR-V 1.0 to 1.4 ({versions})")
    expect("cl_khr_il_program" in device.extensions, "the card lists cl_khr_il_program")
    context = cl.Context([device])
    queue = cl.CommandQueue(context)
    flags = cl.mem_flags

    il = spirv_of(clang, translator, SOURCE, "CL1.2")
    program = cl.Program(context, il).build()
    expect(program_il(program) == il, "the program's IL reads back (CL_PROGRAM_IL)")
    names = set(program.get_info(cl.program_info.KERNEL_NAMES).split(";"))
    expect(names == {"math", "group_sums", "from_an_integer", "fine", "by_value"},
           f"the program's kernels are named ({names})")

    n = 64
    a = (np.arange(n, dtype=np.float32) + 1) / 4
    a_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
    r_buf = cl.Buffer(context, flags.READ_WRITE, size=2 * n * 4)
    wide_buf = cl.Buffer(context, flags.READ_WRITE, size=n * 8)
    count = np.zeros(1, dtype=np.int32)
    count_buf = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=count)
    big = (1 << 40) + 0xFF
    program.math(queue, (n,), (16,), a_buf, r_buf, wide_buf, count_buf, np.uint64(big),
                 np.int8(-3))
    r = np.empty(2 * n, dtype=np.float32)
    wide = np.empty(n, dtype=np.int64)
    cl.enqueue_copy(queue, r, r_buf)
    cl.enqueue_copy(queue, wide, wide_buf)
    cl.enqueue_copy(queue, count, count_buf)
    wanted = np.sin(a) * 2 + np.sqrt(a) + np.maximum(a, 1.5) - 3
    expect(np.allclose(r[:n], wanted, rtol=1e-5), "math built-ins and a char argument")
    vectors = (a.reshape(-1, 4) * 2 + np.array([1, 2, 3, 4], dtype=np.float32)).ravel()
    expect(np.allclose(r[n:], vectors[:n]), "vload4 and vstore4 at size_t offsets")
    wanted_wide = (np.abs(np.arange(n, dtype=np.int64) - (big >> 3)) + bin(big).count("1")
                   + np.array([32 - (i + 1).bit_length() for i in range(n)]))
    expect(np.array_equal(wide, wanted_wide), "64-bit numbers, bit counts and a ulong argument")
    expect(count[0] == n, f"atomic_add from every work-item ({count[0]})")

    groups, local = 8, 32
    numbers = np.arange(groups * local, dtype=np.int32) * 7 - 300
    in_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=numbers)
    out_buf = cl.Buffer(context, flags.WRITE_ONLY, size=groups * 4)
    program.group_sums(queue, (groups * local,), (local,), in_buf, out_buf,
                       cl.LocalMemory(local * 4))
    sums = np.empty(groups, dtype=np.int32)
    cl.enqueue_copy(queue, sums, out_buf)
    expect(np.array_equal(sums, numbers.reshape(groups, local).sum(axis=1)),
           "a work-group's sum through __local memory, barriers and an asynchronous copy")

    # Structs and vectors by value: in registers (up to 8 bytes) or as a copy (larger).
    big = np.array([(1, 2.5, 100)], dtype=np.dtype(
        [("a", "<i4"), ("b", "<f4"), ("c", "<i8")], align=True))[0]
    small = np.array([(3, 4)], dtype=np.dtype([("x", "<i2"), ("y", "<i2")]))[0]
    out_buf = cl.Buffer(context, flags.WRITE_ONLY, size=8 * 4)
    program.by_value(queue, (8,), None, out_buf, big, small,
                     cl.cltypes.make_int4(1, 2, 3, 4), cl.cltypes.make_float2(0.5, 0.25))
    out = np.empty(8, dtype=np.float32)
    cl.enqueue_copy(queue, out, out_buf)
    expect(np.array_equal(out, 119.75 + np.arange(8)),
           f"structs of 16 and 4 bytes and vectors of 16 and 8 bytes by value ({out[0]})")

    # Kernels that try to leave their arguments fail their own launches; the program goes on.
    a_int = cl.Buffer(context, flags.READ_WRITE, size=n * 4)
    fine = program.fine
    said = launch_fails(queue, program.from_an_integer, n, a_int, np.uint64(0xFFFF_FF00))
    expect(said is not None, f"a pointer made from an integer fails its launch ({said})")
    generic = cl.Program(context, spirv_of(clang, translator, GENERIC, "CL2.0")).build()
    said = launch_fails(queue, generic.through_generic, 1, a_int, np.int32(0x3000_0000))
    expect(said is not None, f"a generic pointer past every buffer fails its launch ({said})")
    fine(queue, (n,), None, a_int)
    back = np.empty(n, dtype=np.int32)
    cl.enqueue_copy(queue, back, a_int)
    expect(np.array_equal(back, np.arange(n) * 3), "the next launch runs, exact")

    values = np.array([1, 0, 8, 3 << 40, -(1 << 62), 1 << 31, 0x10000, 6], dtype=np.int64)
    values_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=values)
    narrow = cl.Buffer(context, flags.WRITE_ONLY, size=values.size * 4)
    wide = cl.Buffer(context, flags.WRITE_ONLY, size=values.size * 8)
    cl.Program(context, spirv_of(clang, translator, TRAILING_ZEROS, "CL2.0")).build() \
        .trailing_zeros(queue, values.shape, None, values_buf, narrow, wide)
    got_narrow = np.empty(values.size, np.int32)
    got_wide = np.empty(values.size, np.int64)
    cl.enqueue_copy(queue, got_narrow, narrow)
    cl.enqueue_copy(queue, got_wide, wide)

    def zeros(value, width):
        value &= (1 << width) - 1
        return width if value == 0 else (value & -value).bit_length() - 1

    expect(list(got_narrow) == [zeros(int(v), 32) for v in values]
           and list(got_wide) == [zeros(int(v), 64) for v in values],
           f"ctz of 32-bit and 64-bit integers ({list(got_narrow)}, {list(got_wide)})")

    newer = struct.pack("<5I", 0x07230203, 0x00010600, 0, 16, 0) + il[20:]
    # Work-group functions meet at barriers; each work-item is a sub-group of its own.
    groups, local = 4, 8
    x = (np.arange(groups * local, dtype=np.int32) * 37) % 23 - 9
    x[local + 2] = 5
    collectives = cl.Program(context, spirv_of(
        clang, translator, COLLECTIVES, "CL2.0", "-Xclang", "-cl-ext=+cl_khr_subgroups")).build()
    x_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    outs = [cl.Buffer(context, flags.WRITE_ONLY, size=x.size * size) for size in (4, 4, 8, 4, 4)]
    collectives.collectives(queue, (x.size,), (local,), x_buf, *outs)
    got = [np.empty(x.size, dtype) for dtype in (np.int32, np.int32, np.int64, np.float32,
                                                 np.int32)]
    for host, device in zip(got, outs):
        cl.enqueue_copy(queue, host, device)
    by_group = x.reshape(groups, local)
    inclusive = np.cumsum(by_group, axis=1)
    exclusive_min = np.concatenate(
        [np.full((groups, 1), 2**31 - 1), np.minimum.accumulate(by_group, axis=1)[:, :-1]],
        axis=1)
    wanted = [
        np.repeat(by_group.sum(axis=1), local),
        (inclusive * 1000 + exclusive_min).ravel().astype(np.int32),  # wraps as the kernel's int
        np.repeat(by_group.max(axis=1).astype(np.int64) * 100000000 + by_group[:, 3], local),
        np.repeat(by_group.max(axis=1) / 2, local).astype(np.float32),
        np.repeat(1000 + 1 + 2 * (by_group == 5).any(axis=1), local) + x * 10000,
    ]
    for what, host, want in zip(
            ["work_group_reduce_add", "inclusive and exclusive scans", "long reduce and broadcast",
             "float reduce", "sub-groups of one work-item, all and any"], got, wanted):
        expect(np.array_equal(host, want), f"{what} over work-groups of {local}")
        if not np.array_equal(host, want):
            print(host, want)

    # Specialization constants: their defaults, then values set before a build.
    constants_il = spirv_of(clang, translator, CONSTANTS, "ir")
    out_int = cl.Buffer(context, flags.READ_WRITE, size=4)
    out_float = cl.Buffer(context, flags.READ_WRITE, size=4)
    for settings, wanted, what in [
        ({}, (5, 1.5), "defaults"),
        ({7: np.int32(42), 9: np.float32(2.25)}, (42, 2.25), "values set"),
    ]:
        with_constants = cl.Program(context, constants_il)
        for spec_id, value in settings.items():
            with_constants._get_prg().set_specialization_constant(spec_id, value)
        with_constants = with_constants.build()
        with_constants.constants(queue, (1,), None, out_int, out_float)
        got_int, got_float = np.empty(1, np.int32), np.empty(1, np.float32)
        cl.enqueue_copy(queue, got_int, out_int)
        cl.enqueue_copy(queue, got_float, out_float)
        expect((got_int[0], got_float[0]) == wanted,
               f"specialization constants: {what} ({got_int[0]}, {got_float[0]})")
    unset = cl.Program(context, constants_il)._get_prg()
    for spec_id, value, says in [(8, np.int32(1), "INVALID_SPEC_ID"),
                                 (7, np.int64(1), "INVALID_VALUE")]:
        try:
            unset.set_specialization_constant(spec_id, value)
            said = ""
        except cl.Error as error:
            said = str(error)
        expect(says in said, f"a specialization constant refused: {says}")

    for il, says, what in [
        # The door says why on stderr, which the harness reads.
        (newer, "INVALID_VALUE", "a SPIR-V version too new"),
        (il[:len(il) // 8 * 4], "translator refused", "a module cut short"),
    ]:
        try:
            cl.Program(context, il).build()
            log = ""
        except cl.Error as error:
            log = str(error)
        expect(says in log, f"{what} is refused, and what it says names why")
        if says not in log:
            print(log)
    gc.collect()


def main():
    clang, translator = sys.argv[1], sys.argv[2]
    through_sycl()
    struct_pointers_through_sycl(clang, translator)
    through_pyopencl(clang, translator)
    print(f"{failed} failed")


main()

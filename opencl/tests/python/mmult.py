"""PyOpenCL running a kernel of the program's own from an xclbin: mmult of
tests/kernels/mmult.cpp (a Vitis-style matrix multiply with local buffers) as a task on
64x64 and 17x17 int matrices, each equal to NumPy's product; then `forever`, which only the
card's kernel deadline ends, fails its event; then mmult again. Usage: mmult.py <xclbin>."""

import sys

import numpy as np
import pyopencl as cl


def multiply(context, queue, mmult, size, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-50, 50, size=(size, size), dtype=np.int32)
    b = rng.integers(-50, 50, size=(size, size), dtype=np.int32)
    flags = cl.mem_flags
    buffer_a = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=a)
    buffer_b = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=b)
    buffer_c = cl.Buffer(context, flags.WRITE_ONLY, size=a.nbytes)
    mmult(queue, (1,), None, buffer_a, buffer_b, buffer_c, np.int32(size))
    c = np.empty_like(a)
    cl.enqueue_copy(queue, c, buffer_c)
    queue.finish()
    return int(np.count_nonzero(c != a @ b))


def main(xclbin_path):
    platform = next(p for p in cl.get_platforms() if p.name == "accelhost")
    device = next(d for d in platform.get_devices() if d.vendor_id == 0x10EE)
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    with open(xclbin_path, "rb") as image:
        program = cl.Program(context, [device], [image.read()]).build()

    mmult = cl.Kernel(program, "mmult")
    failed = 0
    for size, seed in ((64, 1), (17, 2)):
        wrong = multiply(context, queue, mmult, size, seed)
        print(f"mmult {size}x{size}: {wrong} mismatches")
        failed += wrong != 0

    flag = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=np.zeros(1024, dtype=np.int32))
    endless = program.forever(queue, (1,), None, flag)
    try:
        endless.wait()
    except cl.Error as error:
        print(f"waiting for forever: {type(error).__name__}")
    status = endless.command_execution_status
    print(f"forever ended with status {status}")
    failed += status >= 0

    queue = cl.CommandQueue(context, device)
    wrong = multiply(context, queue, mmult, 33, 3)
    print(f"mmult 33x33 after it: {wrong} mismatches")
    failed += wrong != 0
    print(f"{failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

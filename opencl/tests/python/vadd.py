"""PyOpenCL against accelhost's platform: copy 64 MiB through a buffer and back, and run the
vadd kernel of an xclbin on 16 Mi elements; both byte-exact. Usage: vadd.py <xclbin>."""

import sys

import numpy as np
import pyopencl as cl


def main(xclbin_path):
    platform = next(p for p in cl.get_platforms() if p.name == "accelhost")
    device = next(d for d in platform.get_devices() if d.vendor_id == 0x10EE)
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    flags = cl.mem_flags

    data = np.random.default_rng(7).integers(0, 256, size=64 << 20, dtype=np.uint8)
    through = cl.Buffer(context, flags.READ_WRITE, size=data.nbytes)
    cl.enqueue_copy(queue, through, data)
    back = np.empty_like(data)
    cl.enqueue_copy(queue, back, through)
    queue.finish()
    assert np.array_equal(back, data), "the 64 MiB came back changed"

    with open(xclbin_path, "rb") as image:
        program = cl.Program(context, [device], [image.read()]).build()
    elements = 16 << 20
    in1 = np.arange(elements, dtype=np.uint32) * np.uint32(2654435761)
    in2 = np.arange(elements, dtype=np.uint32) ^ np.uint32(0xA5A5A5A5)
    buffer_in1 = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=in1)
    buffer_in2 = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=in2)
    buffer_out = cl.Buffer(context, flags.WRITE_ONLY, size=in1.nbytes)
    program.vadd(queue, (1,), None, buffer_in1, buffer_in2, buffer_out, np.uint32(elements))
    out = np.empty_like(in1)
    cl.enqueue_copy(queue, out, buffer_out)
    queue.finish()
    mismatches = int(np.count_nonzero(out != in1 + in2))
    print(f"copied 64 MiB through {device.name}; vadd of {elements} elements: "
          f"{mismatches} mismatches")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

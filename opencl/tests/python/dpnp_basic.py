"""dpnp, unmodified, on the XRT card: arrays made and computed there by dpnp's own SYCL kernels
(SPIR-V images the SYCL runtime builds through its OpenCL adapter, in a context of every
device of the platform), each answer against NumPy's. Integer arrays, and float ones, which
dpnp hands to oneMKL's host code on a CPU device (it reads the arrays in place, so the card's
device allocations must be host memory); strided and broadcast work, whose kernels take
structs holding USM pointers by value; an fft, whose kernels call logb. Prints one line per check and "N failed" last."""

import sys

import dpctl
import dpnp
import numpy as np

failed = 0


def expect(ok, what):
    global failed
    print(f"{what}: {'ok' if ok else 'FAILED'}")
    failed += not ok


def main():
    queue = dpctl.SyclQueue("opencl")
    expect(queue.sycl_device.vendor == "Xilinx", f"the queue is on the card ({queue.sycl_device.name})")
    a = np.arange(-500, 1500, dtype=np.int32)
    b = (a * 7) % 113
    x = dpnp.asarray(a, sycl_queue=queue)
    y = dpnp.asarray(b, sycl_queue=queue)
    expect(x.sycl_queue == queue and np.array_equal(dpnp.asnumpy(x), a),
           "an array copied to the card reads back the same")
    f = np.linspace(-3, 3, 2000, dtype=np.float32)
    xf = dpnp.asarray(f, sycl_queue=queue)
    count = np.arange(2000, dtype=np.float32)
    halves = np.arange(64, dtype=np.float32) * 0.5
    checks = [
        ("add", lambda: x + y, a + b),
        ("add of floats", lambda: dpnp.arange(2000, dtype=dpnp.float32, sycl_queue=queue) + xf,
         count + f),
        ("multiply of floats", lambda: xf * xf, f * f),
        ("abs of floats", lambda: dpnp.abs(xf), np.abs(f)),
        ("exp of floats", lambda: dpnp.exp(xf), np.exp(f)),
        ("add of a scalar", lambda: xf + 1.5, f + np.float32(1.5)),
        ("where", lambda: dpnp.where(x > y, x, y), np.where(a > b, a, b)),
        ("mean", lambda: dpnp.mean(x.astype(dpnp.float64)), a.astype(np.float64).mean()),
        ("sum over an axis", lambda: dpnp.sum(x.reshape(40, 50), axis=0),
         a.reshape(40, 50).sum(axis=0)),
        ("transpose, copied", lambda: dpnp.ascontiguousarray(x.reshape(40, 50).T),
         np.ascontiguousarray(a.reshape(40, 50).T)),
        ("argmax", lambda: dpnp.argmax(y), np.argmax(b)),
        ("roll", lambda: dpnp.roll(x.reshape(40, 50), 3, axis=1), np.roll(a.reshape(40, 50), 3, axis=1)),
        # Its kernels call logb.
        ("fft of floats", lambda: dpnp.fft.fft(dpnp.asarray(halves, sycl_queue=queue)), np.fft.fft(halves)),
        ("multiply", lambda: x * y, a * b),
        ("sum", lambda: dpnp.sum(x), a.sum()),
        ("sum of floats", lambda: dpnp.sum(dpnp.asarray(a, dtype=dpnp.float32, sycl_queue=queue)),
         a.astype(np.float32).sum()),
        ("subtract", lambda: x - y, a - b),
        ("greater", lambda: x > y, a > b),
        ("astype", lambda: x.astype(dpnp.float32), a.astype(np.float32)),
        ("cumsum", lambda: dpnp.cumsum(y), b.cumsum()),
        ("max", lambda: dpnp.max(x), a.max()),
        ("sort", lambda: dpnp.sort(y), np.sort(b)),
        ("arange", lambda: dpnp.arange(1000, dtype=dpnp.int32, sycl_queue=queue), np.arange(1000)),
        ("full", lambda: dpnp.full(100, 7, dtype=dpnp.int32, sycl_queue=queue), np.full(100, 7)),
    ]
    for name, compute, want in checks:
        try:
            got = dpnp.asnumpy(compute())
            if name == "exp of floats":
                same = np.allclose(got, want)
            elif name == "fft of floats":
                same = np.allclose(got, want, rtol=1e-4, atol=1e-3)
            else:
                same = np.array_equal(got, want)
            expect(same, f"dpnp.{name} equals NumPy's")
        except Exception as error:  # the first error of each, said
            expect(False, f"dpnp.{name} equals NumPy's ({type(error).__name__}: {error})")
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

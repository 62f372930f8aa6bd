"""dpctl over the SYCL runtime against accelhost's platform: the XRT card is a SYCL device of
the OpenCL backend, 64 MiB go to device, host and shared USM allocations through a SYCL queue
and come back byte-exact, and a memset through the queue sets every byte."""

import sys

import numpy as np
import dpctl
import dpctl.memory as dpmem


def main():
    devices = [d for d in dpctl.get_devices() if d.backend == dpctl.backend_type.opencl]
    print("SYCL devices on the OpenCL backend:", ", ".join(d.name for d in devices))
    device = next(d for d in devices if d.name == "xocl/emu:xocl0")
    queue = dpctl.SyclQueue(device)
    data = np.random.default_rng(11).integers(0, 256, size=64 << 20, dtype=np.uint8)
    exact = True
    for kind in (dpmem.MemoryUSMDevice, dpmem.MemoryUSMHost, dpmem.MemoryUSMShared):
        memory = kind(data.nbytes, queue=queue)
        memory.copy_from_host(data)
        back = np.frombuffer(memory.copy_to_host(), dtype=np.uint8)
        same = np.array_equal(back, data)
        exact = exact and same
        print(f"{memory.get_usm_type()} USM, 64 MiB through the queue: "
              f"{'exact' if same else 'changed'}")
    memory = dpmem.MemoryUSMDevice(1 << 20, queue=queue)
    memory.memset(0x5A)
    set_right = bool((np.frombuffer(memory.copy_to_host(), dtype=np.uint8) == 0x5A).all())
    print(f"device USM, 1 MiB set through the queue: {'exact' if set_right else 'wrong'}")
    return 0 if exact and set_right else 1


if __name__ == "__main__":
    sys.exit(main())

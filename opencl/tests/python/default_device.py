"""dpctl's default SYCL device, and then every device of the OpenCL backend: 8 MiB go from the
host to a device USM allocation, from it to a second one on the device, and back to the host,
each through a SYCL queue (dpctl's copies and SyclQueue.memcpy), and come back byte-exact. A
device on which a copy did not do its work shows here as "changed", whether or not dpctl
passed its error on."""

import sys

import numpy as np
import dpctl
import dpctl.memory as dpmem


def round_trip(queue, data):
    """Host to device, device to device (twice: a dpctl copy and a queue memcpy), device to
    host; whether the bytes came back as they went."""
    first = dpmem.MemoryUSMDevice(data.nbytes, queue=queue)
    first.copy_from_host(data)
    second = dpmem.MemoryUSMDevice(data.nbytes, queue=queue)
    second.copy_from_device(first)
    third = dpmem.MemoryUSMDevice(data.nbytes, queue=queue)
    queue.memcpy(third, second, data.nbytes)
    back = np.frombuffer(third.copy_to_host(), dtype=np.uint8)
    return np.array_equal(back, data)


def main():
    data = np.random.default_rng(5).integers(0, 256, size=8 << 20, dtype=np.uint8)
    default = dpctl.select_default_device()
    queue = dpctl.SyclQueue()
    print(f"default SYCL device: {default.name} ({default.backend.name}, "
          f"{default.device_type.name})")
    print(f"the default queue's device: {queue.sycl_device.name}")
    exact = round_trip(queue, data)
    print("default device, 8 MiB host to device, device to device, device to host: "
          f"{'exact' if exact else 'changed'}")
    for device in dpctl.get_devices(backend="opencl"):
        same = round_trip(dpctl.SyclQueue(device), data)
        exact = exact and same
        print(f"{device.name} ({device.filter_string}), the same: "
              f"{'exact' if same else 'changed'}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())

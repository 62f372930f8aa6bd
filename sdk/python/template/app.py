"""The starting point of a Python plugin: one device with no hardware behind it, which
applications can find and open. Copy this directory, then replace the device with yours:

- `enumerate` reports your devices (the host keeps the properties: queries never call you);
- `open` / `close` hand out and take back handle numbers;
- override any other method of `accelhost.Plugin` your device supports: `map_mmio` and
  `prepare_buffer` for FPGA-style devices (see examples/python-nlb0), the offload calls for
  kernel launches.

Every method you leave out answers `unsupported`. Raise `accelhost.not_found(...)` (or any
`accelhost.fail(code, message)`) to fail a call with its code; any other exception fails it as
`internal`, with its type, message and the line that raised it.
"""

from typing import List

from wit_world.exports import discovery
from wit_world.imports import log as host_log, types

import accelhost
from accelhost import Attributes, Discovery, Fpga, Lifecycle, Offload  # noqa: F401 (the exports)

TEMPLATE_DEVICE = discovery.Properties(
    object_type=types.ObjectType.ACCELERATOR,
    name="template0",
    guid=types.Guid(high=0x1234, low=0x5678),
    vendor_id=0x1234,
    device_id=0x0001,
    bus_address=None,
    socket_id=None,
    device_type="fpga",
    host="localhost",
    num_mmio=0,
    num_interrupts=0,
    accelerator_state=None,
    parent=None,
    extras=[],
)


class TemplatePlugin(accelhost.Plugin):
    def __init__(self) -> None:
        self.opened = 0

    def enumerate(self, filters: List[discovery.Filter]) -> List[discovery.Discovered]:
        if accelhost.any_filter_matches(filters, TEMPLATE_DEVICE):
            return [discovery.Discovered(token=0, properties=TEMPLATE_DEVICE)]
        return []

    def open(self, token: int, mode: types.OpenMode) -> int:
        if token != 0:
            raise accelhost.not_found(f"no token {token}")
        self.opened += 1
        accelhost.log(host_log.Level.INFO, f"opened template0 ({self.opened} times)")
        return self.opened

    def close(self, handle: int) -> None:
        pass


accelhost.export_plugin(TemplatePlugin())

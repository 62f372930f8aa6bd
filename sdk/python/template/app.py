"""A plugin with one device, which applications find and open. The SDK's defaults cover the
rest: every method of `accelhost.Plugin` left out answers `unsupported` (`close` succeeds).
Add your device's methods (`map_mmio`, `prepare_buffer`, the offload calls); `--from nlb0`
starts from a plugin that drives a real card."""

import accelhost
from accelhost import Attributes, Discovery, Fpga, Lifecycle, Offload  # noqa: F401 (the exports)

DEVICE = accelhost.accelerator("template0", 0x1234, 0x5678)


class Template(accelhost.Plugin):
    def enumerate(self, filters):
        return accelhost.discover(filters, [DEVICE])

    def open(self, token, mode):
        return token + 1


accelhost.export_plugin(Template())

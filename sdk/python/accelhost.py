"""The Python SDK for accelhost plugins.

A plugin subclasses `Plugin`, overriding only the calls its devices support (every other call
answers `unsupported` and `close` succeeds, like the defaults of the Rust SDK's `Plugin`
trait), and exports one
instance from its `app.py`:

    from accelhost import Plugin, export_plugin
    from accelhost import Lifecycle, Discovery, Fpga, Offload, Attributes  # the exports componentize-py looks for

    class Mine(Plugin):
        def enumerate(self, filters):
            return []

    export_plugin(Mine())

The `wit_world` package is what componentize-py generates from wit/ at build time
(`componentize-py -d wit -w plugin bindings DIR` writes a copy to read): `wit_world.imports`
holds the host services (`dfl`, `dma`, `mmio`, `log`, ...), `wit_world.exports` the types of
the plugin calls. A failing call raises `componentize_py_types.Err(types.Error(...))`; the
helpers below build those. Any other exception raised in an export fails that call as
`internal`, its message the exception's type and text and the file and line that raised it
(`ValueError: bad size (at app.py:42)`); only one raised where no error can be returned
(`supports_device`, `supports_host`) traps the plugin instance, and the host
reports the traceback.
"""

import functools
import os
import sys
import traceback
from typing import List, Optional

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import attributes, discovery, fpga, offload
from wit_world.imports import events, image, log as host_log, mmio, types

__all__ = [
    "Plugin",
    "export_plugin",
    "fail",
    "unsupported",
    "invalid_argument",
    "not_found",
    "busy",
    "not_initialized",
    "drop",
    "log",
    "host_matches",
    "filter_matches",
    "any_filter_matches",
    "accelerator",
    "discover",
    "Lifecycle",
    "Discovery",
    "Fpga",
    "Offload",
    "Attributes",
]


def fail(code: types.ErrorCode, message: str) -> Err:
    """The exception that fails a call with `code`: `raise fail(types.ErrorCode.BUSY, "...")`."""
    return Err(types.Error(code=code, message=message))


def unsupported(call: str) -> Err:
    """The plugin does not implement `call` (its WIT name, such as `map-mmio`)."""
    return fail(types.ErrorCode.UNSUPPORTED, f"{call} is not supported by this plugin")


def invalid_argument(message: str) -> Err:
    return fail(types.ErrorCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> Err:
    return fail(types.ErrorCode.NOT_FOUND, message)


def busy(message: str) -> Err:
    return fail(types.ErrorCode.BUSY, message)


def not_initialized(message: str) -> Err:
    return fail(types.ErrorCode.NOT_INITIALIZED, message)


def drop(resource) -> None:
    """Drops a host resource (a port, a buffer, a region) now, not when the garbage collector
    gets to it: closing a port must release it before the next exclusive open."""
    resource.__exit__(None, None, None)


def log(level: host_log.Level, message: str) -> None:
    """Writes a line to the host's log, tagged with the plugin's name."""
    host_log.log(level, message)


def host_matches(filter: str, device_host: str) -> bool:
    """Does a device on `device_host` match the host filter `filter`? `*` matches every host,
    `localhost` this machine, `^localhost` any other, and any other text must be equal."""
    if filter == "*":
        return True
    if filter == "localhost":
        return device_host == "localhost"
    if filter == "^localhost":
        return device_host != "localhost"
    return filter == device_host


def filter_matches(f: discovery.Filter, p: discovery.Properties) -> bool:
    """Does a device with properties `p` match `f`? Every field the filter sets must match."""
    return (
        (f.object_type is None or f.object_type == p.object_type)
        and (f.guid is None or (f.guid.high, f.guid.low) == (p.guid.high, p.guid.low))
        and (f.vendor_id is None or f.vendor_id == p.vendor_id)
        and (f.device_id is None or f.device_id == p.device_id)
        and (f.bus_address is None or (p.bus_address is not None and _bus(f.bus_address) == _bus(p.bus_address)))
        and (f.device_type is None or f.device_type == p.device_type)
        and (f.host is None or host_matches(f.host, p.host))
    )


def any_filter_matches(filters: List[discovery.Filter], p: discovery.Properties) -> bool:
    """Whether `p` matches `filters`: any one of them, or all devices when there are none."""
    return not filters or any(filter_matches(f, p) for f in filters)


def accelerator(name: str, guid_high: int, guid_low: int) -> discovery.Properties:
    """An accelerator (what applications open) named `name` with the interface GUID
    `guid_high`, `guid_low`: an `fpga` on this machine with no ids, bus address, MMIO regions,
    interrupts, state or parent; set the fields the device has."""
    return discovery.Properties(
        object_type=types.ObjectType.ACCELERATOR,
        name=name,
        guid=types.Guid(high=guid_high, low=guid_low),
        vendor_id=0,
        device_id=0,
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


def discover(filters: List[discovery.Filter], devices: List[discovery.Properties]) -> List[discovery.Discovered]:
    """What `enumerate` answers for a fixed list of devices: those of `devices` that match
    `filters`, each with its index in `devices` as its token."""
    return [
        discovery.Discovered(token=index, properties=p)
        for index, p in enumerate(devices)
        if any_filter_matches(filters, p)
    ]


def _bus(b: types.BusAddress) -> tuple:
    return (b.segment, b.bus, b.device, b.function)


class Plugin:
    """A device plugin: one method per export of the `accel:plugin` world. The defaults answer
    `unsupported` (or succeed, for the lifecycle calls and `close`, which need no work)."""

    def configure(self, config: str) -> None:
        """Receives the plugin's `config` object as JSON text; the default accepts only an
        empty one."""
        if config.strip() not in ("", "{}", "null"):
            raise invalid_argument(f"this plugin takes no configuration, got {config.strip()}")

    def initialize(self) -> None:
        pass

    def finalize(self) -> None:
        pass

    def supports_device(self, device_type: str) -> bool:
        return True

    def supports_host(self, host: str) -> bool:
        return host_matches(host, "localhost")

    def enumerate(self, filters: List[discovery.Filter]) -> List[discovery.Discovered]:
        raise unsupported("enumerate")

    def describe(self, token: int) -> discovery.Properties:
        raise unsupported("describe")

    def open(self, token: int, mode: types.OpenMode) -> int:
        raise unsupported("open")

    def close(self, handle: int) -> None:
        """The default succeeds: a plugin that keeps nothing per handle has nothing to close."""

    def map_mmio(self, handle: int, index: int) -> mmio.Region:
        raise unsupported("map-mmio")

    def prepare_buffer(self, handle: int, size: int, options: fpga.BufferFlags) -> fpga.PreparedBuffer:
        raise unsupported("prepare-buffer")

    def release_buffer(self, handle: int, id: int) -> None:
        raise unsupported("release-buffer")

    def io_address(self, handle: int, id: int) -> int:
        raise unsupported("io-address")

    def reset(self, handle: int) -> None:
        raise unsupported("reset")

    def reconfigure(self, handle: int, slot: int, image: image.Image) -> None:
        raise unsupported("reconfigure")

    def register_event(self, handle: int, kind: fpga.EventKind, vector: int) -> events.Event:
        raise unsupported("register-event")

    def mem_alloc(self, handle: int, kind: offload.MemoryKind, size: int, bank: Optional[int]) -> offload.Allocation:
        raise unsupported("mem-alloc")

    def mem_free(self, handle: int, id: int) -> None:
        raise unsupported("mem-free")

    def program_create(self, handle: int, image: image.Image) -> int:
        raise unsupported("program-create")

    def program_release(self, program: int) -> None:
        raise unsupported("program-release")

    def kernel_get(self, program: int, name: str) -> int:
        raise unsupported("kernel-get")

    def queue_create(self, handle: int) -> int:
        raise unsupported("queue-create")

    def queue_release(self, queue: int) -> None:
        raise unsupported("queue-release")

    def enqueue_memcpy(
        self, queue: int, dst: offload.MemoryRange, src: offload.MemoryRange, size: int
    ) -> events.Event:
        raise unsupported("enqueue-memcpy")

    def enqueue_launch(
        self, queue: int, kernel: int, args: List[offload.KernelArgument], size: offload.LaunchSize
    ) -> events.Event:
        raise unsupported("enqueue-launch")

    def list_attributes(self, token: int) -> List[attributes.AttributeInfo]:
        raise unsupported("list-attributes")

    def read_attribute(self, token: int, name: str) -> str:
        raise unsupported("read-attribute")

    def write_attribute(self, token: int, name: str, value: str) -> None:
        raise unsupported("write-attribute")


_plugin: Optional[Plugin] = None


def export_plugin(plugin: Plugin) -> None:
    """Makes `plugin` the one instance the exports below call."""
    global _plugin
    _plugin = plugin


def _the_plugin() -> Plugin:
    if _plugin is None:
        raise RuntimeError("app.py must call accelhost.export_plugin(...) with its plugin")
    return _plugin


# The classes componentize-py instantiates for the four exported interfaces; `app.py` imports
# them so that they are found in its namespace. Each forwards to the exported plugin.


class Lifecycle(exports.Lifecycle):
    def configure(self, config: str) -> None:
        _the_plugin().configure(config)

    def initialize(self) -> None:
        _the_plugin().initialize()

    def finalize(self) -> None:
        _the_plugin().finalize()

    def supports_device(self, device_type: str) -> bool:
        return _the_plugin().supports_device(device_type)

    def supports_host(self, host: str) -> bool:
        return _the_plugin().supports_host(host)


class Discovery(exports.Discovery):
    def enumerate(self, filters: List[discovery.Filter]) -> List[discovery.Discovered]:
        return _the_plugin().enumerate(filters)

    def describe(self, token: int) -> discovery.Properties:
        return _the_plugin().describe(token)


class Fpga(exports.Fpga):
    def open(self, token: int, mode: types.OpenMode) -> int:
        return _the_plugin().open(token, mode)

    def close(self, handle: int) -> None:
        _the_plugin().close(handle)

    def map_mmio(self, handle: int, index: int) -> mmio.Region:
        return _the_plugin().map_mmio(handle, index)

    def prepare_buffer(self, handle: int, size: int, options: fpga.BufferFlags) -> fpga.PreparedBuffer:
        return _the_plugin().prepare_buffer(handle, size, options)

    def release_buffer(self, handle: int, id: int) -> None:
        _the_plugin().release_buffer(handle, id)

    def io_address(self, handle: int, id: int) -> int:
        return _the_plugin().io_address(handle, id)

    def reset(self, handle: int) -> None:
        _the_plugin().reset(handle)

    def reconfigure(self, handle: int, slot: int, image: image.Image) -> None:
        _the_plugin().reconfigure(handle, slot, image)

    def register_event(self, handle: int, kind: fpga.EventKind, vector: int) -> events.Event:
        return _the_plugin().register_event(handle, kind, vector)


class Offload(exports.Offload):
    def mem_alloc(self, handle: int, kind: offload.MemoryKind, size: int, bank: Optional[int]) -> offload.Allocation:
        return _the_plugin().mem_alloc(handle, kind, size, bank)

    def mem_free(self, handle: int, id: int) -> None:
        _the_plugin().mem_free(handle, id)

    def program_create(self, handle: int, image: image.Image) -> int:
        return _the_plugin().program_create(handle, image)

    def program_release(self, program: int) -> None:
        _the_plugin().program_release(program)

    def kernel_get(self, program: int, name: str) -> int:
        return _the_plugin().kernel_get(program, name)

    def queue_create(self, handle: int) -> int:
        return _the_plugin().queue_create(handle)

    def queue_release(self, queue: int) -> None:
        _the_plugin().queue_release(queue)

    def enqueue_memcpy(
        self, queue: int, dst: offload.MemoryRange, src: offload.MemoryRange, size: int
    ) -> events.Event:
        return _the_plugin().enqueue_memcpy(queue, dst, src, size)

    def enqueue_launch(
        self, queue: int, kernel: int, args: List[offload.KernelArgument], size: offload.LaunchSize
    ) -> events.Event:
        return _the_plugin().enqueue_launch(queue, kernel, args, size)


class Attributes(exports.Attributes):
    def list_attributes(self, token: int) -> List[attributes.AttributeInfo]:
        return _the_plugin().list_attributes(token)

    def read_attribute(self, token: int, name: str) -> str:
        return _the_plugin().read_attribute(token, name)

    def write_attribute(self, token: int, name: str, value: str) -> None:
        _the_plugin().write_attribute(token, name, value)


def _raised_where(error: BaseException) -> str:
    """The file and line that raised `error`: the innermost frame in the plugin's own
    directory, else the innermost outside this module."""
    frames = traceback.extract_tb(error.__traceback__)
    app = sys.modules.get("app")
    app_dir = os.path.dirname(getattr(app, "__file__", None) or "")
    ours = [f for f in frames if app_dir and os.path.dirname(f.filename) == app_dir]
    others = [f for f in frames if os.path.basename(f.filename) != "accelhost.py"]
    for candidates in (ours, others):
        if candidates:
            frame = candidates[-1]
            return f"{os.path.basename(frame.filename)}:{frame.lineno}"
    return ""


def _internal_on_exception(method):
    """Forwards to the plugin; an exception that is not an `Err` fails the call as `internal`
    with its type, message and origin, instead of trapping the instance."""

    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except Err:
            raise
        except Exception as error:
            where = _raised_where(error)
            message = f"{type(error).__name__}: {error}" + (f" (at {where})" if where else "")
            raise Err(types.Error(code=types.ErrorCode.INTERNAL, message=message)) from error

    return call


# Every export that returns a result; `supports_*` return a bare bool, so they have no error
# to report and an exception there still traps.
for _export in (Lifecycle, Discovery, Fpga, Offload, Attributes):
    for _name, _method in list(vars(_export).items()):
        if callable(_method) and not _name.startswith(("_", "supports_")):
            setattr(_export, _name, _internal_on_exception(_method))

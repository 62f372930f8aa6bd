"""A DFL plugin in Python: every granted DFL port (an emulated NLB0 card, or a real
/dev/dfl-port.N) as an OPAE-style accelerator, with open, close, MMIO mapping, shared buffers
and reset on top of the host's `dfl` shim. It follows the shipped Rust plugin
(guest-plugins/dfl): the same properties, error codes, exclusive opens and buffer ids.
"""

from dataclasses import dataclass, field
from typing import Dict, List

from wit_world.exports import discovery, fpga
from wit_world.imports import dfl, dma, log as host_log, mmio, types
from wit_world.imports.dfl import Port, PortDesc
from componentize_py_types import Err

import accelhost
from accelhost import Attributes, Discovery, Fpga, Lifecycle, Offload  # noqa: F401 (the exports)

DEVICE_TYPE = "fpga"


@dataclass
class OpenPort:
    """A port the application opened, with the buffers it prepared through it."""

    port: Port
    buffers: Dict[int, int] = field(default_factory=dict)  # buffer id -> IO virtual address
    next_buffer: int = 0


class DflPlugin(accelhost.Plugin):
    def __init__(self) -> None:
        self.initialized = False
        # Tokens stay stable across enumerations: a port keeps the token it was first given.
        self.tokens: Dict[str, int] = {}
        self.open_ports: Dict[int, OpenPort] = {}
        self.next_handle = 0

    def require_initialized(self) -> None:
        if not self.initialized:
            raise accelhost.not_initialized("the python-nlb0 plugin was not initialized")

    def token_for(self, path: str) -> int:
        return self.tokens.setdefault(path, len(self.tokens))

    def port_for_token(self, token: int) -> PortDesc:
        path = next((p for p, t in self.tokens.items() if t == token), None)
        if path is None:
            raise accelhost.not_found(f"no dfl port has token {token}")
        for desc in dfl.list_ports():
            if desc.path == path:
                return desc
        raise accelhost.not_found(f"dfl port {path} is no longer granted")

    def open_port(self, handle: int) -> OpenPort:
        found = self.open_ports.get(handle)
        if found is None:
            raise accelhost.not_found(f"no open dfl port has handle {handle}")
        return found

    def port_properties(self, desc: PortDesc) -> discovery.Properties:
        # OPAE's probe: a port that cannot be opened shared is held exclusively by someone.
        state, num_mmio = types.AcceleratorState.ASSIGNED, 0
        try:
            probe = Port.open(desc.path, False)
        except Err:
            pass
        else:
            try:
                num_mmio = probe.info().num_regions
            except Err:
                num_mmio = 0
            accelhost.drop(probe)
            state = types.AcceleratorState.UNASSIGNED
        return discovery.Properties(
            object_type=types.ObjectType.ACCELERATOR,
            name=desc.path.removeprefix("/dev/"),
            guid=desc.afu_id,
            vendor_id=desc.vendor_id,
            device_id=desc.device_id,
            bus_address=desc.bus_address,
            socket_id=desc.socket_id,
            device_type=DEVICE_TYPE,
            host="localhost",
            num_mmio=num_mmio,
            num_interrupts=0,
            accelerator_state=state,
            parent=None,
            extras=[
                ("interface", "dfl"),
                ("path", desc.path),
                ("port-id", str(desc.port_id)),
                ("emulated", "true" if desc.emulated else "false"),
                ("language", "python"),
            ],
        )

    def initialize(self) -> None:
        self.initialized = True

    def finalize(self) -> None:
        for open_port in self.open_ports.values():
            accelhost.drop(open_port.port)
        self.open_ports.clear()
        self.initialized = False

    def supports_device(self, device_type: str) -> bool:
        return device_type == DEVICE_TYPE

    def enumerate(self, filters: List[discovery.Filter]) -> List[discovery.Discovered]:
        self.require_initialized()
        found = []
        for desc in dfl.list_ports():
            properties = self.port_properties(desc)
            if accelhost.any_filter_matches(filters, properties):
                found.append(discovery.Discovered(token=self.token_for(desc.path), properties=properties))
        return found

    def describe(self, token: int) -> discovery.Properties:
        self.require_initialized()
        return self.port_properties(self.port_for_token(token))

    def open(self, token: int, mode: types.OpenMode) -> int:
        self.require_initialized()
        desc = self.port_for_token(token)
        port = Port.open(desc.path, mode == types.OpenMode.EXCLUSIVE)
        self.next_handle += 1
        self.open_ports[self.next_handle] = OpenPort(port)
        accelhost.log(host_log.Level.DEBUG, f"opened {desc.path} as handle {self.next_handle}")
        return self.next_handle

    def close(self, handle: int) -> None:
        open_port = self.open_port(handle)
        del self.open_ports[handle]
        # Dropping the port closes it; the host then resets the AFU and removes its mappings.
        accelhost.drop(open_port.port)

    def map_mmio(self, handle: int, index: int) -> mmio.Region:
        open_port = self.open_port(handle)
        regions = open_port.port.info().num_regions
        if index >= regions:
            raise accelhost.invalid_argument(
                f"MMIO region {index} does not exist: the port has {regions} region(s)"
            )
        return open_port.port.map_region(index)

    def prepare_buffer(self, handle: int, size: int, options: fpga.BufferFlags) -> fpga.PreparedBuffer:
        if size == 0:
            raise accelhost.invalid_argument("a buffer needs a size above 0")
        open_port = self.open_port(handle)
        buffer = dma.Buffer.allocate(size)
        try:
            iova = open_port.port.dma_map(buffer)
        except Err:
            accelhost.drop(buffer)
            raise
        open_port.next_buffer += 1
        buffer_id = open_port.next_buffer
        open_port.buffers[buffer_id] = iova
        return fpga.PreparedBuffer(id=buffer_id, buffer=buffer, iova=iova)

    def release_buffer(self, handle: int, id: int) -> None:
        open_port = self.open_port(handle)
        iova = open_port.buffers.pop(id, None)
        if iova is None:
            raise accelhost.not_found(f"no buffer {id} on handle {handle}")
        open_port.port.dma_unmap(iova)

    def io_address(self, handle: int, id: int) -> int:
        iova = self.open_port(handle).buffers.get(id)
        if iova is None:
            raise accelhost.not_found(f"no buffer {id} on handle {handle}")
        return iova

    def reset(self, handle: int) -> None:
        self.open_port(handle).port.reset()


accelhost.export_plugin(DflPlugin())

//! `dfl`: typed shims over the DFL port interface. Only granted ports are listed or opened;
//! a plugin passes buffer handles, never addresses, and the host does the translation.

use std::sync::Arc;

use wasmtime::component::Resource;

use super::device_error;
use crate::bindings::accel::plugin::dfl::{self, PortInfo, RegionAccess, RegionInfo};
use crate::bindings::accel::plugin::types::{BusAddress, Guid};
use crate::devices::CheckedMmio;
use crate::devices::dfl::{PortDesc, abi};
use crate::error::ErrorCode;
use crate::state::{
    BufferResource, ImportError, PluginState, PortResource, RegionResource, guest_error,
};

fn wit_desc(desc: PortDesc) -> dfl::PortDesc {
    dfl::PortDesc {
        path: desc.path,
        port_id: desc.port_id,
        afu_id: Guid {
            high: desc.afu_id.high,
            low: desc.afu_id.low,
        },
        vendor_id: desc.vendor_id,
        device_id: desc.device_id,
        bus_address: desc.bus_address.map(|b| BusAddress {
            segment: b.segment,
            bus: b.bus,
            device: b.device,
            function: b.function,
        }),
        socket_id: desc.socket_id,
        emulated: desc.emulated,
    }
}

impl PluginState {
    fn port(&self, port: &Resource<PortResource>) -> Result<&PortResource, ImportError> {
        Ok(self.table.get(port)?)
    }
}

impl dfl::Host for PluginState {
    fn list_ports(&mut self) -> wasmtime::Result<Vec<dfl::PortDesc>> {
        let grants = &self.ctx.grants;
        Ok(self
            .ctx
            .devices
            .dfl_ports(|name| grants.allows_device(name))
            .into_iter()
            .map(|device| wit_desc(device.desc()))
            .collect())
    }

    fn probe_ports(&mut self) -> wasmtime::Result<Vec<dfl::PortProbe>> {
        let grants = &self.ctx.grants;
        let owner = &self.ctx.owner;
        Ok(self
            .ctx
            .devices
            .dfl_ports(|name| grants.allows_device(name))
            .into_iter()
            .map(|device| {
                // OPAE's probe: a port that cannot be opened shared is held exclusively.
                let (assigned, num_regions) = match device.open(false, owner) {
                    Ok(port) => (false, port.info().map_or(0, |i| i.num_regions)),
                    Err(_) => (true, 0),
                };
                dfl::PortProbe {
                    desc: wit_desc(device.desc()),
                    assigned,
                    num_regions,
                }
            })
            .collect())
    }
}

impl dfl::HostPort for PluginState {
    fn open(
        &mut self,
        path: String,
        exclusive: bool,
    ) -> Result<Resource<PortResource>, ImportError> {
        if !self.ctx.grants.allows_device(&path) {
            Err(self.denied(
                "open a dfl port",
                format!("no grant covers the device '{path}'"),
            ))
        } else if let Some(device) = self.ctx.devices.dfl_port(&path) {
            match device.open(exclusive, &self.ctx.owner) {
                Ok(port) => Ok(self.table.push(PortResource {
                    port: Some(port),
                    _charge: self.charge_resource(path.len() as u64)?,
                    path,
                })?),
                Err(err) => Err(device_error("dfl port open", &path, err)),
            }
        } else {
            Err(guest_error(
                ErrorCode::NotFound,
                format!("dfl port open: no such port '{path}'"),
            ))
        }
    }

    fn info(&mut self, port: Resource<PortResource>) -> Result<PortInfo, ImportError> {
        let p = self.port(&port)?;
        let info = p
            .device()?
            .info()
            .map_err(|e| device_error("dfl get-info", &p.path, e))?;
        Ok(PortInfo {
            flags: info.flags,
            num_regions: info.num_regions,
            num_umsgs: info.num_umsgs,
        })
    }

    fn region_info(
        &mut self,
        port: Resource<PortResource>,
        index: u32,
    ) -> Result<RegionInfo, ImportError> {
        let p = self.port(&port)?;
        let info = p
            .device()?
            .region_info(index)
            .map_err(|e| device_error(&format!("dfl get-region-info {index}"), &p.path, e))?;
        let mut access = RegionAccess::empty();
        for (bit, flag) in [
            (abi::REGION_READ, RegionAccess::READ),
            (abi::REGION_WRITE, RegionAccess::WRITE),
            (abi::REGION_MMAP, RegionAccess::MMAP),
        ] {
            if info.flags & bit != 0 {
                access |= flag;
            }
        }
        Ok(RegionInfo {
            index: info.index,
            access,
            size: info.size,
            offset: info.offset,
        })
    }

    fn map_region(
        &mut self,
        port: Resource<PortResource>,
        index: u32,
    ) -> Result<Resource<RegionResource>, ImportError> {
        let p = self.port(&port)?;
        let device = p.path.clone();
        let window = p
            .device()?
            .map_region(index)
            .map_err(|e| device_error(&format!("dfl map region {index}"), &device, e))?;
        Ok(self.table.push(RegionResource {
            mmio: CheckedMmio::new(window),
            _charge: self.charge_resource(device.len() as u64)?,
            device,
        })?)
    }

    fn dma_map(
        &mut self,
        port: Resource<PortResource>,
        buffer: Resource<BufferResource>,
    ) -> Result<u64, ImportError> {
        let memory = Arc::clone(&self.table.get(&buffer)?.memory);
        let p = self.port(&port)?;
        p.device()?
            .dma_map(&memory)
            .map_err(|e| device_error("dfl dma-map", &p.path, e))
    }

    fn dma_unmap(&mut self, port: Resource<PortResource>, iova: u64) -> Result<(), ImportError> {
        let p = self.port(&port)?;
        p.device()?
            .dma_unmap(iova)
            .map_err(|e| device_error(&format!("dfl dma-unmap {iova:#x}"), &p.path, e))
    }

    fn reset(&mut self, port: Resource<PortResource>) -> Result<(), ImportError> {
        let p = self.port(&port)?;
        p.device()?
            .reset()
            .map_err(|e| device_error("dfl port reset", &p.path, e))
    }

    fn drop(&mut self, port: Resource<PortResource>) -> wasmtime::Result<()> {
        self.table.delete(port)?;
        Ok(())
    }
}

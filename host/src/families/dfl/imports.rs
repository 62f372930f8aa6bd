//! `dfl`: typed shims over the DFL port interface. Only granted ports are listed or opened;
//! a plugin passes buffer handles, never addresses, and the host does the translation.

use std::sync::Arc;

use wasmtime::component::Resource;

use super::resources::PortResource;
use super::{DflDevice, PortDesc, abi};
use crate::bindings::accel::plugin::dfl::{self, PortInfo, RegionAccess, RegionInfo};
use crate::devices::CheckedMmio;
use crate::error::ErrorCode;
use crate::imports::device_error;
use crate::state::{
    BufferResource, ImportError, PluginState, RegionResource, guest_error, guest_handle,
    host_handle,
};

fn wit_desc(desc: PortDesc) -> dfl::PortDesc {
    dfl::PortDesc {
        path: desc.path,
        port_id: desc.port_id,
        afu_id: desc.afu_id.into(),
        vendor_id: desc.vendor_id,
        device_id: desc.device_id,
        bus_address: desc.bus_address.map(Into::into),
        socket_id: desc.socket_id,
        emulated: desc.emulated,
    }
}

fn checked_name(name: &str) -> Result<(), ImportError> {
    crate::attributes::check_name(name)
        .map_err(|why| guest_error(ErrorCode::InvalidArgument, why.to_string()))
}

impl PluginState {
    fn port(&self, port: &Resource<dfl::Port>) -> Result<&PortResource, ImportError> {
        Ok(self.table.get(&host_handle::<PortResource, _>(port))?)
    }
}

impl dfl::Host for PluginState {
    fn list_ports(&mut self) -> wasmtime::Result<Vec<dfl::PortDesc>> {
        Ok(self
            .granted_devices::<dyn DflDevice>()
            .into_iter()
            .map(|device| wit_desc(device.desc()))
            .collect())
    }

    fn probe_ports(&mut self) -> wasmtime::Result<Vec<dfl::PortProbe>> {
        let owner = &self.ctx.owner;
        Ok(self
            .granted_devices::<dyn DflDevice>()
            .into_iter()
            .map(|device| {
                let probe = device.probe(owner);
                dfl::PortProbe {
                    desc: wit_desc(device.desc()),
                    assigned: probe.assigned,
                    num_regions: probe.num_regions,
                }
            })
            .collect())
    }

    fn list_attributes(&mut self, path: String) -> Result<Vec<dfl::AttributeInfo>, ImportError> {
        let device =
            self.granted_device::<dyn DflDevice>("list the attributes of a dfl port", &path)?;
        let found = device
            .attributes()
            .map_err(|e| device_error("dfl list-attributes", &path, e))?;
        Ok(found
            .into_iter()
            .map(|a| dfl::AttributeInfo {
                name: a.name,
                writable: a.writable,
            })
            .collect())
    }

    fn read_attribute(&mut self, path: String, name: String) -> Result<String, ImportError> {
        checked_name(&name)?;
        let device =
            self.granted_device::<dyn DflDevice>("read an attribute of a dfl port", &path)?;
        device
            .read_attribute(&name)
            .map_err(|e| device_error(&format!("dfl read-attribute {name}"), &path, e))
    }

    fn write_attribute(
        &mut self,
        path: String,
        name: String,
        value: String,
    ) -> Result<(), ImportError> {
        checked_name(&name)?;
        crate::attributes::check_value(&value).map_err(|why| {
            guest_error(
                ErrorCode::InvalidArgument,
                format!("dfl write-attribute {name}: {why}"),
            )
        })?;
        let device =
            self.granted_device::<dyn DflDevice>("write an attribute of a dfl port", &path)?;
        device
            .write_attribute(&name, &value)
            .map_err(|e| device_error(&format!("dfl write-attribute {name}"), &path, e))
    }
}

impl dfl::HostPort for PluginState {
    fn open(&mut self, path: String, exclusive: bool) -> Result<Resource<dfl::Port>, ImportError> {
        let device = self.granted_device::<dyn DflDevice>("open a dfl port", &path)?;
        match device.open(exclusive, &self.ctx.owner) {
            Ok(port) => {
                let charge = self.charge_resource(path.len() as u64)?;
                let port = self
                    .table
                    .push(PortResource::new(port, path, "port", charge))?;
                Ok(guest_handle(port))
            }
            Err(err) => Err(device_error("dfl port open", &path, err)),
        }
    }

    fn info(&mut self, port: Resource<dfl::Port>) -> Result<PortInfo, ImportError> {
        let p = self.port(&port)?;
        let info = p
            .device()?
            .info()
            .map_err(|e| device_error("dfl get-info", p.name(), e))?;
        Ok(PortInfo {
            flags: info.flags,
            num_regions: info.num_regions,
            num_umsgs: info.num_umsgs,
        })
    }

    fn region_info(
        &mut self,
        port: Resource<dfl::Port>,
        index: u32,
    ) -> Result<RegionInfo, ImportError> {
        let p = self.port(&port)?;
        let info = p
            .device()?
            .region_info(index)
            .map_err(|e| device_error(&format!("dfl get-region-info {index}"), p.name(), e))?;
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
        port: Resource<dfl::Port>,
        index: u32,
    ) -> Result<Resource<RegionResource>, ImportError> {
        let p = self.port(&port)?;
        let device = p.name().to_string();
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
        port: Resource<dfl::Port>,
        buffer: Resource<BufferResource>,
    ) -> Result<u64, ImportError> {
        let memory = Arc::clone(&self.table.get(&buffer)?.memory);
        let p = self.port(&port)?;
        p.device()?
            .dma_map(&memory)
            .map_err(|e| device_error("dfl dma-map", p.name(), e))
    }

    fn dma_unmap(&mut self, port: Resource<dfl::Port>, iova: u64) -> Result<(), ImportError> {
        let p = self.port(&port)?;
        p.device()?
            .dma_unmap(iova)
            .map_err(|e| device_error(&format!("dfl dma-unmap {iova:#x}"), p.name(), e))
    }

    fn reset(&mut self, port: Resource<dfl::Port>) -> Result<(), ImportError> {
        let p = self.port(&port)?;
        p.device()?
            .reset()
            .map_err(|e| device_error("dfl port reset", p.name(), e))
    }

    fn drop(&mut self, port: Resource<dfl::Port>) -> wasmtime::Result<()> {
        self.table.delete(host_handle::<PortResource, _>(&port))?;
        Ok(())
    }
}

//! `xocl`: typed shims over the XRT xocl interface. Only granted devices are listed or
//! opened; xclbin images are parsed and validated here before the device sees them; buffer
//! contents move between host and device without entering wasm.

use std::sync::Arc;

use wasmtime::component::{Resource, ResourceTableError};

use super::emu::MAX_DEPS;
use super::resources::{BoResource, XoclDeviceResource};
use super::xclbin::{self, ArgKind, MemKind, Xclbin};
use super::{self as backend, Command, SyncDirection, XoclDevice};
use crate::bindings::accel::plugin::types::Guid;
use crate::bindings::accel::plugin::xocl as wit;
use crate::devices::Completion;
use crate::error::ErrorCode;
use crate::imports::device_error;
use crate::state::{
    BufferResource, EventResource, ImageResource, ImportError, PluginState, guest_error,
    guest_handle, host_handle,
};

/// The most 32-bit words an exec buffer may hold (a 4 KiB exec BO).
const MAX_PACKET_WORDS: usize = 1024;

fn desc(d: backend::DeviceDesc) -> wit::DeviceDesc {
    wit::DeviceDesc {
        path: d.path,
        vendor_id: d.vendor_id,
        device_id: d.device_id,
        bus_address: d.bus_address.map(Into::into),
        board_name: d.board_name,
        loaded: d.loaded.map(Into::into),
        emulated: d.emulated,
    }
}

/// What the plugin learns from a validated xclbin whose first compute unit is `first_cu` on
/// the card: compute units by their index on the card.
pub(crate) fn xclbin_info(x: &Xclbin, first_cu: u32) -> wit::XclbinInfo {
    let cus = x.compute_units();
    let cu_of_ip = |ip: u32| {
        cus.iter()
            .position(|c| c.index == ip)
            .map(|p| first_cu + p as u32)
    };
    wit::XclbinInfo {
        uuid: x.uuid.into(),
        banks: x
            .banks
            .iter()
            .map(|b| wit::MemBank {
                index: b.index,
                kind: match b.kind {
                    MemKind::Ddr3 => wit::MemKind::Ddr3,
                    MemKind::Ddr4 => wit::MemKind::Ddr4,
                    MemKind::Dram => wit::MemKind::Dram,
                    MemKind::Streaming | MemKind::StreamingConnection => wit::MemKind::Streaming,
                    MemKind::Hbm => wit::MemKind::Hbm,
                    MemKind::Bram => wit::MemKind::Bram,
                    MemKind::Uram => wit::MemKind::Uram,
                    MemKind::Host => wit::MemKind::Host,
                    _ => wit::MemKind::Other,
                },
                used: b.used,
                base: b.base,
                size: b.size,
                tag: b.tag.clone(),
            })
            .collect(),
        compute_units: cus
            .iter()
            .enumerate()
            .map(|(i, c)| wit::ComputeUnit {
                index: first_cu + i as u32,
                name: c.name.clone(),
                kernel: c.kernel_name().to_string(),
                base: c.base,
            })
            .collect(),
        connections: x
            .connectivity
            .iter()
            .filter_map(|c| {
                Some(wit::Connection {
                    cu: cu_of_ip(c.ip_index)?,
                    arg_index: c.arg_index,
                    bank: c.bank_index,
                })
            })
            .collect(),
        kernels: x
            .kernels
            .iter()
            .map(|k| wit::KernelMeta {
                name: k.name.clone(),
                args: k
                    .args
                    .iter()
                    .map(|a| wit::KernelArg {
                        name: a.name.clone(),
                        index: a.index,
                        offset: a.offset,
                        size: a.size,
                        kind: match a.kind {
                            // The register holds a local argument's byte count.
                            ArgKind::Scalar | ArgKind::Local => wit::ArgKind::Scalar,
                            ArgKind::Global => wit::ArgKind::Global,
                        },
                    })
                    .collect(),
            })
            .collect(),
    }
}

impl PluginState {
    fn xocl_device(
        &self,
        device: &Resource<wit::Device>,
    ) -> Result<&XoclDeviceResource, ImportError> {
        Ok(self
            .table
            .get(&host_handle::<XoclDeviceResource, _>(device))?)
    }

    /// The completions behind `after`, bounded.
    fn dependencies(
        &self,
        after: &[Resource<EventResource>],
    ) -> Result<Vec<Arc<Completion>>, ImportError> {
        if after.len() > MAX_DEPS {
            return Err(guest_error(
                ErrorCode::InvalidArgument,
                format!(
                    "a command may wait on at most {MAX_DEPS} events, not {}",
                    after.len()
                ),
            ));
        }
        after
            .iter()
            .map(|e| Ok(self.table.get(e)?.completion.clone()))
            .collect()
    }

    /// Submits `command` on `device` after `after`; returns the event.
    fn submit(
        &mut self,
        call: &str,
        device: &Resource<wit::Device>,
        command: Command,
        after: &[Resource<EventResource>],
    ) -> Result<Resource<EventResource>, ImportError> {
        let deps = self.dependencies(after)?;
        let dev = self.xocl_device(device)?;
        let completion = dev
            .device()?
            .submit(command, deps)
            .map_err(|e| device_error(call, dev.name(), e))?;
        self.adopt_completion(completion)
    }

    fn bo(&self, bo: &Resource<wit::Bo>) -> Result<&BoResource, ResourceTableError> {
        self.table.get(&host_handle::<BoResource, _>(bo))
    }

    fn bo_handle(&self, bo: &Resource<wit::Bo>) -> Result<u32, ImportError> {
        Ok(self.bo(bo)?.info.handle)
    }
}

impl wit::Host for PluginState {
    fn list_devices(&mut self) -> wasmtime::Result<Vec<wit::DeviceDesc>> {
        Ok(self
            .granted_devices::<dyn XoclDevice>()
            .into_iter()
            .map(|d| desc(d.desc()))
            .collect())
    }
}

impl wit::HostDevice for PluginState {
    fn open(&mut self, path: String) -> Result<Resource<wit::Device>, ImportError> {
        let device = self.granted_device::<dyn XoclDevice>("open an xocl device", &path)?;
        match device.open(&self.ctx.owner) {
            Ok(client) => {
                let charge = self.charge_resource(path.len() as u64)?;
                let device = self.table.push(XoclDeviceResource::new(
                    Arc::from(client),
                    path,
                    "device",
                    charge,
                ))?;
                Ok(guest_handle(device))
            }
            Err(err) => Err(device_error("xocl device open", &path, err)),
        }
    }

    fn load_xclbin(
        &mut self,
        device: Resource<wit::Device>,
        image: Resource<ImageResource>,
    ) -> Result<wit::XclbinInfo, ImportError> {
        let bytes = self.table.get(&image)?.bytes.clone();
        let parsed = xclbin::parse(&bytes).map_err(|e| {
            guest_error(
                ErrorCode::InvalidArgument,
                format!("the xclbin is malformed: {e}"),
            )
        })?;
        let dev = self.xocl_device(&device)?;
        let first_cu = dev
            .device()?
            .load_xclbin(&bytes, &parsed)
            .map_err(|e| device_error("xocl load-xclbin", dev.name(), e))?;
        Ok(xclbin_info(&parsed, first_cu))
    }

    fn loaded_xclbin(
        &mut self,
        device: Resource<wit::Device>,
    ) -> wasmtime::Result<Option<wit::XclbinInfo>> {
        let dev = self
            .table
            .get(&host_handle::<XoclDeviceResource, _>(&device))?;
        Ok(dev
            .held()
            .and_then(|client| client.loaded_xclbin())
            .map(|loaded| xclbin_info(&loaded.xclbin, loaded.first_cu)))
    }

    fn open_context(
        &mut self,
        device: Resource<wit::Device>,
        uuid: Guid,
        cu: u32,
        exclusive: bool,
    ) -> Result<(), ImportError> {
        let dev = self.xocl_device(&device)?;
        dev.device()?
            .open_context(uuid.into(), cu, exclusive)
            .map_err(|e| device_error(&format!("xocl open-context on CU {cu}"), dev.name(), e))
    }

    fn close_context(
        &mut self,
        device: Resource<wit::Device>,
        uuid: Guid,
        cu: u32,
    ) -> Result<(), ImportError> {
        let dev = self.xocl_device(&device)?;
        dev.device()?
            .close_context(uuid.into(), cu)
            .map_err(|e| device_error(&format!("xocl close-context on CU {cu}"), dev.name(), e))
    }

    fn create_bo(
        &mut self,
        device: Resource<wit::Device>,
        size: u64,
        bank: Option<u32>,
    ) -> Result<Resource<wit::Bo>, ImportError> {
        let dev = self.xocl_device(&device)?;
        let client = dev.device()?.clone();
        let info = client
            .create_bo(size, bank)
            .map_err(|e| device_error("xocl create-bo", dev.name(), e))?;
        let charge = self.charge_resource(0)?;
        let bo = self.table.push(BoResource {
            client,
            info,
            freed: false,
            _charge: charge,
        })?;
        Ok(guest_handle(bo))
    }

    fn sync_bo(
        &mut self,
        device: Resource<wit::Device>,
        bo: Resource<wit::Bo>,
        direction: wit::SyncDirection,
        offset: u64,
        size: u64,
        after: Vec<Resource<EventResource>>,
    ) -> Result<Resource<EventResource>, ImportError> {
        let command = Command::Sync {
            bo: self.bo_handle(&bo)?,
            direction: match direction {
                wit::SyncDirection::ToDevice => SyncDirection::ToDevice,
                wit::SyncDirection::FromDevice => SyncDirection::FromDevice,
            },
            offset,
            size,
        };
        self.submit("xocl sync-bo", &device, command, &after)
    }

    fn copy_bo(
        &mut self,
        device: Resource<wit::Device>,
        dst: Resource<wit::Bo>,
        dst_offset: u64,
        src: Resource<wit::Bo>,
        src_offset: u64,
        size: u64,
        after: Vec<Resource<EventResource>>,
    ) -> Result<Resource<EventResource>, ImportError> {
        let command = Command::Copy {
            dst: self.bo_handle(&dst)?,
            dst_offset,
            src: self.bo_handle(&src)?,
            src_offset,
            size,
        };
        self.submit("xocl copy-bo", &device, command, &after)
    }

    fn exec(
        &mut self,
        device: Resource<wit::Device>,
        packet: Vec<u32>,
        after: Vec<Resource<EventResource>>,
    ) -> Result<Resource<EventResource>, ImportError> {
        if packet.len() > MAX_PACKET_WORDS {
            Err(guest_error(
                ErrorCode::InvalidArgument,
                format!(
                    "an exec buffer holds at most {MAX_PACKET_WORDS} words, not {}",
                    packet.len()
                ),
            ))
        } else {
            self.submit("xocl exec", &device, Command::Exec(packet), &after)
        }
    }

    fn reset(&mut self, device: Resource<wit::Device>) -> Result<(), ImportError> {
        let dev = self.xocl_device(&device)?;
        dev.device()?
            .reset()
            .map_err(|e| device_error("xocl reset", dev.name(), e))
    }

    fn drop(&mut self, device: Resource<wit::Device>) -> wasmtime::Result<()> {
        self.table
            .delete(host_handle::<XoclDeviceResource, _>(&device))?;
        Ok(())
    }
}

impl wit::HostBo for PluginState {
    fn size(&mut self, bo: Resource<wit::Bo>) -> wasmtime::Result<u64> {
        Ok(self.bo(&bo)?.info.size)
    }

    fn device_address(&mut self, bo: Resource<wit::Bo>) -> wasmtime::Result<u64> {
        Ok(self.bo(&bo)?.info.device_address)
    }

    fn bank(&mut self, bo: Resource<wit::Bo>) -> wasmtime::Result<Option<u32>> {
        Ok(self.bo(&bo)?.info.bank)
    }

    fn host_buffer(
        &mut self,
        bo: Resource<wit::Bo>,
    ) -> Result<Resource<BufferResource>, ImportError> {
        let info = &self.bo(&bo)?.info;
        if info.bank.is_some() {
            Err(guest_error(
                ErrorCode::InvalidArgument,
                "only host-only buffer objects are host-visible; device memory moves with sync-bo or copy-bo",
            ))
        } else {
            let memory = info.host.clone();
            let charge = self.charge_resource(0)?;
            Ok(self.table.push(BufferResource {
                memory,
                _charge: charge,
            })?)
        }
    }

    fn drop(&mut self, bo: Resource<wit::Bo>) -> wasmtime::Result<()> {
        self.table.delete(host_handle::<BoResource, _>(&bo))?;
        Ok(())
    }
}

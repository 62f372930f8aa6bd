//! `mmio`: register windows of devices the plugin opened.

use wasmtime::component::Resource;

use super::{MAX_BATCH, device_error};
use crate::bindings::accel::plugin::mmio::{self, RegisterWrite};
use crate::devices::{AccessWidth, MmioFault};
use crate::error::ErrorCode;
use crate::state::{ImportError, PluginState, RegionResource, guest_error};

fn fault(call: &str, device: &str, fault: MmioFault) -> ImportError {
    match fault {
        MmioFault::Device(err) => device_error(call, device, err),
        MmioFault::PollTimeout { .. } => {
            guest_error(ErrorCode::Timeout, format!("{call} on {device}: {fault}"))
        }
        MmioFault::OutOfRange { .. } | MmioFault::Misaligned { .. } => guest_error(
            ErrorCode::InvalidArgument,
            format!("{call} on {device}: {fault}"),
        ),
    }
}

impl PluginState {
    fn region(&self, region: &Resource<RegionResource>) -> Result<&RegionResource, ImportError> {
        Ok(self.table.get(region)?)
    }
}

impl mmio::HostRegion for PluginState {
    fn size(&mut self, region: Resource<RegionResource>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&region)?.mmio.size())
    }

    fn read32(
        &mut self,
        region: Resource<RegionResource>,
        offset: u64,
    ) -> Result<u32, ImportError> {
        let r = self.region(&region)?;
        self.ctx.usage.mmio_read(1);
        r.mmio
            .read32(offset)
            .map_err(|f| fault("mmio read32", &r.device, f))
    }

    fn read64(
        &mut self,
        region: Resource<RegionResource>,
        offset: u64,
    ) -> Result<u64, ImportError> {
        let r = self.region(&region)?;
        self.ctx.usage.mmio_read(1);
        r.mmio
            .read64(offset)
            .map_err(|f| fault("mmio read64", &r.device, f))
    }

    fn write32(
        &mut self,
        region: Resource<RegionResource>,
        offset: u64,
        value: u32,
    ) -> Result<(), ImportError> {
        let r = self.region(&region)?;
        self.ctx.usage.mmio_written(1);
        r.mmio
            .write32(offset, value)
            .map_err(|f| fault("mmio write32", &r.device, f))
    }

    fn write64(
        &mut self,
        region: Resource<RegionResource>,
        offset: u64,
        value: u64,
    ) -> Result<(), ImportError> {
        let r = self.region(&region)?;
        self.ctx.usage.mmio_written(1);
        r.mmio
            .write64(offset, value)
            .map_err(|f| fault("mmio write64", &r.device, f))
    }

    fn write_batch(
        &mut self,
        region: Resource<RegionResource>,
        writes: Vec<RegisterWrite>,
    ) -> Result<(), ImportError> {
        if writes.len() > MAX_BATCH {
            Err(guest_error(
                ErrorCode::InvalidArgument,
                format!(
                    "write-batch takes at most {MAX_BATCH} writes, got {}",
                    writes.len()
                ),
            ))
        } else {
            let r = self.region(&region)?;
            self.ctx.usage.mmio_written(writes.len() as u64);
            writes.iter().enumerate().try_for_each(|(i, w)| {
                let width = match w.width {
                    mmio::AccessWidth::Bits32 => AccessWidth::Bits32,
                    mmio::AccessWidth::Bits64 => AccessWidth::Bits64,
                };
                r.mmio
                    .write(w.offset, w.value, width)
                    .map_err(|f| fault(&format!("mmio write-batch (write {i})"), &r.device, f))
            })
        }
    }

    fn poll64(
        &mut self,
        region: Resource<RegionResource>,
        offset: u64,
        mask: u64,
        expected: u64,
        timeout_ns: u64,
    ) -> Result<u64, ImportError> {
        let deadline = self.wait_deadline(timeout_ns);
        self.ctx.usage.mmio_read(1);
        let r = self.region(&region)?;
        let mut last = 0;
        let matched = self.wait_sliced(deadline, |slice| {
            match r.mmio.poll64(offset, mask, expected, slice) {
                Ok(value) => Ok(Some(value)),
                Err(MmioFault::PollTimeout { last: value, .. }) => {
                    last = value;
                    Ok(None)
                }
                Err(f) => Err(fault("mmio poll64", &r.device, f)),
            }
        })?;
        matched.ok_or_else(|| {
            fault(
                "mmio poll64",
                &r.device,
                MmioFault::PollTimeout { offset, last },
            )
        })
    }

    fn drop(&mut self, region: Resource<RegionResource>) -> wasmtime::Result<()> {
        self.table.delete(region)?;
        Ok(())
    }
}

impl mmio::Host for PluginState {}

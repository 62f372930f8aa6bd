//! `cxl`: typed shims over the CAPI cxl interface. Only granted AFUs are listed or opened; a
//! plugin attaches buffer handles, never addresses, and waits for events on the host.

use std::sync::Arc;

use wasmtime::component::Resource;

use super::resources::CxlContextResource;
use super::{self as backend, AddressSpace, AfuEvent, AfuMode, ContextKind, CxlAfu, Work};
use crate::bindings::accel::plugin::cxl as wit;
use crate::devices::{ByteSwapped, CheckedMmio};
use crate::error::ErrorCode;
use crate::imports::device_error;
use crate::state::{
    BufferResource, EventResource, ImportError, PluginState, RegionResource, guest_error,
    guest_handle, host_handle,
};

fn mode(mode: AfuMode) -> wit::AfuMode {
    match mode {
        AfuMode::Dedicated => wit::AfuMode::Dedicated,
        AfuMode::Directed => wit::AfuMode::AfuDirected,
    }
}

fn desc(d: backend::AfuDesc) -> wit::AfuDesc {
    wit::AfuDesc {
        path: d.path,
        card: d.card,
        slice: d.slice,
        mode: d.mode.map(mode),
        modes_supported: d.modes_supported.into_iter().map(mode).collect(),
        mmio_size: d.mmio_size,
        pp_mmio_offset: d.pp_mmio_offset,
        pp_mmio_length: d.pp_mmio_len,
        irqs_min: d.irqs_min,
        irqs_max: d.irqs_max,
        max_contexts: d.max_contexts,
        caia_major: d.caia_version.0,
        caia_minor: d.caia_version.1,
        vendor_id: d.vendor_id,
        device_id: d.device_id,
        emulated: d.emulated,
    }
}

impl PluginState {
    fn cxl_context(
        &self,
        context: &Resource<wit::Context>,
    ) -> Result<&CxlContextResource, ImportError> {
        Ok(self
            .table
            .get(&host_handle::<CxlContextResource, _>(context))?)
    }
}

impl wit::Host for PluginState {
    fn list_afus(&mut self) -> wasmtime::Result<Vec<wit::AfuDesc>> {
        Ok(self
            .granted_devices::<dyn CxlAfu>()
            .into_iter()
            .map(|afu| desc(afu.desc()))
            .collect())
    }

    fn list_cards(&mut self) -> wasmtime::Result<Vec<wit::CardDesc>> {
        let mut cards = std::collections::BTreeMap::new();
        for afu in self.granted_devices::<dyn CxlAfu>() {
            let d = afu.desc();
            cards.entry((d.emulated, d.card)).or_insert(wit::CardDesc {
                card: d.card,
                bus_address: d.bus_address.map(Into::into),
                emulated: d.emulated,
            });
        }
        Ok(cards.into_values().collect())
    }
}

impl wit::HostContext for PluginState {
    fn open(
        &mut self,
        path: String,
        kind: wit::ContextKind,
    ) -> Result<Resource<wit::Context>, ImportError> {
        let kind = match kind {
            wit::ContextKind::Master => ContextKind::Master,
            wit::ContextKind::Slave => ContextKind::Slave,
            wit::ContextKind::Dedicated => ContextKind::Dedicated,
        };
        let node = format!("{path}{}", kind.suffix());
        let afu = self.granted_device::<dyn CxlAfu>("open a cxl context", &path)?;
        // A plugin's AFU reaches only the buffers it attaches, whatever its grants.
        match afu.open(kind, &self.ctx.owner, AddressSpace::AttachedBuffers) {
            Ok(context) => {
                let charge = self.charge_resource(node.len() as u64)?;
                let context = self
                    .table
                    .push(CxlContextResource::new(context, node, "context", charge))?;
                Ok(guest_handle(context))
            }
            Err(err) if err.raw_os_error() == Some(libc::ENOSPC) => Err(guest_error(
                ErrorCode::NoSpace,
                format!(
                    "cxl context open on {node}: every context of the AFU is in use ({} at most)",
                    afu.desc().max_contexts
                ),
            )),
            Err(err) => Err(device_error("cxl context open", &node, err)),
        }
    }

    fn process_element(&mut self, context: Resource<wit::Context>) -> wasmtime::Result<u32> {
        let c = self
            .table
            .get(&host_handle::<CxlContextResource, _>(&context))?;
        // Only an ended instance holds released contexts, and it runs no more calls.
        Ok(c.held().map_or(u32::MAX, |c| c.process_element()))
    }

    fn start_work(
        &mut self,
        context: Resource<wit::Context>,
        work: wit::Work,
    ) -> Result<(), ImportError> {
        let c = self.cxl_context(&context)?;
        let work = Work {
            wed: work.wed,
            amr: work.amr,
            num_interrupts: work.num_interrupts,
        };
        c.device()?
            .start_work(&work)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EIO) => guest_error(
                    ErrorCode::Busy,
                    format!(
                        "cxl start-work on {}: the context already started work",
                        c.name()
                    ),
                ),
                _ => device_error("cxl start-work", c.name(), e),
            })
    }

    fn map_mmio(
        &mut self,
        context: Resource<wit::Context>,
        big_endian: bool,
    ) -> Result<Resource<RegionResource>, ImportError> {
        let c = self.cxl_context(&context)?;
        let node = c.name().to_string();
        let window = c.device()?.map_mmio().map_err(|e| match e.raw_os_error() {
            Some(libc::EIO) => guest_error(
                ErrorCode::InvalidArgument,
                format!(
                    "cxl map-mmio on {node}: the problem-state area is mapped after start-work"
                ),
            ),
            _ => device_error("cxl map-mmio", &node, e),
        })?;
        let window: Arc<dyn crate::devices::MmioWindow> = if big_endian {
            Arc::new(ByteSwapped(window))
        } else {
            window
        };
        Ok(self.table.push(RegionResource {
            mmio: CheckedMmio::new(window),
            _charge: self.charge_resource(node.len() as u64)?,
            device: node,
        })?)
    }

    fn attach_buffer(
        &mut self,
        context: Resource<wit::Context>,
        buffer: Resource<BufferResource>,
    ) -> Result<u64, ImportError> {
        let memory = self.table.get(&buffer)?.memory.clone();
        let c = self.cxl_context(&context)?;
        c.device()?
            .attach_buffer(&memory)
            .map_err(|e| device_error("cxl attach-buffer", c.name(), e))
    }

    fn read_event(
        &mut self,
        context: Resource<wit::Context>,
        timeout_ns: u64,
    ) -> Result<Option<wit::AfuEvent>, ImportError> {
        let deadline = self.wait_deadline(timeout_ns);
        let c = self.cxl_context(&context)?;
        let event = self.wait_sliced(deadline, |slice| {
            c.device()?
                .read_event(slice)
                .map_err(|e| device_error("cxl read-event", c.name(), e))
        })?;
        Ok(event.map(|event| match event {
            AfuEvent::Interrupt(irq) => wit::AfuEvent::Interrupt(irq),
            AfuEvent::DataStorage { address, dsisr } => {
                wit::AfuEvent::DataStorage(wit::StorageFault { address, dsisr })
            }
            AfuEvent::AfuError(error) => wit::AfuEvent::AfuError(error),
        }))
    }

    fn interrupt_event(
        &mut self,
        context: Resource<wit::Context>,
        irq: u16,
    ) -> Result<Resource<EventResource>, ImportError> {
        let c = self.cxl_context(&context)?;
        let completion = c
            .device()?
            .interrupt_completion(irq)
            .map_err(|e| device_error(&format!("cxl interrupt-event {irq}"), c.name(), e))?;
        self.adopt_completion(completion)
    }

    fn drop(&mut self, context: Resource<wit::Context>) -> wasmtime::Result<()> {
        self.table
            .delete(host_handle::<CxlContextResource, _>(&context))?;
        Ok(())
    }
}

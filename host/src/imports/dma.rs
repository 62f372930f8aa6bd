//! `dma`: host memory a device reaches by DMA, counted against the plugin's grant.

use wasmtime::component::Resource;

use super::MAX_TRANSFER;
use crate::bindings::accel::plugin::dma;
use crate::devices::watch::WatchError;
use crate::devices::{DmaMemory, PollOutcome, poll_memory_until};
use crate::error::ErrorCode;
use crate::state::{BufferResource, EventResource, ImportError, PluginState, guest_error};

fn too_long(call: &str, len: u64) -> ImportError {
    guest_error(
        ErrorCode::InvalidArgument,
        format!("{call} moves at most {MAX_TRANSFER} bytes per call, asked for {len}"),
    )
}

fn out_of_range(call: &str, err: crate::devices::RangeError) -> ImportError {
    guest_error(ErrorCode::InvalidArgument, format!("{call}: {err}"))
}

impl PluginState {
    fn memory(&self, buffer: &Resource<BufferResource>) -> Result<&DmaMemory, ImportError> {
        Ok(&self.table.get(buffer)?.memory)
    }
}

impl dma::HostBuffer for PluginState {
    fn allocate(&mut self, size: u64) -> Result<Resource<BufferResource>, ImportError> {
        let ctx = &self.ctx;
        let huge_pages = ctx.devices.has_real_devices();
        match ctx.owner.allocate_dma(size, huge_pages) {
            Ok(memory) => {
                // Buffers a plugin allocates are DMA targets: pinned, so populated now.
                memory.populate();
                let charge = self.charge_resource(0)?;
                Ok(self.table.push(BufferResource {
                    memory,
                    _charge: charge,
                })?)
            }
            Err(err) => Err(guest_error(
                super::code_for_io(&err),
                format!("dma buffer allocate of {size} bytes: {err}"),
            )),
        }
    }

    fn size(&mut self, buffer: Resource<BufferResource>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&buffer)?.memory.len())
    }

    fn io_address(&mut self, buffer: Resource<BufferResource>) -> wasmtime::Result<Option<u64>> {
        Ok(self.table.get(&buffer)?.memory.io_address())
    }

    fn read(
        &mut self,
        buffer: Resource<BufferResource>,
        offset: u64,
        len: u32,
    ) -> Result<Vec<u8>, ImportError> {
        let memory = self.memory(&buffer)?;
        if u64::from(len) > MAX_TRANSFER {
            Err(too_long("dma buffer read", len.into()))
        } else {
            let mut bytes = vec![0; len as usize];
            memory
                .read(offset, &mut bytes)
                .map_err(|e| out_of_range("dma buffer read", e))
                .map(|()| bytes)
        }
    }

    fn write(
        &mut self,
        buffer: Resource<BufferResource>,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<(), ImportError> {
        let memory = self.memory(&buffer)?;
        if data.len() as u64 > MAX_TRANSFER {
            Err(too_long("dma buffer write", data.len() as u64))
        } else {
            memory
                .write(offset, &data)
                .map_err(|e| out_of_range("dma buffer write", e))
        }
    }

    fn poll64(
        &mut self,
        buffer: Resource<BufferResource>,
        offset: u64,
        mask: u64,
        expected: u64,
        timeout_ns: u64,
    ) -> Result<u64, ImportError> {
        let deadline = self.wait_deadline(timeout_ns);
        let memory = self.memory(&buffer)?;
        let mut last = 0;
        let matched = self.wait_sliced(deadline, |slice| {
            match poll_memory_until(memory, slice, mask, expected, || memory.load_u64(offset)) {
                Ok(PollOutcome::Matched(value)) => Ok(Some(value)),
                Ok(PollOutcome::TimedOut(value)) => {
                    last = value;
                    Ok(None)
                }
                Err(e) => Err(out_of_range("dma buffer poll64", e)),
            }
        })?;
        matched.ok_or_else(|| {
            guest_error(
                ErrorCode::Timeout,
                format!("dma buffer poll64 at offset {offset:#x} timed out; last value {last:#x}"),
            )
        })
    }

    fn watch64(
        &mut self,
        buffer: Resource<BufferResource>,
        offset: u64,
        mask: u64,
        expected: u64,
    ) -> Result<Resource<EventResource>, ImportError> {
        let memory = self.table.get(&buffer)?.memory.clone();
        match crate::devices::watch::watch(&memory, offset, mask, expected, &self.ctx.owner.host) {
            Ok(completion) => Ok(self.adopt_completion(completion)?),
            Err(err) => Err(guest_error(
                match err {
                    WatchError::Range(_) => ErrorCode::InvalidArgument,
                    WatchError::OverBudget(_) => ErrorCode::OutOfMemory,
                },
                format!("dma buffer watch64 at offset {offset:#x}: {err}"),
            )),
        }
    }

    fn drop(&mut self, buffer: Resource<BufferResource>) -> wasmtime::Result<()> {
        self.table.delete(buffer)?;
        Ok(())
    }
}

impl dma::Host for PluginState {}

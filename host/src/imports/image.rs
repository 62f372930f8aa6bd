//! `image`: bitstreams and device binaries the host holds; the plugin reads only what it needs.

use wasmtime::component::Resource;

use super::MAX_TRANSFER;
use crate::bindings::accel::plugin::image;
use crate::error::ErrorCode;
use crate::state::{ImageResource, ImportError, PluginState, guest_error};

impl image::HostImage for PluginState {
    fn size(&mut self, image: Resource<ImageResource>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&image)?.bytes.len() as u64)
    }

    fn read(
        &mut self,
        image: Resource<ImageResource>,
        offset: u64,
        len: u32,
    ) -> Result<Vec<u8>, ImportError> {
        let bytes = &self.table.get(&image)?.bytes;
        let end = offset.checked_add(u64::from(len));
        match end {
            _ if u64::from(len) > MAX_TRANSFER => Err(guest_error(
                ErrorCode::InvalidArgument,
                format!("image read moves at most {MAX_TRANSFER} bytes per call, asked for {len}"),
            )),
            Some(end) if end <= bytes.len() as u64 => {
                Ok(bytes[offset as usize..end as usize].to_vec())
            }
            _ => Err(guest_error(
                ErrorCode::InvalidArgument,
                format!(
                    "image read of {len} byte(s) at offset {offset:#x} is past the end of the {}-byte image",
                    bytes.len()
                ),
            )),
        }
    }

    fn drop(&mut self, image: Resource<ImageResource>) -> wasmtime::Result<()> {
        self.table.delete(image)?;
        Ok(())
    }
}

impl image::Host for PluginState {}

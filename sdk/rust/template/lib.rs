//! A plugin with one device, which applications find and open. The SDK's defaults cover the
//! rest: every `Plugin` method left out answers `unsupported` (`close` succeeds). Add your
//! device's calls (`map_mmio`, `prepare_buffer`, the offload calls); `--from nlb0` starts from
//! a plugin that drives a real card.

use accelhost_sdk::{Discovered, Filter, Guid, OpenMode, Plugin, Properties, Result, discover};

const GUID: Guid = Guid::new(0x1234, 0x5678);

#[derive(Default)]
struct Template;

impl Plugin for Template {
    fn enumerate(&mut self, filters: Vec<Filter>) -> Result<Vec<Discovered>> {
        let device = Properties::accelerator("template0", GUID);
        Ok(discover(&filters, [device]))
    }

    fn open(&mut self, token: u64, _mode: OpenMode) -> Result<u64> {
        Ok(token + 1)
    }
}

accelhost_sdk::export_plugin!(Template);

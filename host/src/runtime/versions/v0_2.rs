//! `accel:plugin@0.2.0`. Its imports are the latest version's, with the same functions and
//! types (0.3.0 only added the optional `inventory` export), so the latest implementation
//! serves them under their 0.2.0 names; the frozen WIT is in `wit/0.2.0/`.

use wasmtime::component::Linker;

use crate::state::PluginState;

/// The version.
pub(crate) const VERSION: &str = "0.2.0";

/// Links the latest implementation of each interface 0.2.0 imports, under its 0.2.0 name.
pub(crate) fn add_imports(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    super::link::link_latest_as!(
        linker, "0.2.0", types, log, clock, mmio, dma, image, events, dfl, xocl, cxl, remote
    );
    Ok(())
}

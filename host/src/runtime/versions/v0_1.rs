//! `accel:plugin@0.1.0`, the first version. Every interface of it is in the latest version
//! with the same functions and types (the latest only added to it), so the latest
//! implementation serves its imports as they are, under its names; the frozen WIT is in
//! `wit/0.1.0/`, and a plugin built for it is in `tests/fixtures/v0.1.0/`.

use wasmtime::component::Linker;

use crate::state::PluginState;

/// The version.
pub(crate) const VERSION: &str = "0.1.0";

/// Links the latest implementation of each interface 0.1.0 has, under its 0.1.0 name.
pub(crate) fn add_imports(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    super::link::link_latest_as!(
        linker, "0.1.0", types, log, clock, mmio, dma, image, events, dfl, xocl, cxl
    );
    Ok(())
}

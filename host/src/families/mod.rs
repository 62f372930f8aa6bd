//! The device families, each one folder: its ABI facts (`abi.rs`), Linux backend
//! (`linux.rs`), emulator (`emu.rs`), emulated-card settings (`card.rs`), host import
//! (`imports.rs`) and the resources it hands plugins (`resources.rs`), its share of the
//! embedded default config (`default.json`) and its registration (`family.rs`: a
//! `Family`). The catalog (`crate::builtin`) lists them; nothing
//! below it names a family. A family's canonical workload drives the public API and lives
//! above, in `crate::workloads`.

pub mod cxl;
pub mod dfl;
pub mod xocl;

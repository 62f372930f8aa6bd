//! Device backends: one folder per driver family, each with its ABI facts (`abi.rs`), a
//! Linux backend over the real kernel interface (`linux.rs`) and an emulator of the same ABI
//! (`emu.rs`). Nothing here knows about wasm: `imports/` checks grants and translates
//! handles, then calls down into these types.

mod budget;
mod completion;
pub mod cxl;
pub mod dfl;
pub mod ioctl;
mod memory;
mod mmio;
mod poll;
#[cfg(test)]
mod scratch;
mod sysfs;
pub mod watch;
pub mod xocl;

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use dfl::DflDevice;

pub use budget::{Budget, BudgetKind, Charge, OverBudget, Owner, OwnerId};
pub use completion::{Completion, CompletionState};
pub use memory::{DmaMemory, RangeError, page_size};
pub use mmio::{AccessWidth, ByteSwapped, CheckedMmio, MmioFault, MmioWindow};
pub use poll::{PollOutcome, poll_until};

use crate::config::{Config, DeviceDecl, DeviceFamily};

/// Where the Linux backends look for sysfs and device nodes; tests point these at fake trees.
#[derive(Clone, Debug)]
pub struct LinuxRoots {
    /// The sysfs mount, `/sys` by default.
    pub sysfs: PathBuf,
    /// The directory of device nodes, `/dev` by default.
    pub dev: PathBuf,
}

impl Default for LinuxRoots {
    fn default() -> Self {
        LinuxRoots {
            sysfs: PathBuf::from("/sys"),
            dev: PathBuf::from("/dev"),
        }
    }
}

/// Every device the host can hand to plugins, by the name grants use: `emu:<id>` for the
/// emulated cards the config declares, the `/dev` path for real ones.
#[derive(Default)]
pub struct DeviceRegistry {
    dfl_ports: BTreeMap<String, Arc<dyn dfl::DflDevice>>,
    xocl_devices: BTreeMap<String, Arc<dyn xocl::XoclDevice>>,
    cxl_afus: BTreeMap<String, Arc<dyn cxl::CxlAfu>>,
    real_devices: bool,
}

impl DeviceRegistry {
    /// Builds the emulated cards the config declares and finds the real ones under `roots`.
    /// A missing or unreadable sysfs tree just means no real devices.
    pub fn from_config(config: &Config) -> Self {
        let mut registry = DeviceRegistry::default();
        for decl in &config.devices {
            registry.add_emulated(decl);
        }
        let roots = LinuxRoots {
            sysfs: config.linux.sysfs_root.clone(),
            dev: config.linux.dev_root.clone(),
        };
        match dfl::linux::discover_ports(&roots) {
            Ok(ports) => {
                for port in ports {
                    registry.real_devices = true;
                    registry
                        .dfl_ports
                        .insert(port.desc().path.clone(), Arc::new(port));
                }
            }
            Err(err) => tracing::debug!(
                sysfs = %roots.sysfs.display(),
                "no DFL ports found through sysfs: {err}"
            ),
        }
        match xocl::linux::discover_devices(&roots) {
            Ok(devices) => {
                use xocl::XoclDevice;
                for device in devices {
                    registry.real_devices = true;
                    registry
                        .xocl_devices
                        .insert(device.desc().path, Arc::new(device));
                }
            }
            Err(err) => tracing::debug!(
                sysfs = %roots.sysfs.display(),
                "no xocl devices found through sysfs: {err}"
            ),
        }
        match cxl::linux::discover_afus(&roots) {
            Ok(afus) => {
                use cxl::CxlAfu;
                for afu in afus {
                    registry.real_devices = true;
                    registry.cxl_afus.insert(afu.desc().path, Arc::new(afu));
                }
            }
            Err(err) => tracing::debug!(
                sysfs = %roots.sysfs.display(),
                "no CAPI AFUs found through sysfs: {err}"
            ),
        }
        registry
    }

    fn add_emulated(&mut self, decl: &DeviceDecl) {
        match decl.family {
            DeviceFamily::Dfl => {
                let port = dfl::emu::EmulatedPort::new(decl);
                self.dfl_ports
                    .insert(port.desc().path.clone(), Arc::new(port));
            }
            DeviceFamily::Xocl => {
                use xocl::XoclDevice;
                let card = xocl::emu::EmulatedCard::new(decl);
                self.xocl_devices.insert(card.desc().path, Arc::new(card));
            }
            DeviceFamily::Cxl => {
                use cxl::CxlAfu;
                // AFUs without a configured slice take the next one, in config order.
                let slice = self.cxl_afus.values().filter(|a| a.desc().emulated).count() as u32;
                let afu = cxl::emu::EmulatedAfu::new(decl, slice);
                self.cxl_afus.insert(afu.desc().path, Arc::new(afu));
            }
        }
    }

    /// The DFL ports whose names `granted` accepts, in name order.
    pub fn dfl_ports(&self, granted: impl Fn(&str) -> bool) -> Vec<Arc<dyn dfl::DflDevice>> {
        self.dfl_ports
            .iter()
            .filter(|(name, _)| granted(name))
            .map(|(_, dev)| dev.clone())
            .collect()
    }

    /// The xocl devices whose names `granted` accepts, in name order.
    pub fn xocl_devices(&self, granted: impl Fn(&str) -> bool) -> Vec<Arc<dyn xocl::XoclDevice>> {
        self.xocl_devices
            .iter()
            .filter(|(name, _)| granted(name))
            .map(|(_, dev)| dev.clone())
            .collect()
    }

    /// The xocl device named `name`, if it exists.
    pub fn xocl_device(&self, name: &str) -> Option<Arc<dyn xocl::XoclDevice>> {
        self.xocl_devices.get(name).cloned()
    }

    /// The CAPI AFUs whose names `granted` accepts, in name order.
    pub fn cxl_afus(&self, granted: impl Fn(&str) -> bool) -> Vec<Arc<dyn cxl::CxlAfu>> {
        self.cxl_afus
            .iter()
            .filter(|(name, _)| granted(name))
            .map(|(_, afu)| afu.clone())
            .collect()
    }

    /// The CAPI AFU named `name`, if it exists.
    pub fn cxl_afu(&self, name: &str) -> Option<Arc<dyn cxl::CxlAfu>> {
        self.cxl_afus.get(name).cloned()
    }

    /// Whether any real (non-emulated) device was found; DMA memory then prefers huge pages,
    /// which the real drivers need for physically contiguous buffers.
    pub fn has_real_devices(&self) -> bool {
        self.real_devices
    }

    /// The DFL port named `name`, if it exists.
    pub fn dfl_port(&self, name: &str) -> Option<Arc<dyn dfl::DflDevice>> {
        self.dfl_ports.get(name).cloned()
    }
}

/// Checks a device image the host recognizes before any plugin sees it: an xclbin (by its
/// magic) must parse and validate. Other formats are the plugin's to judge.
pub fn validate_image(image: &[u8]) -> Result<(), String> {
    if image.starts_with(xocl::xclbin::MAGIC.as_slice()) {
        xocl::xclbin::parse(image)
            .map(drop)
            .map_err(|e| format!("the xclbin is malformed: {e}"))
    } else {
        Ok(())
    }
}

/// An `io::Error` carrying a raw errno, as the kernel would return it.
pub(crate) fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// Refuses memory another plugin allocated (`EFAULT`), as the kernel refuses pages outside
/// the caller's address space.
pub(crate) fn check_owner(memory: &DmaMemory, owner: OwnerId) -> io::Result<()> {
    if memory.owner() == owner {
        Ok(())
    } else {
        Err(errno(libc::EFAULT))
    }
}

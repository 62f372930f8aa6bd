//! The process-wide host behind the C API: started by `fpgaInitialize` or by the first call
//! that needs it (as OPAE does), replaced by `accelhostLoadConfig*`, ended by `fpgaFinalize`.

use std::ffi::c_char;
use std::path::Path;

use accelhost::config::{Config, ConfigSource};
use accelhost::{ConfigOrigin, Host};
use accelhost_door::process::{ProcessHost, discover};

use crate::ffi::{c_str, guard};
use crate::registry;
use crate::result::CapiResult;
use crate::types::fpga_result;

static HOST: ProcessHost = ProcessHost::new();

/// The running host, started on the usual config lookup (`$ACCELHOST_CONFIG`, then
/// `./accelhost.json`, ..., then the embedded default) if none runs yet.
pub(crate) fn host() -> CapiResult<Host> {
    Ok(HOST.get()?)
}

/// Drops every object C holds, in the registry's teardown order.
fn release_all() {
    drop(registry::drain());
}

/// Replaces the running host with one on `config` (every object C holds is dropped).
fn replace(config: (Config, ConfigOrigin)) -> CapiResult {
    HOST.replace(config, release_all).map(drop)?;
    Ok(())
}

/// OPAE's `fpgaInitialize`: starts the host on `config_file`, or on the usual lookup when it
/// is NULL. Calling it again while a host runs does nothing and returns `FPGA_OK`.
///
/// # Safety
/// `config_file` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaInitialize(config_file: *const c_char) -> fpga_result {
    guard("fpgaInitialize", || {
        if HOST.running().is_some() {
            return Ok(());
        }
        let path = if config_file.is_null() {
            None
        } else {
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            Some(Path::new(unsafe { c_str(config_file, "config_file") }?))
        };
        HOST.start(Some(discover(path)?)).map(drop)?;
        Ok(())
    })
}

/// OPAE's `fpgaFinalize`: releases every object C holds (closing handles, releasing buffers)
/// and shuts the host down. A later call starts a fresh host.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaFinalize() -> fpga_result {
    guard("fpgaFinalize", || {
        HOST.shut_down(release_all);
        Ok(())
    })
}

/// accelhost extension: replaces the running host with one on the config file `path`. Every
/// object C holds is released first.
///
/// # Safety
/// `path` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostLoadConfig(path: *const c_char) -> fpga_result {
    guard("accelhostLoadConfig", || {
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let path = unsafe { c_str(path, "path") }?;
        replace(discover(Some(Path::new(path)))?)
    })
}

/// accelhost extension: like `accelhostLoadConfig`, with the config's JSON text; relative
/// module paths are taken from the current directory.
///
/// # Safety
/// `json` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostLoadConfigJson(json: *const c_char) -> fpga_result {
    guard("accelhostLoadConfigJson", || {
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let text = unsafe { c_str(json, "json") }?;
        // Named as a file in the working directory, so relative module paths resolve there.
        let dir = std::env::current_dir().unwrap_or_default();
        let source = ConfigSource::File(dir.join("<accelhostLoadConfigJson>"));
        let config = Config::parse(text, source).map_err(accelhost::Error::from)?;
        replace((config, ConfigOrigin::Explicit))
    })
}

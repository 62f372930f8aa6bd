//! accelhost extension: the plugins of the running host and their state.

use accelhost::PluginStatus;

use crate::ffi::{array, fill_field, guard, non_null};
use crate::state::host;
use crate::types::*;

/// Lists the plugins of the config (starting the host if needed): `*num_plugins` is how
/// many there are; the first `max_plugins` are stored in `plugins`.
///
/// # Safety
/// `plugins` must be NULL or valid for `max_plugins` writes; `num_plugins` NULL or valid
/// for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostGetPlugins(
    plugins: *mut accelhost_plugin_info,
    max_plugins: u32,
    num_plugins: *mut u32,
) -> fpga_result {
    guard("accelhostGetPlugins", || {
        non_null(num_plugins, "num_plugins")?;
        array(plugins, max_plugins, "plugins", "max_plugins")?;
        let infos = host()?.plugins();
        for (i, info) in infos.iter().take(max_plugins as usize).enumerate() {
            let (state, reason) = match &info.status {
                PluginStatus::Running => (ACCELHOST_PLUGIN_RUNNING, String::new()),
                PluginStatus::Disabled => (ACCELHOST_PLUGIN_DISABLED, String::new()),
                PluginStatus::LoadFailed { reason } => {
                    (ACCELHOST_PLUGIN_LOAD_FAILED, reason.clone())
                }
                PluginStatus::Restarting { reason, .. } => {
                    (ACCELHOST_PLUGIN_RESTARTING, reason.clone())
                }
                PluginStatus::Faulted { reason, .. } => (ACCELHOST_PLUGIN_FAULTED, reason.clone()),
                _ => (ACCELHOST_PLUGIN_STOPPED, String::new()),
            };
            let mut out = accelhost_plugin_info {
                name: [0; 64],
                module: [0; 256],
                state,
                restarts: info.restarts,
                log_lines_dropped: info.log_lines_dropped,
                reason: [0; 256],
            };
            fill_field(&mut out.name, &info.name);
            fill_field(&mut out.module, &info.module);
            fill_field(&mut out.reason, &reason);
            // SAFETY: `i < max_plugins`, valid for writes by the caller's contract.
            unsafe { plugins.add(i).write(out) };
        }
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { num_plugins.write(u32::try_from(infos.len()).unwrap_or(u32::MAX)) };
        Ok(())
    })
}

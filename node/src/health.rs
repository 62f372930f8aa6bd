//! The health of the node's devices: every device an enumeration of the node's host ever
//! showed, healthy while its plugin runs and the latest enumeration still shows it. The
//! metrics and the kubelet read the same snapshot, refreshed at `health_interval_ms`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use accelhost::{PluginInfo, PluginStatus, Properties, Token};
use tokio::sync::watch;

/// One device and its health.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceHealth {
    /// `<plugin>/<name>`, as `accelhost list` prints it.
    pub id: String,
    /// The plugin that serves it.
    pub plugin: String,
    /// What the latest enumeration that showed it said.
    pub properties: Properties,
    /// Why it is unhealthy; `None` when it is healthy.
    pub unhealthy: Option<&'static str>,
}

impl DeviceHealth {
    /// Is the device healthy?
    pub fn healthy(&self) -> bool {
        self.unhealthy.is_none()
    }
}

struct Known {
    plugin: String,
    properties: Properties,
    present: bool,
}

/// The devices the node's enumerations showed, and the latest health snapshot of them.
pub struct DeviceBook {
    known: Mutex<BTreeMap<String, Known>>,
    snapshot: watch::Sender<Arc<Vec<DeviceHealth>>>,
}

impl Default for DeviceBook {
    fn default() -> Self {
        DeviceBook {
            known: Mutex::default(),
            snapshot: watch::Sender::new(Arc::new(Vec::new())),
        }
    }
}

impl DeviceBook {
    /// Takes in a whole enumeration of the host: what it shows is present, every other
    /// device it showed before is missing.
    pub fn record(&self, tokens: &[Token]) {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        for device in known.values_mut() {
            device.present = false;
        }
        for token in tokens {
            known.insert(
                token.id(),
                Known {
                    plugin: token.plugin().to_owned(),
                    properties: token.properties().clone(),
                    present: true,
                },
            );
        }
    }

    /// Judges every known device against the plugins' states, publishes the result to
    /// [`watch`](Self::watch)ers if it changed, and returns it.
    pub fn judge(&self, plugins: &[PluginInfo]) -> Arc<Vec<DeviceHealth>> {
        let judged: Vec<DeviceHealth> = {
            let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            known
                .iter()
                .map(|(id, device)| {
                    let status = plugins
                        .iter()
                        .find(|p| p.name == device.plugin)
                        .map(|p| &p.status);
                    let unhealthy = match status {
                        Some(PluginStatus::Running) if device.present => None,
                        Some(PluginStatus::Running) => Some("missing from the enumeration"),
                        Some(PluginStatus::Restarting { .. }) => Some("its plugin is restarting"),
                        Some(PluginStatus::Disabled) => Some("its plugin is disabled"),
                        Some(PluginStatus::Loading) => Some("its plugin is still loading"),
                        Some(_) => Some("its plugin is faulted"),
                        None => Some("its plugin is gone"),
                    };
                    DeviceHealth {
                        id: id.clone(),
                        plugin: device.plugin.clone(),
                        properties: device.properties.clone(),
                        unhealthy,
                    }
                })
                .collect()
        };
        self.snapshot.send_if_modified(|now| {
            if **now == judged {
                false
            } else {
                *now = Arc::new(judged);
                true
            }
        });
        self.snapshot.borrow().clone()
    }

    /// The latest snapshot.
    pub fn snapshot(&self) -> Arc<Vec<DeviceHealth>> {
        self.snapshot.borrow().clone()
    }

    /// A receiver that sees each new snapshot.
    pub fn watch(&self) -> watch::Receiver<Arc<Vec<DeviceHealth>>> {
        self.snapshot.subscribe()
    }
}

//! The node as a Kubernetes device plugin (the kubelet's API `v1beta1`): each kind of
//! accelerator is an extended resource served on its own socket in the kubelet's
//! device-plugin folder and registered with the kubelet; `ListAndWatch` follows the devices'
//! health; `Allocate` gives a container a socket of the node granted exactly its devices
//! (see [`allocation`]), not raw device nodes. When the kubelet restarts (its socket is made
//! again, and ours are deleted) the node registers again.

pub mod allocation;
pub mod plugin;
pub mod resource;
pub mod v1beta1;

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::client::{ClientOptions, Endpoint, channel};
use crate::config::KubernetesSettings;
use crate::listen::{ServeError, SocketFile, bind_unix, server};
use crate::service::NodeService;
use allocation::Allocations;
use plugin::ResourcePlugin;
use v1beta1::device_plugin_server::DevicePluginServer;
use v1beta1::registration_client::RegistrationClient;

/// The API version the node speaks to the kubelet.
pub const API_VERSION: &str = "v1beta1";

/// How often the node looks for the kubelet's socket, and checks it was not made again.
const KUBELET_POLL: Duration = Duration::from_secs(1);

/// The node's device plugins: the resources, their sockets, the registrations and the
/// allocations.
pub struct DevicePlugins {
    settings: Arc<KubernetesSettings>,
    service: Arc<NodeService>,
    allocations: Arc<Allocations>,
}

/// One resource being served on its socket; dropping it stops serving and removes the socket.
struct Served {
    socket: SocketFile,
    stop: watch::Sender<bool>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl DevicePlugins {
    /// The device plugins of `service`, with the allocations of the node's last run served
    /// again. Needs a tokio runtime (allocations' sockets are served on it).
    pub fn start(
        settings: KubernetesSettings,
        service: Arc<NodeService>,
    ) -> Result<DevicePlugins, ServeError> {
        let settings = Arc::new(settings);
        let allocations = Arc::new(Allocations::restore(settings.clone(), service.clone())?);
        Ok(DevicePlugins {
            settings,
            service,
            allocations,
        })
    }

    /// The allocations.
    pub fn allocations(&self) -> Arc<Allocations> {
        self.allocations.clone()
    }

    /// Registers with the kubelet (waiting for its socket, and again whenever it restarts)
    /// and serves the resources until `stopped` says stop; then removes the resources'
    /// sockets and stops serving the allocations (their folders stay for the next run).
    pub async fn run(self, mut stopped: watch::Receiver<bool>) {
        let kubelet = self.settings.kubelet_socket();
        let mut waiting_logged = false;
        'kubelet: loop {
            let seen = loop {
                match socket_identity(&kubelet) {
                    Some(seen) => break seen,
                    None if !waiting_logged => {
                        tracing::warn!(
                            socket = %kubelet.display(),
                            "waiting for the kubelet: its socket is not there; looking again every second"
                        );
                        waiting_logged = true;
                    }
                    None => {}
                }
                if sleep_or_stop(KUBELET_POLL, &mut stopped).await {
                    break 'kubelet;
                }
            };
            waiting_logged = false;
            let mut served: BTreeMap<String, Served> = BTreeMap::new();
            let mut health = self.service.device_book().watch();
            loop {
                self.allocations.sweep();
                let devices = health.borrow_and_update().clone();
                self.write_cdi_spec(&devices);
                for resource in resource::resources(&self.settings, &devices) {
                    if served.contains_key(&resource) {
                        continue;
                    }
                    match self.serve(&resource, &stopped).await {
                        Ok(one) => {
                            served.insert(resource, one);
                        }
                        Err(_) if *stopped.borrow() => break 'kubelet,
                        Err(err) => {
                            tracing::warn!(
                                %resource,
                                error = %accelhost::text::inert(&err),
                                "registering with the kubelet failed; trying again"
                            );
                            stop_all(&mut served);
                            if sleep_or_stop(KUBELET_POLL, &mut stopped).await {
                                break 'kubelet;
                            }
                            continue 'kubelet;
                        }
                    }
                }
                if socket_identity(&kubelet) != Some(seen)
                    || served.values().any(|s| !s.socket.is_in_place())
                {
                    tracing::info!("the kubelet restarted: registering again");
                    stop_all(&mut served);
                    continue 'kubelet;
                }
                tokio::select! {
                    _ = tokio::time::sleep(KUBELET_POLL) => {}
                    _ = health.changed() => {}
                    _ = stopped.wait_for(|stop| *stop) => {
                        stop_all(&mut served);
                        break 'kubelet;
                    }
                }
            }
        }
        self.allocations.stop();
    }

    /// Serves `resource` on its socket and registers it with the kubelet.
    async fn serve(
        &self,
        resource: &str,
        stopped: &watch::Receiver<bool>,
    ) -> Result<Served, String> {
        let name = resource::socket_name(resource);
        let socket = self.settings.device_plugin_dir.join(&name);
        let _ = std::fs::remove_file(&socket);
        let (listener, socket) = bind_unix(&socket, 0o600).map_err(|err| err.to_string())?;
        let (stop, mut stopping) = watch::channel(false);
        let mut node_stopped = stopped.clone();
        let plugin = ResourcePlugin {
            resource: resource.to_owned(),
            settings: self.settings.clone(),
            devices: self.service.device_book().clone(),
            allocations: self.allocations.clone(),
            stopped: stopping.clone(),
            host: self.service.host().clone(),
        };
        let label = resource.to_owned();
        tokio::spawn(async move {
            let ends = async move {
                tokio::select! {
                    _ = stopping.wait_for(|stop| *stop) => {}
                    _ = node_stopped.wait_for(|stop| *stop) => {}
                }
            };
            let served = server()
                .add_service(DevicePluginServer::new(plugin))
                .serve_with_incoming_shutdown(
                    crate::listen::unix_incoming(listener, "kubernetes"),
                    ends,
                )
                .await;
            if let Err(err) = served {
                tracing::error!(resource = %label, error = %err, "a device plugin socket failed");
            }
        });
        let served = Served { socket, stop };
        let kubelet = Endpoint::Unix(self.settings.kubelet_socket());
        let options = ClientOptions {
            connect_timeout: Duration::from_secs(5),
            call_timeout: Duration::from_secs(5),
            ..ClientOptions::default()
        };
        let registered = async {
            let channel = channel(&kubelet, options)
                .await
                .map_err(|e| e.to_string())?;
            RegistrationClient::new(channel)
                .register(v1beta1::RegisterRequest {
                    version: API_VERSION.into(),
                    endpoint: name.clone(),
                    resource_name: resource.to_owned(),
                    options: Some(plugin::options()),
                })
                .await
                .map_err(|status| format!("the kubelet refused: {}", status.message()))
        };
        // A kubelet slow to answer does not hold the node's stop up (the socket goes with
        // `served` either way).
        let mut stopping = stopped.clone();
        let registered = tokio::select! {
            registered = registered => registered,
            _ = stopping.wait_for(|stop| *stop) => Err("the node is stopping".to_string()),
        };
        registered.map(|_| {
            tracing::info!(%resource, socket = %name, "registered with the kubelet");
            served
        })
    }

    /// With `raw_device_nodes` and `cdi_spec_dir`: the CDI spec of every offered device
    /// with a `/dev` node, written when it changes.
    fn write_cdi_spec(&self, devices: &[crate::health::DeviceHealth]) {
        let Some(dir) = &self.settings.cdi_spec_dir else {
            return;
        };
        let grants = resource::grants_by_plugin(self.service.host());
        let entries: Vec<serde_json::Value> = devices
            .iter()
            .filter(|d| resource::offered(&self.settings, d))
            .filter_map(|d| {
                let granted = grants.get(&d.plugin).map_or(&[][..], Vec::as_slice);
                let node = resource::device_node(&d.properties, granted)?;
                let name = plugin::cdi_name(&self.settings, &d.properties.name);
                let (_, name) = name.split_once('=')?;
                Some(serde_json::json!({
                    "name": name,
                    "containerEdits": {"deviceNodes": [{"path": node}]}
                }))
            })
            .collect();
        let spec = serde_json::json!({
            "cdiVersion": "0.6.0",
            "kind": format!("{}/fpga", self.settings.resource_domain),
            "devices": entries,
        });
        let path = dir.join(format!("{}-fpga.json", self.settings.resource_domain));
        let text = spec.to_string();
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            return;
        }
        let staged = path.with_extension("json.new");
        let written = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&staged, &text))
            .and_then(|()| std::fs::rename(&staged, &path));
        if let Err(err) = written {
            tracing::error!(path = %path.display(), error = %err, "cannot write the CDI spec");
        }
    }
}

/// Stops serving every resource and removes their sockets.
fn stop_all(served: &mut BTreeMap<String, Served>) {
    served.clear();
}

/// The device and inode of the socket at `path`: a kubelet that restarts makes it again.
fn socket_identity(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    meta.file_type()
        .is_socket()
        .then(|| (meta.dev(), meta.ino()))
}

/// Sleeps for `period`; true if `stopped` said stop first.
async fn sleep_or_stop(period: Duration, stopped: &mut watch::Receiver<bool>) -> bool {
    let stop = tokio::select! {
        _ = tokio::time::sleep(period) => None,
        _ = stopped.wait_for(|stop| *stop) => Some(true),
    };
    stop.unwrap_or_else(|| *stopped.borrow())
}

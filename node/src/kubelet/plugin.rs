//! The `DevicePlugin` service of one extended resource, as the kubelet calls it.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::config::KubernetesSettings;
use crate::health::DeviceBook;
use crate::kubelet::allocation::{AllocateError, Allocation, Allocations, SOCKET};
use crate::kubelet::resource::{device_node, devices_of, grants_by_plugin, numa_node, offered};
use crate::kubelet::v1beta1::{self, device_plugin_server::DevicePlugin};

/// The environment variable that tells a pod's accelhost where its allocation's socket is.
pub const ENDPOINT_ENV: &str = accelhost::config::ENDPOINT_ENV;

/// One resource's device plugin.
pub struct ResourcePlugin {
    /// The extended resource, `<domain>/<name>`.
    pub resource: String,
    /// The `kubernetes` settings.
    pub settings: Arc<KubernetesSettings>,
    /// The node's devices and their health.
    pub devices: Arc<DeviceBook>,
    /// The node's allocations.
    pub allocations: Arc<Allocations>,
    /// Says when the plugin stops: its `ListAndWatch` streams end then.
    pub stopped: watch::Receiver<bool>,
    /// The node's host, for the plugins' grants (raw device nodes must be granted).
    pub host: std::sync::Arc<accelhost::Host>,
}

impl ResourcePlugin {
    /// The resource's device ids, sorted.
    fn known(&self) -> Vec<String> {
        let mut ids: Vec<String> =
            devices_of(&self.settings, &self.resource, &self.devices.snapshot())
                .into_iter()
                .map(|d| d.id)
                .collect();
        ids.sort();
        ids
    }

    /// What a container needs to reach `allocation`.
    fn container_response(&self, allocation: &Allocation) -> v1beta1::ContainerAllocateResponse {
        let settings = &self.settings;
        let socket = settings.container_dir.join(SOCKET);
        let mut response = v1beta1::ContainerAllocateResponse {
            envs: [(
                ENDPOINT_ENV.to_owned(),
                format!("unix://{}", socket.display()),
            )]
            .into(),
            mounts: vec![v1beta1::Mount {
                container_path: settings.container_dir.display().to_string(),
                host_path: self
                    .allocations
                    .host_path(&allocation.id)
                    .display()
                    .to_string(),
                read_only: true,
            }],
            annotations: [(
                format!("{}/allocation", settings.resource_domain),
                allocation.id.clone(),
            )]
            .into(),
            ..Default::default()
        };
        if settings.raw_device_nodes {
            let snapshot = self.devices.snapshot();
            let grants = grants_by_plugin(&self.host);
            for id in &allocation.devices {
                let Some(device) = snapshot.iter().find(|d| d.id == *id) else {
                    continue;
                };
                let granted = grants.get(&device.plugin).map_or(&[][..], Vec::as_slice);
                let Some(node) = device_node(&device.properties, granted) else {
                    tracing::info!(
                        device = %accelhost::text::inert(id),
                        "no /dev node to pass (an emulated or remote device, or a node its plugin is not granted)"
                    );
                    continue;
                };
                if settings.cdi_spec_dir.is_some() {
                    response.cdi_devices.push(v1beta1::CdiDevice {
                        name: cdi_name(settings, &device.properties.name),
                    });
                } else {
                    response.devices.push(v1beta1::DeviceSpec {
                        container_path: node.to_owned(),
                        host_path: node.to_owned(),
                        permissions: "rw".into(),
                    });
                }
            }
        }
        response
    }
}

/// The CDI name of a device: `<domain>/fpga=<name>`, the name reduced to what CDI allows.
pub fn cdi_name(settings: &KubernetesSettings, name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{}/fpga={name}", settings.resource_domain)
}

type DeviceStream = ReceiverStream<Result<v1beta1::ListAndWatchResponse, Status>>;

#[tonic::async_trait]
impl DevicePlugin for ResourcePlugin {
    async fn get_device_plugin_options(
        &self,
        _: Request<v1beta1::Empty>,
    ) -> Result<Response<v1beta1::DevicePluginOptions>, Status> {
        Ok(Response::new(options()))
    }

    type ListAndWatchStream = DeviceStream;

    async fn list_and_watch(
        &self,
        _: Request<v1beta1::Empty>,
    ) -> Result<Response<DeviceStream>, Status> {
        let (sender, receiver) = mpsc::channel(4);
        let mut health = self.devices.watch();
        let mut stopped = self.stopped.clone();
        let settings = self.settings.clone();
        let resource = self.resource.clone();
        tokio::spawn(async move {
            let mut last = None;
            loop {
                let devices = devices_of(&settings, &resource, &health.borrow_and_update());
                if last.as_ref() != Some(&devices) {
                    tracing::debug!(%resource, devices = devices.len(), "ListAndWatch: sending");
                    let answer = v1beta1::ListAndWatchResponse {
                        devices: devices.clone(),
                    };
                    if sender.send(Ok(answer)).await.is_err() {
                        return;
                    }
                    last = Some(devices);
                }
                tokio::select! {
                    changed = health.changed() => if changed.is_err() { return },
                    _ = stopped.wait_for(|stop| *stop) => return,
                    () = sender.closed() => return,
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(receiver)))
    }

    async fn get_preferred_allocation(
        &self,
        request: Request<v1beta1::PreferredAllocationRequest>,
    ) -> Result<Response<v1beta1::PreferredAllocationResponse>, Status> {
        let snapshot = self.devices.snapshot();
        let numa: BTreeMap<&str, Option<i64>> = snapshot
            .iter()
            .filter(|d| offered(&self.settings, d))
            .map(|d| (d.id.as_str(), numa_node(&d.properties)))
            .collect();
        let container_responses = request
            .into_inner()
            .container_requests
            .into_iter()
            .map(|ask| v1beta1::ContainerPreferredAllocationResponse {
                device_ids: prefer(
                    &ask.available_device_ids,
                    &ask.must_include_device_ids,
                    ask.allocation_size.max(0) as usize,
                    |id| numa.get(id).copied().flatten(),
                ),
            })
            .collect();
        Ok(Response::new(v1beta1::PreferredAllocationResponse {
            container_responses,
        }))
    }

    async fn allocate(
        &self,
        request: Request<v1beta1::AllocateRequest>,
    ) -> Result<Response<v1beta1::AllocateResponse>, Status> {
        let requests = request.into_inner().container_requests;
        let known = self.known();
        let mut asked = std::collections::BTreeSet::new();
        for device in requests.iter().flat_map(|r| &r.devices_ids) {
            if !asked.insert(device) {
                return Err(refused(AllocateError::Twice(device.clone())));
            }
        }
        let mut made: Vec<Allocation> = Vec::new();
        let mut container_responses = Vec::new();
        for container in &requests {
            match self
                .allocations
                .allocate(&self.resource, &known, &container.devices_ids)
            {
                Ok(allocation) => {
                    container_responses.push(self.container_response(&allocation));
                    made.push(allocation);
                }
                Err(err) => {
                    for allocation in &made {
                        self.allocations.revoke(&allocation.id);
                    }
                    tracing::warn!(
                        resource = %self.resource,
                        error = %accelhost::text::inert(&err.to_string()),
                        "Allocate refused"
                    );
                    return Err(refused(err));
                }
            }
        }
        Ok(Response::new(v1beta1::AllocateResponse {
            container_responses,
        }))
    }

    async fn pre_start_container(
        &self,
        _: Request<v1beta1::PreStartContainerRequest>,
    ) -> Result<Response<v1beta1::PreStartContainerResponse>, Status> {
        Ok(Response::new(v1beta1::PreStartContainerResponse {}))
    }
}

/// What the node's device plugins ask of the kubelet.
pub fn options() -> v1beta1::DevicePluginOptions {
    v1beta1::DevicePluginOptions {
        pre_start_required: false,
        get_preferred_allocation_available: true,
    }
}

/// The kubelet's answer to a refused allocation; device ids are plugins' text, made inert.
fn refused(err: AllocateError) -> Status {
    let message = accelhost::text::inert(&err.to_string()).into_owned();
    match err {
        AllocateError::UnknownDevice { .. } | AllocateError::Twice(_) => {
            Status::invalid_argument(message)
        }
        AllocateError::InUse { .. } => Status::failed_precondition(message),
        AllocateError::Serve(_) => Status::internal(message),
    }
}

/// The devices to suggest: those that must be included, then available ones on the NUMA
/// node most of those already chosen are on, then the rest, each group in id order.
fn prefer(
    available: &[String],
    must_include: &[String],
    size: usize,
    numa_of: impl Fn(&str) -> Option<i64>,
) -> Vec<String> {
    let mut chosen: Vec<String> = must_include.iter().take(size).cloned().collect();
    let mut rest: Vec<&String> = available.iter().filter(|id| !chosen.contains(id)).collect();
    rest.sort();
    let favourite = most_common(chosen.iter().filter_map(|id| numa_of(id)))
        .or_else(|| most_common(rest.iter().filter_map(|id| numa_of(id))));
    rest.sort_by_key(|id| {
        (
            favourite.is_none() || numa_of(id) != favourite,
            (*id).clone(),
        )
    });
    for id in rest {
        if chosen.len() >= size {
            break;
        }
        chosen.push(id.clone());
    }
    chosen
}

/// The value seen most often (the lowest of a tie).
fn most_common(values: impl Iterator<Item = i64>) -> Option<i64> {
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for value in values {
        *counts.entry(value).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|(value, count)| (*count, std::cmp::Reverse(*value)))
        .map(|(value, _)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdi_names_keep_to_what_cdi_allows() {
        let settings = KubernetesSettings {
            device_plugin_dir: "/k".into(),
            resource_domain: "accelhost.io".into(),
            devices: vec!["*".into()],
            allocation_dir: "/a".into(),
            container_dir: "/run/accelhost".into(),
            dma_memory_mib: 256,
            reconfigure: true,
            raw_device_nodes: true,
            cdi_spec_dir: Some("/var/run/cdi".into()),
        };
        assert_eq!(
            cdi_name(&settings, "dfl-port.0"),
            "accelhost.io/fpga=dfl-port.0"
        );
        assert_eq!(
            cdi_name(&settings, "emu:dfl0/x y"),
            "accelhost.io/fpga=emu_dfl0_x_y"
        );
    }

    #[test]
    fn preferred_allocations_keep_to_one_numa_node() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let numa = |id: &str| match id {
            "a" | "c" => Some(0),
            "b" | "d" => Some(1),
            _ => None,
        };
        assert_eq!(
            prefer(&ids(&["a", "b", "c", "d"]), &ids(&["b"]), 2, numa),
            ids(&["b", "d"])
        );
        assert_eq!(
            prefer(&ids(&["d", "c", "b", "a"]), &[], 2, numa),
            ids(&["a", "c"])
        );
        assert_eq!(prefer(&ids(&["x", "a"]), &[], 3, numa), ids(&["a", "x"]));
    }
}

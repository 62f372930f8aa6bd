//! Kubernetes allocations: each is a folder under `allocation_dir` holding a socket whose
//! sessions are granted exactly the allocated devices. The kubelet mounts the folder into the
//! pod, so the pod reaches those devices (through the node's sandbox) and nothing else.
//! Allocations are kept in `allocations.json` and served again when the node restarts: a pod
//! keeps its mount of the folder, and the socket reappears in it.
//!
//! The kubelet calls `Allocate` for every container of a pod before any of them starts, and
//! gives a device an init container had to an app container of the same pod again. So a
//! device given again does not end the allocation that held it: that allocation is
//! superseded, keeps its folder and socket (its init container may not have run yet), and
//! ends once it is idle and the allocation that superseded it has been used (the pod's
//! later container started) or has itself ended.

use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::sync::watch;
use tokio_stream::StreamExt;
use tonic::transport::server::Connected;

use crate::authority::AuthorityFix;
use crate::config::{ClientEntry, ClientGrants, ClientIdentity, KubernetesSettings};
use crate::gate::{PeerKey, Share};
use crate::identity::{AllocationConnectInfo, Process};
use crate::listen::{ServeError, SocketFile, bind_unix, node_router, server};
use crate::service::NodeService;

/// The socket's name in an allocation's folder.
pub use crate::config::ALLOCATION_SOCKET as SOCKET;
/// The file the allocations are kept in, in `allocation_dir`.
pub const STATE_FILE: &str = "allocations.json";

/// Devices the kubelet gave one container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    /// 128 random bits as hex: the folder's name, and the client's identity.
    pub id: String,
    /// The extended resource the devices were allocated as.
    pub resource: String,
    /// The device ids.
    pub devices: Vec<String>,
    /// The later allocation its devices were given to, if they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

impl Allocation {
    /// The name of the allocation's client, in logs, refusals and metrics.
    pub fn client_name(&self) -> String {
        format!("allocation-{}", self.id)
    }
}

#[derive(Default, Serialize, Deserialize)]
struct State {
    allocations: Vec<Allocation>,
}

/// Why an allocation was refused.
#[derive(Debug, thiserror::Error)]
pub enum AllocateError {
    /// The request names a device the resource does not have.
    #[error("Allocate: resource {resource} has no device '{device}' (it has: {known})")]
    UnknownDevice {
        /// The resource.
        resource: String,
        /// The device asked for.
        device: String,
        /// The resource's devices.
        known: String,
    },
    /// A container request names a device twice, or two containers ask for one device.
    #[error("Allocate: device '{0}' is asked for twice in one request")]
    Twice(String),
    /// The device is still used by the pod it was allocated to before.
    #[error(
        "Allocate: device '{device}' is still in use by allocation {holder} ({sessions} session(s) \
         attached); a device is given again only once the pod that had it is gone"
    )]
    InUse {
        /// The device.
        device: String,
        /// The allocation that holds it.
        holder: String,
        /// Its open sessions.
        sessions: usize,
    },
    /// The allocation's folder or socket could not be made.
    #[error("Allocate: {0}")]
    Serve(#[from] ServeError),
}

/// An allocation being served.
struct Live {
    allocation: Allocation,
    stop: watch::Sender<bool>,
    /// The allocation's socket, removed when the allocation stops being served (its folder
    /// stays for the next run, which binds it again).
    socket: Option<SocketFile>,
}

/// Makes `dir` (the allocation folder) reachable by this process's user alone, whoever made
/// it and with whatever mode: its allocations' sockets are 0666 and rely on it. A folder
/// another user owns is refused, since that user could open it again.
fn keep_private(dir: &Path) -> Result<(), ServeError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let io = |what: &'static str| {
        move |reason| ServeError::Io {
            what,
            path: dir.to_owned(),
            reason,
        }
    };
    let found = std::fs::symlink_metadata(dir).map_err(io("reading the allocation folder"))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !found.file_type().is_dir() || found.uid() != me {
        return Err(ServeError::Io {
            what: "checking the allocation folder",
            path: dir.to_owned(),
            reason: std::io::Error::other(format!(
                "it must be a folder owned by uid {me} (the node's user); it is {} owned by \
                 uid {}",
                if found.file_type().is_dir() {
                    "a folder"
                } else {
                    "not a folder"
                },
                found.uid()
            )),
        });
    }
    if found.mode() & 0o777 != 0o700 {
        tracing::info!(
            folder = %dir.display(),
            mode = format!("{:o}", found.mode() & 0o777),
            "the allocation folder was open to others: setting it to 0700"
        );
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("setting the mode of the allocation folder"))?;
    }
    Ok(())
}

/// The node's allocations, each served on its own socket.
pub struct Allocations {
    settings: Arc<KubernetesSettings>,
    service: Arc<NodeService>,
    live: Mutex<BTreeMap<String, Live>>,
}

impl Allocations {
    /// Makes `allocation_dir` (mode 0700) if it is missing, and serves again every allocation
    /// its state file names. A state file that does not parse is set aside (renamed), logged,
    /// and the node starts with none.
    pub fn restore(
        settings: Arc<KubernetesSettings>,
        service: Arc<NodeService>,
    ) -> Result<Allocations, ServeError> {
        let dir = &settings.allocation_dir;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|reason| ServeError::Io {
                what: "making the allocation folder",
                path: dir.clone(),
                reason,
            })?;
        keep_private(dir)?;
        let allocations = Allocations {
            settings,
            service,
            live: Mutex::default(),
        };
        let state = allocations.read_state();
        let mut live = allocations.live.lock().unwrap_or_else(|p| p.into_inner());
        for allocation in state.allocations {
            match allocations.serve(&allocation) {
                Ok(served) => {
                    live.insert(allocation.id.clone(), served);
                }
                Err(err) => tracing::warn!(
                    allocation = %allocation.id,
                    error = %err,
                    "an allocation of the last run could not be served again"
                ),
            }
        }
        tracing::info!(
            allocations = live.len(),
            "serving the allocations of the last run"
        );
        drop(live);
        allocations.write_state();
        Ok(allocations)
    }

    fn state_path(&self) -> PathBuf {
        self.settings.allocation_dir.join(STATE_FILE)
    }

    fn folder(&self, id: &str) -> PathBuf {
        self.settings.allocation_dir.join(id)
    }

    fn read_state(&self) -> State {
        let path = self.state_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return State::default(),
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "cannot read the allocations");
                return State::default();
            }
        };
        match serde_json::from_str::<State>(&text) {
            Ok(state) => state,
            Err(err) => {
                let aside = path.with_extension("json.unreadable");
                let _ = std::fs::rename(&path, &aside);
                tracing::warn!(
                    path = %path.display(),
                    error = %err,
                    set_aside = %aside.display(),
                    "the allocations file does not parse; starting with none"
                );
                State::default()
            }
        }
    }

    /// Writes the live allocations to the state file (a temporary file, then renamed).
    fn write_state(&self) {
        let state = State {
            allocations: self
                .live
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .map(|live| live.allocation.clone())
                .collect(),
        };
        let path = self.state_path();
        let staged = path.with_extension("json.new");
        let written = serde_json::to_vec_pretty(&state)
            .map_err(std::io::Error::other)
            .and_then(|bytes| std::fs::write(&staged, bytes))
            .and_then(|()| std::fs::rename(&staged, &path));
        if let Err(err) = written {
            tracing::error!(
                path = %path.display(),
                error = %err,
                "cannot keep the allocations: a restart of the node will forget them"
            );
        }
    }

    /// Serves `allocation` on the socket in its folder (made if missing).
    fn serve(&self, allocation: &Allocation) -> Result<Live, ServeError> {
        let folder = self.folder(&allocation.id);
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&folder)
            .or_else(|err| match err.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(()),
                _ => Err(err),
            })
            .map_err(|reason| ServeError::Io {
                what: "making the allocation's folder",
                path: folder.clone(),
                reason,
            })?;
        // Whoever reaches the socket is the pod: the folder is mounted there and nowhere else
        // (`allocation_dir` is 0700), so any uid in the pod may connect.
        let (listener, socket) = bind_unix(&folder.join(SOCKET), 0o666)?;
        self.service.grant_allocation(Arc::new(ClientEntry {
            name: allocation.client_name(),
            identity: ClientIdentity::Allocation(allocation.id.clone()),
            grants: ClientGrants {
                devices: allocation.devices.clone(),
                dma_memory_mib: self.settings.dma_memory_mib,
                reconfigure: self.settings.reconfigure,
            },
        }));
        let (stop, mut stopped) = watch::channel(false);
        let info = AllocationConnectInfo {
            allocation: allocation.id.as_str().into(),
            process: None,
        };
        let peer = PeerKey::Allocation(info.allocation.clone());
        let incoming = crate::shared_memory::split_redeemers(
            self.service.admit_each(
                crate::listen::unix_incoming(listener, "kubernetes allocation").map(
                    move |stream| {
                        stream.map(|stream| AllocatedStream {
                            info: AllocationConnectInfo {
                                process: Process::of_stream(stream.get_ref()),
                                ..info.clone()
                            },
                            stream,
                        })
                    },
                ),
                "kubernetes allocation",
                move |_, _| (peer.clone(), Share::Named),
            ),
            Arc::downgrade(&self.service.sessions()),
            |allocated| allocated.stream.get_ref(),
        );
        let router = node_router(server(), &self.service);
        let id = allocation.id.clone();
        tokio::spawn(async move {
            let served = router
                .serve_with_incoming_shutdown(incoming, async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                })
                .await;
            if let Err(err) = served {
                tracing::error!(allocation = %id, error = %err, "an allocation's socket failed");
            }
        });
        Ok(Live {
            allocation: allocation.clone(),
            stop,
            socket: Some(socket),
        })
    }

    /// The allocation holding `device`, if any.
    pub fn holder_of(&self, device: &str) -> Option<Allocation> {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .find(|live| live.allocation.devices.iter().any(|d| d == device))
            .map(|live| live.allocation.clone())
    }

    /// Every live allocation.
    pub fn list(&self) -> Vec<Allocation> {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .map(|live| live.allocation.clone())
            .collect()
    }

    /// Allocates `devices` (all of `resource`, whose devices are `known`) to one container.
    /// A device held by an earlier allocation with no session attached is given again: that
    /// allocation is superseded (see the module's documentation); one with a session
    /// attached is in use, and the request is refused.
    pub fn allocate(
        &self,
        resource: &str,
        known: &[String],
        devices: &[String],
    ) -> Result<Allocation, AllocateError> {
        let mut seen = std::collections::BTreeSet::new();
        for device in devices {
            if !known.contains(device) {
                return Err(AllocateError::UnknownDevice {
                    resource: resource.to_owned(),
                    device: device.clone(),
                    known: if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    },
                });
            }
            if !seen.insert(device) {
                return Err(AllocateError::Twice(device.clone()));
            }
        }
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let mut superseded = Vec::new();
        for device in devices {
            for holder in live
                .values()
                .filter(|l| l.allocation.devices.contains(device))
            {
                let sessions = self.service.sessions_of(&holder.allocation.client_name());
                if sessions > 0 {
                    return Err(AllocateError::InUse {
                        device: device.clone(),
                        holder: holder.allocation.id.clone(),
                        sessions,
                    });
                }
                if !superseded.contains(&holder.allocation.id) {
                    superseded.push(holder.allocation.id.clone());
                }
            }
        }
        let allocation = Allocation {
            id: crate::session::random_id(),
            resource: resource.to_owned(),
            devices: devices.to_vec(),
            superseded_by: None,
        };
        let served = self.serve(&allocation)?;
        for id in &superseded {
            if let Some(earlier) = live.get_mut(id) {
                earlier.allocation.superseded_by = Some(allocation.id.clone());
            }
        }
        live.insert(allocation.id.clone(), served);
        drop(live);
        self.write_state();
        tracing::info!(
            allocation = %allocation.id,
            resource,
            devices = ?allocation.devices,
            superseded = ?superseded,
            "devices allocated"
        );
        self.sweep();
        Ok(allocation)
    }

    /// Ends the superseded allocations that are done with: idle, and the allocation that
    /// superseded them has been used or has ended. The device plugin calls this as it
    /// watches the devices (every second at least), and `allocate` after each allocation.
    pub fn sweep(&self) {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        let done: Vec<String> = live
            .values()
            .filter(|l| {
                let Some(successor) = &l.allocation.superseded_by else {
                    return false;
                };
                let successor_used = match live.get(successor) {
                    Some(s) => self.service.ever_attached(&s.allocation.client_name()),
                    None => true,
                };
                successor_used && self.service.sessions_of(&l.allocation.client_name()) == 0
            })
            .map(|l| l.allocation.id.clone())
            .collect();
        if done.is_empty() {
            return;
        }
        for id in &done {
            if let Some(ended) = live.remove(id) {
                self.end(ended);
            }
        }
        drop(live);
        self.write_state();
    }

    /// Ends allocation `id` (used when a request that made it fails half-way); what it
    /// superseded is no longer superseded.
    pub fn revoke(&self, id: &str) {
        let ended = {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            for other in live.values_mut() {
                if other.allocation.superseded_by.as_deref() == Some(id) {
                    other.allocation.superseded_by = None;
                }
            }
            live.remove(id)
        };
        if let Some(ended) = ended {
            self.end(ended);
            self.write_state();
        }
    }

    /// Stops serving an allocation, ends its sessions and removes its folder.
    fn end(&self, live: Live) {
        let _ = live.stop.send(true);
        self.service.revoke_allocation(&live.allocation.id);
        let folder = self.folder(&live.allocation.id);
        if let Err(err) = std::fs::remove_dir_all(&folder) {
            tracing::warn!(folder = %folder.display(), error = %err, "cannot remove an ended allocation's folder");
        }
        tracing::info!(allocation = %live.allocation.id, "allocation ended");
    }

    /// Stops serving every allocation and removes their sockets, but keeps their folders and
    /// the state file, so the next run of the node serves them again there.
    pub fn stop(&self) {
        for live in self
            .live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values_mut()
        {
            let _ = live.stop.send(true);
            live.socket = None;
        }
    }

    /// The host path of allocation `id`'s folder.
    pub fn host_path(&self, id: &str) -> PathBuf {
        self.folder(id)
    }

    /// The folder of the allocations.
    pub fn dir(&self) -> &Path {
        &self.settings.allocation_dir
    }
}

/// A connection to an allocation's socket: a Unix stream that tells the service which
/// allocation it came through (and lets a client that sends the socket's path as
/// `:authority` in).
struct AllocatedStream {
    stream: AuthorityFix<UnixStream>,
    info: AllocationConnectInfo,
}

impl Connected for AllocatedStream {
    type ConnectInfo = AllocationConnectInfo;

    fn connect_info(&self) -> AllocationConnectInfo {
        self.info.clone()
    }
}

impl AsyncRead for AllocatedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for AllocatedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_allocation_folder_that_is_not_the_node_s_own_is_refused_by_what_it_is() {
        let dir = std::env::temp_dir().join(format!("accelhost-alloc-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("file");
        std::fs::write(&file, "").unwrap();
        let err = keep_private(&file).unwrap_err().to_string();
        assert!(err.contains("it is not a folder owned by uid"), "{err}");
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if me == 0 {
            let foreign = dir.join("foreign");
            std::fs::create_dir(&foreign).unwrap();
            std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
            let err = keep_private(&foreign).unwrap_err().to_string();
            assert!(
                err.contains("must be a folder owned by uid 0 (the node's user); it is a folder owned by uid 65534"),
                "{err}"
            );
        } else {
            eprintln!("not checked: giving a folder to another user (uid 65534) needs root");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

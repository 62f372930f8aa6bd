//! The serve config: where the node listens, which clients it knows and what each may do.
//! Every error names the file and the field.

use std::collections::BTreeSet;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

/// A serve config that parsed and passed every check.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeConfig {
    /// Where the config came from: relative paths in it are relative to this file's folder.
    pub origin: PathBuf,
    /// What clients are told the node is called (`host` of its devices, seen from elsewhere).
    pub node_name: String,
    /// The host config whose plugins the node serves; `None` for the usual lookup order.
    pub host_config: Option<PathBuf>,
    /// The Unix socket listener, if any.
    pub unix: Option<UnixListen>,
    /// The TCP listener with mutual TLS, if any.
    pub tcp: Option<TcpListen>,
    /// Where Prometheus metrics are served over plain HTTP, if anywhere.
    pub metrics: Option<MetricsListen>,
    /// Bounds on what clients may ask of the node.
    pub limits: Limits,
    /// The clients the node serves; anyone else is refused at `Attach`.
    /// Shared with the sessions that were attached as them.
    pub clients: Vec<Arc<ClientEntry>>,
    /// How often the node checks its devices' health (an enumeration answered from the
    /// node's cache, and every plugin's state), for metrics and the kubelet.
    pub health_interval: std::time::Duration,
    /// The Kubernetes device plugin, if the config turns it on.
    pub kubernetes: Option<KubernetesSettings>,
}

/// `kubernetes`: the node registers its devices with the kubelet as extended resources and
/// gives each allocation a socket of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct KubernetesSettings {
    /// The kubelet's device-plugin folder: `kubelet.sock` is there, and the node's sockets
    /// (one per resource) go there.
    pub device_plugin_dir: PathBuf,
    /// The domain of the extended resources (`<domain>/af-<AFU id>`).
    pub resource_domain: String,
    /// The devices offered to the kubelet (patterns as in a client's grants).
    pub devices: Vec<String>,
    /// Where each allocation's folder (with its socket) is made, and the allocations kept
    /// across restarts of the node; the same path on the host and in the node's container.
    pub allocation_dir: PathBuf,
    /// Where a container finds its allocation's folder.
    pub container_dir: PathBuf,
    /// The DMA grant of an allocation's sessions, in MiB.
    pub dma_memory_mib: u64,
    /// Whether an allocation's sessions may load program images onto its devices (an
    /// xclbin onto an XRT card): the device is the pod's alone, so by default they may.
    pub reconfigure: bool,
    /// Whether an allocation also passes the devices' `/dev` nodes.
    pub raw_device_nodes: bool,
    /// With `raw_device_nodes`: the folder of CDI specs (such as `/var/run/cdi`); the node
    /// writes its spec there and names the device nodes as CDI devices instead of device specs.
    pub cdi_spec_dir: Option<PathBuf>,
}

impl KubernetesSettings {
    /// The kubelet's registration socket.
    pub fn kubelet_socket(&self) -> PathBuf {
        self.device_plugin_dir.join("kubelet.sock")
    }

    /// Is the device `id` offered to the kubelet?
    pub fn offers(&self, id: &str) -> bool {
        matches_any(&self.devices, id)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKubernetes {
    #[serde(default = "default_device_plugin_dir")]
    device_plugin_dir: PathBuf,
    #[serde(default = "default_resource_domain")]
    resource_domain: String,
    #[serde(default = "every_device")]
    devices: Vec<String>,
    #[serde(default = "default_allocation_dir")]
    allocation_dir: PathBuf,
    #[serde(default = "default_container_dir")]
    container_dir: PathBuf,
    #[serde(default = "default_client_dma_mib")]
    dma_memory_mib: u64,
    #[serde(default = "allocations_reconfigure")]
    reconfigure: bool,
    #[serde(default)]
    raw_device_nodes: bool,
    #[serde(default)]
    cdi_spec_dir: Option<PathBuf>,
}

fn allocations_reconfigure() -> bool {
    true
}
fn default_device_plugin_dir() -> PathBuf {
    PathBuf::from("/var/lib/kubelet/device-plugins")
}
fn default_resource_domain() -> String {
    "accelhost.io".into()
}
fn every_device() -> Vec<String> {
    vec!["*".into()]
}
fn default_allocation_dir() -> PathBuf {
    PathBuf::from("/var/lib/accelhost/allocations")
}
fn default_container_dir() -> PathBuf {
    PathBuf::from("/run/accelhost")
}
fn default_health_interval_ms() -> u64 {
    2000
}

/// Is `domain` a DNS subdomain, as Kubernetes wants the prefix of a resource name?
fn is_dns_subdomain(domain: &str) -> bool {
    !domain.is_empty()
        && domain.len() <= 253
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// Does any of `patterns` (exact ids, or prefixes ending in `*`) match `id`?
fn matches_any(patterns: &[String], id: &str) -> bool {
    patterns
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => id.starts_with(prefix),
            None => pattern == id,
        })
}

/// Is `pattern` a device id or a prefix ending in `*`?
fn is_device_pattern(pattern: &str) -> bool {
    !pattern.is_empty() && !pattern.strip_suffix('*').unwrap_or(pattern).contains('*')
}

/// A Unix socket listener: local clients, identified by the peer's uid and gid.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnixListen {
    /// The socket's path.
    pub path: PathBuf,
    /// The socket file's permission bits, as octal text (default `0660`).
    #[serde(default = "default_mode", deserialize_with = "octal_mode")]
    pub mode: u32,
}

/// A TCP listener: clients prove who they are with a certificate signed by `client_ca`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpListen {
    /// `address:port` to listen on.
    pub address: SocketAddr,
    /// The node's certificate chain (PEM).
    pub certificate: PathBuf,
    /// The node's private key (PEM).
    pub key: PathBuf,
    /// The CA certificates (PEM) that client certificates must chain to.
    pub client_ca: PathBuf,
}

/// Bounds on what clients may ask of the node.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The largest message the node accepts, in KiB; bulk data moves in chunks below it.
    #[serde(default = "default_max_message_kib")]
    pub max_message_kib: u64,
    /// The most sessions open at once, across every client.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// The most sessions one client may have open at once.
    #[serde(default = "default_max_sessions_per_client")]
    pub max_sessions_per_client: usize,
    /// The most connections open at once, across every listener and peer (counted from
    /// accept, before the TLS handshake).
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// The most connections one peer may have open at once: one IP address on TCP, one uid
    /// on the Unix socket, one pod on an allocation's socket.
    #[serde(default = "default_max_connections_per_peer")]
    pub max_connections_per_peer: usize,
    /// The most connections of peers no client entry names, together (local users the
    /// config does not name, certificates of no client); an eighth of `max_connections` when
    /// not given. See [`Limits::unnamed_connections`].
    #[serde(default)]
    pub max_unnamed_connections: Option<usize>,
    /// The most TCP connections in their TLS handshake at once, together; an eighth of
    /// `max_connections` when not given. See [`Limits::handshakes`].
    #[serde(default)]
    pub max_handshakes: Option<usize>,
    /// How long a new connection may stay silent, in milliseconds: a TCP client's TLS
    /// handshake, a Unix client's first byte. A silent peer holds a connection until then.
    #[serde(default = "default_handshake_ms")]
    pub handshake_ms: u32,
    /// Cap on the DMA buffers and offload memory every client holds together, in MiB
    /// (each client also stays within its own `grants.dma_memory_mib`).
    #[serde(default = "default_max_dma_mib")]
    pub max_dma_mib: u64,
    /// The most objects (handles, regions, buffers) one session may hold.
    #[serde(default = "default_max_objects")]
    pub max_objects_per_session: usize,
    /// The longest a client may ask one poll to wait, in milliseconds.
    #[serde(default = "default_max_poll_ms")]
    pub max_poll_ms: u32,
    /// The most answer streams and uploads (buffer reads, event watches, images being
    /// received) one session may have open;
    /// with the message size and `max_sessions` it bounds what unread streams hold.
    #[serde(default = "default_max_streams")]
    pub max_streams_per_session: usize,
    /// The largest image `Reconfigure` takes, in MiB.
    #[serde(default = "default_max_image_mib")]
    pub max_image_mib: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_kib: default_max_message_kib(),
            max_sessions: default_max_sessions(),
            max_sessions_per_client: default_max_sessions_per_client(),
            max_connections: default_max_connections(),
            max_connections_per_peer: default_max_connections_per_peer(),
            max_unnamed_connections: None,
            max_handshakes: None,
            handshake_ms: default_handshake_ms(),
            max_dma_mib: default_max_dma_mib(),
            max_objects_per_session: default_max_objects(),
            max_poll_ms: default_max_poll_ms(),
            max_image_mib: default_max_image_mib(),
            max_streams_per_session: default_max_streams(),
        }
    }
}

impl Limits {
    /// `max_message_kib` in bytes.
    pub fn max_message_bytes(&self) -> usize {
        (self.max_message_kib * 1024) as usize
    }

    /// `max_image_mib` in bytes.
    pub fn max_image_bytes(&self) -> u64 {
        self.max_image_mib << 20
    }

    /// `max_dma_mib` in bytes.
    pub fn max_dma_bytes(&self) -> u64 {
        self.max_dma_mib.saturating_mul(1 << 20)
    }

    /// The share of the node's connections that peers no client entry names hold at most
    /// together: `max_unnamed_connections`, else an eighth of `max_connections`.
    pub fn unnamed_connections(&self) -> usize {
        self.max_unnamed_connections
            .unwrap_or(self.max_connections / STRANGERS_SHARE)
            .max(1)
    }

    /// The share of the node's connections that TCP connections in their TLS handshake hold
    /// at most together: `max_handshakes`, else an eighth of `max_connections`.
    pub fn handshakes(&self) -> usize {
        self.max_handshakes
            .unwrap_or(self.max_connections / STRANGERS_SHARE)
            .max(1)
    }

    /// `handshake_ms` as a duration.
    pub fn handshake_time(&self) -> std::time::Duration {
        std::time::Duration::from_millis(u64::from(self.handshake_ms))
    }
}

/// The default shares of strangers (unnamed peers, handshakes) are each this fraction of
/// `max_connections`.
const STRANGERS_SHARE: usize = 8;

/// A client the node knows: how it is recognized and what it may do.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientEntry {
    /// The name refusals and logs give the client.
    pub name: String,
    /// How the transport identifies it.
    pub identity: ClientIdentity,
    /// What it may see and do.
    pub grants: ClientGrants,
}

/// How a client is recognized. A certificate identity is only ever matched on TCP, a Unix
/// one only on the socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientIdentity {
    /// A DNS or URI subject alternative name of the client's certificate.
    CertificateSan(String),
    /// The peer process's user id.
    UnixUid(u32),
    /// The peer process's primary group id.
    UnixGid(u32),
    /// Whoever connects to the socket of a Kubernetes allocation (given by its id): the
    /// kubelet mounts that socket into the pod the devices were allocated to, and nowhere else.
    Allocation(String),
}

impl fmt::Display for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientIdentity::CertificateSan(san) => write!(f, "certificate SAN {san}"),
            ClientIdentity::UnixUid(uid) => write!(f, "uid {uid}"),
            ClientIdentity::UnixGid(gid) => write!(f, "gid {gid}"),
            ClientIdentity::Allocation(id) => write!(f, "allocation {id}"),
        }
    }
}

/// What a client may do, in the shape of a plugin's grants.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientGrants {
    /// Device ids (`<plugin>/<name>`, as `accelhost list` prints them) the client may see and
    /// open; a trailing `*` matches any suffix (`dfl/*`, `*`).
    #[serde(default)]
    pub devices: Vec<String>,
    /// Cap on the DMA buffers and offload memory the client's sessions hold at once,
    /// together, in MiB.
    #[serde(default = "default_client_dma_mib")]
    pub dma_memory_mib: u64,
    /// Whether the client may load images (`Reconfigure`).
    #[serde(default)]
    pub reconfigure: bool,
}

impl ClientGrants {
    /// Does a grant cover the device `id`?
    pub fn allows_device(&self, id: &str) -> bool {
        matches_any(&self.devices, id)
    }

    /// `dma_memory_mib` in bytes.
    pub fn dma_bytes(&self) -> u64 {
        self.dma_memory_mib.saturating_mul(1 << 20)
    }
}

fn default_mode() -> u32 {
    0o660
}

/// The largest `limits.max_message_kib` a node may be configured with: also the most a client
/// decodes of one answer, whatever size a node says it sends.
pub const MAX_MESSAGE_KIB: u64 = 65536;

fn default_max_message_kib() -> u64 {
    4096
}
fn default_max_sessions() -> usize {
    256
}
fn default_max_sessions_per_client() -> usize {
    64
}
fn default_max_connections() -> usize {
    4096
}
fn default_max_connections_per_peer() -> usize {
    64
}
fn default_max_dma_mib() -> u64 {
    16384
}
fn default_max_objects() -> usize {
    4096
}
fn default_max_poll_ms() -> u32 {
    60_000
}
fn default_handshake_ms() -> u32 {
    10_000
}
fn default_max_streams() -> usize {
    8
}
fn default_max_image_mib() -> u64 {
    512
}
fn default_client_dma_mib() -> u64 {
    256
}

fn octal_mode<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let text = String::deserialize(d)?;
    u32::from_str_radix(text.trim_start_matches("0o"), 8)
        .ok()
        .filter(|mode| *mode <= 0o777)
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "'{text}' is not a permission mode: write octal text such as \"0660\""
            ))
        })
}

/// A serve config that could not be read or is wrong, naming the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum ServeConfigError {
    /// The file could not be read.
    #[error("{}: {reason}", path.display())]
    Read {
        /// The config file.
        path: PathBuf,
        /// Why reading failed.
        reason: std::io::Error,
    },
    /// A field is missing, malformed or inconsistent with another.
    #[error("{path}: {field}: {message}")]
    Field {
        /// The config file.
        path: PathBuf,
        /// The field, as a JSON path (`clients[1].grants.devices`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    node_name: Option<String>,
    #[serde(default)]
    host_config: Option<PathBuf>,
    #[serde(default)]
    listen: RawListen,
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    clients: Vec<RawClient>,
    #[serde(default = "default_health_interval_ms")]
    health_interval_ms: u64,
    #[serde(default)]
    kubernetes: Option<RawKubernetes>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawListen {
    #[serde(default)]
    unix: Option<UnixListen>,
    #[serde(default)]
    tcp: Option<TcpListen>,
    #[serde(default)]
    metrics: Option<RawMetricsListen>,
}

/// `listen.metrics`: where `/metrics` is served.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetricsListen {
    #[serde(default)]
    address: Option<SocketAddr>,
    #[serde(default)]
    unix: Option<UnixListen>,
}

/// Where `/metrics` is served: a TCP address (any local user, or anyone who reaches it, may
/// read it) or a Unix socket (only who its mode lets in).
#[derive(Clone, Debug, PartialEq)]
pub enum MetricsListen {
    /// Plain HTTP on this address.
    Tcp(SocketAddr),
    /// Plain HTTP on this socket.
    Unix(UnixListen),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClient {
    name: String,
    #[serde(default)]
    certificate_san: Option<String>,
    #[serde(default)]
    unix_uid: Option<u32>,
    #[serde(default)]
    unix_gid: Option<u32>,
    #[serde(default = "no_grants")]
    grants: ClientGrants,
}

fn no_grants() -> ClientGrants {
    ClientGrants {
        devices: Vec::new(),
        dma_memory_mib: default_client_dma_mib(),
        reconfigure: false,
    }
}

/// The longest resource domain the kubelet takes: 253 characters with `requests.` in front.
const MAX_RESOURCE_DOMAIN: usize = 253 - "requests.".len();
/// The longest path a Unix socket can be bound at (`sun_path` without its NUL).
pub const MAX_SOCKET_PATH: usize = 107;
/// The socket's name in a Kubernetes allocation's folder.
pub const ALLOCATION_SOCKET: &str = "node.sock";
/// The longest name of a resource's socket in the device-plugin folder:
/// `accelhost-af-<32 hex digits>.sock`.
const LONGEST_RESOURCE_SOCKET: usize = "accelhost-af-.sock".len() + 32;
/// The longest path of an allocation's socket below `allocation_dir`: `<32 hex>/node.sock`.
const LONGEST_ALLOCATION_SOCKET: usize = 32 + 1 + ALLOCATION_SOCKET.len();

/// Why `dir` cannot be where containers find their allocation (mounted over), if it cannot.
fn unfit_container_dir(dir: &Path) -> Option<&'static str> {
    use std::path::Component;
    if !dir.is_absolute() {
        return Some("is a path in the container and must be absolute");
    }
    if dir
        .components()
        .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Some("must not contain '.' or '..'");
    }
    if dir.parent().is_none() {
        return Some("is the container's root: the mount would hide its whole file system");
    }
    for kept in ["/proc", "/sys", "/dev"] {
        if dir.starts_with(kept) {
            return Some(
                "is a kernel file system the runtime mounts in every container (/proc, /sys, \
                 /dev): choose a folder of its own, such as /run/accelhost",
            );
        }
    }
    None
}

/// Checks the `kubernetes` section; an error is the field (below `kubernetes.`) and why.
fn kubernetes_settings(
    raw: RawKubernetes,
    resolve: &dyn Fn(&Path) -> PathBuf,
) -> Result<KubernetesSettings, (String, String)> {
    if !is_dns_subdomain(&raw.resource_domain) {
        return Err((
            "resource_domain".into(),
            format!(
                "'{}' is not a DNS subdomain (lowercase letters, digits, '-' and '.', such as \
                 accelhost.io)",
                raw.resource_domain
            ),
        ));
    }
    // The kubelet takes `<domain>/<name>` as an extended resource only outside the
    // `kubernetes.io` namespace, not starting with `requests.`, and only if `requests.` in
    // front of it still makes a qualified name (a prefix of at most 253 characters).
    if raw.resource_domain.ends_with("kubernetes.io") {
        return Err((
            "resource_domain".into(),
            format!(
                "'{}' is in the kubernetes.io namespace, which the kubelet keeps for its own \
                 resources",
                raw.resource_domain
            ),
        ));
    }
    if raw.resource_domain.starts_with("requests.") {
        return Err((
            "resource_domain".into(),
            format!(
                "'{}' starts with 'requests.', which the kubelet keeps for quotas",
                raw.resource_domain
            ),
        ));
    }
    if raw.resource_domain.len() > MAX_RESOURCE_DOMAIN {
        return Err((
            "resource_domain".into(),
            format!(
                "'{}' has {} characters; the kubelet takes at most {MAX_RESOURCE_DOMAIN} \
                 (with 'requests.' in front it must stay a DNS subdomain of 253)",
                raw.resource_domain,
                raw.resource_domain.len()
            ),
        ));
    }
    for (j, device) in raw.devices.iter().enumerate() {
        if !is_device_pattern(device) {
            return Err((
                format!("devices[{j}]"),
                format!(
                    "'{device}' is not a device id: write `<plugin>/<name>`, with `*` only at the end"
                ),
            ));
        }
    }
    if let Some(why) = unfit_container_dir(&raw.container_dir) {
        return Err((
            "container_dir".into(),
            format!("'{}' {why}", raw.container_dir.display()),
        ));
    }
    let device_plugin_dir = resolve(&raw.device_plugin_dir);
    let allocation_dir = resolve(&raw.allocation_dir);
    for (field, dir, longest_name) in [
        (
            "device_plugin_dir",
            &device_plugin_dir,
            LONGEST_RESOURCE_SOCKET,
        ),
        ("allocation_dir", &allocation_dir, LONGEST_ALLOCATION_SOCKET),
    ] {
        let longest = dir.as_os_str().len() + 1 + longest_name;
        if longest > MAX_SOCKET_PATH {
            return Err((
                field.into(),
                format!(
                    "'{}' is too long for the sockets the node makes in it: their paths reach \
                     {longest} bytes, and a Unix socket's path holds at most {MAX_SOCKET_PATH} \
                     (keep it within {} bytes)",
                    dir.display(),
                    MAX_SOCKET_PATH - 1 - longest_name
                ),
            ));
        }
    }
    if allocation_dir.starts_with(&device_plugin_dir) {
        return Err((
            "allocation_dir".into(),
            format!(
                "'{}' is inside device_plugin_dir '{}', which the kubelet empties when it \
                 starts: the allocations would be lost",
                allocation_dir.display(),
                device_plugin_dir.display()
            ),
        ));
    }
    if raw.dma_memory_mib > 65536 {
        return Err((
            "dma_memory_mib".into(),
            format!("{} is outside 0..=65536", raw.dma_memory_mib),
        ));
    }
    if raw.cdi_spec_dir.is_some() && !raw.raw_device_nodes {
        return Err((
            "cdi_spec_dir".into(),
            "names where raw device nodes are described, but raw_device_nodes is false".into(),
        ));
    }
    Ok(KubernetesSettings {
        device_plugin_dir,
        resource_domain: raw.resource_domain,
        devices: raw.devices,
        allocation_dir,
        container_dir: raw.container_dir,
        dma_memory_mib: raw.dma_memory_mib,
        reconfigure: raw.reconfigure,
        raw_device_nodes: raw.raw_device_nodes,
        cdi_spec_dir: raw.cdi_spec_dir.as_deref().map(resolve),
    })
}

impl ServeConfig {
    /// Reads and checks the serve config at `path`.
    pub fn load(path: &Path) -> Result<ServeConfig, ServeConfigError> {
        let text = std::fs::read_to_string(path).map_err(|reason| ServeConfigError::Read {
            path: path.to_owned(),
            reason,
        })?;
        ServeConfig::parse(&text, path)
    }

    /// Parses and checks `text`, naming `origin` in errors and resolving relative paths
    /// against its folder.
    pub fn parse(text: &str, origin: &Path) -> Result<ServeConfig, ServeConfigError> {
        let field_error = |field: String, message: String| ServeConfigError::Field {
            path: origin.to_owned(),
            field,
            message,
        };
        let mut raw: RawConfig =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
                .map_err(|err| {
                    let field = err.path().to_string();
                    field_error(
                        if field == "." {
                            "(top level)".into()
                        } else {
                            field
                        },
                        err.into_inner().to_string(),
                    )
                })?;
        // Absolute, so that paths handed to others (the kubelet's mounts) mean the same there.
        let base = match origin.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let base = std::path::absolute(base).unwrap_or_else(|_| base.to_owned());
        let resolve = |p: &Path| {
            if p.is_absolute() {
                p.to_owned()
            } else {
                base.join(p)
            }
        };

        if raw.listen.unix.is_none() && raw.listen.tcp.is_none() {
            return Err(field_error(
                "listen".into(),
                "names no listener: give `unix` (a socket path) or `tcp` (an address with \
                 certificate, key and client_ca), or both"
                    .into(),
            ));
        }
        let metrics = metrics_listen(raw.listen.metrics.take(), &resolve)
            .map_err(|(field, message)| field_error(field, message))?;
        let limits = raw.limits;
        check_limits(&limits, raw.health_interval_ms)
            .map_err(|(field, message)| field_error(field, message))?;

        let clients = client_entries(raw.clients, &raw.listen)
            .map_err(|(field, message)| field_error(field, message))?;

        let node_name = match raw.node_name {
            Some(name) if name.is_empty() => {
                return Err(field_error("node_name".into(), "is empty".into()));
            }
            Some(name) => name,
            None => accelhost::local_hostname()
                .unwrap_or("localhost")
                .to_owned(),
        };
        let kubernetes = match raw.kubernetes {
            Some(k) => Some(
                kubernetes_settings(k, &resolve).map_err(|(field, message)| {
                    field_error(format!("kubernetes.{field}"), message)
                })?,
            ),
            None => None,
        };
        if let (Some(MetricsListen::Unix(metrics)), Some(unix)) = (&metrics, &raw.listen.unix)
            && metrics.path == resolve(&unix.path)
        {
            return Err(field_error(
                "listen.metrics.unix.path".into(),
                "is the node's own socket (listen.unix.path): give metrics a socket of their own"
                    .into(),
            ));
        }
        if let (Some(k), Some(unix)) = (&kubernetes, &raw.listen.unix)
            && resolve(&unix.path).starts_with(&k.allocation_dir)
        {
            return Err(field_error(
                "kubernetes.allocation_dir".into(),
                "must not hold the node's own socket (listen.unix.path): allocations' folders \
                 are mounted into pods"
                    .into(),
            ));
        }
        Ok(ServeConfig {
            origin: origin.to_owned(),
            node_name,
            host_config: raw.host_config.as_deref().map(resolve),
            unix: raw.listen.unix.map(|u| UnixListen {
                path: resolve(&u.path),
                mode: u.mode,
            }),
            tcp: raw.listen.tcp.map(|t| TcpListen {
                address: t.address,
                certificate: resolve(&t.certificate),
                key: resolve(&t.key),
                client_ca: resolve(&t.client_ca),
            }),
            metrics,
            limits,
            clients,
            health_interval: std::time::Duration::from_millis(raw.health_interval_ms),
            kubernetes,
        })
    }

    /// The client entry `identity` names, if any.
    pub fn client(&self, identity: &ClientIdentity) -> Option<Arc<ClientEntry>> {
        self.clients
            .iter()
            .find(|c| c.identity == *identity)
            .cloned()
    }
}

/// A refusal of the serve config: the field (its path from the top) and what is wrong.
type Refusal = (String, String);

/// Where `/metrics` listens, if anywhere: exactly one of an address and a socket.
fn metrics_listen(
    metrics: Option<RawMetricsListen>,
    resolve: &impl Fn(&Path) -> PathBuf,
) -> Result<Option<MetricsListen>, Refusal> {
    Ok(match metrics {
        None => None,
        Some(RawMetricsListen {
            address: Some(address),
            unix: None,
        }) => Some(MetricsListen::Tcp(address)),
        Some(RawMetricsListen {
            address: None,
            unix: Some(unix),
        }) => Some(MetricsListen::Unix(UnixListen {
            path: resolve(&unix.path),
            mode: unix.mode,
        })),
        Some(_) => {
            return Err((
                "listen.metrics".into(),
                "give exactly one of `address` (host:port) or `unix` (a socket path and \
                 mode)"
                    .into(),
            ));
        }
    })
}

/// Checks every limit (and the health interval) against its range, and that the shares of
/// unnamed peers leave the named clients connections.
fn check_limits(limits: &Limits, health_interval_ms: u64) -> Result<(), Refusal> {
    for (field, value, low, high) in [
        (
            "max_message_kib",
            limits.max_message_kib,
            64,
            MAX_MESSAGE_KIB,
        ),
        ("max_sessions", limits.max_sessions as u64, 1, 65536),
        (
            "max_sessions_per_client",
            limits.max_sessions_per_client as u64,
            1,
            65536,
        ),
        // At least one connection for named clients beside the strangers' two shares.
        ("max_connections", limits.max_connections as u64, 3, 1 << 20),
        (
            "max_connections_per_peer",
            limits.max_connections_per_peer as u64,
            1,
            1 << 20,
        ),
        ("max_dma_mib", limits.max_dma_mib, 1, 1 << 30),
        (
            "max_objects_per_session",
            limits.max_objects_per_session as u64,
            1,
            1 << 20,
        ),
        ("max_poll_ms", u64::from(limits.max_poll_ms), 1, 3_600_000),
        ("handshake_ms", u64::from(limits.handshake_ms), 100, 600_000),
        ("max_image_mib", limits.max_image_mib, 1, 4096),
        ("health_interval_ms", health_interval_ms, 100, 600_000),
        (
            "max_streams_per_session",
            limits.max_streams_per_session as u64,
            1,
            1024,
        ),
    ] {
        if !(low..=high).contains(&value) {
            let field = if field == "health_interval_ms" {
                field.to_owned()
            } else {
                format!("limits.{field}")
            };
            return Err((field, format!("{value} is outside {low}..={high}")));
        }
    }

    let (unnamed, handshakes) = (limits.unnamed_connections(), limits.handshakes());
    for (field, value) in [
        ("max_unnamed_connections", limits.max_unnamed_connections),
        ("max_handshakes", limits.max_handshakes),
    ] {
        if let Some(value) = value
            && !(1..=limits.max_connections).contains(&value)
        {
            return Err((
                format!("limits.{field}"),
                format!(
                    "{value} is outside 1..={} (limits.max_connections)",
                    limits.max_connections
                ),
            ));
        }
    }
    if unnamed + handshakes >= limits.max_connections {
        return Err((
            if limits.max_unnamed_connections.is_some() {
                "limits.max_unnamed_connections".into()
            } else {
                "limits.max_handshakes".into()
            },
            format!(
                "{unnamed} connections of unnamed peers and {handshakes} in their TLS \
                 handshake would leave the named clients nothing of limits.max_connections \
                 ({}): keep them together below it",
                limits.max_connections
            ),
        ));
    }
    Ok(())
}

/// The client entries, each recognized by exactly one identity that no other client has and
/// that a configured listener can see, with well-formed grants.
fn client_entries(
    raw: Vec<RawClient>,
    listen: &RawListen,
) -> Result<Vec<Arc<ClientEntry>>, Refusal> {
    let mut names = BTreeSet::new();
    let mut identities = BTreeSet::new();
    let mut clients = Vec::with_capacity(raw.len());
    for (i, client) in raw.into_iter().enumerate() {
        let at = |field: &str| format!("clients[{i}].{field}");
        if client.name.is_empty() {
            return Err((at("name"), "is empty".into()));
        }
        if !names.insert(client.name.clone()) {
            return Err((at("name"), format!("'{}' names two clients", client.name)));
        }
        let identity = match (client.certificate_san, client.unix_uid, client.unix_gid) {
            (Some(san), None, None) if !san.is_empty() => ClientIdentity::CertificateSan(san),
            (None, Some(uid), None) => ClientIdentity::UnixUid(uid),
            (None, None, Some(gid)) => ClientIdentity::UnixGid(gid),
            (Some(_), None, None) => {
                return Err((at("certificate_san"), "is empty".into()));
            }
            _ => {
                return Err((
                    at("name"),
                    format!(
                        "client '{}' must be recognized by exactly one of certificate_san, \
                         unix_uid or unix_gid",
                        client.name
                    ),
                ));
            }
        };
        if !identities.insert(format!("{identity}")) {
            return Err((
                at("name"),
                format!("{identity} already identifies another client"),
            ));
        }
        if let ClientIdentity::CertificateSan(_) = identity
            && listen.tcp.is_none()
        {
            return Err((
                at("certificate_san"),
                "a certificate identity needs the `listen.tcp` listener".into(),
            ));
        }
        if matches!(
            identity,
            ClientIdentity::UnixUid(_) | ClientIdentity::UnixGid(_)
        ) && listen.unix.is_none()
        {
            return Err((
                at("name"),
                "a uid or gid identity needs the `listen.unix` listener".into(),
            ));
        }
        for (j, device) in client.grants.devices.iter().enumerate() {
            if !is_device_pattern(device) {
                return Err((
                    at(&format!("grants.devices[{j}]")),
                    format!(
                        "'{device}' is not a device id: write `<plugin>/<name>`, with `*` \
                         only at the end"
                    ),
                ));
            }
        }
        if client.grants.dma_memory_mib > 65536 {
            return Err((
                at("grants.dma_memory_mib"),
                format!("{} is outside 0..=65536", client.grants.dma_memory_mib),
            ));
        }
        clients.push(Arc::new(ClientEntry {
            name: client.name,
            identity,
            grants: client.grants,
        }));
    }
    Ok(clients)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ServeConfig, String> {
        ServeConfig::parse(text, Path::new("/etc/accelhost/serve.json")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_config_parses_and_resolves_paths() {
        let config = parse(
            r#"{"listen": {"unix": {"path": "node.sock", "mode": "0600"},
                           "tcp": {"address": "127.0.0.1:7700", "certificate": "n.pem",
                                   "key": "/k/n.key", "client_ca": "ca.pem"},
                           "metrics": {"address": "127.0.0.1:9700"}},
                "node_name": "node1",
                "clients": [{"name": "ops", "unix_uid": 0, "grants": {"devices": ["*"]}},
                            {"name": "peer", "certificate_san": "peer.example",
                             "grants": {"devices": ["dfl/*"], "reconfigure": true}}]}"#,
        )
        .unwrap();
        assert_eq!(
            config.unix.as_ref().unwrap().path,
            Path::new("/etc/accelhost/node.sock")
        );
        assert_eq!(config.unix.as_ref().unwrap().mode, 0o600);
        let tcp = config.tcp.as_ref().unwrap();
        assert_eq!(tcp.key, Path::new("/k/n.key"));
        assert_eq!(tcp.client_ca, Path::new("/etc/accelhost/ca.pem"));
        assert_eq!(
            config.metrics,
            Some(MetricsListen::Tcp("127.0.0.1:9700".parse().unwrap()))
        );
        let peer = config
            .client(&ClientIdentity::CertificateSan("peer.example".into()))
            .unwrap();
        assert!(peer.grants.allows_device("dfl/emu:dfl0"));
        assert!(!peer.grants.allows_device("xocl/emu:xocl0"));
        assert_eq!(peer.grants.dma_memory_mib, 256);
        assert!(config.client(&ClientIdentity::UnixUid(1)).is_none());
    }

    #[test]
    fn metrics_go_on_an_address_or_a_socket_and_limits_have_bounds() {
        let config = parse(
            r#"{"listen": {"unix": {"path": "node.sock"},
                           "metrics": {"unix": {"path": "metrics.sock", "mode": "0600"}}},
                "limits": {"max_connections_per_peer": 8, "max_dma_mib": 64}}"#,
        )
        .unwrap();
        assert_eq!(
            config.metrics,
            Some(MetricsListen::Unix(UnixListen {
                path: "/etc/accelhost/metrics.sock".into(),
                mode: 0o600
            }))
        );
        assert_eq!(config.limits.max_connections_per_peer, 8);
        assert_eq!(config.limits.max_connections, 4096);
        assert_eq!(config.limits.max_sessions_per_client, 64);
        assert_eq!(config.limits.max_dma_bytes(), 64 << 20);
        for (text, expected) in [
            (
                r#""metrics": {"address": "127.0.0.1:9700", "unix": {"path": "m.sock"}}"#,
                "listen.metrics: give exactly one of `address`",
            ),
            (
                r#""metrics": {}"#,
                "listen.metrics: give exactly one of `address`",
            ),
            (
                r#""metrics": {"unix": {"path": "node.sock"}}"#,
                "listen.metrics.unix.path: is the node's own socket",
            ),
        ] {
            let err = parse(&format!(
                r#"{{"listen": {{"unix": {{"path": "node.sock"}}, {text}}}}}"#
            ))
            .unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
        for limit in [
            "max_connections",
            "max_connections_per_peer",
            "max_sessions_per_client",
            "max_dma_mib",
            "handshake_ms",
        ] {
            let err = parse(&format!(
                r#"{{"listen": {{"unix": {{"path": "s"}}}}, "limits": {{"{limit}": 0}}}}"#
            ))
            .unwrap_err();
            assert!(
                err.contains(&format!("limits.{limit}: 0 is outside ")),
                "{err}"
            );
        }
    }

    #[test]
    fn the_strangers_shares_default_to_an_eighth_and_leave_the_named_clients_room() {
        let defaults = parse(r#"{"listen": {"unix": {"path": "s"}}}"#).unwrap();
        assert_eq!(defaults.limits.unnamed_connections(), 512);
        assert_eq!(defaults.limits.handshakes(), 512);
        let small = parse(
            r#"{"listen": {"unix": {"path": "s"}}, "limits": {"max_connections": 64,
                "max_handshakes": 20}}"#,
        )
        .unwrap();
        assert_eq!(small.limits.unnamed_connections(), 8);
        assert_eq!(small.limits.handshakes(), 20);
        let tiny =
            parse(r#"{"listen": {"unix": {"path": "s"}}, "limits": {"max_connections": 3}}"#)
                .unwrap();
        assert_eq!(
            (tiny.limits.unnamed_connections(), tiny.limits.handshakes()),
            (1, 1)
        );
        for (limits, expected) in [
            (
                r#""max_connections": 64, "max_unnamed_connections": 40, "max_handshakes": 24"#,
                "limits.max_unnamed_connections: 40 connections of unnamed peers and 24 in \
                 their TLS handshake would leave the named clients nothing",
            ),
            (
                r#""max_connections": 64, "max_handshakes": 65"#,
                "limits.max_handshakes: 65 is outside 1..=64 (limits.max_connections)",
            ),
            (
                r#""max_unnamed_connections": 0"#,
                "limits.max_unnamed_connections: 0 is outside 1..=4096",
            ),
        ] {
            let err = parse(&format!(
                r#"{{"listen": {{"unix": {{"path": "s"}}}}, "limits": {{{limits}}}}}"#
            ))
            .unwrap_err();
            assert!(err.contains(expected), "{limits}: {err}");
        }
    }

    #[test]
    fn the_kubernetes_section_takes_defaults_and_resolves_paths() {
        let config = parse(
            r#"{"listen": {"unix": {"path": "node.sock"}},
                "kubernetes": {"allocation_dir": "allocations", "devices": ["dfl/*"]}}"#,
        )
        .unwrap();
        let k = config.kubernetes.unwrap();
        assert_eq!(
            k.kubelet_socket(),
            Path::new("/var/lib/kubelet/device-plugins/kubelet.sock")
        );
        assert_eq!(k.allocation_dir, Path::new("/etc/accelhost/allocations"));
        assert_eq!(k.resource_domain, "accelhost.io");
        assert_eq!(k.container_dir, Path::new("/run/accelhost"));
        assert!(k.offers("dfl/emu:dfl0") && !k.offers("xocl/emu:xocl0"));
        assert!(!k.raw_device_nodes);
        assert!(k.reconfigure, "an allocation's devices are the pod's alone");
        assert_eq!(config.health_interval, std::time::Duration::from_secs(2));
        assert!(
            parse(r#"{"listen": {"unix": {"path": "s"}}}"#)
                .unwrap()
                .kubernetes
                .is_none()
        );
    }

    #[test]
    fn resource_domains_keep_to_what_the_kubelet_takes() {
        let domain = |length: usize| {
            let label = "a".repeat(61);
            let mut domain = [label.as_str(); 5].join(".");
            domain.truncate(length);
            domain
        };
        for (length, valid) in [
            (MAX_RESOURCE_DOMAIN, true),
            (MAX_RESOURCE_DOMAIN + 1, false),
        ] {
            let text = format!(
                r#"{{"listen": {{"unix": {{"path": "s"}}}}, "kubernetes": {{"resource_domain": "{}"}}}}"#,
                domain(length)
            );
            let parsed = parse(&text);
            assert_eq!(parsed.is_ok(), valid, "{length}: {parsed:?}");
        }
        assert_eq!(MAX_RESOURCE_DOMAIN, 244);
    }

    #[test]
    fn device_patterns_may_end_in_any_character() {
        for (devices, valid) in [
            (r#"["dfl/é"]"#, true),
            (r#"["dfl/é*"]"#, true),
            (r#"["é*é"]"#, false),
            (r#"["d*é"]"#, false),
            (r#"["日本"]"#, true),
        ] {
            for text in [
                format!(
                    r#"{{"listen": {{"unix": {{"path": "s"}}}}, "clients": [{{"name": "a", "unix_uid": 1, "grants": {{"devices": {devices}}}}}]}}"#
                ),
                format!(
                    r#"{{"listen": {{"unix": {{"path": "s"}}}}, "kubernetes": {{"devices": {devices}}}}}"#
                ),
            ] {
                let parsed = parse(&text);
                assert_eq!(parsed.is_ok(), valid, "{text}: {parsed:?}");
                if let Err(err) = parsed {
                    assert!(err.contains("is not a device id"), "{err}");
                }
            }
        }
    }

    #[test]
    fn bad_input_names_the_file_and_field() {
        for (text, expected) in [
            (r#"{}"#, "serve.json: listen: names no listener"),
            (
                r#"{"listen": {"unix": {"path": "s", "mode": "rw"}}}"#,
                "listen.unix.mode",
            ),
            (
                r#"{"listen": {"udp": {}}}"#,
                "listen.udp: unknown field `udp`",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "clients": [{"name": "a", "unix_uid": 1, "unix_gid": 2}]}"#,
                "clients[0].name: client 'a' must be recognized by exactly one",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "clients": [{"name": "a", "unix_uid": 1}, {"name": "a", "unix_uid": 2}]}"#,
                "clients[1].name: 'a' names two clients",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "clients": [{"name": "a", "unix_uid": 1}, {"name": "b", "unix_uid": 1}]}"#,
                "clients[1].name: uid 1 already identifies another client",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "clients": [{"name": "a", "certificate_san": "x"}]}"#,
                "clients[0].certificate_san: a certificate identity needs the `listen.tcp`",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "clients": [{"name": "a", "unix_uid": 1, "grants": {"devices": ["d*x"]}}]}"#,
                "clients[0].grants.devices[0]: 'd*x' is not a device id",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "limits": {"max_message_kib": 1}}"#,
                "limits.max_message_kib: 1 is outside 64..=65536",
            ),
            (
                r#"{"listen": {"tcp": {"address": "nowhere", "certificate": "c", "key": "k", "client_ca": "a"}}}"#,
                "listen.tcp.address",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "health_interval_ms": 5}"#,
                "health_interval_ms: 5 is outside 100..=600000",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"resource_domain": "Accel_Host"}}"#,
                "kubernetes.resource_domain: 'Accel_Host' is not a DNS subdomain",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"container_dir": "run/x"}}"#,
                "kubernetes.container_dir: 'run/x' is a path in the container and must be absolute",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"devices": ["*x"]}}"#,
                "kubernetes.devices[0]: '*x' is not a device id",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"cdi_spec_dir": "/var/run/cdi"}}"#,
                "kubernetes.cdi_spec_dir: names where raw device nodes are described",
            ),
            (
                r#"{"listen": {"unix": {"path": "a/s"}}, "kubernetes": {"allocation_dir": "a"}}"#,
                "kubernetes.allocation_dir: must not hold the node's own socket",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"kubelet": "x"}}"#,
                "kubernetes.kubelet: unknown field",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"resource_domain": "kubernetes.io"}}"#,
                "kubernetes.resource_domain: 'kubernetes.io' is in the kubernetes.io namespace",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"resource_domain": "fpga.kubernetes.io"}}"#,
                "kubernetes.resource_domain: 'fpga.kubernetes.io' is in the kubernetes.io namespace",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"resource_domain": "requests.example.com"}}"#,
                "kubernetes.resource_domain: 'requests.example.com' starts with 'requests.'",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"container_dir": "/"}}"#,
                "kubernetes.container_dir: '/' is the container's root",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"container_dir": "/proc"}}"#,
                "kubernetes.container_dir: '/proc' is a kernel file system",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"container_dir": "/dev/accel"}}"#,
                "kubernetes.container_dir: '/dev/accel' is a kernel file system",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"container_dir": "/run/../proc"}}"#,
                "kubernetes.container_dir: '/run/../proc' must not contain '.' or '..'",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"allocation_dir": "/var/lib/accelhost/allocations/of/this/node/kept/across/restarts/x"}}"#,
                "kubernetes.allocation_dir: '/var/lib/accelhost/allocations/of/this/node/kept/across/restarts/x' is too long for the sockets the node makes in it: their paths reach 109 bytes",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"device_plugin_dir": "/var/lib/kubelet/device-plugins/of/a/kubelet/somewhere/else"}}"#,
                "kubernetes.device_plugin_dir: '/var/lib/kubelet/device-plugins/of/a/kubelet/somewhere/else' is too long",
            ),
            (
                r#"{"listen": {"unix": {"path": "s"}}, "kubernetes": {"allocation_dir": "/var/lib/kubelet/device-plugins/accelhost"}}"#,
                "kubernetes.allocation_dir: '/var/lib/kubelet/device-plugins/accelhost' is inside device_plugin_dir",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(expected), "{text}: got {err}");
            assert!(err.starts_with("/etc/accelhost/serve.json: "), "{err}");
        }
    }
}

//! `builtin:remote`, the proxy plugin of the OPAE design: it lists the devices of every node
//! its config names (`{"hosts": ["unix:///run/accelhost/serve.sock", "node1:7700"]}`) with
//! `host` set to the node's name, and forwards every call to the node that owns the device.
//! The host does the networking (the `remote` import, only to endpoints the plugin's grants
//! name); this plugin decides what to enumerate, how tokens and handles map to the nodes'
//! and when to reconnect. A node that is unreachable or went away fails its own devices with a
//! clear error, and is tried again with a growing backoff, while the other nodes go on.

use std::collections::BTreeMap;

use accelhost_sdk::host::clock::now_ns;
use accelhost_sdk::host::events::Event;
use accelhost_sdk::host::image::Image;
use accelhost_sdk::host::mmio::Region;
use accelhost_sdk::host::remote::{
    Node, RemoteArgument, RemoteDevice, RemoteEventKind, RemoteLaunch, RemoteMemoryKind,
};
use accelhost_sdk::{
    Allocation, BufferFlags, Discovered, Enqueued, Error, ErrorCode, EventKind, Filter,
    KernelArgument, Launch, LaunchSize, MemoryKind, MemoryRange, OpenMode, Plugin, PreparedBuffer,
    Properties, Result, enqueue_in_turn, filters_match, log,
};

/// The first wait before a failed node is tried again; it doubles up to [`MAX_BACKOFF_NS`].
const FIRST_BACKOFF_NS: u64 = 100_000_000;
const MAX_BACKOFF_NS: u64 = 5_000_000_000;
/// Launches in one `enqueue-launches` message to a node, at most: what the host and the node
/// take in one batch.
const LAUNCHES_PER_MESSAGE: usize = 256;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The endpoints of the nodes, as the plugin's `remote` grants name them.
    hosts: Vec<String>,
}

/// One node of the config, and the session with it if there is one.
struct NodeSlot {
    endpoint: String,
    session: Option<Node>,
    /// Counts sessions: objects of an earlier session are stale.
    generation: u32,
    /// The node's name, once a session told it.
    name: Option<String>,
    /// When the next connect may be tried, after a failure.
    retry_at_ns: u64,
    backoff_ns: u64,
    last_error: String,
}

impl NodeSlot {
    /// Whether the node is this machine's (a Unix socket): its devices stay `localhost`.
    fn is_local(&self) -> bool {
        self.endpoint.starts_with("unix://")
    }

    /// The host part of a TCP endpoint.
    fn host_part(&self) -> &str {
        self.endpoint
            .rsplit_once(':')
            .map_or(self.endpoint.as_str(), |(host, _)| host)
            .trim_start_matches('[')
            .trim_end_matches(']')
    }

    fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.endpoint)
    }
}

/// What a local id stands for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Handle,
    Buffer { iova: u64 },
    Memory,
    Program,
    Kernel,
    Queue,
}

#[derive(Clone, Copy)]
struct Object {
    node: usize,
    generation: u32,
    remote: u64,
    kind: Kind,
    /// The local handle it came from (itself, for a handle).
    handle: u64,
}

#[derive(Default)]
struct RemotePlugin {
    nodes: Vec<NodeSlot>,
    /// Token → (node, the node's device id); a device keeps the token it was first given.
    tokens: BTreeMap<u64, (usize, String)>,
    next_id: u64,
    objects: BTreeMap<u64, Object>,
}

fn event_kind(kind: EventKind) -> RemoteEventKind {
    match kind {
        EventKind::Interrupt => RemoteEventKind::Interrupt,
        EventKind::Error => RemoteEventKind::Error,
        EventKind::PowerThermal => RemoteEventKind::PowerThermal,
    }
}

fn memory_kind(kind: MemoryKind) -> RemoteMemoryKind {
    match kind {
        MemoryKind::Host => RemoteMemoryKind::Host,
        MemoryKind::Device => RemoteMemoryKind::Device,
        MemoryKind::Shared => RemoteMemoryKind::Shared,
    }
}

impl RemotePlugin {
    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The session with node `n`: the standing one, or a new one unless the node is in its
    /// backoff after a failure.
    fn session(&mut self, n: usize) -> Result<&Node> {
        let slot = &mut self.nodes[n];
        if slot.session.as_ref().is_some_and(|s| !s.is_attached()) {
            log!(
                Warn,
                "the session with node {} ended; reconnecting",
                slot.label()
            );
            slot.session = None;
        }
        if slot.session.is_none() {
            let now = now_ns();
            if now < slot.retry_at_ns {
                return Err(Error::new(
                    ErrorCode::DeviceError,
                    format!(
                        "node {} is unreachable (tried again in {} ms): {}",
                        slot.label(),
                        (slot.retry_at_ns - now).div_ceil(1_000_000),
                        slot.last_error
                    ),
                ));
            }
            match Node::connect(&slot.endpoint) {
                Ok(node) => {
                    slot.name = Some(node.name());
                    slot.generation += 1;
                    slot.backoff_ns = 0;
                    slot.session = Some(node);
                }
                Err(err) => {
                    slot.backoff_ns = (slot.backoff_ns * 2).clamp(FIRST_BACKOFF_NS, MAX_BACKOFF_NS);
                    slot.retry_at_ns = now_ns().saturating_add(slot.backoff_ns);
                    slot.last_error = err.message.clone();
                    return Err(err);
                }
            }
        }
        Ok(slot.session.as_ref().expect("connected above"))
    }

    /// The node and its number behind local id `id`, if it is a `what` of the node's current
    /// session.
    fn resolve(
        &mut self,
        id: u64,
        what: &str,
        fits: impl Fn(Kind) -> bool,
    ) -> Result<(&Node, Object)> {
        let object = *self
            .objects
            .get(&id)
            .filter(|o| fits(o.kind))
            .ok_or_else(|| Error::not_found(format!("no {what} {id} on any node")))?;
        let slot = &self.nodes[object.node];
        let current = slot.generation == object.generation
            && slot.session.as_ref().is_some_and(|s| s.is_attached());
        if !current {
            return Err(Error::not_found(format!(
                "the {what} {id} was on node {}, whose session ended (the connection dropped or the node restarted); open the device again",
                slot.label()
            )));
        }
        Ok((slot.session.as_ref().expect("checked above"), object))
    }

    fn handle(&mut self, handle: u64) -> Result<(&Node, Object)> {
        self.resolve(handle, "handle", |k| k == Kind::Handle)
    }

    /// Keeps a new object of the node `from` came from.
    fn keep(&mut self, from: Object, remote: u64, kind: Kind) -> u64 {
        let id = self.fresh_id();
        self.objects.insert(
            id,
            Object {
                remote,
                kind,
                handle: if kind == Kind::Handle {
                    id
                } else {
                    from.handle
                },
                ..from
            },
        );
        id
    }

    /// Releases local id `id` (a `what`) on its node.
    fn release(&mut self, id: u64, what: &str, fits: impl Fn(Kind) -> bool) -> Result<()> {
        let (node, object) = self.resolve(id, what, fits)?;
        let answer = node.release(object.remote);
        self.objects.remove(&id);
        answer
    }

    /// A memory range of the node that `queue` is on.
    fn range(&self, queue: Object, range: MemoryRange) -> Result<(u64, u64)> {
        let object = self
            .objects
            .get(&range.allocation)
            .filter(|o| o.kind == Kind::Memory)
            .ok_or_else(|| Error::not_found(format!("no allocation {}", range.allocation)))?;
        if (object.node, object.generation) != (queue.node, queue.generation) {
            return Err(Error::invalid_argument(format!(
                "allocation {} is not on the queue's node",
                range.allocation
            )));
        }
        Ok((object.remote, range.offset))
    }

    fn properties(slot: &NodeSlot, device: RemoteDevice) -> Properties {
        let host = if slot.is_local() || device.host != "localhost" {
            device.host
        } else {
            slot.label().to_string()
        };
        Properties {
            object_type: device.object_type,
            name: format!("{}/{}", slot.label(), device.id),
            guid: device.guid,
            vendor_id: device.vendor_id,
            device_id: device.device_id,
            bus_address: device.bus_address,
            socket_id: device.socket_id,
            device_type: device.device_type,
            host,
            num_mmio: device.num_mmio,
            num_interrupts: device.num_interrupts,
            accelerator_state: device.accelerator_state,
            parent: None,
            extras: device
                .extras
                .into_iter()
                .chain([
                    ("node".to_string(), slot.label().to_string()),
                    ("node-id".to_string(), device.id),
                ])
                .collect(),
        }
    }
}

impl Plugin for RemotePlugin {
    fn configure(&mut self, config: &str) -> Result<()> {
        let config: Config = serde_json::from_str(config).map_err(|e| {
            Error::invalid_argument(format!(
                "config: {e} (expected {{\"hosts\": [\"unix:///path.sock\", \"host:port\"]}})"
            ))
        })?;
        if config.hosts.is_empty() {
            return Err(Error::invalid_argument("config.hosts names no node"));
        }
        for (i, endpoint) in config.hosts.iter().enumerate() {
            if config.hosts[..i].contains(endpoint) {
                return Err(Error::invalid_argument(format!(
                    "config.hosts[{i}]: '{endpoint}' is listed twice"
                )));
            }
        }
        self.nodes = config
            .hosts
            .into_iter()
            .map(|endpoint| NodeSlot {
                endpoint,
                session: None,
                generation: 0,
                name: None,
                retry_at_ns: 0,
                backoff_ns: 0,
                last_error: String::new(),
            })
            .collect();
        Ok(())
    }

    fn finalize(&mut self) -> Result<()> {
        self.objects.clear();
        for slot in &mut self.nodes {
            slot.session = None;
        }
        Ok(())
    }

    fn supports_host(&mut self, host: &str) -> bool {
        self.nodes.iter().any(|slot| match host {
            "*" => true,
            "localhost" => slot.is_local(),
            "^localhost" => !slot.is_local(),
            name => slot.name.as_deref() == Some(name) || slot.host_part() == name,
        })
    }

    fn enumerate(&mut self, filters: Vec<Filter>) -> Result<Vec<Discovered>> {
        let mut found = Vec::new();
        let mut failed: Vec<Error> = Vec::new();
        for n in 0..self.nodes.len() {
            let devices = match self.session(n).and_then(|node| node.enumerate()) {
                Ok(devices) => devices,
                Err(err) => {
                    log!(Warn, "node {}: {}", self.nodes[n].label(), err.message);
                    failed.push(err);
                    continue;
                }
            };
            for device in devices {
                let key = (n, device.id.clone());
                let token = match self.tokens.iter().find(|(_, k)| **k == key) {
                    Some((token, _)) => *token,
                    None => {
                        let token = self.tokens.len() as u64;
                        self.tokens.insert(token, key);
                        token
                    }
                };
                let properties = Self::properties(&self.nodes[n], device);
                if filters_match(&filters, &properties) {
                    found.push(Discovered { token, properties });
                }
            }
        }
        // Some nodes answering is a partial answer (each failure is logged); none is an error.
        if failed.len() == self.nodes.len() {
            let code = failed[0].code;
            let messages: Vec<String> = failed.into_iter().map(|e| e.message).collect();
            return Err(Error::new(code, messages.join("; ")));
        }
        Ok(found)
    }

    fn open(&mut self, token: u64, mode: OpenMode) -> Result<u64> {
        let (n, id) = self
            .tokens
            .get(&token)
            .cloned()
            .ok_or_else(|| Error::not_found(format!("no remote token {token}")))?;
        let remote = self.session(n)?.open(&id, mode)?;
        let from = Object {
            node: n,
            generation: self.nodes[n].generation,
            remote,
            kind: Kind::Handle,
            handle: 0,
        };
        Ok(self.keep(from, remote, Kind::Handle))
    }

    fn close(&mut self, handle: u64) -> Result<()> {
        let answer = self
            .handle(handle)
            .and_then(|(node, object)| node.close(object.remote));
        // The node releases what came from the handle; so does this side, whatever it said.
        self.objects.retain(|_, o| o.handle != handle);
        answer
    }

    fn map_mmio(&mut self, handle: u64, index: u32) -> Result<Region> {
        let (node, object) = self.handle(handle)?;
        node.map_mmio(object.remote, index)
    }

    fn prepare_buffer(
        &mut self,
        handle: u64,
        size: u64,
        flags: BufferFlags,
    ) -> Result<PreparedBuffer> {
        let (node, object) = self.handle(handle)?;
        let prepared =
            node.prepare_buffer(object.remote, size, flags.contains(BufferFlags::READ_ONLY))?;
        let id = self.keep(
            object,
            prepared.id,
            Kind::Buffer {
                iova: prepared.iova,
            },
        );
        Ok(PreparedBuffer {
            id,
            buffer: prepared.buffer,
            iova: prepared.iova,
        })
    }

    fn release_buffer(&mut self, _handle: u64, id: u64) -> Result<()> {
        self.release(id, "buffer", |k| matches!(k, Kind::Buffer { .. }))
    }

    fn io_address(&mut self, _handle: u64, id: u64) -> Result<u64> {
        match self.objects.get(&id).map(|o| o.kind) {
            Some(Kind::Buffer { iova }) => Ok(iova),
            _ => Err(Error::not_found(format!("no buffer {id}"))),
        }
    }

    fn reset(&mut self, handle: u64) -> Result<()> {
        let (node, object) = self.handle(handle)?;
        node.reset(object.remote)
    }

    fn reconfigure(&mut self, handle: u64, slot: u32, image: &Image) -> Result<()> {
        let (node, object) = self.handle(handle)?;
        node.reconfigure(object.remote, slot, image)
    }

    fn register_event(&mut self, handle: u64, kind: EventKind, vector: u32) -> Result<Event> {
        let (node, object) = self.handle(handle)?;
        node.register_event(object.remote, event_kind(kind), vector)
    }

    fn mem_alloc(
        &mut self,
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> Result<Allocation> {
        let (node, object) = self.handle(handle)?;
        let memory = node.mem_alloc(object.remote, memory_kind(kind), size, bank)?;
        let id = self.keep(object, memory.id, Kind::Memory);
        Ok(Allocation {
            id,
            buffer: memory.buffer,
            device_address: memory.device_address,
        })
    }

    fn mem_free(&mut self, _handle: u64, id: u64) -> Result<()> {
        self.release(id, "allocation", |k| k == Kind::Memory)
    }

    fn program_create(&mut self, handle: u64, image: &Image) -> Result<u64> {
        let (node, object) = self.handle(handle)?;
        let program = node.program_create(object.remote, image)?;
        Ok(self.keep(object, program, Kind::Program))
    }

    fn program_release(&mut self, program: u64) -> Result<()> {
        self.release(program, "program", |k| k == Kind::Program)
    }

    fn kernel_get(&mut self, program: u64, name: &str) -> Result<u64> {
        let (node, object) = self.resolve(program, "program", |k| k == Kind::Program)?;
        let kernel = node.kernel_get(object.remote, name)?;
        Ok(self.keep(object, kernel, Kind::Kernel))
    }

    fn queue_create(&mut self, handle: u64) -> Result<u64> {
        let (node, object) = self.handle(handle)?;
        let queue = node.queue_create(object.remote)?;
        Ok(self.keep(object, queue, Kind::Queue))
    }

    fn queue_release(&mut self, queue: u64) -> Result<()> {
        self.release(queue, "queue", |k| k == Kind::Queue)
    }

    fn enqueue_memcpy(
        &mut self,
        queue: u64,
        dst: MemoryRange,
        src: MemoryRange,
        size: u64,
    ) -> Result<Event> {
        let (_, object) = self.resolve(queue, "queue", |k| k == Kind::Queue)?;
        let (dst, src) = (self.range(object, dst)?, self.range(object, src)?);
        let (node, object) = self.resolve(queue, "queue", |k| k == Kind::Queue)?;
        node.enqueue_memcpy(object.remote, dst, src, size)
    }

    fn enqueue_launch(
        &mut self,
        queue: u64,
        kernel: u64,
        args: Vec<KernelArgument>,
        _size: LaunchSize,
    ) -> Result<Event> {
        let launch = self.remote_launch(queue, kernel, args)?;
        let (node, queue) = self.resolve(queue, "queue", |k| k == Kind::Queue)?;
        node.enqueue_launch(queue.remote, launch.kernel, &launch.args)
    }

    /// Sends the batch to the node in messages of at most [`LAUNCHES_PER_MESSAGE`]: one
    /// entry into the plugin and one message for many launches, where each was a message.
    fn enqueue_launches(&mut self, queue: u64, launches: Vec<Launch>) -> Enqueued {
        let mut remote = Vec::with_capacity(launches.len());
        let (_, mut refused) = enqueue_in_turn(launches, |launch| {
            remote.push(self.remote_launch(queue, launch.kernel, launch.args)?);
            Ok(())
        });
        let (mut count, mut last) = (0, None);
        for chunk in remote.chunks(LAUNCHES_PER_MESSAGE) {
            let sent = self
                .resolve(queue, "queue", |k| k == Kind::Queue)
                .and_then(|(node, queue)| node.enqueue_launches(queue.remote, chunk));
            match sent {
                Ok(event) => {
                    last = Some(event);
                    count += chunk.len() as u32;
                }
                Err(err) => {
                    refused = Some(err);
                    break;
                }
            }
        }
        Enqueued {
            count,
            last,
            refused,
        }
    }
}

impl RemotePlugin {
    /// `kernel`'s launch with `args` as `queue`'s node takes it: objects by the node's ids.
    fn remote_launch(
        &mut self,
        queue: u64,
        kernel: u64,
        args: Vec<KernelArgument>,
    ) -> Result<RemoteLaunch> {
        let (_, queue) = self.resolve(queue, "queue", |k| k == Kind::Queue)?;
        let (_, kernel) = self.resolve(kernel, "kernel", |k| k == Kind::Kernel)?;
        let mut remote_args = Vec::with_capacity(args.len());
        for arg in args {
            remote_args.push(match arg {
                KernelArgument::Memory(range) => RemoteArgument::Memory(self.range(queue, range)?),
                KernelArgument::Scalar32(v) => RemoteArgument::Scalar32(v),
                KernelArgument::Scalar64(v) => RemoteArgument::Scalar64(v),
                KernelArgument::Bytes(b) => RemoteArgument::Bytes(b),
            });
        }
        Ok(RemoteLaunch {
            kernel: kernel.remote,
            args: remote_args,
        })
    }
}

accelhost_sdk::export_plugin!(RemotePlugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_names_at_least_one_node_once() {
        let mut plugin = RemotePlugin::default();
        assert!(plugin.configure(r#"{"hosts": []}"#).is_err());
        let twice = plugin
            .configure(r#"{"hosts": ["a:1", "a:1"]}"#)
            .unwrap_err();
        assert!(twice.message.contains("hosts[1]"), "{}", twice.message);
        let unknown = plugin.configure(r#"{"hots": ["a:1"]}"#).unwrap_err();
        assert!(unknown.message.contains("hots"), "{}", unknown.message);
        plugin
            .configure(r#"{"hosts": ["unix:///run/a.sock", "node1:7700"]}"#)
            .unwrap();
        assert!(plugin.supports_host("localhost"));
        assert!(plugin.supports_host("node1"));
        assert!(plugin.supports_host("^localhost"));
        assert!(!plugin.supports_host("node2"));
    }
}

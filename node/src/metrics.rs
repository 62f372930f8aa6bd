//! The node's Prometheus metrics: what its clients do (calls, refusals, bytes, sessions) and
//! how its plugins stand (up, restarts, memory, dropped log lines), served as the
//! OpenMetrics text format at `/metrics` when the serve config names `listen.metrics`.

use std::sync::{Arc, OnceLock};

use accelhost::{Host, PluginStatus};

use crate::gate::Gate;
use crate::health::DeviceBook;
use crate::reach::Reach;
use crate::session::Sessions;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    client: String,
    call: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClientLabels {
    client: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BytesLabels {
    client: String,
    direction: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginCallLabels {
    plugin: String,
    call: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginErrorLabels {
    plugin: String,
    call: &'static str,
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FaultLabels {
    plugin: String,
    cause: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    plugin: String,
    state: &'static str,
}

/// The node's metrics, updated by the service as calls arrive and read from the host at
/// each scrape.
#[derive(Debug)]
pub struct NodeMetrics {
    registry: Registry,
    reach: Arc<OnceLock<Arc<Reach>>>,
    calls: Family<CallLabels, Counter>,
    refusals: Family<CallLabels, Counter>,
    bytes: Family<BytesLabels, Counter>,
}

impl NodeMetrics {
    /// Metrics of a node serving `host` to `sessions`, with its devices' health from
    /// `devices`.
    pub fn new(
        host: Arc<Host>,
        sessions: Arc<Sessions>,
        devices: Arc<DeviceBook>,
        connections: Arc<Gate>,
    ) -> NodeMetrics {
        let mut registry = Registry::with_prefix("accelhost");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "client_calls",
            "Calls clients made, by client and call",
            calls.clone(),
        );
        let refusals = Family::<CallLabels, Counter>::default();
        registry.register(
            "client_refusals",
            "Calls refused because the client's grants do not cover them",
            refusals.clone(),
        );
        let bytes = Family::<BytesLabels, Counter>::default();
        registry.register_with_unit(
            "client_transferred",
            "Bytes clients wrote to or read from buffers and memory on this node",
            Unit::Bytes,
            bytes.clone(),
        );
        registry.register_collector(Box::new(PluginCollector { host }));
        registry.register_collector(Box::new(DeviceCollector {
            devices,
            sessions: sessions.clone(),
        }));
        registry.register_collector(Box::new(SessionCollector { sessions }));
        registry.register_collector(Box::new(ConnectionCollector { connections }));
        let reach = Arc::new(OnceLock::new());
        registry.register_collector(Box::new(ReachCollector {
            reach: reach.clone(),
        }));
        NodeMetrics {
            registry,
            reach,
            calls,
            refusals,
            bytes,
        }
    }

    /// Reports what `reach` saw of the nodes the host's `builtin:remote` reaches (the
    /// connector the host was built with). Set once; later calls are ignored.
    pub fn report_reach(&self, reach: Arc<Reach>) {
        let _ = self.reach.set(reach);
    }

    /// A call of `client`.
    pub fn call(&self, client: &str, call: &str) {
        self.calls
            .get_or_create(&CallLabels {
                client: client.to_owned(),
                call: call.to_owned(),
            })
            .inc();
    }

    /// A call of `client` its grants refused.
    pub fn refusal(&self, client: &str, call: &str) {
        self.refusals
            .get_or_create(&CallLabels {
                client: client.to_owned(),
                call: call.to_owned(),
            })
            .inc();
    }

    /// Bytes `client` moved: `written` to the node, or read from it.
    pub fn transferred(&self, client: &str, written: bool, bytes: u64) {
        self.bytes
            .get_or_create(&BytesLabels {
                client: client.to_owned(),
                direction: if written { "written" } else { "read" },
            })
            .inc_by(bytes);
    }

    /// The metrics as OpenMetrics text.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    /// The metrics in Prometheus's older text format (0.0.4), for scrapers and tools that do
    /// not ask for OpenMetrics, such as `promtool check metrics`.
    pub fn render_prometheus_text(&self) -> String {
        prometheus_text(&self.render())
    }
}

/// The content type of [`NodeMetrics::render`].
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The content type of [`NodeMetrics::render_prometheus_text`].
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// OpenMetrics text in the Prometheus 0.0.4 format: a counter family is named with its
/// `_total` suffix in `# HELP` and `# TYPE`, and there are no `# UNIT` or `# EOF` lines.
fn prometheus_text(openmetrics: &str) -> String {
    let lines: Vec<&str> = openmetrics.lines().collect();
    let counters: std::collections::HashSet<&str> = lines
        .iter()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in lines {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            counters
                .contains(name)
                .then(|| format!("{prefix}{name}_total {tail}"))
        });
        match renamed {
            Some(line) => out.push_str(line.trim_end()),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Reads the plugins' figures from the host at each scrape.
struct PluginCollector {
    host: Arc<Host>,
}

impl std::fmt::Debug for PluginCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PluginCollector")
    }
}

fn state_name(status: &PluginStatus) -> &'static str {
    match status {
        PluginStatus::Running => "running",
        PluginStatus::Restarting { .. } => "restarting",
        PluginStatus::Faulted { .. } => "faulted",
        PluginStatus::Disabled => "disabled",
        PluginStatus::LoadFailed { .. } => "load_failed",
        PluginStatus::Loading => "loading",
        _ => "other",
    }
}

const STATES: [&str; 7] = [
    "running",
    "restarting",
    "faulted",
    "disabled",
    "load_failed",
    "loading",
    "other",
];

impl Collector for PluginCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let plugins = self.host.plugins();
        {
            let mut family = encoder.encode_descriptor(
                "plugin_state",
                "1 for the state each plugin is in, 0 for the others",
                None,
                ConstGauge::new(0i64).metric_type(),
            )?;
            for plugin in &plugins {
                let now = state_name(&plugin.status);
                for state in STATES {
                    ConstGauge::new(i64::from(state == now)).encode(family.encode_family(
                        &StateLabels {
                            plugin: plugin.name.clone(),
                            state,
                        },
                    )?)?;
                }
            }
        }
        type PerPlugin = fn(&accelhost::PluginInfo) -> u64;
        let per_plugin: [(&str, &str, Option<Unit>, bool, PerPlugin); 5] = [
            (
                "plugin_restarts",
                "Times each plugin's instance was restarted after a fault",
                None,
                true,
                |p| u64::from(p.restarts),
            ),
            (
                "plugin_log_lines_dropped",
                "Log lines of each plugin dropped by the host's cap",
                None,
                true,
                |p| p.log_lines_dropped,
            ),
            (
                "plugin_host_memory",
                "Host memory each plugin holds charged to its budget",
                Some(Unit::Bytes),
                false,
                |p| p.memory.host_bytes,
            ),
            (
                "plugin_dma_memory",
                "DMA memory each plugin's buffers hold",
                Some(Unit::Bytes),
                false,
                |p| p.memory.dma_bytes,
            ),
            (
                "plugin_dma_granted",
                "DMA memory each plugin's grant allows it to hold (grants.dma_memory_mib)",
                Some(Unit::Bytes),
                false,
                |p| p.grants.dma_memory_mib << 20,
            ),
        ];
        for (name, help, unit, counter, value) in per_plugin {
            let kind = if counter {
                ConstCounter::new(0u64).metric_type()
            } else {
                ConstGauge::new(0i64).metric_type()
            };
            let mut family = encoder.encode_descriptor(name, help, unit.as_ref(), kind)?;
            for plugin in &plugins {
                let labels = PluginLabels {
                    plugin: plugin.name.clone(),
                };
                let at = family.encode_family(&labels)?;
                if counter {
                    ConstCounter::new(value(plugin)).encode(at)?;
                } else {
                    ConstGauge::new(value(plugin) as i64).encode(at)?;
                }
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "plugin_mmio_operations",
                "Register reads and writes each plugin made through its MMIO regions",
                None,
                ConstCounter::new(0u64).metric_type(),
            )?;
            for plugin in &plugins {
                for (op, n) in [("read", plugin.mmio_reads), ("write", plugin.mmio_writes)] {
                    let labels = MmioLabels {
                        plugin: plugin.name.clone(),
                        op,
                    };
                    ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "plugin_fuel_consumed",
                "Fuel each metered plugin's calls burned (plugins with load_policy.fuel only)",
                None,
                ConstCounter::new(0u64).metric_type(),
            )?;
            for plugin in &plugins {
                if let Some(fuel) = plugin.fuel_burned {
                    let labels = PluginLabels {
                        plugin: plugin.name.clone(),
                    };
                    ConstCounter::new(fuel).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        encode_calls(&mut encoder, &plugins)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MmioLabels {
    plugin: String,
    op: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeLabels {
    node: String,
}

/// The nodes the host's `builtin:remote` reached, at each scrape.
struct ReachCollector {
    reach: Arc<OnceLock<Arc<Reach>>>,
}

impl std::fmt::Debug for ReachCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReachCollector")
    }
}

impl Collector for ReachCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(reach) = self.reach.get() else {
            return Ok(());
        };
        let nodes = reach.nodes();
        {
            let mut family = encoder.encode_descriptor(
                "remote_node_reachable",
                "1 if the node answered the last call the host's plugins made to it, else 0",
                None,
                ConstGauge::new(0i64).metric_type(),
            )?;
            for (node, seen) in &nodes {
                let labels = NodeLabels { node: node.clone() };
                ConstGauge::new(i64::from(seen.reachable))
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "remote_node_round_trip",
            "How long the last quick call to the node (open, close, a register access) took",
            Some(&Unit::Seconds),
            ConstGauge::new(0f64).metric_type(),
        )?;
        for (node, seen) in &nodes {
            if let Some(took) = seen.round_trip {
                let labels = NodeLabels { node: node.clone() };
                ConstGauge::new(took.as_secs_f64()).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The per-call figures the host counts for each plugin: calls, errors by code, faults by
/// cause, and how long calls took.
fn encode_calls(
    encoder: &mut DescriptorEncoder,
    plugins: &[accelhost::PluginInfo],
) -> Result<(), std::fmt::Error> {
    let counter = ConstCounter::new(0u64).metric_type();
    {
        let mut family = encoder.encode_descriptor(
            "plugin_calls",
            "Calls into each plugin, by call",
            None,
            counter,
        )?;
        for plugin in plugins {
            for call in &plugin.calls {
                let labels = PluginCallLabels {
                    plugin: plugin.name.clone(),
                    call: call.call,
                };
                ConstCounter::new(call.calls).encode(family.encode_family(&labels)?)?;
            }
        }
    }
    {
        let mut family = encoder.encode_descriptor(
            "plugin_call_errors",
            "Calls a plugin answered with an error, by call and error code",
            None,
            counter,
        )?;
        for plugin in plugins {
            for call in &plugin.calls {
                for (code, n) in &call.errors {
                    let labels = PluginErrorLabels {
                        plugin: plugin.name.clone(),
                        call: call.call,
                        code: code.name(),
                    };
                    ConstCounter::new(*n).encode(family.encode_family(&labels)?)?;
                }
            }
        }
    }
    {
        let mut family = encoder.encode_descriptor(
            "plugin_faults",
            "Plugin instances ended by a fault, by cause",
            None,
            counter,
        )?;
        for plugin in plugins {
            for (cause, n) in &plugin.faults {
                let labels = FaultLabels {
                    plugin: plugin.name.clone(),
                    cause,
                };
                ConstCounter::new(*n).encode(family.encode_family(&labels)?)?;
            }
        }
    }
    let mut family = encoder.encode_descriptor(
        "plugin_call_duration",
        "How long calls into each plugin took, from the host's call to its answer",
        Some(&Unit::Seconds),
        prometheus_client::metrics::MetricType::Histogram,
    )?;
    for plugin in plugins {
        for call in &plugin.calls {
            let labels = PluginCallLabels {
                plugin: plugin.name.clone(),
                call: call.call,
            };
            family
                .encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(call.seconds, call.calls, &call.buckets, None)?;
        }
    }
    Ok(())
}

/// The node's connections at each scrape: open, and closed at accept over a limit.
struct ConnectionCollector {
    connections: Arc<Gate>,
}

impl std::fmt::Debug for ConnectionCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectionCollector")
    }
}

impl Collector for ConnectionCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        ConstGauge::new(self.connections.open() as i64).encode(encoder.encode_descriptor(
            "node_connections",
            "Connections open on the node's listeners",
            None,
            ConstGauge::new(0i64).metric_type(),
        )?)?;
        ConstCounter::new(self.connections.refused()).encode(encoder.encode_descriptor(
            "node_connections_refused",
            "Connections closed at accept: over limits.max_connections or the peer's \
             limits.max_connections_per_peer",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?)?;
        Ok(())
    }
}

/// Counts the open sessions per client at each scrape.
struct SessionCollector {
    sessions: Arc<Sessions>,
}

impl std::fmt::Debug for SessionCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionCollector")
    }
}

impl Collector for SessionCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "client_sessions",
            "Open sessions, by client",
            None,
            ConstGauge::new(0i64).metric_type(),
        )?;
        for (client, open) in self.sessions.per_client() {
            ConstGauge::new(open as i64).encode(family.encode_family(&ClientLabels { client })?)?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeviceLabels {
    device: String,
    plugin: String,
}

/// The devices' health as last judged, and the handles clients hold, at each scrape.
struct DeviceCollector {
    devices: Arc<DeviceBook>,
    sessions: Arc<Sessions>,
}

impl std::fmt::Debug for DeviceCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceCollector")
    }
}

impl Collector for DeviceCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let devices = self.devices.snapshot();
        let gauge = ConstGauge::new(0i64).metric_type();
        {
            let mut family = encoder.encode_descriptor(
                "device_healthy",
                "1 while the device's plugin runs and enumerations show it, else 0",
                None,
                gauge,
            )?;
            for device in devices.iter() {
                let labels = DeviceLabels {
                    device: accelhost::text::inert(&device.id).into_owned(),
                    plugin: device.plugin.clone(),
                };
                ConstGauge::new(i64::from(device.healthy()))
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        let handles = self.sessions.open_handles();
        let mut family = encoder.encode_descriptor(
            "device_open_handles",
            "Handles the node's clients hold open on each device",
            None,
            gauge,
        )?;
        for device in devices.iter() {
            let labels = DeviceLabels {
                device: accelhost::text::inert(&device.id).into_owned(),
                plugin: device.plugin.clone(),
            };
            let open = handles.get(&device.id).copied().unwrap_or(0);
            ConstGauge::new(open as i64).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::prometheus_text;

    #[test]
    fn counters_take_their_total_names_in_the_prometheus_format() {
        let openmetrics = "# HELP accelhost_client_calls Calls.\n\
                           # TYPE accelhost_client_calls counter\n\
                           accelhost_client_calls_total{client=\"a\"} 1\n\
                           # HELP accelhost_plugin_dma_memory_bytes DMA.\n\
                           # TYPE accelhost_plugin_dma_memory_bytes gauge\n\
                           # UNIT accelhost_plugin_dma_memory_bytes bytes\n\
                           accelhost_plugin_dma_memory_bytes{plugin=\"p\"} 0\n\
                           # EOF\n";
        assert_eq!(
            prometheus_text(openmetrics),
            "# HELP accelhost_client_calls_total Calls.\n\
             # TYPE accelhost_client_calls_total counter\n\
             accelhost_client_calls_total{client=\"a\"} 1\n\
             # HELP accelhost_plugin_dma_memory_bytes DMA.\n\
             # TYPE accelhost_plugin_dma_memory_bytes gauge\n\
             accelhost_plugin_dma_memory_bytes{plugin=\"p\"} 0\n"
        );
    }
}

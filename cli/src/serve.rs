//! `accelhost serve FILE`: the node service, until SIGTERM or SIGINT.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use accelhost_node::{BoundNode, ServeConfig};
use anyhow::Context;

pub const AFTER_HELP: &str = "\
The serve config (JSON) names the listeners, the limits and the clients:

  {
    \"node_name\": \"node1\",
    \"host_config\": \"accelhost.json\",
    \"listen\": {
      \"unix\": {\"path\": \"/run/accelhost/node.sock\", \"mode\": \"0660\"},
      \"tcp\": {\"address\": \"0.0.0.0:7700\", \"certificate\": \"node.pem\",
              \"key\": \"node.key\", \"client_ca\": \"clients-ca.pem\"},
      \"metrics\": {\"address\": \"127.0.0.1:9700\"}
    },
    \"limits\": {\"max_message_kib\": 4096, \"max_sessions\": 256,
               \"max_sessions_per_client\": 64, \"max_connections\": 4096,
               \"max_connections_per_peer\": 64, \"max_unnamed_connections\": 512,
               \"max_handshakes\": 512, \"handshake_ms\": 10000, \"max_dma_mib\": 16384,
               \"max_objects_per_session\": 4096, \"max_poll_ms\": 60000,
               \"max_image_mib\": 512, \"max_streams_per_session\": 8},
    \"clients\": [
      {\"name\": \"ops\", \"unix_uid\": 0, \"grants\": {\"devices\": [\"*\"], \"reconfigure\": true}},
      {\"name\": \"batch\", \"unix_gid\": 1001, \"grants\": {\"devices\": [\"dfl/*\"]}},
      {\"name\": \"node2\", \"certificate_san\": \"node2.example\",
       \"grants\": {\"devices\": [\"xocl/*\"], \"dma_memory_mib\": 1024}}
    ],
    \"health_interval_ms\": 2000,
    \"kubernetes\": {\"device_plugin_dir\": \"/var/lib/kubelet/device-plugins\",
                   \"resource_domain\": \"accelhost.io\", \"devices\": [\"*\"],
                   \"allocation_dir\": \"/var/lib/accelhost/allocations\",
                   \"container_dir\": \"/run/accelhost\", \"dma_memory_mib\": 256,
                   \"reconfigure\": true,
                   \"raw_device_nodes\": false}
  }

A client is recognized by its transport only: on the Unix socket by the peer's uid (or
primary gid), on TCP by a DNS or URI SAN of its certificate, which must chain to client_ca.
Grants: `devices` lists device ids as `accelhost list` prints them (`<plugin>/<name>`, a
trailing `*` matches any suffix); a client sees and opens only those. `dma_memory_mib`
(default 256) caps the DMA buffers and memory it holds across its sessions; `reconfigure` (default false) lets it
load images. A client's handles and buffers are released when it disconnects.

Every health_interval_ms the node checks its devices: a device is healthy while its plugin
runs and enumerations show it (metrics: accelhost_device_healthy).

`kubernetes` (optional) makes the node a kubelet device plugin (API v1beta1): each kind of
accelerator the `devices` patterns select is an extended resource, `<resource_domain>/af-<AFU
id>` (or `<resource_domain>/fpga-<vendor><device>` without one), registered through
device_plugin_dir/kubelet.sock, again whenever the kubelet restarts. Allocate makes a folder
in allocation_dir with a socket granted exactly the allocated devices (with dma_memory_mib,
and `reconfigure`, default true: the pod may load images such as an xclbin onto them),
mounted read-only at container_dir in the container, with ACCELHOST_ENDPOINT pointing at it;
`raw_device_nodes` also passes the devices' /dev nodes (as CDI devices when cdi_spec_dir
names where to write the spec). Allocations survive a restart of the node.

`listen.metrics` serves Prometheus metrics (OpenMetrics text) at /metrics over plain HTTP,
without authentication, to at most 8 connections at once (each has 5 s to send a request's
head and lives at most 30 s; when all 8 are taken, a new one takes the place of one not being
answered, from the peer with the most, oldest first): on `address` (host:port) anyone
who reaches it reads every client's name and figures, so bind it to an address only the
scraper reaches; or on `unix` (`{\"path\": ..., \"mode\": \"0600\"}`), readable only by who
the socket's mode lets in (`accelhost top unix:PATH`, `curl --unix-socket PATH`).

Every connection, on any listener, counts from accept (before the TLS handshake) against
limits.max_connections (4096) and the peer's limits.max_connections_per_peer (64; a peer is
an IP address on TCP, a uid on the socket, a pod on an allocation's socket); past either it
is closed at once. Peers no client entry names hold at most limits.max_unnamed_connections
together, and TCP connections in their TLS handshake at most limits.max_handshakes (each an
eighth of max_connections by default; together they must stay below it), so the named
clients always keep the rest. A TCP client has limits.handshake_ms (10 s) to finish its
handshake, a client of the socket as long to send its first byte; when the
handshakes' share is full, a new connection takes the place of the oldest handshake of the
address with the most open, if it has more than the newcomer's. Sessions count against
limits.max_sessions (256) and the client's limits.max_sessions_per_client (64); DMA memory
against the client's grants.dma_memory_mib and every client's together against
limits.max_dma_mib (16384). Raise LimitNOFILE above max_connections plus the plugins' needs.

The plugins served are those of host_config (relative to the serve config), else --config,
else the usual lookup order. Relative paths in the serve config are relative to its folder.
SIGTERM or SIGINT: stop accepting, end every session, give calls and streams in flight 5 s
to finish (then cut them), finalize the plugins and remove the socket. SIGHUP: re-read the serve config; the sessions of clients
whose entry did not change go on, the others end. Clients, grants, node_name and limits take
effect at once; listen, limits.max_message_kib and host_config at the next start. A config
that does not load is reported and the running one kept. `accelhost check-config FILE`
checks a serve config.";

#[derive(clap::Args)]
pub struct Args {
    /// The serve config: listeners, limits and clients (see below).
    file: PathBuf,
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let serve = Arc::new(ServeConfig::load(&args.file)?);
    let (host, reach) = crate::start::start_node_host(serve.host_config.clone().or(config))?;
    let host = Arc::new(host);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("accelhost-serve")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let node = BoundNode::bind(serve.clone(), host.clone()).await?;
        node.service().metrics().report_reach(reach);
        let mut listening = Vec::new();
        if let Some(unix) = &serve.unix {
            listening.push(format!("unix://{}", unix.path.display()));
        }
        if let Some(address) = node.tcp_address() {
            listening.push(format!("tcp {address} (mutual TLS)"));
        }
        if let Some(address) = node.metrics_address() {
            listening.push(format!("metrics at http://{address}/metrics"));
        }
        if let Some(accelhost_node::config::MetricsListen::Unix(unix)) = &serve.metrics {
            listening.push(format!("metrics at unix:{}", unix.path.display()));
        }
        if let Some(kubernetes) = &serve.kubernetes {
            listening.push(format!(
                "the kubelet at {}",
                kubernetes.kubelet_socket().display()
            ));
        }
        eprintln!(
            "accelhost serve: node '{}' on {}; {} client(s) configured",
            serve.node_name,
            listening.join(" and "),
            serve.clients.len()
        );
        let reloading = tokio::spawn(reload_on_hangup(args.file.clone(), node.service()));
        node.run(stop_signal()).await?;
        reloading.abort();
        anyhow::Ok(())
    })?;
    // Connections still open after the drain are cut here; a plugin call that does not return
    // is left to its deadline (the runtime does not wait past this).
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    // The last reference: dropping the host finalizes the plugins.
    drop(host);
    eprintln!("accelhost serve: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Re-reads the serve config on each SIGHUP and puts it in force; a config that does not
/// load is reported and the running one kept.
async fn reload_on_hangup(file: PathBuf, service: Arc<accelhost_node::service::NodeService>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot listen for SIGHUP; the serve config will not be reloaded");
        return;
    };
    while hangups.recv().await.is_some() {
        // A reader that panics on some input must not end this loop: later SIGHUPs (a revoked
        // client, a fixed file) still have to be read.
        let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ServeConfig::load(&file).map(|config| service.reload(config))
        }));
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(_) => {
                eprintln!(
                    "accelhost serve: not reloaded, the running config stays: reading {} failed \
                     inside accelhost (a bug; the panic is above)",
                    file.display()
                );
                continue;
            }
        };
        match loaded {
            Ok(reloaded) => {
                eprintln!(
                    "accelhost serve: reloaded {}; {} session(s) kept, {} ended{}{}",
                    file.display(),
                    reloaded.kept,
                    reloaded.ended.len(),
                    if reloaded.ended.is_empty() {
                        String::new()
                    } else {
                        format!(" (clients {})", reloaded.ended.join(", "))
                    },
                    if reloaded.need_restart.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; {} changed but take effect at the next start",
                            reloaded.need_restart.join(", ")
                        )
                    }
                );
            }
            Err(err) => eprintln!("accelhost serve: not reloaded, the running config stays: {err}"),
        }
    }
}

async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM / SIGINT; stop the node with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM"),
        _ = int.recv() => tracing::info!("SIGINT"),
    }
}

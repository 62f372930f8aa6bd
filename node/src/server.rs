//! `accelhost serve`'s listeners: the Unix socket (peer credentials), TCP with mutual TLS
//! ([`crate::tls`]) and `/metrics` ([`crate::metrics_server`]), serving one [`NodeService`],
//! shut down together.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use accelhost::Host;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::config::{MetricsListen, ServeConfig};
use crate::kubelet::DevicePlugins;
pub use crate::listen::{KEEPALIVE, ServeError};
use crate::listen::{SocketFile, bind_unix, node_router, server, unix_incoming};
pub use crate::metrics_server::METRICS_CONNECTIONS;
use crate::service::NodeService;

/// How long calls and streams in flight may take to finish once the node is told to stop;
/// then they are cut, whatever the clients do (a silent upload, a watch never read).
pub const DRAIN: std::time::Duration = std::time::Duration::from_secs(5);

/// A node with its listeners bound, ready to [`run`](BoundNode::run).
pub struct BoundNode {
    service: Arc<NodeService>,
    device_plugins: Option<DevicePlugins>,
    unix: Option<(UnixListener, SocketFile)>,
    tcp: Option<(TcpListener, TlsAcceptor)>,
    /// `/metrics`' listener, with its socket file when it is a Unix socket.
    metrics: Option<(MetricsListener, Option<SocketFile>)>,
}

/// The bound listener of `/metrics`.
enum MetricsListener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl BoundNode {
    /// Binds the listeners `config` names, for clients of `host`.
    pub async fn bind(config: Arc<ServeConfig>, host: Arc<Host>) -> Result<BoundNode, ServeError> {
        let unix = match &config.unix {
            Some(unix) => Some(bind_unix(&unix.path, unix.mode)?),
            None => None,
        };
        let tcp = match &config.tcp {
            Some(tcp) => {
                let tls = crate::tls::acceptor(tcp)?;
                let listener =
                    TcpListener::bind(tcp.address)
                        .await
                        .map_err(|reason| ServeError::Io {
                            what: "listening on",
                            path: tcp.address.to_string().into(),
                            reason,
                        })?;
                Some((listener, tls))
            }
            None => None,
        };
        let metrics = match &config.metrics {
            Some(MetricsListen::Tcp(address)) => Some((
                MetricsListener::Tcp(TcpListener::bind(address).await.map_err(|reason| {
                    ServeError::Io {
                        what: "listening for metrics on",
                        path: address.to_string().into(),
                        reason,
                    }
                })?),
                None,
            )),
            Some(MetricsListen::Unix(unix)) => {
                let (listener, file) = bind_unix(&unix.path, unix.mode)?;
                Some((MetricsListener::Unix(listener), Some(file)))
            }
            None => None,
        };
        let service = Arc::new(NodeService::new(host, config.clone()));
        let device_plugins = match &config.kubernetes {
            Some(settings) => Some(DevicePlugins::start(settings.clone(), service.clone())?),
            None => None,
        };
        Ok(BoundNode {
            service,
            device_plugins,
            unix,
            tcp,
            metrics,
        })
    }

    /// The TCP address the node listens on (with the port the system chose, for port 0).
    pub fn tcp_address(&self) -> Option<SocketAddr> {
        self.tcp
            .as_ref()
            .and_then(|(listener, _)| listener.local_addr().ok())
    }

    /// The address `/metrics` is served on (with the port the system chose, for port 0).
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        match &self.metrics {
            Some((MetricsListener::Tcp(listener), _)) => listener.local_addr().ok(),
            _ => None,
        }
    }

    /// The Kubernetes allocations, when the config turns the device plugin on.
    pub fn allocations(&self) -> Option<Arc<crate::kubelet::allocation::Allocations>> {
        self.device_plugins.as_ref().map(|p| p.allocations())
    }

    /// The open sessions.
    pub fn sessions(&self) -> Arc<crate::session::Sessions> {
        self.service.sessions()
    }

    /// The service, for reloading its config while it runs.
    pub fn service(&self) -> Arc<NodeService> {
        self.service.clone()
    }

    /// Serves until `shutdown` completes; then ends every session (releasing what the
    /// clients held), lets calls in flight finish for up to [`DRAIN`], and removes the socket
    /// file. What is still open then is cut when the caller drops its runtime.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServeError> {
        let (stop, stopped) = watch::channel(false);
        let signal = |mut stopped: watch::Receiver<bool>| async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        let BoundNode {
            service,
            device_plugins,
            unix,
            tcp,
            metrics,
        } = self;
        // Held to the end: the socket files go when these do, however the serving ended.
        let (unix, _unix_file) = unix.map_or((None, None), |(l, f)| (Some(l), Some(f)));
        let (metrics, _metrics_file) = metrics.map_or((None, None), |(l, f)| (Some(l), f));
        let unix = async {
            match unix {
                Some(listener) => {
                    let incoming = crate::shared_memory::split_redeemers(
                        service.admit_each(
                            unix_incoming(listener, "listen.unix"),
                            "listen.unix",
                            |service, stream| service.unix_share(stream.get_ref()),
                        ),
                        Arc::downgrade(&service.sessions()),
                        |stream| stream.get_ref(),
                    );
                    node_router(server(), &service)
                        .serve_with_incoming_shutdown(incoming, signal(stopped.clone()))
                        .await
                }
                None => Ok(()),
            }
        };
        let tcp = async {
            match tcp {
                Some((listener, tls)) => {
                    node_router(server(), &service)
                        .serve_with_incoming_shutdown(
                            crate::tls::incoming(&service, listener, tls),
                            signal(stopped.clone()),
                        )
                        .await
                }
                None => Ok(()),
            }
        };
        let metrics = {
            let node = service.metrics();
            let stopped = stopped.clone();
            async move {
                match metrics {
                    Some(MetricsListener::Tcp(listener)) => {
                        crate::metrics_server::serve(listener, node, stopped).await
                    }
                    Some(MetricsListener::Unix(listener)) => {
                        crate::metrics_server::serve(listener, node, stopped).await
                    }
                    None => {}
                }
                Ok::<(), ServeError>(())
            }
        };
        let health = {
            let service = service.clone();
            let stopped = stopped.clone();
            async move {
                service.watch_health(stopped).await;
                Ok::<(), ServeError>(())
            }
        };
        let device_plugins = {
            let stopped = stopped.clone();
            let plugins = device_plugins;
            async move {
                if let Some(plugins) = plugins {
                    plugins.run(stopped).await;
                }
                Ok::<(), ServeError>(())
            }
        };
        let sessions = service.sessions();
        let trigger = async move {
            shutdown.await;
            tracing::info!(
                sessions = sessions.len(),
                "shutting down: ending every session"
            );
            sessions.end_all();
            let _ = stop.send(true);
            Ok::<(), tonic::transport::Error>(())
        };
        let mut draining = stopped.clone();
        let drained = async move {
            let _ = draining.wait_for(|stop| *stop).await;
            tokio::time::sleep(DRAIN).await;
        };
        let served = tokio::select! {
            served = async {
                tokio::try_join!(
                    async { unix.await.map_err(ServeError::from) },
                    async { tcp.await.map_err(ServeError::from) },
                    metrics,
                    health,
                    device_plugins,
                    async { trigger.await.map_err(ServeError::from) },
                )
            } => served.map(|_| ()),
            () = drained => {
                tracing::warn!(
                    drain_seconds = DRAIN.as_secs(),
                    "calls or streams still open after the drain time: ending them"
                );
                Ok(())
            }
        };
        served
    }
}

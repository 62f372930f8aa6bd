//! `accelhost serve`'s listeners: the Unix socket (peer credentials) and TCP with mutual TLS,
//! both serving one [`NodeService`], shut down together.

use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use accelhost::Host;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

use crate::config::ServeConfig;
use crate::proto::node_server::NodeServer;
use crate::service::NodeService;

/// Why the node could not start or keep serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A file of the serve config could not be read, or a socket could not be bound.
    #[error("{what} {}: {reason}", path.display())]
    Io {
        /// What the node was doing.
        what: &'static str,
        /// The file, socket path or address.
        path: PathBuf,
        /// Why it failed.
        reason: std::io::Error,
    },
    /// Another process already serves on the socket.
    #[error(
        "{}: another process is serving on this socket (stop it, or give listen.unix.path another path)",
        .0.display()
    )]
    AlreadyServing(PathBuf),
    /// The TLS settings were refused.
    #[error("listen.tcp: {0}")]
    Tls(String),
    /// The gRPC transport failed.
    #[error("the gRPC transport failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// A node with its listeners bound, ready to [`run`](BoundNode::run).
pub struct BoundNode {
    service: Arc<NodeService>,
    unix: Option<(UnixListener, PathBuf)>,
    tcp: Option<(TcpListener, ServerTlsConfig)>,
    metrics: Option<TcpListener>,
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, ServeError> {
    std::fs::read(path).map_err(|reason| ServeError::Io {
        what,
        path: path.to_owned(),
        reason,
    })
}

impl BoundNode {
    /// Binds the listeners `config` names, for clients of `host`.
    pub async fn bind(config: Arc<ServeConfig>, host: Arc<Host>) -> Result<BoundNode, ServeError> {
        let unix = match &config.unix {
            Some(unix) => Some((bind_unix(&unix.path, unix.mode)?, unix.path.clone())),
            None => None,
        };
        let tcp = match &config.tcp {
            Some(tcp) => {
                let certificate = read("reading the node certificate", &tcp.certificate)?;
                let key = read("reading the node key", &tcp.key)?;
                let ca = read("reading the client CA", &tcp.client_ca)?;
                let tls = ServerTlsConfig::new()
                    .identity(Identity::from_pem(certificate, key))
                    .client_ca_root(Certificate::from_pem(ca));
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
        let metrics = match config.metrics {
            Some(address) => {
                Some(
                    TcpListener::bind(address)
                        .await
                        .map_err(|reason| ServeError::Io {
                            what: "listening for metrics on",
                            path: address.to_string().into(),
                            reason,
                        })?,
                )
            }
            None => None,
        };
        Ok(BoundNode {
            service: Arc::new(NodeService::new(host, config)),
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
        self.metrics
            .as_ref()
            .and_then(|listener| listener.local_addr().ok())
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
    /// clients held), lets calls in flight finish, and removes the socket file.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServeError> {
        let (stop, stopped) = watch::channel(false);
        let max = self.service.config().limits.max_message_bytes();
        let service = || {
            NodeServer::from_arc(self.service.clone())
                .max_decoding_message_size(max)
                .max_encoding_message_size(max)
        };
        let signal = |mut stopped: watch::Receiver<bool>| async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        let unix_path = self.unix.as_ref().map(|(_, path)| path.clone());
        let unix = async {
            match self.unix {
                Some((listener, _)) => {
                    server()
                        .add_service(service())
                        .serve_with_incoming_shutdown(
                            UnixListenerStream::new(listener),
                            signal(stopped.clone()),
                        )
                        .await
                }
                None => Ok(()),
            }
        };
        let tcp = async {
            match self.tcp {
                Some((listener, tls)) => {
                    server()
                        .tls_config(tls)?
                        .add_service(service())
                        .serve_with_incoming_shutdown(
                            TcpIncoming::from(listener).with_nodelay(Some(true)),
                            signal(stopped.clone()),
                        )
                        .await
                }
                None => Ok(()),
            }
        };
        let metrics = async {
            match self.metrics {
                Some(listener) => {
                    let node = self.service.metrics();
                    let app = axum::Router::new().route(
                        "/metrics",
                        axum::routing::get(move |headers: axum::http::HeaderMap| {
                            let node = node.clone();
                            async move { metrics_answer(&node, &headers) }
                        }),
                    );
                    axum::serve(listener, app)
                        .with_graceful_shutdown(signal(stopped.clone()))
                        .await
                        .map_err(|reason| ServeError::Io {
                            what: "serving metrics on",
                            path: "listen.metrics".into(),
                            reason,
                        })
                }
                None => Ok(()),
            }
        };
        let sessions = self.service.sessions();
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
        let served = tokio::try_join!(
            async { unix.await.map_err(ServeError::from) },
            async { tcp.await.map_err(ServeError::from) },
            metrics,
            async { trigger.await.map_err(ServeError::from) },
        );
        if let Some(path) = unix_path {
            let _ = std::fs::remove_file(path);
        }
        served?;
        Ok(())
    }
}

/// OpenMetrics for a scraper that asks for it (Prometheus does), else the Prometheus text
/// format (what `curl` and `promtool check metrics` read).
fn metrics_answer(
    node: &crate::metrics::NodeMetrics,
    headers: &axum::http::HeaderMap,
) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    use crate::metrics::{OPENMETRICS_CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE};
    let openmetrics = headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("application/openmetrics-text"));
    if openmetrics {
        (
            [(axum::http::header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)],
            node.render(),
        )
    } else {
        (
            [(axum::http::header::CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE)],
            node.render_prometheus_text(),
        )
    }
}

/// How often the node pings a client's connection, and how long it waits for the answer: a
/// client that vanished without closing its connection loses its session within twice this.
pub const KEEPALIVE: Duration = Duration::from_secs(10);

fn server() -> Server {
    Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE))
        .http2_keepalive_timeout(Some(KEEPALIVE))
}

/// Binds the socket at `path` with `mode`, replacing a stale socket file nobody serves on.
fn bind_unix(path: &Path, mode: u32) -> Result<UnixListener, ServeError> {
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(ServeError::AlreadyServing(path.to_owned()));
        }
        std::fs::remove_file(path).map_err(|reason| ServeError::Io {
            what: "removing the stale socket",
            path: path.to_owned(),
            reason,
        })?;
    }
    // Bound in a folder only this process can enter, given its mode, then moved into place:
    // nobody can connect while the socket still has the mode the umask gave it.
    let io = |what: &'static str, at: &Path| {
        let at = at.to_owned();
        move |reason| ServeError::Io {
            what,
            path: at,
            reason,
        }
    };
    let parent = path.parent().unwrap_or(Path::new("."));
    let staging = parent.join(format!(
        ".{}.{}.staging",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("socket"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(io("creating the staging folder", &staging))?;
    let staged = staging.join("socket");
    let bound = UnixListener::bind(&staged)
        .map_err(io("binding the socket", path))
        .and_then(|listener| {
            std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(mode))
                .map_err(io("setting the mode of", path))?;
            std::fs::rename(&staged, path).map_err(io("moving the socket to", path))?;
            Ok(listener)
        });
    let _ = std::fs::remove_dir_all(&staging);
    let listener = bound?;
    Ok(listener)
}

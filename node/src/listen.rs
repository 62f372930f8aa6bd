//! What every listener of the node shares: binding a Unix socket safely, the gRPC server
//! with the node's keepalive, and the node service put on it.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tonic::transport::Server;

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

/// How often the node pings a client's connection, and how long it waits for the answer: a
/// client that vanished without closing its connection loses its session within twice this.
pub const KEEPALIVE: Duration = Duration::from_secs(10);

/// The gRPC service of `service`, with the message size its config allows.
pub fn node_server(service: &Arc<NodeService>) -> NodeServer<NodeService> {
    let max = service.config().limits.max_message_bytes();
    NodeServer::from_arc(service.clone())
        .max_decoding_message_size(max)
        .max_encoding_message_size(max)
}

/// A gRPC server with the node's keepalive.
pub fn server() -> Server {
    Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE))
        .http2_keepalive_timeout(Some(KEEPALIVE))
}

/// Binds the socket at `path` with `mode`, replacing a stale socket file nobody serves on.
pub fn bind_unix(path: &Path, mode: u32) -> Result<UnixListener, ServeError> {
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

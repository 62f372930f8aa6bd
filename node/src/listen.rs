//! What every listener of the node shares: binding a Unix socket safely, the gRPC server
//! with the node's keepalive, and the node service put on it.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};
use tokio_stream::wrappers::UnixListenerStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::Server;

use crate::accept::Backoff;
use crate::authority::AuthorityFix;
use crate::authorize::Authorize;
use crate::config::MAX_SOCKET_PATH;
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
    /// Something other than a socket is where the node would bind one: it is never removed.
    #[error(
        "{}: is {kind}, not a socket (the node replaces only a stale socket; give it a path of its own)",
        path.display()
    )]
    NotASocket {
        /// Where the socket would go.
        path: PathBuf,
        /// What is there instead.
        kind: &'static str,
    },
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

/// The node service on `server`, behind its authorization table: every listener serves it
/// this way.
pub fn node_router(
    server: Server,
    service: &Arc<NodeService>,
) -> tonic::transport::server::Router<
    tower::layer::util::Stack<Authorize, tower::layer::util::Identity>,
> {
    server
        .layer(Authorize::new(service))
        .add_service(node_server(service))
}

/// The connections a Unix listener of the node accepts, as every one of them takes them:
/// accepting with backoff when descriptors run out ([`Backoff`]), and any HTTP/2
/// `:authority` read as the server can take it ([`AuthorityFix`]). `name` says which listener
/// in the log.
pub fn unix_incoming(
    listener: UnixListener,
    name: &'static str,
) -> impl Stream<Item = std::io::Result<AuthorityFix<UnixStream>>> + Send + 'static {
    Backoff::new(UnixListenerStream::new(listener), name)
        .map(|accepted| accepted.map(AuthorityFix::new))
}

/// A gRPC server with the node's keepalive.
pub fn server() -> Server {
    Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE))
        .http2_keepalive_timeout(Some(KEEPALIVE))
}

/// A socket file the node bound: removed when dropped, unless what stands at its path is no
/// longer that socket (a kubelet that restarts deletes the sockets in its folder, and
/// something else may be bound there since). Every socket the node makes is held by one, so
/// a clean exit leaves none behind, however its tasks end.
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    /// The socket's device and inode, as bound.
    identity: Option<(u64, u64)>,
}

impl SocketFile {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the socket the node bound is still at its path.
    pub fn is_in_place(&self) -> bool {
        self.identity.is_some() && file_identity(&self.path) == self.identity
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if self.is_in_place() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The device and inode of the socket at `path`, if a socket is there.
fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let found = std::fs::symlink_metadata(path).ok()?;
    found
        .file_type()
        .is_socket()
        .then(|| (found.dev(), found.ino()))
}

/// Binds the socket at `path` with `mode`, replacing a stale socket file nobody serves on;
/// the socket file goes when the returned [`SocketFile`] is dropped.
pub fn bind_unix(path: &Path, mode: u32) -> Result<(UnixListener, SocketFile), ServeError> {
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(ServeError::Io {
            what: "binding the socket",
            path: path.to_owned(),
            reason: std::io::Error::other(format!(
                "the path has {} bytes; a Unix socket's path holds at most {MAX_SOCKET_PATH}",
                path.as_os_str().len()
            )),
        });
    }
    if let Ok(found) = std::fs::symlink_metadata(path) {
        let kind = found.file_type();
        if !kind.is_socket() {
            return Err(ServeError::NotASocket {
                path: path.to_owned(),
                kind: if kind.is_dir() {
                    "a folder"
                } else if kind.is_symlink() {
                    "a symbolic link"
                } else if kind.is_file() {
                    "a regular file"
                } else {
                    "a device or FIFO"
                },
            });
        }
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
    // Named short, so that the staged socket's path is no longer than the final one for any
    // socket name of 9 bytes or more (`node.sock`): a path that fits fits while staged.
    let staging = parent.join(format!(".{:x}~", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(io("creating the staging folder", &staging))?;
    let staged = staging.join("s");
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
    let file = SocketFile {
        path: path.to_owned(),
        identity: file_identity(path),
    };
    Ok((listener, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("accelhost-listen-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn what_is_not_a_socket_is_refused_and_kept() {
        let dir = scratch("kept");
        let file = dir.join("node.sock");
        std::fs::write(&file, "keep me").unwrap();
        let err = bind_unix(&file, 0o660).unwrap_err().to_string();
        assert!(err.contains("is a regular file, not a socket"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        let link = dir.join("link.sock");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let err = bind_unix(&link, 0o660).unwrap_err().to_string();
        assert!(err.contains("is a symbolic link, not a socket"), "{err}");
        assert!(std::fs::symlink_metadata(&link).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_path_too_long_for_a_socket_is_named() {
        let long = PathBuf::from(format!("/tmp/{}", "x".repeat(MAX_SOCKET_PATH)));
        let err = bind_unix(&long, 0o660).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("binding the socket {}", long.display())),
            "{err}"
        );
        assert!(err.contains("holds at most 107"), "{err}");
    }

    #[tokio::test]
    async fn a_path_that_fits_fits_while_staged() {
        let dir = scratch("staged");
        // A path of exactly the most a socket holds, ending in the allocations' socket name.
        let pad = MAX_SOCKET_PATH - dir.as_os_str().len() - "/node.sock".len() - 1;
        let folder = dir.join("d".repeat(pad));
        std::fs::create_dir(&folder).unwrap();
        let path = folder.join("node.sock");
        assert_eq!(path.as_os_str().len(), MAX_SOCKET_PATH);
        let (_listener, file) = bind_unix(&path, 0o600).unwrap();
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_socket()
        );
        assert!(file.is_in_place());
        drop(file);
        assert!(!path.exists(), "the socket goes with its SocketFile");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_socket_made_again_by_someone_else_is_left_alone() {
        let dir = scratch("replaced");
        let path = dir.join("node.sock");
        let (listener, file) = bind_unix(&path, 0o600).unwrap();
        drop(listener);
        std::fs::remove_file(&path).unwrap();
        let _theirs = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert!(!file.is_in_place());
        drop(file);
        assert!(path.exists(), "another's socket at the same path stays");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! Who is calling, as the transport proves it: the peer credentials of a Unix socket, or the
//! subject alternative names of a verified TLS client certificate. What a request says of
//! itself is never used.

use std::fmt;

use tonic::Request;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo, UdsConnectInfo};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::config::ClientIdentity;

/// A caller as its transport identifies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    /// A process on this machine, through the Unix socket.
    Unix {
        /// Its user id.
        uid: u32,
        /// Its primary group id.
        gid: u32,
    },
    /// A TLS client whose certificate chained to the configured CA.
    Certificate {
        /// The DNS and URI subject alternative names of its certificate.
        sans: Vec<String>,
    },
    /// Whoever reached the socket of a Kubernetes allocation.
    Allocation {
        /// The allocation's id.
        id: std::sync::Arc<str>,
    },
    /// Nothing the node can check (no peer credentials, no certificate).
    Unknown,
}

/// What a connection to an allocation's socket carries into its requests: the allocation,
/// which is the client whatever the peer's uid (the socket is reachable only in its pod), and
/// the process that connected.
#[derive(Clone, Debug)]
pub struct AllocationConnectInfo {
    /// The allocation's id.
    pub allocation: std::sync::Arc<str>,
    /// The process at the other end, as the kernel saw it connect.
    pub process: Option<Process>,
}

/// The process at the other end of a Unix-socket connection, as the kernel recorded it when
/// the process connected (`SO_PEERCRED`), in the node's own user and pid namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Process {
    /// Its user id.
    pub uid: u32,
    /// Its process id; `None` when the node's pid namespace cannot see it (the kernel then
    /// says 0).
    pub pid: Option<i32>,
}

impl Process {
    /// The process that connected `stream`, if the kernel says.
    pub fn of_stream(stream: &tokio::net::UnixStream) -> Option<Process> {
        stream.peer_cred().ok().map(Process::from)
    }

    /// The process whose connection put these extensions on a request, if it came through
    /// a Unix socket of the node.
    pub fn from_extensions(extensions: &tonic::Extensions) -> Option<Process> {
        if let Some(info) = extensions.get::<AllocationConnectInfo>() {
            return info.process;
        }
        extensions
            .get::<UdsConnectInfo>()
            .and_then(|info| info.peer_cred)
            .map(Process::from)
    }
}

impl From<tokio::net::unix::UCred> for Process {
    fn from(cred: tokio::net::unix::UCred) -> Process {
        Process {
            uid: cred.uid(),
            pid: cred.pid().filter(|&pid| pid > 0),
        }
    }
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "process {pid} of uid {}", self.uid),
            None => write!(
                f,
                "a process of uid {} whose pid the node cannot see",
                self.uid
            ),
        }
    }
}

impl Peer {
    /// The caller of `request`.
    pub fn of<T>(request: &Request<T>) -> Peer {
        Peer::from_extensions(request.extensions())
    }

    /// The caller of a request with these extensions (where the transport put what it knows
    /// of the connection): for checks made before the request reaches a handler.
    pub fn from_extensions(extensions: &tonic::Extensions) -> Peer {
        if let Some(info) = extensions.get::<AllocationConnectInfo>() {
            return Peer::Allocation {
                id: info.allocation.clone(),
            };
        }
        if let Some(info) = extensions.get::<UdsConnectInfo>() {
            return match info.peer_cred {
                Some(cred) => Peer::Unix {
                    uid: cred.uid(),
                    gid: cred.gid(),
                },
                None => Peer::Unknown,
            };
        }
        let certificates = extensions
            .get::<TlsConnectInfo<TcpConnectInfo>>()
            .and_then(|info| info.peer_certs());
        match certificates {
            Some(chain) => match chain.first() {
                Some(leaf) => Peer::Certificate {
                    sans: subject_alt_names(leaf.as_ref()),
                },
                None => Peer::Unknown,
            },
            None => Peer::Unknown,
        }
    }

    /// The identities a client entry could name this peer by, most specific first.
    pub fn identities(&self) -> Vec<ClientIdentity> {
        match self {
            Peer::Unix { uid, gid } => {
                vec![ClientIdentity::UnixUid(*uid), ClientIdentity::UnixGid(*gid)]
            }
            Peer::Certificate { sans } => sans
                .iter()
                .map(|san| ClientIdentity::CertificateSan(san.clone()))
                .collect(),
            Peer::Allocation { id } => vec![ClientIdentity::Allocation(id.to_string())],
            Peer::Unknown => Vec::new(),
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Unix { uid, gid } => write!(f, "the local process of uid {uid} (gid {gid})"),
            Peer::Certificate { sans } if sans.is_empty() => {
                f.write_str("a certificate with no DNS or URI SAN")
            }
            Peer::Certificate { sans } => write!(
                f,
                "the certificate of {}",
                accelhost::text::inert(&sans.join(", "))
            ),
            Peer::Allocation { id } => write!(f, "the pod of allocation {id}"),
            Peer::Unknown => f.write_str("a caller with no credentials"),
        }
    }
}

/// The DNS and URI subject alternative names of a DER certificate (none if it does not
/// parse: the TLS layer already verified it, so that does not happen in practice).
pub fn subject_alt_names(der: &[u8]) -> Vec<String> {
    let Ok((_, certificate)) = X509Certificate::from_der(der) else {
        return Vec::new();
    };
    let Ok(Some(extension)) = certificate.subject_alternative_name() else {
        return Vec::new();
    };
    extension
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(dns) => Some(dns.to_string()),
            GeneralName::URI(uri) => Some(uri.to_string()),
            _ => None,
        })
        .collect()
}

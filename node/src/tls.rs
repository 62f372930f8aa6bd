//! The TCP listener's mutual TLS, made by the node itself rather than inside the gRPC
//! server, so that the node knows when a handshake ends: until then a TCP connection draws
//! from the handshakes' share of the node's connections ([`crate::gate`]), has
//! `limits.handshake_ms` to finish, and may lose its place to a newer
//! handshake; once its certificate is verified, it draws from the named share if a client
//! entry names one of its SANs, else from the unnamed one, and only then reaches the gRPC
//! server. The rustls configuration is the one tonic makes for a server with a client CA:
//! client certificates required and verified against `client_ca`, HTTP/2 by ALPN.

use std::io;
use std::sync::{Arc, Weak};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig, crypto};
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::TcpIncoming;

use crate::accept::Backoff;
use crate::config::{ClientIdentity, TcpListen};
use crate::gate::{Admitted, Share, tcp_peer};
use crate::identity::subject_alt_names;
use crate::listen::ServeError;
use crate::service::NodeService;

/// A connection of the TCP listener once its handshake is done.
pub type TlsConnection = TlsStream<Admitted<TcpStream>>;

/// The most finished handshakes waiting for the gRPC server to take them.
const WAITING: usize = 64;

/// The server side of mutual TLS for `tcp`: its certificate and key, and client certificates
/// required, chaining to its `client_ca`.
pub fn acceptor(tcp: &TcpListen) -> Result<TlsAcceptor, ServeError> {
    let read = |what: &'static str, path: &std::path::Path| {
        std::fs::read(path).map_err(|reason| ServeError::Io {
            what,
            path: path.to_owned(),
            reason,
        })
    };
    let refused = |field: &str, path: &std::path::Path, why: String| {
        ServeError::Tls(format!("{field} {}: {why}", path.display()))
    };
    let certificate = read("reading the node certificate", &tcp.certificate)?;
    let key = read("reading the node key", &tcp.key)?;
    let ca = read("reading the client CA", &tcp.client_ca)?;
    let chain = CertificateDer::pem_slice_iter(&certificate)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| refused("certificate", &tcp.certificate, err.to_string()))?;
    if chain.is_empty() {
        return Err(refused(
            "certificate",
            &tcp.certificate,
            "holds no PEM certificate".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key)
        .map_err(|err| refused("key", &tcp.key, err.to_string()))?;
    let mut roots = RootCertStore::empty();
    for authority in CertificateDer::pem_slice_iter(&ca) {
        let authority =
            authority.map_err(|err| refused("client_ca", &tcp.client_ca, err.to_string()))?;
        roots
            .add(authority)
            .map_err(|err| refused("client_ca", &tcp.client_ca, err.to_string()))?;
    }
    if roots.is_empty() {
        return Err(refused(
            "client_ca",
            &tcp.client_ca,
            "holds no PEM certificate".into(),
        ));
    }
    let provider = Arc::new(crypto::ring::default_provider());
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|err| refused("client_ca", &tcp.client_ca, err.to_string()))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| ServeError::Tls(err.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|err| refused("certificate and key", &tcp.certificate, err.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The connections of `listener` whose handshake succeeded, each counted in `service`'s
/// gate, in the order their handshakes ended. Accept errors pass through (the gRPC server
/// skips those of one connection).
pub fn incoming(
    service: &Arc<NodeService>,
    listener: TcpListener,
    acceptor: TlsAcceptor,
) -> impl Stream<Item = io::Result<TlsConnection>> + Send + 'static {
    let (done, out) = mpsc::channel(WAITING);
    let accepted = service.admit_each(
        Backoff::new(
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            "listen.tcp",
        ),
        "listen.tcp",
        |_, stream: &TcpStream| (tcp_peer(stream), Share::Handshake),
    );
    let service = Arc::downgrade(service);
    tokio::spawn(async move {
        let mut accepted = std::pin::pin!(accepted);
        loop {
            let next = tokio::select! {
                () = done.closed() => return,
                next = accepted.next() => next,
            };
            match next {
                None => return,
                Some(Err(err)) => {
                    if done.send(Err(err)).await.is_err() {
                        return;
                    }
                }
                Some(Ok(connection)) => {
                    tokio::spawn(handshake(
                        service.clone(),
                        acceptor.clone(),
                        connection,
                        done.clone(),
                    ));
                }
            }
        }
    });
    ReceiverStream::new(out)
}

/// Runs one handshake to its end, its deadline or its eviction; a connection that finished
/// moves to its peer's share and on to the gRPC server.
async fn handshake(
    service: Weak<NodeService>,
    acceptor: TlsAcceptor,
    connection: Admitted<TcpStream>,
    done: mpsc::Sender<io::Result<TlsConnection>>,
) {
    let peer = tcp_peer(connection.get_ref());
    let evicted = connection.admission().eviction();
    let handshake_time = connection.admission().handshake_time();
    let tls = tokio::select! {
        tls = tokio::time::timeout(handshake_time, acceptor.accept(connection)) => match tls {
            Ok(Ok(tls)) => tls,
            Ok(Err(err)) => {
                tracing::debug!(peer = ?peer, error = %err, "a TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!(
                    peer = ?peer,
                    "a TLS handshake did not finish within {} ms (limits.handshake_ms)",
                    handshake_time.as_millis()
                );
                return;
            }
        },
        () = evicted => {
            tracing::debug!(peer = ?peer, "a TLS handshake made room for a newer one");
            return;
        }
    };
    let Some(service) = service.upgrade() else {
        return;
    };
    let identities: Vec<ClientIdentity> = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| subject_alt_names(leaf.as_ref()))
        .unwrap_or_default()
        .into_iter()
        .map(ClientIdentity::CertificateSan)
        .collect();
    let share = if service.names_any(&identities) {
        Share::Named
    } else {
        Share::Unnamed
    };
    let admission = tls.get_ref().0.admission();
    if let Err(refusal) = admission
        .gate()
        .promote(admission, share, service.connection_caps())
    {
        admission.gate().note_refusal("listen.tcp", &peer, refusal);
        return;
    }
    let _ = done.send(Ok(tls)).await;
}

//! Who may make which call, in one table consulted before any handler runs. Every RPC of
//! `node.proto` has a row: the grant it needs beyond being a client of the node, and what it
//! charges to the client's grants. [`Authorize`] is a tower layer in front of the node
//! service: it identifies the caller from the connection, refuses a caller the serve config
//! does not name or whose grants lack the call's, and only then lets the request through. A
//! new RPC without a row is refused outright, so a call cannot be added and forgotten here.
//!
//! Per-device grants (`grants.devices`) are checked where a device is named (`Open`,
//! `Describe`, `Enumerate`'s answer); what a session holds after that came through them.

use std::sync::Arc;
use std::task::{Context, Poll};

use accelhost::ErrorCode;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, http};

use crate::config::ClientEntry;
use crate::service::NodeService;
use crate::status::status;

/// The gRPC path prefix of the node's calls.
const PREFIX: &str = "/accelhost.node.v1.Node/";

/// What a call needs of the caller's grants, beyond being a client of the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Being a client is enough (what the call touches was reached through a device grant).
    Client,
    /// `grants.reconfigure`: the call loads an image onto a card, changing it for every
    /// other client of the card.
    Reconfigure,
}

/// One call's row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// The RPC's name in `node.proto`.
    pub method: &'static str,
    /// What the caller's grants must allow.
    pub needs: Needs,
    /// What the call charges, and to which grant or limit (for people: `accelhost serve
    /// --help` and the README print this table).
    pub charges: &'static str,
}

const fn rule(method: &'static str, needs: Needs, charges: &'static str) -> Rule {
    Rule {
        method,
        needs,
        charges,
    }
}

/// Every RPC of the node, in `node.proto`'s order.
pub const RULES: &[Rule] = &[
    rule("Attach", Needs::Client, "a session (limits.max_sessions)"),
    rule("Enumerate", Needs::Client, "nothing"),
    rule("Describe", Needs::Client, "nothing"),
    rule(
        "Open",
        Needs::Client,
        "an object (limits.max_objects_per_session)",
    ),
    rule("Close", Needs::Client, "nothing"),
    rule("Reset", Needs::Client, "nothing"),
    rule(
        "Reconfigure",
        Needs::Reconfigure,
        "a stream (limits.max_streams_per_session); the image as it arrives (grants.dma_memory_mib)",
    ),
    rule("MapMmio", Needs::Client, "an object"),
    rule("MmioRead", Needs::Client, "nothing"),
    rule("MmioWrite", Needs::Client, "nothing"),
    rule("MmioWriteBatch", Needs::Client, "nothing"),
    rule("MmioPoll", Needs::Client, "nothing"),
    rule(
        "PrepareBuffer",
        Needs::Client,
        "an object; its size in whole pages (grants.dma_memory_mib)",
    ),
    rule("BufferWrite", Needs::Client, "nothing"),
    rule(
        "BufferRead",
        Needs::Client,
        "a stream (limits.max_streams_per_session)",
    ),
    rule("BufferFill", Needs::Client, "nothing"),
    rule("BufferPoll", Needs::Client, "nothing"),
    rule(
        "BufferSync",
        Needs::Client,
        "the node's mirror of the buffer once (grants.dma_memory_mib)",
    ),
    rule(
        "Alloc",
        Needs::Client,
        "an object; its size in whole pages (grants.dma_memory_mib)",
    ),
    rule(
        "CreateProgram",
        Needs::Reconfigure,
        "an object and a stream; the image as it arrives (grants.dma_memory_mib)",
    ),
    rule("BuiltinProgram", Needs::Client, "an object"),
    rule("Kernel", Needs::Client, "an object"),
    rule("CreateQueue", Needs::Client, "an object"),
    rule("EnqueueMemcpy", Needs::Client, "an object (the event)"),
    rule("EnqueueLaunch", Needs::Client, "an object (the event)"),
    rule(
        "Submit",
        Needs::Client,
        "a stream (limits.max_streams_per_session); up to 1024 commands in flight",
    ),
    rule("QueueFinish", Needs::Client, "nothing"),
    rule("RegisterEvent", Needs::Client, "an object"),
    rule("EventStatus", Needs::Client, "nothing"),
    rule("EventWait", Needs::Client, "nothing"),
    rule(
        "WatchEvent",
        Needs::Client,
        "a stream (limits.max_streams_per_session)",
    ),
    rule("Release", Needs::Client, "gives back what the object held"),
];

/// The row of `method`, if it is a call of the node.
pub fn rule_of(method: &str) -> Option<&'static Rule> {
    RULES.iter().find(|rule| rule.method == method)
}

/// Checks a caller against `method`'s row: the client it is, or the refusal.
pub fn check(
    service: &NodeService,
    extensions: &tonic::Extensions,
    method: &str,
) -> Result<Arc<ClientEntry>, Status> {
    let Some(rule) = rule_of(method) else {
        return Err(status(
            ErrorCode::Unsupported,
            format!("{method}: not a call of this node"),
        ));
    };
    let client = service.client_of(extensions, method)?;
    match rule.needs {
        Needs::Client => {}
        Needs::Reconfigure if client.grants.reconfigure => {}
        Needs::Reconfigure => {
            return Err(service.refuse(
                &client.name,
                method,
                ErrorCode::PermissionDenied,
                format!(
                    "{method}: client '{}' may not load images onto a card: its grants do not \
                     set `reconfigure`",
                    client.name
                ),
            ));
        }
    }
    Ok(client)
}

/// The tower layer that puts [`check`] in front of the node service.
#[derive(Clone)]
pub struct Authorize {
    service: Arc<NodeService>,
}

impl Authorize {
    /// The layer for `service`'s calls.
    pub fn new(service: &Arc<NodeService>) -> Self {
        Authorize {
            service: service.clone(),
        }
    }
}

impl<S> tower::Layer<S> for Authorize {
    type Service = Authorized<S>;

    fn layer(&self, inner: S) -> Authorized<S> {
        Authorized {
            inner,
            service: self.service.clone(),
        }
    }
}

/// The node service behind [`Authorize`].
#[derive(Clone)]
pub struct Authorized<S> {
    inner: S,
    service: Arc<NodeService>,
}

impl<S, B> tower::Service<http::Request<B>> for Authorized<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<http::Response<Body>, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let method = request
            .uri()
            .path()
            .strip_prefix(PREFIX)
            .unwrap_or(request.uri().path())
            .to_owned();
        match check(&self.service, request.extensions(), &method) {
            Ok(client) => {
                request.extensions_mut().insert(client);
                Box::pin(self.inner.call(request))
            }
            Err(refused) => Box::pin(std::future::ready(Ok(refused.into_http()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RPC names of `node.proto`, read from its text.
    fn proto_methods() -> Vec<String> {
        let proto = include_str!("../proto/accelhost/node/v1/node.proto");
        proto
            .lines()
            .filter_map(|line| line.trim().strip_prefix("rpc "))
            .map(|rest| rest.split('(').next().unwrap().trim().to_owned())
            .collect()
    }

    #[test]
    fn every_call_of_the_proto_has_one_row_in_its_order() {
        let methods = proto_methods();
        assert!(methods.len() > 20, "{methods:?}");
        let rows: Vec<&str> = RULES.iter().map(|r| r.method).collect();
        assert_eq!(rows, methods);
    }

    #[test]
    fn loading_an_image_needs_the_reconfigure_grant() {
        for method in ["Reconfigure", "CreateProgram"] {
            assert_eq!(rule_of(method).unwrap().needs, Needs::Reconfigure);
        }
        assert!(rule_of("Nonexistent").is_none());
    }
}

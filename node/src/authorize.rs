//! Who may make which call, in one table consulted before any handler runs. Every RPC of
//! `node.proto` has a row ([`Rule`]): the grant it needs beyond being a client of the node, and
//! what it charges to the client's grants. The rows are written once, as the `rule` option of
//! each call in `node.proto`, from which the build makes [`RULES`]; and [`Authorize`], a tower
//! layer in front of the node service, checks them: it identifies the caller from the
//! connection, refuses a caller the serve config does not name or whose grants lack the
//! call's, and only then lets the request through. A method without a row is refused
//! outright.
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
use crate::service::{Needs, NodeService, RULES, Rule};
use crate::status::status;

/// The gRPC path prefix of the node's calls.
const PREFIX: &str = "/accelhost.node.v1.Node/";

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

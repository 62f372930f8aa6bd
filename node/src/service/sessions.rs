//! A client's session: `Attach`, the stream that holds it open, and `Release`, which gives
//! back any object the session holds.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use accelhost::ErrorCode;
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::identity::Process;
use crate::proto;
use crate::session::{Object, Session, SessionCaps, Sessions, SessionsFull, no_object};
use crate::status::status;

use super::state::{NodeService, blocking, release_in_order};

pub(super) async fn attach(
    node: &NodeService,
    request: Request<proto::AttachRequest>,
    call: &'static str,
) -> Result<Response<SessionStream>, Status> {
    let client = node.client(&request, call)?;
    let (events, receiver) = mpsc::channel(1);
    let session = Arc::new(Session::new(
        client.clone(),
        Process::from_extensions(request.extensions()),
        node.sessions.account(&client.name),
        events.clone(),
        node.limits().max_streams_per_session,
    ));
    let id = session.id.clone();
    let limits = node.limits();
    let caps = SessionCaps {
        node: limits.max_sessions,
        client: limits.max_sessions_per_client,
    };
    node.sessions.insert(session, caps).map_err(|full| {
        let message = match full {
            SessionsFull::Node(open) => {
                format!("Attach: the node already has {open} sessions open (limits.max_sessions)")
            }
            SessionsFull::Client(open) => format!(
                "Attach: client '{}' already has {open} sessions open \
                 (limits.max_sessions_per_client)",
                client.name
            ),
        };
        node.refuse(&client.name, call, ErrorCode::NoSpace, message)
    })?;
    tracing::info!(
        session = %id,
        client = %client.name,
        label = %accelhost::text::inert(&request.get_ref().client_label),
        "session attached"
    );
    let attached = proto::SessionEvent {
        event: Some(proto::session_event::Event::Attached(proto::Attached {
            session: id.clone(),
            client: client.name.clone(),
            node: node.config().node_name.clone(),
            max_message_bytes: node.limits().max_message_bytes() as u64,
        })),
    };
    // The channel has room for this one event; the sender stays with the session.
    let _ = events.try_send(Ok(attached));
    Ok(Response::new(SessionStream {
        events: ReceiverStream::new(receiver),
        sessions: node.sessions.clone(),
        id,
    }))
}

/// The `Attach` stream: ends when the session does; dropping it (the client went) ends
/// the session.
pub struct SessionStream {
    events: ReceiverStream<Result<proto::SessionEvent, Status>>,
    sessions: Arc<Sessions>,
    id: String,
}

impl Stream for SessionStream {
    type Item = Result<proto::SessionEvent, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.events).poll_next(cx)
    }
}

impl Drop for SessionStream {
    fn drop(&mut self) {
        self.sessions.end(&self.id);
    }
}

pub(super) async fn release(
    node: &NodeService,
    request: Request<proto::ObjectRequest>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    match session.objects().get(req.object) {
        None => return Err(no_object(&session, "object", req.object, call)),
        Some(Object::Handle(_)) => {
            return Err(status(
                ErrorCode::InvalidArgument,
                format!("Release: {} is a handle: close it with Close", req.object),
            ));
        }
        Some(_) => {}
    }
    let taken = session.objects().take(req.object);
    blocking(move || release_in_order(taken)).await?;
    Ok(Response::new(proto::Empty {}))
}

/// The answer stream of `Attach`.
pub(super) type AttachStream = SessionStream;

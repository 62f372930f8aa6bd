//! The calls on events: register, status, wait, watch.

use accelhost::{ErrorCode, Event, EventKind, EventStatus};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::proto;
use crate::session::Object;
use crate::status::{from_host, status};

use super::state::{NodeService, blocking, wait_until};

pub(super) async fn register_event(
    node: &NodeService,
    request: Request<proto::RegisterEventRequest>,
    call: &'static str,
) -> Result<Response<proto::ObjectReply>, Status> {
    let req = request.get_ref().clone();
    let session = node.session(&request, &req.session, call)?;
    let handle = node.handle(&session, req.handle, call)?;
    let kind = match proto::EventKind::try_from(req.kind) {
        Ok(proto::EventKind::Interrupt) => EventKind::Interrupt,
        Ok(proto::EventKind::Error) => EventKind::Error,
        Ok(proto::EventKind::PowerThermal) => EventKind::PowerThermal,
        _ => {
            return Err(status(
                ErrorCode::InvalidArgument,
                "RegisterEvent: kind must be INTERRUPT, ERROR or POWER_THERMAL",
            ));
        }
    };
    node.room_for_object(&session, call)?;
    let event =
        blocking(move || handle.register_event(kind, req.vector).map_err(from_host)).await?;
    let number = session.objects().insert(Object::Event(req.handle, event));
    Ok(Response::new(proto::ObjectReply { object: number }))
}

pub(super) async fn event_status(
    node: &NodeService,
    request: Request<proto::ObjectRequest>,
    call: &'static str,
) -> Result<Response<proto::EventState>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let event = node.event(&session, req.object, call)?;
    Ok(Response::new(event_state(&event)))
}

pub(super) async fn event_wait(
    node: &NodeService,
    request: Request<proto::EventWaitRequest>,
    call: &'static str,
) -> Result<Response<proto::EventState>, Status> {
    let req = request.get_ref().clone();
    let session = node.session(&request, &req.session, call)?;
    let event = node.event(&session, req.event, call)?;
    let timeout = node.poll_timeout(req.timeout_ms, call)?;
    // Polled on a task, so a wait that times out leaves nothing behind on the event. A
    // failed or unfinished event is an answer here, not a failed call.
    wait_until(|| event.status() != EventStatus::Pending, Some(timeout)).await;
    Ok(Response::new(event_state(&event)))
}

pub(super) async fn watch_event(
    node: &NodeService,
    request: Request<proto::ObjectRequest>,
    call: &'static str,
) -> Result<Response<ReceiverStream<Result<proto::EventState, Status>>>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let event = node.event(&session, req.object, call)?;
    let permit = node.stream_permit(&session, call)?;
    // Two states at most, now and when it finishes: the channel holds both, so a client
    // that never reads the stream costs the node nothing more.
    let (sender, receiver) = mpsc::channel(2);
    let now = event_state(&event);
    let pending = now.phase == proto::EventPhase::Pending as i32;
    let _ = sender.try_send(Ok(now));
    if pending {
        // The permit goes when the event finishes or when the client drops the stream,
        // whichever is first: a watch nobody reads any more must not hold it.
        let (finished_tx, finished_rx) = tokio::sync::oneshot::channel::<()>();
        let watcher = sender.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = finished_rx => {}
                () = watcher.closed() => {}
            }
            drop(permit);
        });
        let finished = event.clone();
        event.on_finish(move || {
            let _ = sender.try_send(Ok(event_state(&finished)));
            let _ = finished_tx.send(());
        });
    }
    Ok(Response::new(ReceiverStream::new(receiver)))
}

/// A launch argument that owns what it names, for the blocking thread.
fn event_state(event: &Event) -> proto::EventState {
    let (phase, message) = match event.status() {
        EventStatus::Pending => (proto::EventPhase::Pending, String::new()),
        EventStatus::Complete => (proto::EventPhase::Complete, String::new()),
        EventStatus::Failed(why) => (proto::EventPhase::Failed, why),
    };
    proto::EventState {
        phase: phase as i32,
        message,
    }
}

/// The answer stream of `WatchEvent`.
pub(super) type WatchEventStream = ReceiverStream<Result<proto::EventState, Status>>;

//! The offload calls: programs, kernels, queues, copies and launches, streamed submission.

use accelhost::{ErrorCode, EventStatus};
use tonic::{Request, Response, Status, Streaming};

use crate::pipeline::Work;
use crate::proto;
use crate::session::{Object, no_object};
use crate::status::{from_host, status};

use super::state::{NodeService, blocking, wait_until};

pub(super) async fn create_program(
    node: &NodeService,
    request: Request<Streaming<proto::ProgramChunk>>,
    call: &'static str,
) -> Result<Response<proto::ObjectReply>, Status> {
    let client = node.client(&request, call)?;
    let mut chunks = request.into_inner();
    let (session, header, image) = node
        .receive_image(&client, &mut chunks, call, |c| (c.header, c.data))
        .await?;
    let handle = node.handle(&session, header.handle, call)?;
    node.room_for_object(&session, call)?;
    let program = blocking(move || handle.create_program(&image.image).map_err(from_host)).await?;
    let number = session
        .objects()
        .insert(Object::Program(header.handle, program));
    Ok(Response::new(proto::ObjectReply { object: number }))
}

pub(super) async fn builtin_program(
    node: &NodeService,
    request: Request<proto::ObjectRequest>,
    call: &'static str,
) -> Result<Response<proto::ObjectReply>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let handle = node.handle(&session, req.object, call)?;
    node.room_for_object(&session, call)?;
    let program = blocking(move || handle.builtin_program().map_err(from_host)).await?;
    let number = session
        .objects()
        .insert(Object::Program(req.object, program));
    Ok(Response::new(proto::ObjectReply { object: number }))
}

pub(super) async fn kernel(
    node: &NodeService,
    request: Request<proto::KernelRequest>,
    call: &'static str,
) -> Result<Response<proto::ObjectReply>, Status> {
    let req = request.get_ref().clone();
    let session = node.session(&request, &req.session, call)?;
    let found = match session.objects().get(req.program) {
        Some(Object::Program(owner, program)) => Some((*owner, program.clone())),
        _ => None,
    };
    let Some((owner, program)) = found else {
        return Err(no_object(&session, "program", req.program, call));
    };
    node.room_for_object(&session, call)?;
    let kernel = blocking(move || program.kernel(&req.name).map_err(from_host)).await?;
    let number = session.objects().insert(Object::Kernel(owner, kernel));
    Ok(Response::new(proto::ObjectReply { object: number }))
}

pub(super) async fn create_queue(
    node: &NodeService,
    request: Request<proto::ObjectRequest>,
    call: &'static str,
) -> Result<Response<proto::ObjectReply>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let handle = node.handle(&session, req.object, call)?;
    node.room_for_object(&session, call)?;
    let queue = blocking(move || handle.create_queue().map_err(from_host)).await?;
    let number = session.objects().insert(Object::Queue(req.object, queue));
    Ok(Response::new(proto::ObjectReply { object: number }))
}

pub(super) async fn enqueue_memcpy(
    node: &NodeService,
    request: Request<proto::MemcpyRequest>,
    call: &'static str,
) -> Result<Response<proto::ObjectReply>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let (owner, work) = Work::memcpy(&session, req, call)?;
    node.enqueue(&session, owner, work, call).await
}

pub(super) async fn enqueue_launch(
    node: &NodeService,
    request: Request<proto::LaunchRequest>,
    call: &'static str,
) -> Result<Response<proto::ObjectReply>, Status> {
    let session = node.session(&request, &request.get_ref().session, call)?;
    let (owner, work) = Work::launch(&session, request.into_inner(), call)?;
    node.enqueue(&session, owner, work, call).await
}

pub(super) async fn submit(
    node: &NodeService,
    request: Request<Streaming<proto::SubmitRequest>>,
    call: &'static str,
) -> Result<Response<crate::pipeline::Replies>, Status> {
    let client = node.client(&request, call)?;
    let mut inbound = request.into_inner();
    let Some(first) = inbound.message().await? else {
        return Err(status(
            ErrorCode::InvalidArgument,
            "Submit: the stream ended before its first message",
        ));
    };
    let session = node.session_of(&client, &first.session, call)?;
    let permit = node.stream_permit(&session, call)?;
    Ok(Response::new(crate::pipeline::serve(
        session, first, inbound, permit,
    )))
}

pub(super) async fn queue_finish(
    node: &NodeService,
    request: Request<proto::ObjectRequest>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let (_, queue) = node.queue(&session, req.object, call)?;
    // Waited on a task, as polls are (ended if the client goes); then `finish` only
    // collects what finished.
    for event in queue.pending_events() {
        wait_until(|| event.status() != EventStatus::Pending, None).await;
    }
    blocking(move || queue.finish().map_err(from_host)).await?;
    Ok(Response::new(proto::Empty {}))
}

/// The answer stream of `Submit`.
pub(super) type SubmitStream = crate::pipeline::Replies;

pub(super) async fn open_ring(
    node: &NodeService,
    request: Request<proto::OpenRingRequest>,
    call: &'static str,
) -> Result<Response<proto::RingReply>, Status> {
    use crate::ring::{RING_BYTES, RingMemory};
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let stream = node.stream_permit(&session, call)?;
    let charge = node.room_for_memory(&session, RING_BYTES, call)?;
    let memory = RingMemory::create()
        .map(std::sync::Arc::new)
        .map_err(|err| status(ErrorCode::OutOfMemory, format!("{call}: {err}")))?;
    let ring = crate::doorbell::serve(std::sync::Arc::downgrade(&session), memory.clone(), stream)
        .map_err(|err| status(ErrorCode::OutOfMemory, format!("{call}: {err}")))?;
    let shared = memory
        .share()
        .map_err(|err| status(ErrorCode::OutOfMemory, format!("{call}: {err}")))?;
    let mut objects = session.objects();
    let number = objects.insert_charged(Object::Ring(std::sync::Arc::new(ring)), charge);
    let offered = node.offer_memory(&request, &session, &mut objects, number, || {
        Ok(Some(shared))
    });
    let Some(offered) = offered else {
        drop(objects.take(number));
        return Err(status(
            ErrorCode::Unsupported,
            format!(
                "{call}: a ring is offered only to a client on the node's Unix socket whose process the node knows"
            ),
        ));
    };
    Ok(Response::new(proto::RingReply {
        ring: number,
        memory: Some(offered),
    }))
}

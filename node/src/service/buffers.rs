//! The calls on DMA buffers and memory: prepare, write, read, fill, poll, sync, allocate,
//! release.

use std::sync::Arc;

use accelhost::{ErrorCode, MemoryKind};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::data::{Data, Mirrored, Shadow};
use crate::proto;
use crate::session::Object;
use crate::status::{from_host, status};

use super::state::{NodeService, blocking, poll_word};

pub(super) async fn prepare_buffer(
    node: &NodeService,
    request: Request<proto::PrepareBufferRequest>,
    call: &'static str,
) -> Result<Response<proto::Buffer>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let handle = node.handle(&session, req.handle, call)?;
    let charge = node.room_for_memory(&session, req.size, call)?;
    let (size, read_only) = (req.size, req.read_only);
    let buffer = blocking(move || {
        if read_only {
            handle.prepare_read_only_buffer(size)
        } else {
            handle.prepare_buffer(size)
        }
        .map_err(from_host)
    })
    .await?;
    let (size, iova) = (buffer.size(), buffer.iova());
    let buffer = Arc::new(buffer);
    let mut objects = session.objects();
    let number = objects.insert_charged(Object::Buffer(req.handle, buffer.clone()), charge);
    let shared = (req.share_memory)
        .then(|| node.offer_memory(&request, &session, &mut objects, number, || buffer.share()))
        .flatten();
    Ok(Response::new(proto::Buffer {
        buffer: number,
        size,
        iova,
        shared,
    }))
}

pub(super) async fn buffer_write(
    node: &NodeService,
    request: Request<Streaming<proto::BufferWriteChunk>>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let client = node.client(&request, call)?;
    let mut chunks = request.into_inner();
    let mut current: Option<(String, u64, Data)> = None;
    while let Some(chunk) = chunks.message().await? {
        let target = match &current {
            Some((session, number, target))
                if *session == chunk.session && *number == chunk.object =>
            {
                target.clone()
            }
            _ => {
                let session = node.session_of(&client, &chunk.session, call)?;
                let target = node.data(&session, chunk.object, call)?;
                current = Some((chunk.session.clone(), chunk.object, target.clone()));
                target
            }
        };
        target.write(chunk.offset, &chunk.data).map_err(from_host)?;
        node.metrics
            .transferred(&client.name, true, chunk.data.len() as u64);
    }
    Ok(Response::new(proto::Empty {}))
}

pub(super) async fn buffer_read(
    node: &NodeService,
    request: Request<proto::BufferReadRequest>,
    call: &'static str,
) -> Result<Response<DataStream>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let target = node.data(&session, req.object, call)?;
    let end = req
        .offset
        .checked_add(req.length)
        .filter(|end| *end <= target.size())
        .ok_or_else(|| {
            status(
                ErrorCode::InvalidArgument,
                format!(
                    "BufferRead: {} bytes at {:#x} pass the end of the {}-byte {}",
                    req.length,
                    req.offset,
                    target.size(),
                    target.kind()
                ),
            )
        })?;
    // Room for the protobuf framing within the message limit, and at most 1 MiB: what an
    // unread stream holds on the node is a few chunks.
    let most = (node.limits().max_message_bytes() as u64 - 64).min(READ_CHUNK_BYTES);
    let chunk = match req.chunk_bytes {
        0 => most,
        n => n.min(most),
    };
    let permit = node.stream_permit(&session, call)?;
    let (metrics, client) = (node.metrics.clone(), session.client.name.clone());
    // One chunk queued and one being read: a client that reads slowly holds at most
    // that, plus what the transport buffers, on the node.
    let (sender, receiver) = mpsc::channel(1);
    let start = req.offset;
    tokio::spawn(async move {
        let _permit = permit;
        let mut at = start;
        while at < end {
            let len = chunk.min(end - at) as usize;
            let mut data = vec![0u8; len];
            // A copy out of host memory: no plugin call, nothing that waits.
            let item = target
                .read(at, &mut data)
                .map(|()| proto::Data { data: data.into() })
                .map_err(from_host);
            let failed = item.is_err();
            if sender.send(item).await.is_err() || failed {
                return;
            }
            metrics.transferred(&client, false, len as u64);
            at += len as u64;
        }
    });
    Ok(Response::new(ReceiverStream::new(receiver)))
}

pub(super) async fn buffer_fill(
    node: &NodeService,
    request: Request<proto::BufferFillRequest>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let buffer = node.buffer(&session, req.object, call)?;
    let byte = u8::try_from(req.byte).map_err(|_| {
        status(
            ErrorCode::InvalidArgument,
            format!("BufferFill: byte {} does not fit 8 bits", req.byte),
        )
    })?;
    buffer
        .fill(req.offset, req.length, byte)
        .map_err(from_host)?;
    Ok(Response::new(proto::Empty {}))
}

pub(super) async fn buffer_poll(
    node: &NodeService,
    request: Request<proto::PollRequest>,
    call: &'static str,
) -> Result<Response<proto::Value>, Status> {
    let req = request.get_ref().clone();
    let session = node.session(&request, &req.session, call)?;
    let target = node.data(&session, req.object, call)?;
    let timeout = node.poll_timeout(req.timeout_ms, call)?;
    let value = poll_word(
        || target.read_u64(req.offset),
        (req.mask, req.expected),
        timeout,
        || format!("BufferPoll: word {:#x}", req.offset),
    )
    .await?;
    Ok(Response::new(proto::Value { value }))
}

pub(super) async fn buffer_sync(
    node: &NodeService,
    request: Request<proto::BufferSyncRequest>,
    call: &'static str,
) -> Result<Response<proto::BufferSyncReply>, Status> {
    let id = request.get_ref().session.clone();
    let session = node.session(&request, &id, call)?;
    let req = request.into_inner();
    let mut mirrored: Vec<Mirrored> = Vec::with_capacity(req.objects.len());
    let put_back = |mirrored: Vec<Mirrored>| {
        let mut objects = session.objects();
        for m in mirrored {
            objects.put_shadow(m.object, m.shadow);
        }
    };
    for &object in &req.objects {
        if mirrored.iter().any(|m| m.object == object) {
            continue;
        }
        let found = node.data(&session, object, call).and_then(|data| {
            let kept = session.objects().take_shadow(object);
            let shadow = match kept {
                Some(shadow) => shadow,
                None => Shadow::new(data.size(), node.reserve_dma(&session, data.size(), call)?),
            };
            Ok(Mirrored {
                object,
                data,
                shadow,
            })
        });
        match found {
            Ok(m) => mirrored.push(m),
            Err(err) => {
                put_back(mirrored);
                return Err(err);
            }
        }
    }
    let budget = node
        .limits()
        .max_message_bytes()
        .saturating_sub(4096)
        .max(4096);
    let (client, pushed) = (
        session.client.name.clone(),
        req.pushes.iter().map(|p| p.data.len() as u64).sum::<u64>(),
    );
    let (mirrored, answer) = tokio::task::spawn_blocking(move || {
        let answer = crate::data::sync(&mut mirrored, req.pushes, budget);
        (mirrored, answer)
    })
    .await
    .map_err(|err| status(ErrorCode::Internal, format!("BufferSync panicked: {err}")))?;
    put_back(mirrored);
    let reply = answer?;
    node.metrics.transferred(&client, true, pushed);
    let pulled = reply.pulls.iter().map(|p| p.data.len() as u64).sum::<u64>();
    node.metrics.transferred(&client, false, pulled);
    Ok(Response::new(reply))
}

pub(super) async fn alloc(
    node: &NodeService,
    request: Request<proto::AllocRequest>,
    call: &'static str,
) -> Result<Response<proto::MemoryReply>, Status> {
    let req = request.get_ref().clone();
    let session = node.session(&request, &req.session, call)?;
    let handle = node.handle(&session, req.handle, call)?;
    let charge = node.room_for_memory(&session, req.size, call)?;
    let kind = match proto::MemoryKind::try_from(req.kind) {
        Ok(proto::MemoryKind::Host) => MemoryKind::Host,
        Ok(proto::MemoryKind::Device) => MemoryKind::Device,
        Ok(proto::MemoryKind::Shared) => MemoryKind::Shared,
        _ => {
            return Err(status(
                ErrorCode::InvalidArgument,
                "Alloc: kind must be HOST, DEVICE or SHARED",
            ));
        }
    };
    let memory = blocking(move || {
        match req.bank {
            Some(bank) => handle.alloc_in_bank(kind, req.size, bank),
            None => handle.alloc(kind, req.size),
        }
        .map_err(from_host)
    })
    .await?;
    let (size, device_address) = (memory.size(), memory.device_address());
    let mut objects = session.objects();
    let number = objects.insert_charged(Object::Memory(req.handle, memory.clone()), charge);
    let shared = (req.share_memory)
        .then(|| node.offer_memory(&request, &session, &mut objects, number, || memory.share()))
        .flatten();
    Ok(Response::new(proto::MemoryReply {
        memory: number,
        size,
        device_address,
        shared,
    }))
}

/// The largest chunk `BufferRead` sends.
pub(super) const READ_CHUNK_BYTES: u64 = 1 << 20;

pub(super) type DataStream = ReceiverStream<Result<proto::Data, Status>>;

/// The answer stream of `BufferRead`.
pub(super) type BufferReadStream = DataStream;

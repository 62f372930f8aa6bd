//! The calls on register regions: map, read, write, write in batches, poll.

use accelhost::ErrorCode;
use tonic::{Request, Response, Status};

use crate::proto;
use crate::session::Object;
use crate::status::{from_host, status};

use super::state::{NodeService, blocking, poll_word};

pub(super) async fn map_mmio(
    node: &NodeService,
    request: Request<proto::MapMmioRequest>,
    call: &'static str,
) -> Result<Response<proto::MmioRegion>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let handle = node.handle(&session, req.handle, call)?;
    node.room_for_object(&session, call)?;
    let index = req.index;
    let region = blocking(move || handle.map_mmio(index).map_err(from_host)).await?;
    let size = region.size();
    let number = session.objects().insert(Object::Region(req.handle, region));
    Ok(Response::new(proto::MmioRegion {
        region: number,
        size,
    }))
}

pub(super) async fn mmio_read(
    node: &NodeService,
    request: Request<proto::MmioReadRequest>,
    call: &'static str,
) -> Result<Response<proto::Value>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let region = node.region(&session, req.region, call)?;
    let value = match width_of(req.width, &call)? {
        proto::Width::Width32 => region.read32(req.offset).map(u64::from),
        _ => region.read64(req.offset),
    }
    .map_err(from_host)?;
    Ok(Response::new(proto::Value { value }))
}

pub(super) async fn mmio_write(
    node: &NodeService,
    request: Request<proto::MmioWriteRequest>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let region = node.region(&session, req.region, call)?;
    let width = width_of(req.width, &call)?;
    write_word(&region, req.offset, width, req.value, &call)?;
    Ok(Response::new(proto::Empty {}))
}

pub(super) async fn mmio_write_batch(
    node: &NodeService,
    request: Request<proto::MmioWriteBatchRequest>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let region = node.region(&session, req.region, call)?;
    for (i, write) in req.writes.iter().enumerate() {
        let call = format_args!("MmioWriteBatch: writes[{i}]");
        let width = width_of(write.width, &call)?;
        write_word(&region, write.offset, width, write.value, &call)?;
    }
    Ok(Response::new(proto::Empty {}))
}

pub(super) async fn mmio_poll(
    node: &NodeService,
    request: Request<proto::PollRequest>,
    call: &'static str,
) -> Result<Response<proto::Value>, Status> {
    let req = request.get_ref().clone();
    let session = node.session(&request, &req.session, call)?;
    let region = node.region(&session, req.object, call)?;
    let timeout = node.poll_timeout(req.timeout_ms, call)?;
    let value = poll_word(
        || region.read64(req.offset),
        (req.mask, req.expected),
        timeout,
        || format!("MmioPoll: register {:#x}", req.offset),
    )
    .await?;
    Ok(Response::new(proto::Value { value }))
}

/// `call` names the call in errors; it is formatted only when there is one.
fn width_of(width: i32, call: &dyn std::fmt::Display) -> Result<proto::Width, Status> {
    match proto::Width::try_from(width) {
        Ok(proto::Width::Width32) => Ok(proto::Width::Width32),
        Ok(proto::Width::Width64) => Ok(proto::Width::Width64),
        _ => Err(status(
            ErrorCode::InvalidArgument,
            format!("{call}: width must be WIDTH_32 or WIDTH_64"),
        )),
    }
}

fn write_word(
    region: &accelhost::MmioRegion,
    offset: u64,
    width: proto::Width,
    value: u64,
    call: &dyn std::fmt::Display,
) -> Result<(), Status> {
    match width {
        proto::Width::Width32 => {
            let value = u32::try_from(value).map_err(|_| {
                status(
                    ErrorCode::InvalidArgument,
                    format!("{call}: value {value:#x} does not fit a 32-bit write"),
                )
            })?;
            region.write32(offset, value)
        }
        _ => region.write64(offset, value),
    }
    .map_err(|err| status(err.code(), format!("{call}: {err}")))
}

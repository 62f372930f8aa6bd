//! The calls on devices: enumerate, describe, open, close, reset, reconfigure.

use std::collections::HashMap;

use accelhost::{ErrorCode, Filter, Guid, ObjectType, OpenMode, Token};
use tonic::{Request, Response, Status, Streaming};

use crate::proto;
use crate::session::Object;
use crate::status::{from_host, status};

use super::state::{NodeService, blocking, release_in_order};

pub(super) async fn enumerate(
    node: &NodeService,
    request: Request<proto::EnumerateRequest>,
    call: &'static str,
) -> Result<Response<proto::EnumerateReply>, Status> {
    let session = node.session(&request, &request.get_ref().session, call)?;
    let filters = request
        .get_ref()
        .filters
        .iter()
        .map(filter_of)
        .collect::<Result<Vec<_>, _>>()?;
    let tokens = node.devices().await?;
    let visible: Vec<(String, Token)> = tokens
        .into_iter()
        .filter(|token| filters.is_empty() || filters.iter().any(|f| f.matches(token.properties())))
        .map(|token| (token.id(), token))
        .filter(|(id, _)| session.client.grants.allows_device(id))
        .collect();
    let devices: Vec<proto::Device> = visible
        .iter()
        .map(|(_, token)| device_of(token, token.properties()))
        .collect();
    session.objects().devices = visible.into_iter().collect();
    let budget = node
        .limits()
        .max_message_bytes()
        .saturating_sub(ENUMERATE_RESERVE);
    let (devices, omitted) = fair_share(devices, budget);
    if !omitted.is_empty() {
        tracing::warn!(
            client = %session.client.name,
            omitted = ?omitted.iter().map(|o| (&o.plugin, o.devices)).collect::<Vec<_>>(),
            "Enumerate: devices left out to keep the answer within limits.max_message_kib"
        );
    }
    Ok(Response::new(proto::EnumerateReply { devices, omitted }))
}

pub(super) async fn describe(
    node: &NodeService,
    request: Request<proto::DeviceRequest>,
    call: &'static str,
) -> Result<Response<proto::Device>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let token = node.enumerated(&session, &req.device, call)?;
    let properties = blocking({
        let token = token.clone();
        move || token.refresh().map_err(from_host)
    })
    .await?;
    Ok(Response::new(device_of(&token, &properties)))
}

pub(super) async fn open(
    node: &NodeService,
    request: Request<proto::OpenRequest>,
    call: &'static str,
) -> Result<Response<proto::ObjectReply>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let token = node.enumerated(&session, &req.device, call)?;
    node.room_for_object(&session, call)?;
    let mode = if req.shared {
        OpenMode::Shared
    } else {
        OpenMode::Exclusive
    };
    let host = node.host.clone();
    let handle = blocking(move || host.open(&token, mode).map_err(from_host)).await?;
    node.devices_changed();
    let number = session.objects().insert(Object::Handle(handle));
    Ok(Response::new(proto::ObjectReply { object: number }))
}

pub(super) async fn close(
    node: &NodeService,
    request: Request<proto::ObjectRequest>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    node.handle(&session, req.object, call)?;
    let taken = session.objects().take(req.object);
    blocking(move || release_in_order(taken)).await?;
    node.devices_changed();
    Ok(Response::new(proto::Empty {}))
}

pub(super) async fn reset(
    node: &NodeService,
    request: Request<proto::ObjectRequest>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let req = request.get_ref();
    let session = node.session(&request, &req.session, call)?;
    let handle = node.handle(&session, req.object, call)?;
    blocking(move || handle.reset().map_err(from_host)).await?;
    node.devices_changed();
    Ok(Response::new(proto::Empty {}))
}

pub(super) async fn reconfigure(
    node: &NodeService,
    request: Request<Streaming<proto::ReconfigureChunk>>,
    call: &'static str,
) -> Result<Response<proto::Empty>, Status> {
    let client = node.client(&request, call)?;
    let mut chunks = request.into_inner();
    let (session, header, image) = node
        .receive_image(&client, &mut chunks, call, |c| (c.header, c.data))
        .await?;
    let handle = node.handle(&session, header.handle, call)?;
    let slot = header.slot;
    blocking(move || handle.reconfigure(slot, &image.image).map_err(from_host)).await?;
    node.devices_changed();
    Ok(Response::new(proto::Empty {}))
}

fn filter_of(proto: &proto::Filter) -> Result<Filter, Status> {
    let mut filter = Filter::new();
    match proto::ObjectType::try_from(proto.object_type) {
        Ok(proto::ObjectType::Device) => filter = filter.object_type(ObjectType::Device),
        Ok(proto::ObjectType::Accelerator) => filter = filter.object_type(ObjectType::Accelerator),
        Ok(proto::ObjectType::Unspecified) => {}
        Err(_) => {
            return Err(status(
                ErrorCode::InvalidArgument,
                format!(
                    "Enumerate: object_type {} is not a known kind",
                    proto.object_type
                ),
            ));
        }
    }
    if let Some(guid) = &proto.guid {
        let guid: Guid = guid.parse().map_err(|err| {
            status(
                ErrorCode::InvalidArgument,
                format!("Enumerate: guid '{guid}': {err}"),
            )
        })?;
        filter = filter.guid(guid);
    }
    let id16 = |value: u32, field: &str| {
        u16::try_from(value).map_err(|_| {
            status(
                ErrorCode::InvalidArgument,
                format!("Enumerate: {field} {value:#x} does not fit 16 bits"),
            )
        })
    };
    if let Some(vendor) = proto.vendor_id {
        filter = filter.vendor_id(id16(vendor, "vendor_id")?);
    }
    if let Some(device) = proto.device_id {
        filter = filter.device_id(id16(device, "device_id")?);
    }
    if let Some(address) = &proto.bus_address {
        let address = address.parse().map_err(|err| {
            status(
                ErrorCode::InvalidArgument,
                format!("Enumerate: bus_address '{address}': {err}"),
            )
        })?;
        filter = filter.bus_address(address);
    }
    if let Some(device_type) = &proto.device_type {
        filter = filter.device_type(device_type.clone());
    }
    Ok(filter)
}

/// What an `Enumerate` answer keeps free of devices within the message limit: the answer's
/// own framing and its list of what was left out.
const ENUMERATE_RESERVE: usize = 64 << 10;

/// The devices that fit `budget` bytes of an answer, each plugin getting an equal share and
/// what a plugin does not use going to the others (a plugin's devices are kept in order
/// while its share lasts); and, per plugin, how many were left out.
fn fair_share(
    devices: Vec<proto::Device>,
    budget: usize,
) -> (Vec<proto::Device>, Vec<proto::Omitted>) {
    use prost::Message;
    // What each device takes in the answer (its message, its tag and its length), and the
    // index of its plugin: both found once.
    let costs: Vec<usize> = devices
        .iter()
        .map(|device| {
            let len = device.encoded_len();
            len + 1 + prost::encoding::encoded_len_varint(len as u64)
        })
        .collect();
    if costs.iter().sum::<usize>() <= budget {
        return (devices, Vec::new());
    }
    let mut index_of: HashMap<&str, usize> = HashMap::new();
    let mut wants: Vec<usize> = Vec::new();
    let plugin_of: Vec<usize> = devices
        .iter()
        .zip(&costs)
        .map(|(device, &cost)| {
            let next = index_of.len();
            let i = *index_of.entry(device.plugin.as_str()).or_insert(next);
            if i == wants.len() {
                wants.push(0);
            }
            wants[i] += cost;
            i
        })
        .collect();
    // Water-filling: the smallest wants first, each taking at most an equal part of what
    // is left.
    let mut by_want: Vec<usize> = (0..wants.len()).collect();
    by_want.sort_by_key(|&i| wants[i]);
    let mut shares = vec![0usize; wants.len()];
    let mut left = budget;
    for (served, &i) in by_want.iter().enumerate() {
        shares[i] = wants[i].min(left / (wants.len() - served));
        left -= shares[i];
    }
    let mut used = vec![0usize; wants.len()];
    let mut omitted_at: Vec<Option<usize>> = vec![None; wants.len()];
    let mut omitted: Vec<proto::Omitted> = Vec::new();
    let mut kept = Vec::with_capacity(devices.len());
    for ((device, cost), i) in devices.into_iter().zip(costs).zip(plugin_of) {
        if used[i] + cost <= shares[i] {
            used[i] += cost;
            kept.push(device);
        } else if let Some(at) = omitted_at[i] {
            omitted[at].devices += 1;
        } else {
            omitted_at[i] = Some(omitted.len());
            omitted.push(proto::Omitted {
                plugin: device.plugin,
                devices: 1,
            });
        }
    }
    (kept, omitted)
}

/// The wire form of a device.
pub fn device_of(token: &Token, properties: &accelhost::Properties) -> proto::Device {
    proto::Device {
        id: token.id(),
        plugin: token.plugin().to_owned(),
        object_type: match properties.object_type {
            ObjectType::Device => proto::ObjectType::Device,
            ObjectType::Accelerator => proto::ObjectType::Accelerator,
        } as i32,
        name: properties.name.to_string(),
        guid: properties.guid.to_string(),
        vendor_id: properties.vendor_id.into(),
        device_id: properties.device_id.into(),
        bus_address: properties.bus_address.map(|a| a.to_string()),
        socket_id: properties.socket_id,
        device_type: properties.device_type.to_string(),
        host: properties.host.to_string(),
        num_mmio: properties.num_mmio,
        num_interrupts: properties.num_interrupts,
        accelerator_state: match properties.accelerator_state {
            None => proto::AcceleratorState::Unspecified,
            Some(accelhost::AcceleratorState::Unassigned) => proto::AcceleratorState::Unassigned,
            Some(accelhost::AcceleratorState::Assigned) => proto::AcceleratorState::Assigned,
        } as i32,
        parent: properties.parent,
        extras: properties
            .extras
            .iter()
            .map(|(key, value)| proto::Extra {
                key: key.to_string(),
                value: value.to_string(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(plugin: &str, n: usize, extra_bytes: usize) -> proto::Device {
        proto::Device {
            id: format!("{plugin}/d{n}"),
            plugin: plugin.into(),
            extras: vec![proto::Extra {
                key: "blob".into(),
                value: "x".repeat(extra_bytes),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_plugin_with_large_properties_cannot_crowd_out_the_others() {
        let mut devices: Vec<proto::Device> = (0..100).map(|n| device("big", n, 10_000)).collect();
        devices.extend((0..3).map(|n| device("dfl", n, 10)));
        devices.extend((0..2).map(|n| device("xocl", n, 10)));
        let (kept, omitted) = fair_share(devices, 64 << 10);
        let of = |plugin: &str| kept.iter().filter(|d| d.plugin == plugin).count();
        assert_eq!(
            (of("dfl"), of("xocl")),
            (3, 2),
            "the small plugins are whole"
        );
        assert_eq!(of("big"), 6, "the big plugin takes what is left");
        assert_eq!(
            omitted,
            vec![proto::Omitted {
                plugin: "big".into(),
                devices: 94
            }]
        );
        use prost::Message;
        let answer = proto::EnumerateReply {
            devices: kept,
            omitted,
        };
        assert!(answer.encoded_len() <= 64 << 10);
    }

    #[test]
    fn an_answer_that_fits_is_whole_and_in_order() {
        let devices: Vec<proto::Device> = (0..5)
            .map(|n| device(if n % 2 == 0 { "a" } else { "b" }, n, 100))
            .collect();
        let (kept, omitted) = fair_share(devices.clone(), 1 << 20);
        assert_eq!(kept, devices);
        assert!(omitted.is_empty());
        let (kept, omitted) = fair_share(Vec::new(), 0);
        assert!(kept.is_empty() && omitted.is_empty());
    }
}

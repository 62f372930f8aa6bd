//! Properties with the defaults most devices share, and the `enumerate` answer for a fixed list
//! of devices: what a small plugin needs so that it states only its own device.

use crate::filter::filters_match;
use crate::types::{Discovered, Filter, Guid, ObjectType, Properties};

impl Guid {
    /// The GUID whose upper 64 bits are `high` and lower 64 bits `low`.
    pub const fn new(high: u64, low: u64) -> Self {
        Guid { high, low }
    }
}

impl Properties {
    /// An accelerator (what applications open) named `name` with the interface `guid`: an
    /// `fpga` on this machine with no ids, bus address, MMIO regions, interrupts, state or
    /// parent; set the fields the device has.
    pub fn accelerator(name: impl Into<String>, guid: Guid) -> Self {
        Properties {
            object_type: ObjectType::Accelerator,
            name: name.into(),
            guid,
            vendor_id: 0,
            device_id: 0,
            bus_address: None,
            socket_id: None,
            device_type: "fpga".to_string(),
            host: "localhost".to_string(),
            num_mmio: 0,
            num_interrupts: 0,
            accelerator_state: None,
            parent: None,
            extras: Vec::new(),
        }
    }

    /// A card's device object: named `name`, with no MMIO, interrupts, state or parent, on
    /// this machine; the caller fills in what the card reports.
    pub fn device_object(name: String, device_type: &str, extras: Vec<(String, String)>) -> Self {
        Properties {
            object_type: ObjectType::Device,
            device_type: device_type.to_string(),
            extras,
            ..Properties::accelerator(name, Guid { high: 0, low: 0 })
        }
    }
}

/// What `enumerate` answers for a plugin with a fixed list of devices: those of `devices` that
/// match `filters`, each with its index in `devices` as its token.
pub fn discover(
    filters: &[Filter],
    devices: impl IntoIterator<Item = Properties>,
) -> Vec<Discovered> {
    devices
        .into_iter()
        .zip(0u64..)
        .filter(|(properties, _)| filters_match(filters, properties))
        .map(|(properties, token)| Discovered { token, properties })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guid(low: u64) -> Guid {
        Guid { high: 0, low }
    }

    fn by_guid(low: u64) -> Filter {
        Filter {
            guid: Some(guid(low)),
            ..crate::filter::tests::empty()
        }
    }

    #[test]
    fn discover_keeps_the_index_of_each_matching_device_as_its_token() {
        let devices = || {
            [
                Properties::accelerator("a", guid(1)),
                Properties::accelerator("b", guid(2)),
            ]
        };
        let all = discover(&[], devices());
        assert_eq!(all.iter().map(|d| d.token).collect::<Vec<_>>(), vec![0, 1]);
        let second = discover(&[by_guid(2)], devices());
        assert_eq!(second.len(), 1);
        assert_eq!(
            (second[0].token, second[0].properties.name.as_str()),
            (1, "b")
        );
        assert!(discover(&[by_guid(3)], devices()).is_empty());
    }

    #[test]
    fn an_accelerator_is_a_local_fpga_and_a_device_object_is_not_an_accelerator() {
        let accelerator = Properties::accelerator("a", guid(1));
        assert_eq!(accelerator.object_type, ObjectType::Accelerator);
        assert_eq!(
            (accelerator.device_type.as_str(), accelerator.host.as_str()),
            ("fpga", "localhost")
        );
        let device = Properties::device_object("d".into(), "gpu", vec![("k".into(), "v".into())]);
        assert_eq!(device.object_type, ObjectType::Device);
        assert_eq!(device.guid.low, 0);
        assert_eq!(
            (device.device_type.as_str(), device.extras.len()),
            ("gpu", 1)
        );
    }
}

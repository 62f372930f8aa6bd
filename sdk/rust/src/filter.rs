//! The filter semantics every plugin and the host share.

use crate::types::{BusAddress, Filter, Guid, ObjectType, Properties};

/// Does a device on `device_host` match the host filter `filter`?
///
/// `*` matches every host, `localhost` matches devices on this machine, `^localhost` matches
/// devices on any other machine, and any other text must equal the device's host.
pub fn host_matches(filter: &str, device_host: &str) -> bool {
    match filter {
        "*" => true,
        "localhost" => device_host == "localhost",
        "^localhost" => device_host != "localhost",
        name => name == device_host,
    }
}

/// Does a device with `properties` match `filter`? Every field the filter sets must match.
pub fn filter_matches(filter: &Filter, properties: &Properties) -> bool {
    filter
        .object_type
        .is_none_or(|t| t == properties.object_type)
        && filter.guid.is_none_or(|g| same_guid(g, properties.guid))
        && filter.vendor_id.is_none_or(|v| v == properties.vendor_id)
        && filter.device_id.is_none_or(|d| d == properties.device_id)
        && filter
            .bus_address
            .is_none_or(|b| properties.bus_address.is_some_and(|p| same_bus(b, p)))
        && filter
            .device_type
            .as_deref()
            .is_none_or(|t| t == properties.device_type)
        && filter
            .host
            .as_deref()
            .is_none_or(|h| host_matches(h, &properties.host))
}

/// Does a device with `properties` match `filters`? No filter matches everything; otherwise
/// any one filter must match (as `enumerate` receives them).
pub fn filters_match(filters: &[Filter], properties: &Properties) -> bool {
    filters.is_empty() || filters.iter().any(|f| filter_matches(f, properties))
}

/// Does any of `filters` ask for device objects (OPAE's `FPGA_DEVICE`)? The shipped plugins
/// list their cards' device objects only then: a filter that names no object type asks for
/// what can be opened, as the C API and `accelhost info` expect.
pub fn wants_device_objects(filters: &[Filter]) -> bool {
    filters
        .iter()
        .any(|f| f.object_type == Some(ObjectType::Device))
}

fn same_guid(a: Guid, b: Guid) -> bool {
    a.high == b.high && a.low == b.low
}

fn same_bus(a: BusAddress, b: BusAddress) -> bool {
    (a.segment, a.bus, a.device, a.function) == (b.segment, b.bus, b.device, b.function)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::types::ObjectType;

    fn properties() -> Properties {
        Properties {
            object_type: ObjectType::Accelerator,
            name: "p".into(),
            guid: Guid { high: 1, low: 2 },
            vendor_id: 0x8086,
            device_id: 1,
            bus_address: None,
            socket_id: None,
            device_type: "fpga".into(),
            host: "localhost".into(),
            num_mmio: 1,
            num_interrupts: 0,
            accelerator_state: None,
            parent: None,
            extras: vec![],
        }
    }

    /// A filter that sets no field.
    pub(crate) fn empty() -> Filter {
        Filter {
            object_type: None,
            guid: None,
            vendor_id: None,
            device_id: None,
            bus_address: None,
            device_type: None,
            host: None,
        }
    }

    #[test]
    fn every_set_field_must_match() {
        let p = properties();
        assert!(filter_matches(&empty(), &p));
        let by_guid = Filter {
            guid: Some(Guid { high: 1, low: 2 }),
            ..empty()
        };
        assert!(filter_matches(&by_guid, &p));
        let other_guid = Filter {
            guid: Some(Guid { high: 1, low: 3 }),
            ..empty()
        };
        assert!(!filter_matches(&other_guid, &p));
        let by_bus = Filter {
            bus_address: Some(BusAddress {
                segment: 0,
                bus: 1,
                device: 0,
                function: 0,
            }),
            ..empty()
        };
        assert!(
            !filter_matches(&by_bus, &p),
            "no bus address never matches one"
        );
    }

    #[test]
    fn host_keywords() {
        assert!(host_matches("*", "far"));
        assert!(host_matches("localhost", "localhost"));
        assert!(!host_matches("^localhost", "localhost"));
        assert!(host_matches("^localhost", "far"));
        assert!(!host_matches("near", "far"));
    }
}

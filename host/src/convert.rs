//! The host's identifiers and their WIT twins in the generated bindings, converted in one
//! place for the imports and the runtime alike.

use crate::bindings::accel::plugin::types as wit;
use crate::properties::{AcceleratorState, ObjectType};
use crate::types::{BusAddress, Guid};

impl From<ObjectType> for wit::ObjectType {
    fn from(t: ObjectType) -> Self {
        match t {
            ObjectType::Device => wit::ObjectType::Device,
            ObjectType::Accelerator => wit::ObjectType::Accelerator,
        }
    }
}

impl From<wit::ObjectType> for ObjectType {
    fn from(t: wit::ObjectType) -> Self {
        match t {
            wit::ObjectType::Device => ObjectType::Device,
            wit::ObjectType::Accelerator => ObjectType::Accelerator,
        }
    }
}

impl From<AcceleratorState> for wit::AcceleratorState {
    fn from(s: AcceleratorState) -> Self {
        match s {
            AcceleratorState::Unassigned => wit::AcceleratorState::Unassigned,
            AcceleratorState::Assigned => wit::AcceleratorState::Assigned,
        }
    }
}

impl From<wit::AcceleratorState> for AcceleratorState {
    fn from(s: wit::AcceleratorState) -> Self {
        match s {
            wit::AcceleratorState::Unassigned => AcceleratorState::Unassigned,
            wit::AcceleratorState::Assigned => AcceleratorState::Assigned,
        }
    }
}

impl From<Guid> for wit::Guid {
    fn from(g: Guid) -> Self {
        wit::Guid {
            high: g.high,
            low: g.low,
        }
    }
}

impl From<wit::Guid> for Guid {
    fn from(g: wit::Guid) -> Self {
        Guid::new(g.high, g.low)
    }
}

impl From<BusAddress> for wit::BusAddress {
    fn from(b: BusAddress) -> Self {
        wit::BusAddress {
            segment: b.segment,
            bus: b.bus,
            device: b.device,
            function: b.function,
        }
    }
}

impl From<wit::BusAddress> for BusAddress {
    fn from(b: wit::BusAddress) -> Self {
        BusAddress {
            segment: b.segment,
            bus: b.bus,
            device: b.device,
            function: b.function,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_round_trip() {
        let guid = Guid::new(0x1234, 0x5678);
        assert_eq!(Guid::from(wit::Guid::from(guid)), guid);
        let bus: BusAddress = "0001:5e:1f.7".parse().unwrap();
        assert_eq!(BusAddress::from(wit::BusAddress::from(bus)), bus);
    }
}

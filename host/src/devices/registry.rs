//! The devices the host can hand to plugins, by name.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use crate::types::DevicePattern;

/// Every device the host can hand to plugins, by the name grants use: `emu:<id>` for the
/// emulated cards the config declares, the `/dev` path for real ones. Each device is kept as
/// its family's own type (such as `Arc<dyn DflDevice>`), so that the registry serves every
/// family without naming any.
#[derive(Default)]
pub struct DeviceRegistry {
    devices: BTreeMap<String, Box<dyn Any + Send + Sync>>,
    real_devices: bool,
    /// Whether plugins' DMA memory is made shareable with other processes.
    shares_memory: bool,
    /// What the application gave the imports above this folder (such as the way to reach
    /// nodes), one object per type.
    services: BTreeMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl DeviceRegistry {
    /// Adds `device` under `name`; `real` when it is a device of this machine rather than an
    /// emulated card. A later device of the same name replaces the earlier one.
    pub fn add<T: ?Sized + Send + Sync + 'static>(
        &mut self,
        name: String,
        device: Arc<T>,
        real: bool,
    ) {
        self.real_devices |= real;
        self.devices.insert(name, Box::new(device));
    }

    /// Makes the DMA memory plugins allocate shareable with other processes (a node hands
    /// its local clients their buffers this way).
    pub fn set_shares_memory(&mut self, shares: bool) {
        self.shares_memory = shares;
    }

    /// Whether plugins' DMA memory is shareable with other processes.
    pub fn shares_memory(&self) -> bool {
        self.shares_memory
    }

    /// The device named `name`, if there is one of type `T`.
    pub fn get<T: ?Sized + Send + Sync + 'static>(&self, name: &str) -> Option<Arc<T>> {
        self.devices.get(name)?.downcast_ref::<Arc<T>>().cloned()
    }

    /// The devices of type `T` that `grants` name, in name order: each grant is a device
    /// name, or a prefix ending in `*`. Each grant is looked up in the ordered map, so the
    /// cost follows the devices granted, not all the devices the host has.
    pub fn granted<T: ?Sized + Send + Sync + 'static>(&self, grants: &[String]) -> Vec<Arc<T>> {
        type Entry<'a> = (&'a String, &'a Box<dyn Any + Send + Sync>);
        fn typed<'a, T: ?Sized + 'static>(
            (name, device): Entry<'a>,
        ) -> Option<(&'a String, Arc<T>)> {
            Some((name, device.downcast_ref::<Arc<T>>()?.clone()))
        }
        let mut found: Vec<(&String, Arc<T>)> = Vec::new();
        for grant in grants {
            match DevicePattern::of(grant) {
                DevicePattern::Prefix(prefix) => found.extend(
                    self.devices
                        .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
                        .take_while(|(name, _)| name.starts_with(prefix))
                        .filter_map(typed),
                ),
                DevicePattern::Exact(name) => {
                    found.extend(self.devices.get_key_value(name).and_then(typed))
                }
            }
        }
        if grants.len() > 1 {
            found.sort_by(|a, b| a.0.cmp(b.0));
            found.dedup_by(|a, b| a.0 == b.0);
        }
        found.into_iter().map(|(_, device)| device).collect()
    }

    /// Hands the imports `service` (such as `Arc<dyn Connector>`, the way to nodes), found
    /// again by its type; a later service of the same type replaces it. The registry stays
    /// below the imports that define those types.
    pub fn set_service<T: Send + Sync + 'static>(&mut self, service: T) {
        self.services.insert(TypeId::of::<T>(), Box::new(service));
    }

    /// The service of type `T`, if the application gave one.
    pub fn service<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.services.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// Whether any real (non-emulated) device was found; DMA memory then prefers huge pages,
    /// which the real drivers need for physically contiguous buffers.
    pub fn has_real_devices(&self) -> bool {
        self.real_devices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Port: Send + Sync {
        fn id(&self) -> u32;
    }
    struct P(u32);
    impl Port for P {
        fn id(&self) -> u32 {
            self.0
        }
    }
    trait Card: Send + Sync {}
    struct C;
    impl Card for C {}

    #[test]
    fn devices_are_found_by_name_and_type() {
        let mut registry = DeviceRegistry::default();
        registry.add::<dyn Port>("emu:p1".into(), Arc::new(P(1)), false);
        registry.add::<dyn Port>("emu:p0".into(), Arc::new(P(0)), false);
        registry.add::<dyn Card>("emu:c0".into(), Arc::new(C), false);
        assert!(!registry.has_real_devices());
        assert_eq!(registry.get::<dyn Port>("emu:p1").map(|p| p.id()), Some(1));
        assert!(
            registry.get::<dyn Card>("emu:p1").is_none(),
            "a port is not a card"
        );
        assert!(registry.get::<dyn Port>("emu:x").is_none());
        let ids = |grants: &[&str]| -> Vec<u32> {
            let grants: Vec<String> = grants.iter().map(|g| g.to_string()).collect();
            registry
                .granted::<dyn Port>(&grants)
                .iter()
                .map(|p| p.id())
                .collect()
        };
        assert_eq!(ids(&["*"]), [0, 1], "in name order, cards left out");
        assert_eq!(ids(&["emu:p1"]), [1]);
        assert_eq!(
            ids(&["emu:p"]),
            [] as [u32; 0],
            "an exact name is not a prefix"
        );
        assert_eq!(
            ids(&["emu:p1", "emu:*", "emu:p0"]),
            [0, 1],
            "overlaps once each"
        );
        assert_eq!(ids(&["emu:c*", "x*"]), [] as [u32; 0]);
        assert_eq!(registry.granted::<dyn Card>(&["emu:*".into()]).len(), 1);
        registry.add::<dyn Card>("/dev/c".into(), Arc::new(C), true);
        assert!(registry.has_real_devices());
    }
}

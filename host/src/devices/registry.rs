//! The devices the host can hand to plugins, by name.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every device the host can hand to plugins, by the name grants use: `emu:<id>` for the
/// emulated cards the config declares, the `/dev` path for real ones. Each device is kept as
/// its family's own type (such as `Arc<dyn DflDevice>`), so that the registry serves every
/// family without naming any.
#[derive(Default)]
pub struct DeviceRegistry {
    devices: BTreeMap<String, Box<dyn Any + Send + Sync>>,
    real_devices: bool,
    /// How plugins reach nodes running `accelhost serve`, when the application gave a way.
    remote: Option<Arc<dyn crate::remote::Connector>>,
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

    /// The device named `name`, if there is one of type `T`.
    pub fn get<T: ?Sized + Send + Sync + 'static>(&self, name: &str) -> Option<Arc<T>> {
        self.devices.get(name)?.downcast_ref::<Arc<T>>().cloned()
    }

    /// The devices of type `T` whose names `granted` accepts, in name order.
    pub fn all<T: ?Sized + Send + Sync + 'static>(
        &self,
        granted: impl Fn(&str) -> bool,
    ) -> Vec<Arc<T>> {
        self.devices
            .iter()
            .filter(|(name, _)| granted(name))
            .filter_map(|(_, device)| device.downcast_ref::<Arc<T>>().cloned())
            .collect()
    }

    /// Lets plugins with `remote` grants reach nodes through `connector`.
    pub fn set_remote(&mut self, connector: Arc<dyn crate::remote::Connector>) {
        self.remote = Some(connector);
    }

    /// The way to nodes, if the application gave one.
    pub fn remote(&self) -> Option<&Arc<dyn crate::remote::Connector>> {
        self.remote.as_ref()
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
        let ids: Vec<u32> = registry
            .all::<dyn Port>(|_| true)
            .iter()
            .map(|p| p.id())
            .collect();
        assert_eq!(ids, [0, 1], "in name order, cards left out");
        assert_eq!(registry.all::<dyn Port>(|n| n.ends_with('1')).len(), 1);
        assert_eq!(registry.all::<dyn Card>(|_| true).len(), 1);
        registry.add::<dyn Card>("/dev/c".into(), Arc::new(C), true);
        assert!(registry.has_real_devices());
    }
}

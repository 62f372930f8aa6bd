//! The starting point of a Rust plugin: one device with no hardware behind it, which
//! applications can find and open. Replace the device with yours: `enumerate` reports your
//! devices (the host keeps the properties: queries never call you), `open` / `close` hand out
//! and take back handle numbers, and any other method of `Plugin` your device supports
//! (`map_mmio` and `prepare_buffer` for FPGA-style devices, the offload calls for kernel
//! launches). Every method you leave out answers `unsupported`.

use accelhost_sdk::{
    Discovered, Error, Filter, Guid, ObjectType, OpenMode, Plugin, Properties, Result,
    filters_match, log,
};

#[derive(Default)]
struct Template {
    opened: u64,
}

impl Plugin for Template {
    fn enumerate(&mut self, filters: Vec<Filter>) -> Result<Vec<Discovered>> {
        let properties = Properties {
            object_type: ObjectType::Accelerator,
            name: "template0".into(),
            guid: Guid { high: 0x1234, low: 0x5678 },
            vendor_id: 0x1234,
            device_id: 0x0001,
            bus_address: None,
            socket_id: None,
            device_type: "fpga".into(),
            host: "localhost".into(),
            num_mmio: 0,
            num_interrupts: 0,
            accelerator_state: None,
            parent: None,
            extras: Vec::new(),
        };
        let wanted = filters_match(&filters, &properties);
        Ok(wanted
            .then_some(Discovered { token: 0, properties })
            .into_iter()
            .collect())
    }

    fn open(&mut self, token: u64, _mode: OpenMode) -> Result<u64> {
        if token != 0 {
            return Err(Error::not_found(format!("no token {token}")));
        }
        self.opened += 1;
        log!(Info, "opened template0 ({} times)", self.opened);
        Ok(self.opened)
    }

    fn close(&mut self, _handle: u64) -> Result<()> {
        Ok(())
    }
}

accelhost_sdk::export_plugin!(Template);

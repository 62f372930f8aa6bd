//! The DFL plugin: exposes every granted DFL port (real `/dev/dfl-port.N` or emulated) as an
//! OPAE-style accelerator, and implements open, close, MMIO mapping, shared buffers and reset
//! on top of the host's `dfl` shim. The host does the I/O; this plugin decides and checks.

use std::collections::BTreeMap;

use accelhost_sdk::host::dfl::{Port, PortProbe};
use accelhost_sdk::host::dma::Buffer;
use accelhost_sdk::host::{dfl, mmio};
use accelhost_sdk::{
    AcceleratorState, BufferFlags, Discovered, Error, ErrorCode, Filter, ObjectType, OpenMode,
    Plugin, PreparedBuffer, Properties, Result, filter_matches,
};

/// The device type every DFL port reports.
const DEVICE_TYPE: &str = "fpga";

#[derive(Default)]
struct DflPlugin {
    initialized: bool,
    /// Tokens stay stable across enumerations: a port keeps the token it was first given.
    tokens: BTreeMap<String, u64>,
    /// The path of each token (tokens count up from 0).
    paths: Vec<String>,
    open: BTreeMap<u64, OpenPort>,
    next_handle: u64,
}

/// A port the application opened, with the buffers it prepared through it.
struct OpenPort {
    port: Port,
    /// Buffer id → IO virtual address.
    buffers: BTreeMap<u64, u64>,
    next_buffer: u64,
}

impl DflPlugin {
    fn require_initialized(&self) -> Result<()> {
        if self.initialized {
            Ok(())
        } else {
            Err(Error::not_initialized("the dfl plugin was not initialized"))
        }
    }

    fn token_for(&mut self, path: &str) -> u64 {
        if let Some(&token) = self.tokens.get(path) {
            return token;
        }
        let token = self.paths.len() as u64;
        self.tokens.insert(path.to_string(), token);
        self.paths.push(path.to_string());
        token
    }

    fn path_for_token(&self, token: u64) -> Result<&str> {
        self.paths
            .get(token as usize)
            .map(String::as_str)
            .ok_or_else(|| Error::not_found(format!("no dfl port has token {token}")))
    }

    fn probe_for_token(&self, token: u64) -> Result<PortProbe> {
        let path = self.path_for_token(token)?;
        dfl::probe_ports()
            .into_iter()
            .find(|p| p.desc.path == path)
            .ok_or_else(|| Error::not_found(format!("dfl port {path} is no longer granted")))
    }

    fn open_port(&mut self, handle: u64) -> Result<&mut OpenPort> {
        self.open
            .get_mut(&handle)
            .ok_or_else(|| Error::not_found(format!("no open dfl port has handle {handle}")))
    }

    /// A probed port as OPAE describes it: the host opened it shared to see whether someone
    /// holds it exclusively, as OPAE's enumeration does.
    fn port_properties(probe: &PortProbe) -> Properties {
        let desc = &probe.desc;
        let state = if probe.assigned {
            AcceleratorState::Assigned
        } else {
            AcceleratorState::Unassigned
        };
        let num_mmio = probe.num_regions;
        Properties {
            object_type: ObjectType::Accelerator,
            name: desc.path.trim_start_matches("/dev/").to_string(),
            guid: desc.afu_id,
            vendor_id: desc.vendor_id,
            device_id: desc.device_id,
            bus_address: desc.bus_address,
            socket_id: desc.socket_id,
            device_type: DEVICE_TYPE.to_string(),
            host: "localhost".to_string(),
            num_mmio,
            num_interrupts: 0,
            accelerator_state: Some(state),
            parent: None,
            extras: vec![
                ("interface".to_string(), "dfl".to_string()),
                ("path".to_string(), desc.path.clone()),
                ("port-id".to_string(), desc.port_id.to_string()),
                ("emulated".to_string(), desc.emulated.to_string()),
            ],
        }
    }
}

impl Plugin for DflPlugin {
    fn initialize(&mut self) -> Result<()> {
        self.initialized = true;
        Ok(())
    }

    fn finalize(&mut self) -> Result<()> {
        self.open.clear();
        self.initialized = false;
        Ok(())
    }

    fn supports_device(&mut self, device_type: &str) -> bool {
        device_type == DEVICE_TYPE
    }

    fn enumerate(&mut self, filters: Vec<Filter>) -> Result<Vec<Discovered>> {
        self.require_initialized()?;
        let mut found = Vec::new();
        for probe in dfl::probe_ports() {
            let properties = Self::port_properties(&probe);
            if filters.is_empty() || filters.iter().any(|f| filter_matches(f, &properties)) {
                let token = self.token_for(&probe.desc.path);
                found.push(Discovered { token, properties });
            }
        }
        Ok(found)
    }

    fn describe(&mut self, token: u64) -> Result<Properties> {
        self.require_initialized()?;
        let probe = self.probe_for_token(token)?;
        Ok(Self::port_properties(&probe))
    }

    fn open(&mut self, token: u64, mode: OpenMode) -> Result<u64> {
        self.require_initialized()?;
        // No need to list the ports first: the host checks the grant at the open itself.
        let port = Port::open(self.path_for_token(token)?, mode == OpenMode::Exclusive)?;
        self.next_handle += 1;
        let handle = self.next_handle;
        self.open.insert(
            handle,
            OpenPort {
                port,
                buffers: BTreeMap::new(),
                next_buffer: 0,
            },
        );
        Ok(handle)
    }

    fn close(&mut self, handle: u64) -> Result<()> {
        // Dropping the port closes it; the host then resets the AFU and removes its mappings.
        self.open
            .remove(&handle)
            .map(drop)
            .ok_or_else(|| Error::not_found(format!("no open dfl port has handle {handle}")))
    }

    fn map_mmio(&mut self, handle: u64, index: u32) -> Result<mmio::Region> {
        let open = self.open_port(handle)?;
        let info = open.port.info()?;
        if index >= info.num_regions {
            return Err(Error::invalid_argument(format!(
                "MMIO region {index} does not exist: the port has {} region(s)",
                info.num_regions
            )));
        }
        open.port.map_region(index)
    }

    fn prepare_buffer(
        &mut self,
        handle: u64,
        size: u64,
        _flags: BufferFlags,
    ) -> Result<PreparedBuffer> {
        if size == 0 {
            return Err(Error::invalid_argument("a buffer needs a size above 0"));
        }
        let open = self.open_port(handle)?;
        let buffer = Buffer::allocate(size)?;
        let iova = open.port.dma_map(&buffer)?;
        open.next_buffer += 1;
        let id = open.next_buffer;
        open.buffers.insert(id, iova);
        Ok(PreparedBuffer { id, buffer, iova })
    }

    fn release_buffer(&mut self, handle: u64, id: u64) -> Result<()> {
        let open = self.open_port(handle)?;
        let iova = open
            .buffers
            .remove(&id)
            .ok_or_else(|| Error::not_found(format!("no buffer {id} on handle {handle}")))?;
        open.port.dma_unmap(iova)
    }

    fn io_address(&mut self, handle: u64, id: u64) -> Result<u64> {
        let open = self.open_port(handle)?;
        open.buffers.get(&id).copied().ok_or_else(|| {
            Error::new(
                ErrorCode::NotFound,
                format!("no buffer {id} on handle {handle}"),
            )
        })
    }

    fn reset(&mut self, handle: u64) -> Result<()> {
        self.open_port(handle)?.port.reset()
    }
}

accelhost_sdk::export_plugin!(DflPlugin);

//! The DFL plugin: exposes every granted DFL port (real `/dev/dfl-port.N` or emulated) as an
//! OPAE-style accelerator whose parent is its card's FME (an OPAE device object), and
//! implements open, close, MMIO mapping, shared buffers, reset and the sysfs attributes of
//! both on top of the host's `dfl` shim. The host does the I/O; this plugin decides and checks.

use std::collections::{BTreeMap, BTreeSet};

use accelhost_sdk::host::dfl::{Port, PortProbe};
use accelhost_sdk::host::dma::Buffer;
use accelhost_sdk::host::{dfl, mmio};
use accelhost_sdk::{
    AcceleratorState, AttributeInfo, BufferFlags, BusAddress, DeviceRow, DeviceTable, Discovered,
    Error, ErrorCode, Fact, Filter, Guid, NumberedText, ObjectType, OpenMode, Plugin,
    PreparedBuffer, Properties, Result, TableBuilder, filters_match, wants_device_objects,
};

/// The device type every DFL port reports.
const DEVICE_TYPE: &str = "fpga";
/// What starts the key of an FME's token (the key of a port's is its path).
const FME_KEY: &str = "fme@";
/// The host's `dfl` attributes of the FME begin with this.
const FME_ATTRIBUTES: &str = "fme/";

#[derive(Default)]
struct DflPlugin {
    initialized: bool,
    /// Tokens stay stable across enumerations: a port (keyed by its path) or an FME (keyed
    /// by `fme@` and its card) keeps the token it was first given.
    tokens: BTreeMap<String, u64>,
    /// The key of each token (tokens count up from 0).
    paths: Vec<String>,
    /// The FME token of each port token, by index (`None` for an FME's own), kept so that an
    /// enumeration does not rebuild each port's card key.
    fme_of: Vec<Option<u64>>,
    /// The port token of each place in the host's probe order, as last probed.
    probe_order: Vec<u64>,
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

    /// The token of the port at `path`, probed `at`-th: the host probes in the same order
    /// every time, so the token probed there last time is checked first.
    fn probed_token(&mut self, at: usize, path: &str) -> u64 {
        if let Some(&token) = self.probe_order.get(at)
            && self.paths.get(token as usize).is_some_and(|p| p == path)
        {
            return token;
        }
        let token = self.token_for(path);
        if self.probe_order.len() <= at {
            self.probe_order.resize(at + 1, u64::MAX);
        }
        self.probe_order[at] = token;
        token
    }

    /// The token of the FME of the card of `port` (whose description is `desc`).
    fn fme_token(&mut self, port: u64, desc: &dfl::PortDesc) -> u64 {
        let index = port as usize;
        if let Some(&Some(fme)) = self.fme_of.get(index) {
            return fme;
        }
        let fme = self.token_for(&card_key(desc));
        if self.fme_of.len() <= index {
            self.fme_of.resize(index + 1, None);
        }
        self.fme_of[index] = Some(fme);
        fme
    }

    fn path_for_token(&self, token: u64) -> Result<&str> {
        self.paths
            .get(token as usize)
            .map(String::as_str)
            .ok_or_else(|| Error::not_found(format!("no dfl port has token {token}")))
    }

    fn probe_for_path(path: &str) -> Result<PortProbe> {
        dfl::probe_ports()
            .into_iter()
            .find(|p| p.desc.path == path)
            .ok_or_else(|| Error::not_found(format!("dfl port {path} is no longer granted")))
    }

    /// What `token` stands for: a port (its path: the host checks the grant at each call),
    /// or the FME of a card, reached through the first granted port on it.
    fn device_for_token(&self, token: u64) -> Result<Device> {
        let key = self.path_for_token(token)?;
        if !key.starts_with(FME_KEY) {
            return Ok(Device::Port(key.to_string()));
        }
        dfl::list_ports()
            .into_iter()
            .find(|desc| card_key(desc) == key)
            .map(Device::Fme)
            .ok_or_else(|| Error::not_found(format!("no granted dfl port is on card {key}")))
    }

    /// The FME of `desc`'s card as OPAE describes a device object; its GUID is the PR
    /// interface id (zero where sysfs has none).
    fn fme_properties(desc: &dfl::PortDesc) -> Properties {
        let guid = dfl::read_attribute(&desc.path, "fme/pr/interface_id")
            .ok()
            .and_then(|text| parse_guid(&text))
            .unwrap_or(Guid { high: 0, low: 0 });
        Properties {
            guid,
            vendor_id: desc.vendor_id,
            device_id: desc.device_id,
            bus_address: desc.bus_address,
            socket_id: desc.socket_id,
            ..Properties::device_object(
                fme_name(desc),
                DEVICE_TYPE,
                vec![
                    ("interface".to_string(), "dfl".to_string()),
                    ("emulated".to_string(), desc.emulated.to_string()),
                ],
            )
        }
    }

    fn open_port(&mut self, handle: u64) -> Result<&mut OpenPort> {
        self.open
            .get_mut(&handle)
            .ok_or_else(|| Error::not_found(format!("no open dfl port has handle {handle}")))
    }

    /// A probed port as OPAE describes it: the host opened it shared to see whether someone
    /// holds it exclusively, as OPAE's enumeration does.
    fn port_properties(probe: &PortProbe, parent: Option<u64>) -> Properties {
        let desc = &probe.desc;
        let state = if probe.assigned {
            AcceleratorState::Assigned
        } else {
            AcceleratorState::Unassigned
        };
        let num_mmio = probe.num_regions;
        Properties {
            object_type: ObjectType::Accelerator,
            name: port_name(&desc.path).to_string(),
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
            parent,
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
        // The FMEs are listed only to a filter that asks for device objects (as the C API
        // does, and `accelhost info`): everything else lists what can be opened.
        let wants_devices = wants_device_objects(&filters);
        let matches = |p: &Properties| filters_match(&filters, p);
        let mut found = Vec::new();
        let mut cards_seen = BTreeSet::new();
        for probe in dfl::probe_ports() {
            // The port's token first: ports keep the numbers they had before FMEs were listed.
            let port = self.token_for(&probe.desc.path);
            let fme = self.fme_token(port, &probe.desc);
            if wants_devices && cards_seen.insert(fme) {
                let properties = Self::fme_properties(&probe.desc);
                if matches(&properties) {
                    found.push(Discovered {
                        token: fme,
                        properties,
                    });
                }
            }
            let properties = Self::port_properties(&probe, Some(fme));
            if matches(&properties) {
                found.push(Discovered {
                    token: port,
                    properties,
                });
            }
        }
        Ok(found)
    }

    /// The table of what `enumerate` lists, with a row of numbers per port: this is what the
    /// host asks, `enumerate` only of a host before 0.3.0 (or to describe one device).
    fn inventory(&mut self, filters: Vec<Filter>) -> Result<DeviceTable> {
        self.require_initialized()?;
        let wants_devices = wants_device_objects(&filters);
        let mut table = TableBuilder::default();
        let said = PortTexts::new(&mut table);
        let mut cards_seen = BTreeSet::new();
        for (at, probe) in dfl::probe_ports().into_iter().enumerate() {
            let port = self.probed_token(at, &probe.desc.path);
            let fme = self.fme_token(port, &probe.desc);
            if wants_devices && cards_seen.insert(fme) {
                let properties = Self::fme_properties(&probe.desc);
                if filters_match(&filters, &properties) {
                    table.described(fme, properties);
                }
            }
            if filters.is_empty() {
                said.port_row(&mut table, port, &probe, fme);
            } else {
                let properties = Self::port_properties(&probe, Some(fme));
                if filters_match(&filters, &properties) {
                    table.described(port, properties);
                }
            }
        }
        Ok(table.finish())
    }

    fn describe(&mut self, token: u64) -> Result<Properties> {
        self.require_initialized()?;
        match self.device_for_token(token)? {
            Device::Fme(desc) => Ok(Self::fme_properties(&desc)),
            Device::Port(path) => {
                let probe = Self::probe_for_path(&path)?;
                let fme = self.fme_token(token, &probe.desc);
                Ok(Self::port_properties(&probe, Some(fme)))
            }
        }
    }

    fn list_attributes(&mut self, token: u64) -> Result<Vec<AttributeInfo>> {
        self.require_initialized()?;
        let device = self.device_for_token(token)?;
        let all = dfl::list_attributes(device.path())?;
        Ok(all
            .into_iter()
            .filter_map(|a| {
                let name = match device {
                    Device::Fme(_) => a.name.strip_prefix(FME_ATTRIBUTES)?.to_string(),
                    Device::Port(_) if a.name.starts_with(FME_ATTRIBUTES) => return None,
                    Device::Port(_) => a.name,
                };
                Some(AttributeInfo {
                    name,
                    writable: a.writable,
                })
            })
            .collect())
    }

    fn read_attribute(&mut self, token: u64, name: &str) -> Result<String> {
        self.require_initialized()?;
        let device = self.device_for_token(token)?;
        dfl::read_attribute(device.path(), &device.host_name(name)?)
    }

    fn write_attribute(&mut self, token: u64, name: &str, value: &str) -> Result<()> {
        self.require_initialized()?;
        let device = self.device_for_token(token)?;
        dfl::write_attribute(device.path(), &device.host_name(name)?, value)
    }

    fn open(&mut self, token: u64, mode: OpenMode) -> Result<u64> {
        self.require_initialized()?;
        let path = self.path_for_token(token)?;
        if path.starts_with(FME_KEY) {
            return Err(Error::unsupported(
                "open of an FME: its state is read through its attributes; open its port (the \
                 accelerator) for MMIO, buffers and reset",
            ));
        }
        // No need to list the ports first: the host checks the grant at the open itself.
        let port = Port::open(path, mode == OpenMode::Exclusive)?;
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

/// A token's device.
enum Device {
    /// A port, by path.
    Port(String),
    /// The FME of the card, reached through the attributes of this port on it.
    Fme(dfl::PortDesc),
}

impl Device {
    /// The port the host's `dfl` attribute calls go through.
    fn path(&self) -> &str {
        match self {
            Device::Port(path) => path,
            Device::Fme(desc) => &desc.path,
        }
    }

    /// The host's name for attribute `name` of this device.
    fn host_name(&self, name: &str) -> Result<String> {
        match self {
            Device::Fme(_) => Ok(format!("{FME_ATTRIBUTES}{name}")),
            Device::Port(_) if name.starts_with(FME_ATTRIBUTES) => Err(Error::not_found(format!(
                "a port has no attribute {name}: the FME's are read through the FME's token"
            ))),
            Device::Port(_) => Ok(name.to_string()),
        }
    }
}

/// The key of the FME of `desc`'s card: ports on the same PCI function share it.
fn card_key(desc: &dfl::PortDesc) -> String {
    match &desc.bus_address {
        Some(bus) => format!("{FME_KEY}{}", bus_text(bus)),
        None => format!("{FME_KEY}{}", desc.path),
    }
}

/// The texts every port row of an inventory table shares, said once per table.
struct PortTexts {
    device_type: u32,
    host: u32,
    interface: u32,
    dfl: u32,
    path: u32,
    port_id: u32,
    nothing: u32,
    emulated: u32,
    yes: u32,
    no: u32,
}

impl PortTexts {
    fn new(table: &mut TableBuilder) -> Self {
        PortTexts {
            device_type: table.text(DEVICE_TYPE),
            host: table.text("localhost"),
            interface: table.text("interface"),
            dfl: table.text("dfl"),
            path: table.text("path"),
            port_id: table.text("port-id"),
            nothing: table.text(""),
            emulated: table.text("emulated"),
            yes: table.text("true"),
            no: table.text("false"),
        }
    }

    /// The row of a probed port, as [`DflPlugin::port_properties`] describes it.
    fn port_row(&self, table: &mut TableBuilder, token: u64, probe: &PortProbe, fme: u64) {
        let desc = &probe.desc;
        let plain = |text| NumberedText { text, number: None };
        let path = table.numbered(&desc.path);
        let (extras_first, extras_count) = table.facts([
            Fact {
                key: self.interface,
                value: plain(self.dfl),
            },
            Fact {
                key: self.path,
                value: path,
            },
            Fact {
                key: self.port_id,
                value: NumberedText {
                    text: self.nothing,
                    number: Some(desc.port_id),
                },
            },
            Fact {
                key: self.emulated,
                value: plain(if desc.emulated { self.yes } else { self.no }),
            },
        ]);
        let state = if probe.assigned {
            AcceleratorState::Assigned
        } else {
            AcceleratorState::Unassigned
        };
        let row = DeviceRow {
            token,
            object_type: ObjectType::Accelerator,
            name: table.numbered(port_name(&desc.path)),
            guid: desc.afu_id,
            vendor_id: desc.vendor_id,
            device_id: desc.device_id,
            bus_address: desc.bus_address,
            socket_id: desc.socket_id,
            device_type: self.device_type,
            host: self.host,
            num_mmio: probe.num_regions,
            num_interrupts: 0,
            accelerator_state: Some(state),
            parent: Some(fme),
            extras_first,
            extras_count,
        };
        table.row(row);
    }
}

/// A port's name: its path without `/dev/`.
fn port_name(path: &str) -> &str {
    path.strip_prefix("/dev/").unwrap_or(path)
}

/// The FME's name: `fme.<bus address>`, or `<port name>.fme` for a card without one.
fn fme_name(desc: &dfl::PortDesc) -> String {
    match &desc.bus_address {
        Some(bus) => format!("fme.{}", bus_text(bus)),
        None => format!("{}.fme", port_name(&desc.path)),
    }
}

/// A PCI address as sysfs writes it: `0000:3b:00.0`.
fn bus_text(bus: &BusAddress) -> String {
    format!(
        "{:04x}:{:02x}:{:02x}.{}",
        bus.segment, bus.bus, bus.device, bus.function
    )
}

/// A GUID as sysfs writes it: 32 hex digits, high half first.
fn parse_guid(text: &str) -> Option<Guid> {
    let text = text.trim();
    if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(Guid {
        high: u64::from_str_radix(&text[..16], 16).ok()?,
        low: u64::from_str_radix(&text[16..], 16).ok()?,
    })
}

accelhost_sdk::export_plugin!(DflPlugin);

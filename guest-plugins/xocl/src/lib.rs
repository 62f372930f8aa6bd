//! The xocl plugin: exposes every granted XRT device as an accelerator and implements the
//! offload-style calls on the host's `xocl` shim. A program is an xclbin (which the host
//! validates before it is loaded), a kernel is a set of compute units, memory is buffer
//! objects, and every enqueue becomes a command that waits on the previous one of its queue,
//! so queues are in order without the plugin ever waiting.

mod ert;
mod state;

use std::collections::BTreeMap;

use accelhost_sdk::host::events::{Event, EventState};
use accelhost_sdk::host::image::Image;
use accelhost_sdk::host::xocl::{Device, DeviceDesc, MemKind, XclbinInfo, list_devices};
use state::{AllocationState, KernelState, OpenDevice, ProgramState, QueueState};

use accelhost_sdk::{
    AcceleratorState, Allocation, Discovered, Enqueued, Error, ErrorCode, Filter, Guid,
    KernelArgument, Launch, LaunchSize, MemoryKind, MemoryRange, ObjectType, OpenMode, Plugin,
    Properties, Result, enqueue_in_turn, filters_match, wants_device_objects,
};

/// The device type every XRT card reports.
const DEVICE_TYPE: &str = "fpga";
/// What a card's token key starts with (its management function), before the user
/// function's path.
const MGMT_KEY: &str = "mgmt@";

/// What a token stands for.
enum Node {
    /// The user function: the accelerator, opened for buffers and compute units.
    User(DeviceDesc),
    /// The card's management function: OPAE's device object, the user function's parent.
    Mgmt(DeviceDesc),
}

/// The name of a card's device object: `mgmt.<bus address>`, or `<name>.mgmt` without one.
fn mgmt_name(desc: &DeviceDesc) -> String {
    match desc.bus_address {
        Some(bus) => format!(
            "mgmt.{:04x}:{:02x}:{:02x}.{}",
            bus.segment, bus.bus, bus.device, bus.function
        ),
        None => format!("{}.mgmt", desc.path.trim_start_matches("/dev/")),
    }
}

#[derive(Default)]
struct XoclPlugin {
    initialized: bool,
    /// A device keeps the token it was first given.
    tokens: BTreeMap<String, u64>,
    next_id: u64,
    handles: BTreeMap<u64, OpenDevice>,
    programs: BTreeMap<u64, ProgramState>,
    kernels: BTreeMap<u64, KernelState>,
    allocations: BTreeMap<u64, AllocationState>,
    queues: BTreeMap<u64, QueueState>,
}

fn not_found(what: &str, id: u64) -> Error {
    Error::not_found(format!("no {what} {id}"))
}

impl XoclPlugin {
    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn token_for(&mut self, path: &str) -> u64 {
        let next = self.tokens.len() as u64;
        *self.tokens.entry(path.to_string()).or_insert(next)
    }

    fn node_for_token(&self, token: u64) -> Result<Node> {
        let key = self
            .tokens
            .iter()
            .find_map(|(key, t)| (*t == token).then_some(key))
            .ok_or_else(|| not_found("xocl device token", token))?;
        let (path, mgmt) = match key.strip_prefix(MGMT_KEY) {
            Some(path) => (path, true),
            None => (key.as_str(), false),
        };
        let desc = list_devices()
            .into_iter()
            .find(|d| d.path == path)
            .ok_or_else(|| Error::not_found(format!("xocl device {path} is no longer granted")))?;
        Ok(if mgmt {
            Node::Mgmt(desc)
        } else {
            Node::User(desc)
        })
    }

    /// The user function `token` stands for; a card's management function is not opened.
    fn desc_for_token(&self, token: u64) -> Result<DeviceDesc> {
        match self.node_for_token(token)? {
            Node::User(desc) => Ok(desc),
            Node::Mgmt(desc) => Err(Error::new(
                ErrorCode::Unsupported,
                format!(
                    "{} is an XRT card's management function (a device object): open its user \
                     function {} for buffers and compute units",
                    mgmt_name(&desc),
                    desc.path.trim_start_matches("/dev/")
                ),
            )),
        }
    }

    /// A card's management function as OPAE describes a device object. Its ids and address
    /// are the user function's: the shim does not read the management function. The GUID is
    /// zero: the shell's interface id is not exported by the shim.
    fn mgmt_properties(desc: &DeviceDesc) -> Properties {
        Properties {
            vendor_id: desc.vendor_id,
            device_id: desc.device_id,
            bus_address: desc.bus_address,
            ..Properties::device_object(
                mgmt_name(desc),
                DEVICE_TYPE,
                vec![
                    ("interface".into(), "xocl".into()),
                    ("board".into(), desc.board_name.clone()),
                    ("emulated".into(), desc.emulated.to_string()),
                ],
            )
        }
    }

    fn properties(&self, desc: &DeviceDesc, parent: Option<u64>) -> Properties {
        let holders: Vec<&OpenDevice> = self
            .handles
            .values()
            .filter(|o| o.path == desc.path)
            .collect();
        let loaded = desc.loaded.map(|g| Guid {
            high: g.high,
            low: g.low,
        });
        Properties {
            object_type: ObjectType::Accelerator,
            name: desc.path.trim_start_matches("/dev/").to_string(),
            guid: loaded.unwrap_or(Guid { high: 0, low: 0 }),
            vendor_id: desc.vendor_id,
            device_id: desc.device_id,
            bus_address: desc.bus_address,
            socket_id: None,
            device_type: DEVICE_TYPE.to_string(),
            host: "localhost".to_string(),
            num_mmio: 0,
            num_interrupts: 0,
            accelerator_state: Some(if holders.iter().any(|o| o.exclusive) {
                AcceleratorState::Assigned
            } else {
                AcceleratorState::Unassigned
            }),
            parent,
            extras: vec![
                ("interface".into(), "xocl".into()),
                ("path".into(), desc.path.clone()),
                ("board".into(), desc.board_name.clone()),
                ("emulated".into(), desc.emulated.to_string()),
                (
                    "xclbin".into(),
                    loaded.map_or("none".into(), |g| format!("{:016x}{:016x}", g.high, g.low)),
                ),
            ],
        }
    }

    fn open_device(&self, handle: u64) -> Result<&OpenDevice> {
        self.handles
            .get(&handle)
            .ok_or_else(|| not_found("open xocl device with handle", handle))
    }

    fn queue(&self, queue: u64) -> Result<&QueueState> {
        self.queues
            .get(&queue)
            .ok_or_else(|| not_found("queue", queue))
    }

    fn allocation(&self, id: u64, handle: u64) -> Result<&AllocationState> {
        let allocation = self
            .allocations
            .get(&id)
            .ok_or_else(|| not_found("allocation", id))?;
        if allocation.handle != handle {
            return Err(Error::invalid_argument(format!(
                "allocation {id} belongs to another device handle"
            )));
        }
        Ok(allocation)
    }

    /// The default bank for device memory: the first used bank that holds data.
    fn default_bank(info: &XclbinInfo) -> Option<u32> {
        info.banks
            .iter()
            .find(|b| b.used && !matches!(b.kind, MemKind::Host | MemKind::Streaming))
            .map(|b| b.index)
    }

    /// The device and the dependency list of the next command on `queue`: the command
    /// before it while that one is pending. One that finished, even failed, holds nothing
    /// back, so that a queue goes on after a failed command, as OpenCL's and XRT's do; one
    /// that fails while the next waits fails that one too.
    fn next_on(&self, queue: u64) -> Result<(&Device, Vec<&Event>)> {
        self.after_last(queue, |state| state == EventState::Pending)
    }

    /// The queue's device, and its last command if `waits(its state)`.
    fn after_last(
        &self,
        queue: u64,
        waits: impl Fn(EventState) -> bool,
    ) -> Result<(&Device, Vec<&Event>)> {
        let state = self.queue(queue)?;
        let device = &self.open_device(state.handle)?.device;
        let after = state
            .last
            .iter()
            .filter(|last| waits(last.state()))
            .collect();
        Ok((device, after))
    }

    /// Makes `event` the one the next command on `queue` waits for.
    fn remember(&mut self, queue: u64, event: &Event) {
        if let Some(state) = self.queues.get_mut(&queue) {
            state.last = Some(event.duplicate());
        }
    }

    /// Starts `kernel` with `args` after the queue's last command (also after its failure
    /// when `in_batch`: a batch is answered by its last launch's event, which must fail with
    /// any launch of the batch); the caller keeps the event as the queue's last.
    fn launch(
        &self,
        queue: u64,
        kernel: u64,
        args: &[KernelArgument],
        in_batch: bool,
    ) -> Result<Event> {
        let handle = self.queue(queue)?.handle;
        let state = self
            .kernels
            .get(&kernel)
            .ok_or_else(|| not_found("kernel", kernel))?;
        let program = self
            .programs
            .get(&state.program)
            .ok_or_else(|| not_found("program", state.program))?;
        if program.handle != handle {
            return Err(Error::invalid_argument(
                "the kernel belongs to a program of another device handle",
            ));
        }
        let packet = ert::launch_packet(state, program, args, |id| {
            self.allocation(id, handle)
                .map(|a| (a.device_address, a.size, a.bank))
        })?;
        let (device, after) = self.after_last(queue, |state| {
            state == EventState::Pending || (in_batch && state == EventState::Failed)
        })?;
        device.exec(&packet, &after)
    }

    /// Drops everything that belongs to `handle`.
    fn forget_handle(&mut self, handle: u64) {
        self.queues.retain(|_, q| q.handle != handle);
        self.allocations.retain(|_, a| a.handle != handle);
        let programs: Vec<u64> = self
            .programs
            .iter()
            .filter(|(_, p)| p.handle == handle)
            .map(|(id, _)| *id)
            .collect();
        for program in programs {
            let _ = self.release_program(program);
        }
    }

    fn release_program(&mut self, program: u64) -> Result<()> {
        let state = self
            .programs
            .remove(&program)
            .ok_or_else(|| not_found("program", program))?;
        self.kernels.retain(|_, k| k.program != program);
        if let Some(open) = self.handles.get(&state.handle) {
            // A device's context on a unit is one, whichever programs of the same image use
            // it (a program built twice from one source is one image): it closes with the
            // last of them.
            for cu in &state.contexts {
                let shared = self.programs.values().any(|other| {
                    other.handle == state.handle
                        && (other.info.uuid.high, other.info.uuid.low)
                            == (state.info.uuid.high, state.info.uuid.low)
                        && other.contexts.contains(cu)
                });
                if !shared {
                    let _ = open.device.close_context(state.info.uuid, *cu);
                }
            }
        }
        Ok(())
    }
}

impl Plugin for XoclPlugin {
    fn initialize(&mut self) -> Result<()> {
        self.initialized = true;
        Ok(())
    }

    fn finalize(&mut self) -> Result<()> {
        let handles: Vec<u64> = self.handles.keys().copied().collect();
        for handle in handles {
            self.forget_handle(handle);
        }
        self.handles.clear();
        Ok(())
    }

    fn supports_device(&mut self, device_type: &str) -> bool {
        device_type == DEVICE_TYPE
    }

    fn enumerate(&mut self, filters: Vec<Filter>) -> Result<Vec<Discovered>> {
        if !self.initialized {
            return Err(Error::not_initialized(
                "the xocl plugin was not initialized",
            ));
        }
        // Device objects are listed only to a filter that asks for them (as the C API does,
        // and `accelhost info`): everything else lists what can be opened.
        let wants_devices = wants_device_objects(&filters);
        let matches = |p: &Properties| filters_match(&filters, p);
        let mut found = Vec::new();
        for desc in list_devices() {
            // The user function's token first: it keeps the number it had before device
            // objects were listed.
            let token = self.token_for(&desc.path);
            let mgmt = self.token_for(&format!("{MGMT_KEY}{}", desc.path));
            if wants_devices {
                let properties = Self::mgmt_properties(&desc);
                if matches(&properties) {
                    found.push(Discovered {
                        token: mgmt,
                        properties,
                    });
                }
            }
            let properties = self.properties(&desc, Some(mgmt));
            if matches(&properties) {
                found.push(Discovered { token, properties });
            }
        }
        Ok(found)
    }

    fn describe(&mut self, token: u64) -> Result<Properties> {
        match self.node_for_token(token)? {
            Node::Mgmt(desc) => Ok(Self::mgmt_properties(&desc)),
            Node::User(desc) => {
                let mgmt = self.token_for(&format!("{MGMT_KEY}{}", desc.path));
                Ok(self.properties(&desc, Some(mgmt)))
            }
        }
    }

    fn open(&mut self, token: u64, mode: OpenMode) -> Result<u64> {
        let desc = self.desc_for_token(token)?;
        let exclusive = mode == OpenMode::Exclusive;
        let held = self.handles.values().filter(|o| o.path == desc.path);
        let mut held = held.peekable();
        if held.peek().is_some() && (exclusive || held.any(|o| o.exclusive)) {
            return Err(Error::busy(format!(
                "xocl device {} is open{}",
                desc.path,
                if exclusive { "" } else { " exclusively" }
            )));
        }
        let device = Device::open(&desc.path)?;
        let handle = self.fresh_id();
        self.handles.insert(
            handle,
            OpenDevice {
                device,
                path: desc.path,
                exclusive,
            },
        );
        Ok(handle)
    }

    fn close(&mut self, handle: u64) -> Result<()> {
        self.open_device(handle)?;
        self.forget_handle(handle);
        self.handles.remove(&handle);
        Ok(())
    }

    fn reset(&mut self, handle: u64) -> Result<()> {
        self.open_device(handle)?.device.reset()
    }

    fn reconfigure(&mut self, handle: u64, slot: u32, image: &Image) -> Result<()> {
        if slot != 0 {
            return Err(Error::invalid_argument(format!(
                "an XRT card has one reconfigurable slot (0), not {slot}"
            )));
        }
        self.open_device(handle)?
            .device
            .load_xclbin(image)
            .map(drop)
    }

    fn mem_alloc(
        &mut self,
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> Result<Allocation> {
        if size == 0 {
            return Err(Error::invalid_argument(
                "an allocation needs a size above 0",
            ));
        }
        let open = self.open_device(handle)?;
        let (bo, buffer) = match kind {
            MemoryKind::Host | MemoryKind::Shared => {
                if bank.is_some() {
                    return Err(Error::invalid_argument(
                        "host and shared memory live in host memory, not in a bank",
                    ));
                }
                let bo = open.device.create_bo(size, None)?;
                let buffer = bo.host_buffer()?;
                (bo, Some(buffer))
            }
            MemoryKind::Device => {
                let bank = match bank {
                    Some(bank) => bank,
                    None => {
                        let info = open.device.loaded_xclbin().ok_or_else(|| {
                            Error::new(
                                ErrorCode::NotInitialized,
                                "no xclbin is loaded: device memory banks come from the program, create one first",
                            )
                        })?;
                        Self::default_bank(&info).ok_or_else(|| {
                            Error::invalid_argument("the loaded xclbin has no memory bank for data")
                        })?
                    }
                };
                (open.device.create_bo(size, Some(bank))?, None)
            }
        };
        let device_address = bo.device_address();
        let size = bo.size();
        let bank = bo.bank();
        let id = self.fresh_id();
        self.allocations.insert(
            id,
            AllocationState {
                handle,
                bo,
                size,
                device_address,
                bank,
            },
        );
        Ok(Allocation {
            id,
            buffer,
            device_address,
        })
    }

    fn mem_free(&mut self, handle: u64, id: u64) -> Result<()> {
        self.allocation(id, handle)?;
        self.allocations.remove(&id);
        Ok(())
    }

    fn program_create(&mut self, handle: u64, image: &Image) -> Result<u64> {
        let info = self.open_device(handle)?.device.load_xclbin(image)?;
        let id = self.fresh_id();
        self.programs.insert(
            id,
            ProgramState {
                handle,
                info,
                contexts: Vec::new(),
            },
        );
        Ok(id)
    }

    fn program_release(&mut self, program: u64) -> Result<()> {
        self.release_program(program)
    }

    fn kernel_get(&mut self, program: u64, name: &str) -> Result<u64> {
        let state = self
            .programs
            .get(&program)
            .ok_or_else(|| not_found("program", program))?;
        let meta = state
            .info
            .kernels
            .iter()
            .find(|k| k.name == name)
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = state.info.kernels.iter().map(|k| k.name.as_str()).collect();
                Error::not_found(format!(
                    "no kernel '{name}' in the program (kernels: {})",
                    names.join(", ")
                ))
            })?;
        let cus: Vec<u32> = state
            .info
            .compute_units
            .iter()
            .filter(|c| c.kernel == name)
            .map(|c| c.index)
            .collect();
        if cus.is_empty() {
            return Err(Error::not_found(format!(
                "kernel '{name}' has no compute unit"
            )));
        }
        let open = self.open_device(state.handle)?;
        let uuid = state.info.uuid;
        let mut opened = Vec::new();
        for cu in &cus {
            if !state.contexts.contains(cu) {
                open.device.open_context(uuid, *cu, false)?;
                opened.push(*cu);
            }
        }
        if let Some(state) = self.programs.get_mut(&program) {
            state.contexts.extend(opened);
        }
        let id = self.fresh_id();
        self.kernels.insert(id, KernelState { program, meta, cus });
        Ok(id)
    }

    fn queue_create(&mut self, handle: u64) -> Result<u64> {
        self.open_device(handle)?;
        let id = self.fresh_id();
        self.queues.insert(id, QueueState { handle, last: None });
        Ok(id)
    }

    fn queue_release(&mut self, queue: u64) -> Result<()> {
        self.queues
            .remove(&queue)
            .map(drop)
            .ok_or_else(|| not_found("queue", queue))
    }

    fn enqueue_memcpy(
        &mut self,
        queue: u64,
        dst: MemoryRange,
        src: MemoryRange,
        size: u64,
    ) -> Result<Event> {
        let handle = self.queue(queue)?.handle;
        let to = self.allocation(dst.allocation, handle)?;
        let from = self.allocation(src.allocation, handle)?;
        for (what, range, allocation) in [("destination", &dst, to), ("source", &src, from)] {
            if range
                .offset
                .checked_add(size)
                .is_none_or(|end| end > allocation.size)
            {
                return Err(Error::invalid_argument(format!(
                    "the {what}: {size} bytes at offset {} run past allocation {} of {} bytes",
                    range.offset, range.allocation, allocation.size
                )));
            }
        }
        let (device, after) = self.next_on(queue)?;
        let event = device.copy_bo(&to.bo, dst.offset, &from.bo, src.offset, size, &after)?;
        self.remember(queue, &event);
        Ok(event)
    }

    fn enqueue_launch(
        &mut self,
        queue: u64,
        kernel: u64,
        args: Vec<KernelArgument>,
        _size: LaunchSize,
    ) -> Result<Event> {
        let event = self.launch(queue, kernel, &args, false)?;
        self.remember(queue, &event);
        Ok(event)
    }

    /// The queue's last event is each launch's in turn, kept without a duplicate; only the
    /// batch's last is duplicated for the host.
    fn enqueue_launches(&mut self, queue: u64, launches: Vec<Launch>) -> Enqueued {
        let mut first = true;
        let (count, refused) = enqueue_in_turn(launches, |launch| {
            let in_batch = !std::mem::take(&mut first);
            let event = self.launch(queue, launch.kernel, &launch.args, in_batch)?;
            if let Some(state) = self.queues.get_mut(&queue) {
                state.last = Some(event);
            }
            Ok(())
        });
        let last = self
            .queues
            .get(&queue)
            .and_then(|state| state.last.as_ref())
            .filter(|_| count > 0)
            .map(Event::duplicate);
        Enqueued {
            count,
            last,
            refused,
        }
    }
}

accelhost_sdk::export_plugin!(XoclPlugin);

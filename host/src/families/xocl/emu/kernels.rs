//! The emulated card's own kernels: the WebAssembly module an xclbin carries, compiled when
//! the xclbin is loaded and checked against its metadata, and run in an instance whose only
//! memory holds the module's own pages and the buffer objects the launch's pointers name.
//!
//! The contract of a kernel module:
//! - it imports its memory (`env.memory`, 32-bit, not shared) and nothing else;
//! - it exports each kernel as a function of the kernel's arguments, in metadata order, with
//!   no results: a pointer is an `i32` offset into the memory, a scalar an `i32` or `f32`
//!   (4 bytes) or an `i64` or `f64` (8 bytes) or, larger, an `i32` pointer to a copy of
//!   its bytes, a local argument (OpenCL C's `__local`) the
//!   `i32` count of bytes the kernel gives itself.
//!
//! The memory of a launch is, in order: the module's own (the minimum it declares: stack and
//! data), then each buffer object a pointer argument falls in, whole and once however many
//! arguments point into it, then a copy of each value of more than 8 bytes (its parameter an
//! `i32` pointer to it). It cannot grow, so an access beyond the last buffer traps, as
//! does the end of the launch's deadline; either is that launch's error.
//!
//! A buffer is in the launch's memory one of two ways ([`Window`]): its own pages mapped in
//! (a bank's buffers, and host-only ones, of at least [`MAP_AT_LEAST`] bytes), so that the kernel reads and writes
//! the buffer itself and what it wrote before a trap stays written, as on hardware; or a copy,
//! copied back only when the kernel returned. Either way the launch's memory holds nothing
//! but the module's own memory, the buffers its arguments name and zeros.
//!
//! An instance that ran a launch to its end is kept (at most [`KEPT_INSTANCES`] per module,
//! the oldest of the client keeping the most going first, none holding more than
//! [`KEEP_AT_MOST`] beyond its mapped buffers) for the next launch of the same client over
//! the same buffers at the same places, so that
//! the page tables of its mapped buffers and its own pages stay filled between launches (a
//! fresh mapping faults on every page the kernel touches). A kept instance belongs to one
//! client: another client, other buffers, a trap or a failed launch start fresh. Its own
//! pages stay charged to the client's DMA budget while it is kept, and are given back when
//! the client closes or needs the room ([`KernelProgram::forget`]). What a kernel leaves in
//! its own memory (statics, `__local` arrays) is there at the next launch of a kept
//! instance, as an HLS kernel's statics are on hardware; a kernel cannot count on it.
//!
//! The compiled code of a loaded module is charged to the host budget of the client that
//! loaded it, for as long as the card keeps it.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use wasmtime::{
    Config, Engine, ExternType, Instance, Memory, MemoryType, Module, OptLevel, Store, StoreLimits,
    StoreLimitsBuilder, UpdateDeadline, Val, ValType,
};

use super::share_threads;
use crate::devices::{Budget, Charge, DmaMemory, lock};
use crate::families::xocl::xclbin::{ArgKind, KERNEL_ARGS_END, KernelMeta};

/// What a module exports when its kernels' work-groups may be run in several instances at
/// once: `(index, count)`, called before the kernel, makes the instance run the `index`th of
/// `count` shares of the launch's work-groups.
pub(crate) const SHARE_EXPORT: &str = "__accelhost_share";
/// The largest kernel module the card compiles: a bound on the load's compile time.
pub(super) const MAX_MODULE_BYTES: usize = 16 << 20;
/// The most memory a module may declare for itself (stack and data).
pub(crate) const MODULE_OWN_BYTES: u64 = MAX_OWN_PAGES * PAGE;
/// The same in 64 KiB pages.
const MAX_OWN_PAGES: u64 = 1024;
/// Every launch's memory is at most what a 32-bit memory addresses.
const MAX_PAGES: u64 = 1 << 16;
const PAGE: u64 = 1 << 16;
/// Buffers start on this boundary inside the memory, as device allocations would.
const BUFFER_ALIGN: u64 = 4096;
/// Values of more than 8 bytes start on this boundary (OpenCL's largest vector alignment).
const VALUE_ALIGN: u64 = 128;
/// Buffers of at least this many bytes are mapped into a launch's memory rather than copied:
/// below it, copying in and out costs less than mapping and unmapping.
pub(super) const MAP_AT_LEAST: u64 = 64 << 10;
/// A launch over mapped buffers of at least this many bytes in all runs its work-groups in
/// shares, each in an instance of its own on a core of its own, when its module lets it.
const SHARE_AT_LEAST: u64 = 1 << 20;
/// The most shares of one launch.
pub(super) const MAX_SHARES: usize = 8;
/// What a share stopped because another failed says (the launch reports the other's error).
const STOPPED: &str = "stopped: another share of the launch failed";
/// How often the deadline clock ticks.
const TICK: Duration = Duration::from_millis(5);
/// The most instances a module keeps between launches: one per share of a launch.
pub(super) const KEPT_INSTANCES: usize = MAX_SHARES;
/// An instance holding more than this beyond its mapped buffers (its own pages, copies of
/// host-only buffers) is not kept: twice the most a module's own memory may be.
pub(super) const KEEP_AT_MOST: u64 = 2 * MAX_OWN_PAGES * PAGE;

/// The engine every card's kernels share, with its deadline clock.
fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config
            .epoch_interruption(true)
            .cranelift_opt_level(OptLevel::Speed);
        let engine = Engine::new(&config).expect("the kernel engine's configuration is valid");
        let ticking = engine.weak();
        std::thread::Builder::new()
            .name("emu-kernel-clock".into())
            .spawn(move || {
                while let Some(engine) = ticking.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(TICK);
                }
            })
            .expect("spawning the kernel clock");
        engine
    })
}

/// An xclbin's kernels, compiled and checked.
pub(super) struct KernelProgram {
    module: Module,
    /// The compiled code's memory, charged to whoever loaded it.
    code: Option<Charge>,
    /// Pages the module declares for itself.
    own_pages: u64,
    /// The most pages its memory import accepts.
    max_pages: u64,
    /// Whether it exports [`SHARE_EXPORT`]: its work-groups may run in several instances.
    shareable: bool,
    /// Instances that ran a launch to its end, oldest first.
    kept: Mutex<Vec<Instantiated>>,
}

/// An instance of the module over a launch's memory, with what it was made for.
struct Instantiated {
    made_for: MadeFor,
    store: Store<StoreLimits>,
    memory: Memory,
    instance: Instance,
    /// The bytes of its memory beyond the mapped buffers.
    own_bytes: u64,
    /// Those bytes, charged to the launching client's budget.
    _charge: Option<Charge>,
}

/// What a launch's instance is made for: who launched, the memory's size, each window (the
/// shareable memory of a mapped one, its offset and length, and where it is placed) and the
/// share it runs. A launch may use a kept instance made for exactly the same.
struct MadeFor {
    client: u64,
    pages: u64,
    windows: Vec<(Option<Arc<DmaMemory>>, u64, u64, u64)>,
    share: Option<(u32, u32)>,
}

impl MadeFor {
    fn new(client: u64, layout: &Layout<'_>, share: Option<(u32, u32)>) -> MadeFor {
        let windows = layout
            .windows
            .iter()
            .zip(layout.placed)
            .map(|(window, &at)| match window {
                Window::Mapped {
                    memory,
                    offset,
                    len,
                } => (Some(memory.clone()), *offset, *len, at),
                Window::Copied { len } => (None, 0, *len, at),
            })
            .collect();
        MadeFor {
            client,
            pages: layout.pages,
            windows,
            share,
        }
    }

    fn same_as(&self, other: &MadeFor) -> bool {
        let same_window = |a: &(Option<Arc<DmaMemory>>, u64, u64, u64),
                           b: &(Option<Arc<DmaMemory>>, u64, u64, u64)| {
            let same_memory = match (&a.0, &b.0) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            same_memory && (a.1, a.2, a.3) == (b.1, b.2, b.3)
        };
        (self.client, self.pages, self.share) == (other.client, other.pages, other.share)
            && self.windows.len() == other.windows.len()
            && self
                .windows
                .iter()
                .zip(&other.windows)
                .all(|(a, b)| same_window(a, b))
    }
}

/// How a buffer a launch's pointers fall in is in the launch's memory.
pub(super) enum Window {
    /// The buffer's own pages (`len` bytes from `offset` of a shareable `memory`), mapped in.
    Mapped {
        memory: Arc<DmaMemory>,
        offset: u64,
        len: u64,
    },
    /// A copy of `len` bytes, filled before the kernel runs and written back when it returned.
    Copied { len: u64 },
}

impl Window {
    fn len(&self) -> u64 {
        match self {
            Window::Mapped { len, .. } | Window::Copied { len } => *len,
        }
    }
}

/// An argument of a launch, as the compute unit's registers hold it.
pub(super) enum LaunchArg {
    /// A pointer: the window it falls in and its offset there; `None` for a null pointer.
    Pointer(Option<(usize, u64)>),
    /// A scalar's bits.
    Scalar(u64),
    /// A value of more than 8 bytes (an OpenCL C vector or struct): the kernel gets a pointer
    /// to a copy in its memory.
    Bytes(Vec<u8>),
}

impl KernelProgram {
    /// Compiles a kernel module and checks it against `kernels`.
    pub fn compile<'a>(
        image: &[u8],
        kernels: impl IntoIterator<Item = &'a KernelMeta>,
    ) -> Result<Self, String> {
        if image.len() > MAX_MODULE_BYTES {
            return Err(format!(
                "the kernel module is {} bytes; the emulated card compiles at most {MAX_MODULE_BYTES}",
                image.len()
            ));
        }
        let module = Module::new(engine(), image)
            .map_err(|e| format!("the kernel module does not compile: {e:#}"))?;
        let mut memory = None;
        for import in module.imports() {
            match import.ty() {
                ExternType::Memory(ty)
                    if (import.module(), import.name()) == ("env", "memory")
                        && !ty.is_64()
                        && !ty.is_shared() =>
                {
                    memory = Some(ty);
                }
                other => {
                    return Err(format!(
                        "the kernel module imports {}.{} ({}): a kernel may import only its \
                         memory (env.memory, 32-bit, not shared)",
                        import.module(),
                        import.name(),
                        extern_kind(&other)
                    ));
                }
            }
        }
        let memory = memory.ok_or(
            "the kernel module defines its own memory: link it with --import-memory, so that \
             the card gives each launch its memory",
        )?;
        if memory.minimum() > MAX_OWN_PAGES {
            return Err(format!(
                "the kernel module asks for {} pages of its own memory; the card gives at most \
                 {MAX_OWN_PAGES} (64 MiB)",
                memory.minimum()
            ));
        }
        let shareable = matches!(
            module.get_export(SHARE_EXPORT),
            Some(ExternType::Func(func))
                if func.params().map(|p| p.to_string()).eq(["i32", "i32"])
                    && func.results().len() == 0
        );
        let program = KernelProgram {
            shareable,
            code: None,
            own_pages: memory.minimum(),
            max_pages: memory.maximum().unwrap_or(MAX_PAGES).min(MAX_PAGES),
            module,
            kept: Mutex::new(Vec::new()),
        };
        for kernel in kernels {
            program.check(kernel)?;
        }
        Ok(program)
    }

    /// The bytes of the compiled code.
    pub fn code_bytes(&self) -> u64 {
        let code = self.module.image_range();
        code.end.addr().saturating_sub(code.start.addr()) as u64
    }

    /// Charges the compiled code to `budget` (refused when it does not fit): code is mapped
    /// memory the host holds for as long as the card keeps the program.
    pub fn charge_to(&mut self, budget: &Arc<Budget>) -> std::io::Result<()> {
        let charge = budget.charge_unseen(self.code_bytes()).map_err(|over| {
            std::io::Error::new(
                std::io::ErrorKind::OutOfMemory,
                format!("the compiled kernel module does not fit: {over}"),
            )
        })?;
        self.code = Some(charge);
        Ok(())
    }

    /// Whether `budget` pays for the compiled code.
    pub fn is_charged_to(&self, budget: &Arc<Budget>) -> bool {
        self.code.as_ref().is_some_and(|c| c.is_against(budget))
    }

    /// `kernel`'s export has a parameter of the right type for each argument.
    fn check(&self, kernel: &KernelMeta) -> Result<(), String> {
        let name = &kernel.name;
        if kernel.args_end() > KERNEL_ARGS_END {
            return Err(format!(
                "kernel '{name}': its arguments end at register {:#x}, past the compute unit's \
                 {KERNEL_ARGS_END:#x}",
                kernel.args_end()
            ));
        }
        let Some(ExternType::Func(func)) = self.module.get_export(name) else {
            return Err(format!(
                "the kernel module exports no function '{name}' (a C++ kernel needs extern \"C\")"
            ));
        };
        if func.results().len() != 0 {
            return Err(format!(
                "kernel '{name}' returns a value; a kernel returns nothing"
            ));
        }
        let params: Vec<ValType> = func.params().collect();
        if params.len() != kernel.args.len() {
            return Err(format!(
                "kernel '{name}' takes {} parameter(s) in the module but has {} argument(s) in the \
                 metadata",
                params.len(),
                kernel.args.len()
            ));
        }
        for (arg, param) in kernel.args.iter().zip(&params) {
            let fits = matches!(
                (arg.kind, arg.size, param),
                (ArgKind::Global, _, ValType::I32)
                    | (ArgKind::Scalar, 4, ValType::I32 | ValType::F32)
                    | (ArgKind::Local, 4, ValType::I32)
                    | (ArgKind::Scalar, 8, ValType::I64 | ValType::F64)
                    | (ArgKind::Scalar, 9.., ValType::I32)
            );
            if !fits {
                return Err(format!(
                    "kernel '{name}' argument '{}' ({:?}, {} bytes) is a {param} in the module",
                    arg.name, arg.kind, arg.size
                ));
            }
        }
        Ok(())
    }

    /// Runs `kernel` once for `client` with `args` (in metadata order) over `windows`, the
    /// memory it adds charged to `budget` while it runs or its instance is kept, within
    /// `deadline`. `fill` writes each copied window's bytes in; when the kernel returned,
    /// `write_back` gets them as the kernel left them (both in the order of `windows`,
    /// copied ones only).
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        kernel: &str,
        client: u64,
        windows: &[Window],
        args: &[LaunchArg],
        budget: Option<&Arc<Budget>>,
        deadline: Duration,
        fill: impl FnOnce(&mut [&mut [u8]]) -> Result<(), String>,
        write_back: impl FnOnce(&[&[u8]]) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut placed = Vec::with_capacity(windows.len());
        let mut end = self.own_pages * PAGE;
        for window in windows {
            let at = end.next_multiple_of(BUFFER_ALIGN);
            placed.push(at);
            end = at.saturating_add(window.len());
        }
        let mut copied_at = Vec::new();
        let mut copied_lens = Vec::new();
        let mut mapped_bytes = 0;
        for (window, &at) in windows.iter().zip(&placed) {
            match window {
                Window::Copied { len } => {
                    copied_at.push(at);
                    copied_lens.push(*len);
                }
                Window::Mapped { len, .. } => mapped_bytes += len,
            }
        }
        let mut values = Vec::new();
        for arg in args {
            if let LaunchArg::Bytes(bytes) = arg {
                let at = end.next_multiple_of(VALUE_ALIGN);
                values.push((bytes.as_slice(), at));
                end = at + bytes.len() as u64;
            }
        }
        let pages = end.div_ceil(PAGE).max(self.own_pages);
        if pages > self.max_pages {
            return Err(format!(
                "its buffers need {end} bytes of kernel memory; a kernel addresses at most {}",
                self.max_pages * PAGE
            ));
        }
        let shares = if copied_at.is_empty() {
            self.shares_for(mapped_bytes)
        } else {
            1
        };
        // Mapped buffers are memory the card holds already; each instance has the rest.
        let own_bytes = (pages * PAGE).saturating_sub(mapped_bytes);
        let mut values_placed = values.iter().map(|(_, at)| at);
        let params: Vec<Val> = args
            .iter()
            .zip(self.param_types(kernel))
            .map(|(arg, ty)| match arg {
                LaunchArg::Bytes(_) => {
                    Val::I32(*values_placed.next().expect("placed above") as u32 as i32)
                }
                LaunchArg::Pointer(None) => Val::I32(0),
                LaunchArg::Pointer(Some((window, offset))) => {
                    Val::I32((placed[*window] + offset) as u32 as i32)
                }
                LaunchArg::Scalar(bits) => match ty {
                    ValType::F32 => Val::F32(*bits as u32),
                    ValType::F64 => Val::F64(*bits),
                    ValType::I64 => Val::I64(*bits as i64),
                    _ => Val::I32(*bits as u32 as i32),
                },
            })
            .collect();
        let layout = Layout {
            pages,
            windows,
            placed: &placed,
            values: &values,
            ends: Instant::now() + deadline,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let ready = |share| self.instance_for(client, &layout, share, budget, own_bytes, &stop);
        if shares == 1 {
            let mut made = ready(None)?;
            fill(&mut private_windows(
                &mut made.store,
                made.memory,
                &copied_at,
                &copied_lens,
            ))?;
            self.run(&mut made, kernel, &params, None)?;
            let views: Vec<&[u8]> =
                private_windows(&mut made.store, made.memory, &copied_at, &copied_lens)
                    .into_iter()
                    .map(|w| &*w)
                    .collect();
            write_back(&views)?;
            self.keep(made);
            return Ok(());
        }
        fill(&mut [])?;
        let run_share = |index: u32| {
            let share = Some((index, shares));
            let ran = ready(share).and_then(|mut made| {
                self.run(&mut made, kernel, &params, share)?;
                self.keep(made);
                Ok(())
            });
            if ran.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            ran
        };
        let outcomes: Vec<Result<(), String>> = share_threads::run(shares, &run_share)
            .into_iter()
            .map(|o| o.unwrap_or_else(|_| Err("a share of the launch panicked".to_owned())))
            .collect();
        // The first share's own failure, not another's stopping because of it.
        let failed = outcomes.iter().filter_map(|o| o.as_ref().err());
        if let Some(why) = failed
            .clone()
            .find(|why| !why.contains(STOPPED))
            .or(failed.clone().next())
        {
            return Err(why.clone());
        }
        write_back(&[])
    }

    /// An instance for `share` of the launch `layout` describes, ending at its deadline or
    /// when `stop` is set, its values written: one kept for exactly that, or else a fresh one
    /// whose `own_bytes` are charged to `budget` (after dropping the client's other kept
    /// instances, when that makes the room).
    fn instance_for(
        &self,
        client: u64,
        layout: &Layout<'_>,
        share: Option<(u32, u32)>,
        budget: Option<&Arc<Budget>>,
        own_bytes: u64,
        stop: &Arc<AtomicBool>,
    ) -> Result<Instantiated, String> {
        let made_for = MadeFor::new(client, layout, share);
        let kept = {
            let mut kept = lock(&self.kept);
            let found = kept.iter().position(|k| k.made_for.same_as(&made_for));
            found.map(|at| kept.remove(at))
        };
        let mut made = match kept {
            Some(made) => made,
            None => {
                let charge = |budget: &Arc<Budget>| budget.charge(own_bytes);
                let charge = match budget.map(charge).transpose() {
                    Err(_) if self.forget(client) => budget.map(charge).transpose(),
                    charged => charged,
                }
                .map_err(|e| format!("its kernel memory of {own_bytes} bytes: {e}"))?;
                let (mut store, memory) = layout.memory()?;
                layout.arm(&mut store, stop);
                let instance = Instance::new(&mut store, &self.module, &[memory.into()])
                    .map_err(|e| format!("instantiating the kernel: {}", trap_text(&e)))?;
                Instantiated {
                    made_for,
                    store,
                    memory,
                    instance,
                    own_bytes,
                    _charge: charge,
                }
            }
        };
        layout.arm(&mut made.store, stop);
        layout.write_values(&mut made.store, made.memory);
        Ok(made)
    }

    /// Keeps an instance that ran a launch to its end for the next launch made for the same;
    /// past [`KEPT_INSTANCES`], the oldest of the client that keeps the most goes, so that a
    /// client launching over ever other buffers does not push out another's instances. One
    /// holding more than [`KEEP_AT_MOST`] goes at once.
    fn keep(&self, made: Instantiated) {
        if made.own_bytes > KEEP_AT_MOST {
            return;
        }
        let dropped = {
            let mut kept = lock(&self.kept);
            kept.push(made);
            (kept.len() > KEPT_INSTANCES).then(|| {
                let kept_by = |k: &Instantiated| {
                    let client = k.made_for.client;
                    kept.iter().filter(|k| k.made_for.client == client).count()
                };
                let most = kept.iter().map(kept_by).max();
                let oldest = kept
                    .iter()
                    .position(|k| Some(kept_by(k)) == most)
                    .expect("more than KEPT_INSTANCES are kept");
                kept.remove(oldest)
            })
        };
        // Unmapped outside the lock.
        drop(dropped);
    }

    /// Drops the instances kept for `client` (giving back their memory); whether there were
    /// any.
    pub fn forget(&self, client: u64) -> bool {
        let forgotten: Vec<Instantiated> = {
            let mut kept = lock(&self.kept);
            let (forgotten, others) = std::mem::take(&mut *kept)
                .into_iter()
                .partition(|k| k.made_for.client == client);
            *kept = others;
            forgotten
        };
        !forgotten.is_empty()
    }

    /// How many instances the module keeps now.
    #[cfg(test)]
    pub fn kept_instances(&self) -> usize {
        lock(&self.kept).len()
    }

    /// How many shares to run a launch over buffers of `mapped_bytes` in: one, unless the
    /// module lets its work-groups be shared and the launch is large.
    fn shares_for(&self, mapped_bytes: u64) -> u32 {
        if !self.shareable || mapped_bytes < SHARE_AT_LEAST {
            return 1;
        }
        static CORES: OnceLock<u32> = OnceLock::new();
        *CORES.get_or_init(|| {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_SHARES) as u32)
        })
    }

    /// Whether a launch over mappable buffers of `bytes` in all maps every one of them (so
    /// that its work-groups can be shared), whatever their size.
    pub fn maps_all_of(&self, bytes: u64) -> bool {
        self.shares_for(bytes) > 1
    }

    /// Runs `kernel` with `params` in `made`, only the `share` of its work-groups given.
    fn run(
        &self,
        made: &mut Instantiated,
        kernel: &str,
        params: &[Val],
        share: Option<(u32, u32)>,
    ) -> Result<(), String> {
        let (store, instance) = (&mut made.store, made.instance);
        if let Some((index, count)) = share {
            let set_share = instance
                .get_typed_func::<(u32, u32), ()>(&mut *store, SHARE_EXPORT)
                .map_err(|e| format!("the kernel module's {SHARE_EXPORT}: {e:#}"))?;
            set_share
                .call(&mut *store, (index, count))
                .map_err(|e| trap_text(&e))?;
        }
        let func = instance
            .get_func(&mut *store, kernel)
            .ok_or_else(|| format!("the kernel module exports no function '{kernel}'"))?;
        func.call(&mut *store, params, &mut [])
            .map_err(|e| trap_text(&e))
    }

    fn param_types(&self, kernel: &str) -> Vec<ValType> {
        match self.module.get_export(kernel) {
            Some(ExternType::Func(func)) => func.params().collect(),
            _ => Vec::new(),
        }
    }
}

/// Where everything is in the memory of a launch (each share's alike), and when it ends.
struct Layout<'a> {
    pages: u64,
    windows: &'a [Window],
    placed: &'a [u64],
    /// Values of more than 8 bytes and where they go.
    values: &'a [(&'a [u8], u64)],
    ends: Instant,
}

impl Layout<'_> {
    /// A store for one instance of the launch and its memory, the mapped buffers in place;
    /// copied buffers are the caller's to fill.
    fn memory(&self) -> Result<(Store<StoreLimits>, Memory), String> {
        let pages = self.pages;
        let limits = StoreLimitsBuilder::new()
            .memory_size((pages * PAGE) as usize)
            .memories(1)
            .instances(1)
            .tables(8)
            .table_elements(1 << 20)
            .build();
        let mut store = Store::new(engine(), limits);
        store.limiter(|limits: &mut StoreLimits| limits);
        let memory = Memory::new(
            &mut store,
            MemoryType::new(pages as u32, Some(pages as u32)),
        )
        .map_err(|e| format!("its memory of {pages} pages: {e:#}"))?;
        let base = NonNull::new(memory.data_ptr(&store)).expect("a memory of at least a page");
        for (window, &at) in self.windows.iter().zip(self.placed) {
            if let Window::Mapped {
                memory: buffer,
                offset,
                len,
            } = window
            {
                // SAFETY: the window lies inside this instance's memory, which only its
                // store uses, never as Rust memory; the store is dropped, unmapping it,
                // before its bank (which the store's key holds) is.
                unsafe { buffer.map_pages_at(*offset, *len, base.add(at as usize)) }
                    .map_err(|e| format!("mapping a buffer of {len} bytes into its memory: {e}"))?;
            }
        }
        Ok((store, memory))
    }

    /// Makes the wasm `store` runs end at the launch's deadline, or when `stop` is set.
    fn arm(&self, store: &mut Store<StoreLimits>, stop: &Arc<AtomicBool>) {
        let (stop, ends) = (stop.clone(), self.ends);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if stop.load(Ordering::Relaxed) {
                Err(wasmtime::Error::msg(STOPPED))
            } else if Instant::now() >= ends {
                Err(wasmtime::Trap::Interrupt.into())
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
    }

    /// Copies the launch's values of more than 8 bytes into `memory`.
    fn write_values(&self, store: &mut Store<StoreLimits>, memory: Memory) {
        let (at, lens): (Vec<u64>, Vec<u64>) = self
            .values
            .iter()
            .map(|&(bytes, at)| (at, bytes.len() as u64))
            .unzip();
        let places = private_windows(store, memory, &at, &lens);
        for (place, &(bytes, _)) in places.into_iter().zip(self.values) {
            place.copy_from_slice(bytes);
        }
    }
}

/// The windows at `placed` of `lens` bytes in a launch's `memory` (in order, never
/// overlapping), which must be its own pages, never a mapped buffer's: only those are memory
/// no one else writes, that Rust may borrow.
fn private_windows<'a>(
    store: &'a mut Store<StoreLimits>,
    memory: Memory,
    placed: &[u64],
    lens: &[u64],
) -> Vec<&'a mut [u8]> {
    let size = memory.data_size(&*store) as u64;
    let base = memory.data_ptr(&*store);
    let mut consumed = 0;
    placed
        .iter()
        .zip(lens)
        .map(|(&at, &len)| {
            assert!(
                at >= consumed && at + len <= size,
                "windows in order, inside"
            );
            consumed = at + len;
            // SAFETY: in bounds and disjoint (checked above), of memory that lives as long
            // as the store this borrows, which runs no wasm meanwhile; the range is the
            // instance's own (the caller's contract), so nothing else aliases it.
            unsafe { std::slice::from_raw_parts_mut(base.add(at as usize), len as usize) }
        })
        .collect()
}

/// What a kernel's failure says: the trap (with the deadline named as such), without
/// wasmtime's backtrace of the guest.
fn trap_text(error: &wasmtime::Error) -> String {
    match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => "the kernel ran past its deadline".to_owned(),
        Some(trap) => format!("the kernel trapped: {trap}"),
        None => format!("{error:#}"),
    }
}

fn extern_kind(ty: &ExternType) -> &'static str {
    match ty {
        ExternType::Func(_) => "a function",
        ExternType::Global(_) => "a global",
        ExternType::Table(_) => "a table",
        ExternType::Memory(_) => "a memory",
        ExternType::Tag(_) => "a tag",
    }
}

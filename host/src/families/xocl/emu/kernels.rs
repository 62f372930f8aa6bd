//! The emulated card's own kernels: the WebAssembly module an xclbin carries, compiled when
//! the xclbin is loaded and checked against its metadata, and run in a fresh instance per
//! launch whose only memory holds copies of the buffer objects the launch's pointers name.
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
//! does the end of the launch's deadline; either is that launch's error. Buffers are copied
//! back only when the kernel returned.
//!
//! The compiled code of a loaded module is charged to the host budget of the client that
//! loaded it, for as long as the card keeps it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use wasmtime::{
    Config, Engine, ExternType, Instance, Memory, MemoryType, Module, OptLevel, Store, StoreLimits,
    StoreLimitsBuilder, Val, ValType,
};

use crate::devices::{Budget, Charge};
use crate::families::xocl::xclbin::{ArgKind, KERNEL_ARGS_END, KernelMeta};

/// The largest kernel module the card compiles: a bound on the load's compile time.
pub(super) const MAX_MODULE_BYTES: usize = 16 << 20;
/// The most memory a module may declare for itself (stack and data), in 64 KiB pages.
const MAX_OWN_PAGES: u64 = 1024;
/// Every launch's memory is at most what a 32-bit memory addresses.
const MAX_PAGES: u64 = 1 << 16;
const PAGE: u64 = 1 << 16;
/// Buffers start on this boundary inside the memory, as device allocations would.
const BUFFER_ALIGN: u64 = 4096;
/// Values of more than 8 bytes start on this boundary (OpenCL's largest vector alignment).
const VALUE_ALIGN: u64 = 128;
/// How often the deadline clock ticks.
const TICK: Duration = Duration::from_millis(5);

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
        let program = KernelProgram {
            code: None,
            own_pages: memory.minimum(),
            max_pages: memory.maximum().unwrap_or(MAX_PAGES).min(MAX_PAGES),
            module,
        };
        for kernel in kernels {
            program.check(kernel)?;
        }
        Ok(program)
    }

    /// Charges the compiled code to `budget` (refused when it does not fit): code is mapped
    /// memory the host holds for as long as the card keeps the program.
    pub fn charge_to(&mut self, budget: &Arc<Budget>) -> std::io::Result<()> {
        let code = self.module.image_range();
        let bytes = code.end.addr().saturating_sub(code.start.addr()) as u64;
        let charge = budget.charge_unseen(bytes).map_err(|over| {
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

    /// Runs `kernel` once with `args` (in metadata order) over windows of `window_lens`
    /// bytes, its memory charged to `budget` while it runs, within `deadline`. `fill` writes
    /// each window's bytes in; when the kernel returned, `write_back` gets them as the
    /// kernel left them.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &self,
        kernel: &str,
        window_lens: &[u64],
        args: &[LaunchArg],
        budget: Option<&Arc<Budget>>,
        deadline: Duration,
        fill: impl FnOnce(&mut [&mut [u8]]) -> Result<(), String>,
        write_back: impl FnOnce(&[&[u8]]) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut placed = Vec::with_capacity(window_lens.len());
        let mut end = self.own_pages * PAGE;
        for len in window_lens {
            let at = end.next_multiple_of(BUFFER_ALIGN);
            placed.push(at);
            end = at.saturating_add(*len);
        }
        let mut values_placed = Vec::new();
        for arg in args {
            if let LaunchArg::Bytes(bytes) = arg {
                let at = end.next_multiple_of(VALUE_ALIGN);
                values_placed.push(at);
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
        let bytes = pages * PAGE;
        let _charge = budget
            .map(|budget| budget.charge(bytes))
            .transpose()
            .map_err(|e| format!("its kernel memory of {bytes} bytes: {e}"))?;
        let limits = StoreLimitsBuilder::new()
            .memory_size((pages * PAGE) as usize)
            .memories(1)
            .instances(1)
            .tables(8)
            .table_elements(1 << 20)
            .build();
        let mut store = Store::new(engine(), limits);
        store.limiter(|limits: &mut StoreLimits| limits);
        store.set_epoch_deadline(deadline.as_millis().div_ceil(TICK.as_millis()) as u64 + 1);
        store.epoch_deadline_trap();
        let memory = Memory::new(
            &mut store,
            MemoryType::new(pages as u32, Some(pages as u32)),
        )
        .map_err(|e| format!("its memory of {pages} pages: {e:#}"))?;
        fill(&mut windows_of(
            memory.data_mut(&mut store),
            &placed,
            window_lens,
        ))?;
        let values = args.iter().filter_map(|arg| match arg {
            LaunchArg::Bytes(bytes) => Some(bytes),
            _ => None,
        });
        for (bytes, &at) in values.zip(&values_placed) {
            memory.data_mut(&mut store)[at as usize..][..bytes.len()].copy_from_slice(bytes);
        }
        let mut values_placed = values_placed.into_iter();
        let params: Vec<Val> = args
            .iter()
            .zip(self.param_types(kernel))
            .map(|(arg, ty)| match arg {
                LaunchArg::Bytes(_) => {
                    Val::I32(values_placed.next().expect("placed above") as u32 as i32)
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
        let instance = Instance::new(&mut store, &self.module, &[memory.into()])
            .map_err(|e| format!("instantiating the kernel: {}", trap_text(&e)))?;
        let func = instance
            .get_func(&mut store, kernel)
            .ok_or_else(|| format!("the kernel module exports no function '{kernel}'"))?;
        func.call(&mut store, &params, &mut [])
            .map_err(|e| trap_text(&e))?;
        let data = memory.data_mut(&mut store);
        let views: Vec<&[u8]> = windows_of(data, &placed, window_lens)
            .into_iter()
            .map(|w| &*w)
            .collect();
        write_back(&views)
    }

    fn param_types(&self, kernel: &str) -> Vec<ValType> {
        match self.module.get_export(kernel) {
            Some(ExternType::Func(func)) => func.params().collect(),
            _ => Vec::new(),
        }
    }
}

/// The windows at `placed` of `lens` bytes in a launch's memory (in order, never overlapping).
fn windows_of<'a>(mut data: &'a mut [u8], placed: &[u64], lens: &[u64]) -> Vec<&'a mut [u8]> {
    let mut consumed = 0;
    let mut windows = Vec::with_capacity(placed.len());
    for (&at, &len) in placed.iter().zip(lens) {
        let rest = std::mem::take(&mut data);
        let (_, rest) = rest.split_at_mut((at - consumed) as usize);
        let (window, rest) = rest.split_at_mut(len as usize);
        windows.push(window);
        data = rest;
        consumed = at + len;
    }
    windows
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

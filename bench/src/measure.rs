//! The measurements behind `accelhost bench` and `cargo bench`: accelhost's figures and their
//! baselines, taken in the same run, so that both measure the same code.

use std::ffi::c_void;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use accelhost::config::{Config, ConfigSource};
use accelhost::devices::{DmaMemory, MmioWindow, Owner};
use accelhost::families::dfl::{DflDevice, DflPort};
use accelhost::perf::{PluginBench, resident_bytes};
use accelhost::workloads::{nlb0, vadd};
use accelhost::{ComponentCache, Handle, Host, Kernel, Token};
pub use accelhost_native_plugin::abi;

/// How long and how often to measure.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Samples per figure; the median is reported.
    pub samples: usize,
    /// The time one sample of a per-call figure runs.
    pub sample_time: Duration,
    /// Samples of the long workloads (NLB0 64 MiB, vadd 16 Mi).
    pub workload_samples: usize,
}

impl Settings {
    /// A few seconds in all.
    pub fn quick() -> Self {
        Settings {
            samples: 5,
            sample_time: Duration::from_millis(20),
            workload_samples: 3,
        }
    }

    /// The figures of BENCHMARKS.md.
    pub fn full() -> Self {
        Settings {
            samples: 11,
            sample_time: Duration::from_millis(100),
            workload_samples: 7,
        }
    }
}

/// Nanoseconds for people: `7.8 ns`, `566 ns`, `15.8 µs`.
pub fn ns(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1} µs", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0} ns")
    } else {
        format!("{v:.1} ns")
    }
}

/// The median of `values` (NaN-free).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Nanoseconds per call of `f`: calibrated so that one sample runs about
/// `settings.sample_time`, then the median of `settings.samples` samples.
pub fn ns_per_call(settings: &Settings, mut f: impl FnMut()) -> f64 {
    let mut iters: u64 = 1;
    let per_call = loop {
        let started = Instant::now();
        for _ in 0..iters {
            f();
        }
        let elapsed = started.elapsed();
        if elapsed >= Duration::from_millis(2) || iters >= 1 << 30 {
            break elapsed.as_nanos() as f64 / iters as f64;
        }
        iters *= 2;
    };
    let iters = ((settings.sample_time.as_nanos() as f64 / per_call.max(0.1)) as u64).max(1);
    let mut samples: Vec<f64> = (0..settings.samples)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..iters {
                f();
            }
            started.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    median(&mut samples)
}

/// The median of `samples` runs of `f`, each returning its own figure.
pub fn median_of(samples: usize, mut f: impl FnMut() -> f64) -> f64 {
    let mut values: Vec<f64> = (0..samples.max(1)).map(|_| f()).collect();
    median(&mut values)
}

/// A workload and its baseline measured in turns, so that both see the same machine: the
/// memory bandwidth of a shared machine drifts by a third within seconds, more than the gap a
/// ratio row judges. Each of `samples` rounds measures both, the baseline first in every other
/// round; the result is the median of each and the median of the rounds' `ratio`s.
pub fn paired(
    samples: usize,
    mut baseline: impl FnMut() -> f64,
    mut measured: impl FnMut() -> f64,
    ratio: impl Fn(f64, f64) -> f64,
) -> Paired {
    let rounds = samples.max(1);
    let (mut baselines, mut values, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let (b, m) = if round % 2 == 0 {
            let b = baseline();
            (b, measured())
        } else {
            let m = measured();
            (baseline(), m)
        };
        baselines.push(b);
        values.push(m);
        ratios.push(ratio(m, b));
    }
    Paired {
        baseline: median(&mut baselines),
        measured: median(&mut values),
        ratio: median(&mut ratios),
    }
}

/// What [`paired`] found: the median of each side and of the per-round ratios.
#[derive(Debug, Clone, Copy)]
pub struct Paired {
    /// The baseline's median.
    pub baseline: f64,
    /// The workload's median.
    pub measured: f64,
    /// The median of the ratios of rounds (not the ratio of the medians).
    pub ratio: f64,
}

// ---------------------------------------------------------------------------------------------
// The native baseline plugin.

/// The native baseline plugin, loaded with `libloading`.
pub struct NativePlugin {
    // The table points into the library: keep it loaded while the table is used.
    api: &'static abi::NativePluginApi,
    _library: libloading::Library,
    /// Where it was loaded from.
    pub path: PathBuf,
}

/// One instance of the native plugin (`init` … `fini`).
pub struct NativeInstance<'a> {
    api: &'a abi::NativePluginApi,
    ctx: *mut c_void,
}

impl Drop for NativeInstance<'_> {
    fn drop(&mut self) {
        // SAFETY: `ctx` came from this table's `init` and is ended once.
        unsafe { (self.api.fini)(self.ctx) }
    }
}

/// Where to look for the native plugin: `explicit`, `$ACCELHOST_NATIVE_PLUGIN`, then next to
/// the running executable and its parent directory (target/<profile>/ for `cargo bench`).
pub fn native_plugin_candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    let mut list = Vec::new();
    if let Some(path) = explicit {
        list.push(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("ACCELHOST_NATIVE_PLUGIN") {
        list.push(PathBuf::from(path));
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(2) {
            list.push(dir.join(abi::LIBRARY_NAME));
        }
    }
    list
}

impl NativePlugin {
    /// Loads the native plugin from the first candidate that exists.
    pub fn find(explicit: Option<&Path>) -> Result<NativePlugin, String> {
        let candidates = native_plugin_candidates(explicit);
        let path = candidates.iter().find(|p| p.is_file()).ok_or_else(|| {
            format!(
                "the native baseline plugin was not found (looked at {}); build it with \
                 `cargo build --profile bench -p accelhost-native-plugin`",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        NativePlugin::load(path)
    }

    /// Loads the native plugin at `path`.
    pub fn load(path: &Path) -> Result<NativePlugin, String> {
        // SAFETY: the library is the native baseline plugin built from this workspace; its
        // initializers do nothing unusual.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
        // SAFETY: ENTRY_SYMBOL has type EntryFn (abi.rs is shared by both sides).
        let api = unsafe {
            let entry: libloading::Symbol<'_, abi::EntryFn> = library
                .get(abi::ENTRY_SYMBOL)
                .map_err(|e| format!("{} is not the native plugin: {e}", path.display()))?;
            let table = entry();
            if table.is_null() || (*table).abi_version != abi::ABI_VERSION {
                return Err(format!(
                    "{} speaks another ABI version than {}",
                    path.display(),
                    abi::ABI_VERSION
                ));
            }
            &*table
        };
        Ok(NativePlugin {
            api,
            _library: library,
            path: path.to_path_buf(),
        })
    }

    /// A plugin instance on the devices of `config` (JSON).
    pub fn init(&self, config: &str) -> Result<NativeInstance<'_>, String> {
        // SAFETY: the pointer and length describe `config`.
        let ctx = unsafe { (self.api.init)(config.as_ptr(), config.len()) };
        if ctx.is_null() {
            return Err("the native plugin refused its config".into());
        }
        Ok(NativeInstance { api: self.api, ctx })
    }

    /// One instance per plugin of [`config_of_plugins`]`(plugins, ports)`, on the same devices.
    pub fn init_plugins(
        &self,
        plugins: usize,
        ports: usize,
    ) -> Result<Vec<NativeInstance<'_>>, String> {
        (0..plugins)
            .map(|p| self.init(&native_config(p, ports)))
            .collect()
    }
}

impl NativeInstance<'_> {
    /// Every token.
    pub fn enumerate(&self) -> Vec<u64> {
        // SAFETY: a null buffer with capacity 0 only counts.
        let n = unsafe { (self.api.enumerate)(self.ctx, std::ptr::null_mut(), 0) };
        let mut tokens = vec![0u64; n];
        // SAFETY: `tokens` has room for `n`.
        unsafe { (self.api.enumerate)(self.ctx, tokens.as_mut_ptr(), n) };
        tokens
    }

    /// Enumerates, and reads every device's properties, as a host enumerating does.
    pub fn enumerate_with_properties(&self) -> Vec<(u64, abi::NativeProperties)> {
        self.enumerate()
            .into_iter()
            .map(|t| (t, self.properties(t)))
            .collect()
    }

    /// The properties of `token`.
    #[inline]
    pub fn properties(&self, token: u64) -> abi::NativeProperties {
        let mut out = abi::NativeProperties::default();
        // SAFETY: `out` is a valid destination.
        unsafe { (self.api.properties)(self.ctx, token, &mut out) };
        out
    }

    /// Opens `token` exclusively.
    pub fn open(&self, token: u64) -> u64 {
        let mut handle = 0;
        // SAFETY: `handle` is a valid destination.
        let rc = unsafe { (self.api.open)(self.ctx, token, 1, &mut handle) };
        assert_eq!(rc, 0, "native open failed: errno {rc}");
        handle
    }

    /// Closes `handle`.
    pub fn close(&self, handle: u64) {
        // SAFETY: plain values.
        unsafe { (self.api.close)(self.ctx, handle) };
    }

    /// Resets the accelerator of `handle`.
    pub fn reset(&self, handle: u64) {
        // SAFETY: plain values.
        unsafe { (self.api.reset)(self.ctx, handle) };
    }

    /// Maps MMIO region 0 of `handle`.
    pub fn map_mmio(&self, handle: u64) -> NativeRegion<'_> {
        let mut region = std::ptr::null_mut();
        // SAFETY: `region` is a valid destination.
        let rc = unsafe { (self.api.map_mmio)(self.ctx, handle, 0, &mut region) };
        assert_eq!(rc, 0, "native map_mmio failed: errno {rc}");
        NativeRegion {
            api: self.api,
            region,
        }
    }
}

/// An MMIO region of the native plugin.
pub struct NativeRegion<'a> {
    api: &'a abi::NativePluginApi,
    region: *mut c_void,
}

impl NativeRegion<'_> {
    /// Reads the 64-bit register at `offset`.
    #[inline]
    pub fn read64(&self, offset: u64) -> u64 {
        let mut value = 0;
        // SAFETY: `region` came from `map_mmio`.
        unsafe { (self.api.mmio_read64)(self.region, offset, &mut value) };
        value
    }

    /// Writes the 64-bit register at `offset`.
    #[inline]
    pub fn write64(&self, offset: u64, value: u64) {
        // SAFETY: `region` came from `map_mmio`.
        unsafe { (self.api.mmio_write64)(self.region, offset, value) };
    }
}

impl Drop for NativeRegion<'_> {
    fn drop(&mut self) {
        // SAFETY: `region` came from `map_mmio` and is freed once.
        unsafe { (self.api.unmap_mmio)(self.region) }
    }
}

// ---------------------------------------------------------------------------------------------
// The floor: raw wasmtime, the emulator, memcpy, a syscall.

/// A no-op component (`f: func(x: u64) -> u64`, returning `x`), built with wasm-encoder.
pub fn noop_component() -> Vec<u8> {
    use wasm_encoder::{
        Alias, CanonicalFunctionSection, CodeSection, Component, ComponentAliasSection,
        ComponentExportKind, ComponentExportSection, ComponentTypeSection, ExportKind,
        ExportSection, Function, FunctionSection, InstanceSection, Instruction, Module, ModuleArg,
        ModuleSection, PrimitiveValType, TypeSection, ValType,
    };
    let mut module = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([ValType::I64], [ValType::I64]);
    module.section(&types);
    let mut functions = FunctionSection::new();
    functions.function(0);
    module.section(&functions);
    let mut exports = ExportSection::new();
    exports.export("f", ExportKind::Func, 0);
    module.section(&exports);
    let mut code = CodeSection::new();
    let mut body = Function::new([]);
    body.instruction(&Instruction::LocalGet(0));
    body.instruction(&Instruction::End);
    code.function(&body);
    module.section(&code);

    let mut component = Component::new();
    component.section(&ModuleSection(&module));
    let mut instances = InstanceSection::new();
    instances.instantiate(0, std::iter::empty::<(&str, ModuleArg)>());
    component.section(&instances);
    let mut aliases = ComponentAliasSection::new();
    aliases.alias(Alias::CoreInstanceExport {
        instance: 0,
        kind: ExportKind::Func,
        name: "f",
    });
    component.section(&aliases);
    let mut types = ComponentTypeSection::new();
    types
        .function()
        .params([("x", PrimitiveValType::U64)])
        .result(Some(PrimitiveValType::U64.into()));
    component.section(&types);
    let mut canon = CanonicalFunctionSection::new();
    canon.lift(0, 0, []);
    component.section(&canon);
    let mut exports = ComponentExportSection::new();
    exports.export("f", ComponentExportKind::Func, 0, None);
    component.section(&exports);
    component.finish()
}

/// A raw wasmtime component, instantiated on an engine configured as accelhost's (component
/// model, epoch interruption, no component-model concurrency), with its `f` ready to call.
pub struct RawComponent {
    store: wasmtime::Store<()>,
    func: wasmtime::component::TypedFunc<(u64,), (u64,)>,
}

impl RawComponent {
    /// Compiles and instantiates the no-op component.
    pub fn new() -> wasmtime::Result<RawComponent> {
        let mut config = wasmtime::Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .concurrency_support(false);
        let engine = wasmtime::Engine::new(&config)?;
        let component = wasmtime::component::Component::new(&engine, noop_component())?;
        let linker = wasmtime::component::Linker::<()>::new(&engine);
        let mut store = wasmtime::Store::new(&engine, ());
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = linker.instantiate(&mut store, &component)?;
        let func = instance.get_typed_func::<(u64,), (u64,)>(&mut store, "f")?;
        Ok(RawComponent { store, func })
    }

    /// One call host→guest.
    #[inline]
    pub fn call(&mut self, x: u64) -> u64 {
        self.func.call(&mut self.store, (x,)).expect("noop call").0
    }
}

/// An emulated NLB0 port opened directly, with its MMIO window: the floor for MMIO.
pub struct DirectEmulator {
    _port: Box<dyn DflPort>,
    _device: Arc<dyn DflDevice>,
    /// The AFU's register window, as the emulator hands it out.
    pub window: Arc<dyn MmioWindow>,
}

impl DirectEmulator {
    /// A fresh emulated port, opened exclusively, region 0 mapped.
    pub fn open() -> DirectEmulator {
        let config = Config::parse(
            r#"{"devices": [{"id": "direct0", "family": "dfl"}], "plugins": []}"#,
            ConfigSource::Embedded,
        )
        .expect("a one-card config");
        let device = accelhost::builtin::emulated(&config.devices[0])
            .get::<dyn DflDevice>("emu:direct0")
            .expect("the emulated port");
        let port = device
            .open(true, &Owner::unlimited())
            .expect("opening an emulated port");
        let window = port.map_region(0).expect("mapping the AFU region");
        DirectEmulator {
            _port: port,
            _device: device,
            window,
        }
    }
}

/// A trivial `ioctl` on this machine: `FIONREAD` on a pipe.
pub struct Ioctl {
    fds: [i32; 2],
}

impl Ioctl {
    /// A pipe to ask.
    pub fn on_a_pipe() -> Ioctl {
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for two descriptors.
        let rc = unsafe { libc::pipe(fds.as_mut_ptr()) };
        assert_eq!(rc, 0, "pipe failed");
        Ioctl { fds }
    }

    /// One `ioctl(FIONREAD)`.
    #[inline]
    pub fn call(&self) -> i32 {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int.
        unsafe { libc::ioctl(self.fds[0], libc::FIONREAD, &mut n) };
        n
    }
}

impl Drop for Ioctl {
    fn drop(&mut self) {
        // SAFETY: the descriptors are ours.
        unsafe {
            libc::close(self.fds[0]);
            libc::close(self.fds[1]);
        }
    }
}

/// memcpy bandwidth in GB/s for `bytes`, between two buffers allocated as DMA buffers are
/// (anonymous mappings, transparent huge pages from 2 MiB, populated), so that the baseline
/// and the device copy the same kind of memory.
pub fn memcpy_gbps(settings: &Settings, bytes: u64) -> f64 {
    let memcpy = Memcpy::new(bytes);
    bytes as f64 / ns_per_call(settings, || memcpy.copy())
}

/// The memcpy baseline: a source and a destination of `bytes` bytes, touched.
pub struct Memcpy {
    src: Arc<DmaMemory>,
    dst: Arc<DmaMemory>,
    bytes: u64,
}

impl Memcpy {
    /// Allocates and fills both buffers.
    pub fn new(bytes: u64) -> Memcpy {
        let owner = Owner::unlimited();
        let src = DmaMemory::allocate(bytes, owner.id, &owner.dma, false).expect("memory");
        let dst = DmaMemory::allocate(bytes, owner.id, &owner.dma, false).expect("memory");
        src.fill(0, bytes, 0xAF).expect("fill");
        dst.fill(0, bytes, 0xBE).expect("fill");
        Memcpy { src, dst, bytes }
    }

    /// GB/s of one timed copy; meant for buffers of megabytes, where one copy is a sample.
    pub fn gbps(&self) -> f64 {
        let started = Instant::now();
        self.copy();
        self.bytes as f64 / started.elapsed().as_nanos() as f64
    }

    /// One `memcpy` of every byte (not [`DmaMemory::copy_from`], which copies in steps).
    #[inline]
    pub fn copy(&self) {
        let (src, dst) = (black_box(&self.src), &self.dst);
        // SAFETY: both mappings are `bytes` long and live as long as `self`; they are
        // distinct allocations.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.user_address() as *const u8,
                dst.user_address() as *mut u8,
                self.bytes as usize,
            )
        };
    }
}

/// `len` zeroed `u32`s in an anonymous mapping with transparent huge pages, populated: the
/// memory the emulator's buffers get, for the native baselines.
pub struct HugeWords {
    ptr: *mut u32,
    len: usize,
}

impl HugeWords {
    /// Maps and populates `len` words.
    pub fn new(len: usize) -> HugeWords {
        let bytes = (len * 4).max(1);
        // SAFETY: an anonymous mapping with no address hint has no preconditions; the advice
        // calls cover exactly that mapping.
        let ptr = unsafe {
            let ptr = libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(ptr, libc::MAP_FAILED, "mmap failed");
            libc::madvise(ptr, bytes, libc::MADV_HUGEPAGE);
            libc::madvise(ptr, bytes, libc::MADV_POPULATE_WRITE);
            ptr.cast::<u32>()
        };
        HugeWords { ptr, len }
    }
}

impl std::ops::Deref for HugeWords {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        // SAFETY: the mapping holds `len` initialized (zeroed) words and lives as long as self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::ops::DerefMut for HugeWords {
    fn deref_mut(&mut self) -> &mut [u32] {
        // SAFETY: as for Deref, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HugeWords {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours and unmapped once.
        unsafe { libc::munmap(self.ptr.cast(), (self.len * 4).max(1)) };
    }
}

/// The native single-threaded vadd: host inputs copied to "device" buffers, the loop, the
/// output copied back. The buffers are allocated and touched once, so a run measures the
/// copies and the loop, not page faults (the strongest native baseline).
pub struct NativeVadd {
    in1: HugeWords,
    in2: HugeWords,
    out: HugeWords,
    d1: HugeWords,
    d2: HugeWords,
    d3: HugeWords,
}

impl NativeVadd {
    /// Buffers for `elements` elements, with the inputs of the canonical run.
    pub fn new(elements: usize) -> NativeVadd {
        let mut in1 = HugeWords::new(elements);
        let mut in2 = HugeWords::new(elements);
        for (i, (a, b)) in in1.iter_mut().zip(in2.iter_mut()).enumerate() {
            *a = vadd::in1(i as u32);
            *b = vadd::in2(i as u32);
        }
        NativeVadd {
            in1,
            in2,
            out: HugeWords::new(elements),
            d1: HugeWords::new(elements),
            d2: HugeWords::new(elements),
            d3: HugeWords::new(elements),
        }
    }

    /// One run, in seconds.
    pub fn run(&mut self) -> f64 {
        let started = Instant::now();
        self.d1.copy_from_slice(black_box(&self.in1));
        self.d2.copy_from_slice(black_box(&self.in2));
        for ((o, a), b) in self.d3.iter_mut().zip(self.d1.iter()).zip(self.d2.iter()) {
            *o = a.wrapping_add(*b);
        }
        self.out.copy_from_slice(black_box(&self.d3));
        let elapsed = started.elapsed().as_secs_f64();
        let last = self.out.len() - 1;
        assert_eq!(self.out[last], self.in1[last].wrapping_add(self.in2[last]));
        elapsed
    }
}

/// `dlopen` + `init` (no devices) of a fresh copy of the native plugin, so that the library
/// is really loaded (and relocated), not just referenced again: nanoseconds. The copy is
/// made before the clock starts.
pub fn native_start_ns(path: &Path, n: usize) -> f64 {
    let dir = std::env::temp_dir().join(format!("accelhost-bench-so-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let config = native_config(0, 0);
    let copy = dir.join(format!("{n}-{}", abi::LIBRARY_NAME));
    std::fs::copy(path, &copy).expect("copying the native plugin");
    let started = Instant::now();
    let loaded = NativePlugin::load(&copy).expect("native plugin");
    let instance = loaded.init(&config).expect("native init");
    let elapsed = started.elapsed().as_nanos() as f64;
    drop(instance);
    drop(loaded);
    let _ = std::fs::remove_file(&copy);
    let _ = std::fs::remove_dir(&dir);
    elapsed
}

// ---------------------------------------------------------------------------------------------
// accelhost itself.

/// The bench's own compile cache, so that "start from the on-disk cache" reads a cache this
/// run wrote.
pub fn bench_cache_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("accelhost-bench-cache-{}", std::process::id()));
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir);
    dir
}

/// A config of one emulated NLB0 port served by the dfl plugin, with room for 2 × 256 MiB of
/// DMA buffers, plus the embedded default's xocl card and plugin.
pub fn bench_config() -> Config {
    config_of_plugins(1, 1, true)
}

/// The declaration of port `d` of plugin `p`: an emulated NLB0 port.
fn nlb0_port(p: usize, d: usize) -> String {
    format!(r#"{{"id": "p{p}d{d}", "family": "dfl", "accelerator": "nlb0", "port_id": {d}}}"#)
}

/// `plugins` dfl plugins, each serving `ports` emulated NLB0 ports of its own; with `xocl`,
/// the XRT card and its plugin too.
pub fn config_of_plugins(plugins: usize, ports: usize, xocl: bool) -> Config {
    let mut devices = Vec::new();
    let mut entries = Vec::new();
    for p in 0..plugins {
        devices.extend((0..ports).map(|d| nlb0_port(p, d)));
        let name = if p == 0 {
            "dfl".to_string()
        } else {
            format!("dfl{p}")
        };
        entries.push(format!(
            r#"{{"name": "{name}", "module": "builtin:dfl",
                "grants": {{"devices": ["emu:p{p}d*"], "dma_memory_mib": 1024}}}}"#
        ));
    }
    if xocl {
        devices.push(r#"{"id": "xocl0", "family": "xocl"}"#.into());
        entries.push(
            r#"{"name": "xocl", "module": "builtin:xocl",
                "grants": {"devices": ["emu:xocl0"], "dma_memory_mib": 1024}}"#
                .into(),
        );
    }
    let text = format!(
        r#"{{"devices": [{}], "plugins": [{}]}}"#,
        devices.join(", "),
        entries.join(", ")
    );
    Config::parse(&text, ConfigSource::Embedded).expect("the bench config is valid")
}

/// The native plugin's config for `ports` ports of plugin `p` (the same device ids).
pub fn native_config(p: usize, ports: usize) -> String {
    let devices: Vec<String> = (0..ports).map(|d| nlb0_port(p, d)).collect();
    format!(r#"{{"devices": [{}], "plugins": []}}"#, devices.join(", "))
}

/// A host on [`bench_config`], its NLB0 token and its xocl token.
pub struct BenchHost {
    /// The host.
    pub host: Host,
    /// The first NLB0 port.
    pub nlb0: Token,
    /// The XRT card.
    pub xocl: Token,
}

impl BenchHost {
    /// Starts it with the bench's compile cache.
    pub fn start(cache: &Path) -> accelhost::Result<BenchHost> {
        BenchHost::start_counting(cache, true)
    }

    /// [`start`](Self::start), with per-call counting on or off.
    pub fn start_counting(cache: &Path, count_calls: bool) -> accelhost::Result<BenchHost> {
        let host = Host::builder()
            .config(bench_config())
            .cache_dir(cache)
            .count_calls(count_calls)
            .build()?;
        let found = host.enumerate(&[]);
        let nlb0 = found
            .tokens
            .iter()
            .find(|t| nlb0::is_nlb0(t))
            .cloned()
            .expect("the bench config has an NLB0 port");
        let xocl = found
            .tokens
            .iter()
            .find(|t| vadd::is_xocl(t))
            .cloned()
            .expect("the bench config has an XRT card");
        Ok(BenchHost { host, nlb0, xocl })
    }
}

/// A host on [`config_of_plugins`]`(plugins, ports)` with the bench's compile cache, checked
/// to enumerate every device.
pub fn enumeration_host(cache: &Path, plugins: usize, ports: usize) -> anyhow::Result<Host> {
    let host = Host::builder()
        .config(config_of_plugins(plugins, ports, false))
        .cache_dir(cache)
        .build()?;
    let expected = plugins * ports;
    let found = host.enumerate(&[]);
    anyhow::ensure!(
        found.tokens.len() == expected && found.failures.is_empty(),
        "enumerate found {} devices ({} failures), expected {expected}",
        found.tokens.len(),
        found.failures.len()
    );
    Ok(host)
}

/// The tiny launch of the demo: `to = from + one`, one element.
pub fn tiny_launch_latencies(
    handle: &Handle,
    kernel: &Kernel,
    launches: usize,
) -> accelhost::Result<Vec<f64>> {
    let chain = vadd::TinyLaunchChain::new(handle)?;
    let mut latencies = Vec::with_capacity(launches);
    for i in 0..launches as u64 {
        let started = Instant::now();
        chain.launch(kernel, i)?.wait()?;
        latencies.push(started.elapsed().as_nanos() as f64);
    }
    Ok(latencies)
}

/// `PluginBench` for the dfl plugin of [`bench_config`].
pub fn dfl_plugin_bench(cache: &Path) -> accelhost::Result<PluginBench> {
    PluginBench::new(
        &bench_config(),
        "dfl",
        ComponentCache::at(Some(cache.to_path_buf())),
    )
}

/// One instantiation of the loaded plugin (the drop of the instance is not timed).
pub fn time_instantiate(plugin: &PluginBench) -> Duration {
    let started = Instant::now();
    let instance = plugin.instantiate().expect("instantiate");
    let elapsed = started.elapsed();
    drop(instance);
    elapsed
}

/// One start of the plugin from the on-disk cache, as a fresh process would (the stop is not
/// timed).
pub fn time_start_from_disk(plugin: &PluginBench) -> Duration {
    accelhost::perf::forget_loaded();
    let started = Instant::now();
    let live = plugin.start().expect("plugin start");
    let elapsed = started.elapsed();
    drop(live);
    elapsed
}

/// How much resident memory `n` started instances of the plugin add, in bytes.
pub fn resident_of_started(plugin: &PluginBench, n: usize) -> u64 {
    let before = resident_bytes();
    let live: Vec<_> = (0..n)
        .map(|_| plugin.start().expect("plugin start"))
        .collect();
    let after = resident_bytes();
    drop(live);
    after.saturating_sub(before)
}

/// Loads vadd with 4 compute units on an open XRT card.
pub fn vadd_kernel(handle: &Handle) -> Kernel {
    vadd::load(handle, 4).expect("loading the vadd xclbin")
}

/// One NLB0 loopback of `bytes`, verified.
pub fn nlb0_loopback(handle: &Handle, bytes: u64) -> nlb0::LoopbackReport {
    let report = nlb0::loopback(handle, bytes).expect("nlb0 loopback");
    assert!(
        report.verified(),
        "nlb0 loopback of {bytes} bytes did not verify"
    );
    report
}

/// NLB0 loopback bandwidth of `bytes` in GB/s (device time), verified.
pub fn nlb0_gbps(handle: &Handle, bytes: u64) -> f64 {
    nlb0_loopback(handle, bytes).gigabytes_per_second()
}

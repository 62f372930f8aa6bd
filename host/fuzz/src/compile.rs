//! `compile`: crafted components through the real load path, with the compile limits as the
//! oracle. An input is a recipe (see [`component`]): a core module with one huge function, a
//! great many functions, a large data segment, a large table or a body of raw bytes, inside a
//! component; it is written to a file and named as a plugin beside the shipped dfl plugin, in
//! a host whose plugin files compile in a worker process (this target needs one: the `accelhost`
//! binary through `ACCELHOST_COMPILE_WORKER`, or a binary that calls
//! `accelhost::compile_worker::serve_if_asked()`, as `tests/compile.rs` does). Oracles:
//!
//! 1. the host never panics or aborts, and starts within [`COMPILE_TIMEOUT`] plus
//!    [`SLACK`], whatever the component does to the compiler;
//! 2. the crafted plugin fails to load (it is no plugin) with a reason, and the dfl plugin
//!    lists its port;
//! 3. the host's own resident memory never peaks higher above where it was than three times
//!    the component's size plus [`PEAK_CONSTANT`]: the compile's memory is the worker's,
//!    bounded by [`COMPILE_MEMORY_MIB`];
//! 4. no worker process outlives the start, and the compile cache gains no compiled entry
//!    (a refused component never leaves compiled code).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use accelhost::config::ConfigSource;
use accelhost::{Config, Host, PluginStatus};
use wasm_encoder::{
    BlockType, CodeSection, Component, ConstExpr, DataSection, ElementSection, Elements, Function,
    FunctionSection, Instruction, MemorySection, MemoryType, Module, ModuleSection, RawSection,
    RefType, TableSection, TableType, TypeSection, ValType,
};

/// The crafted plugin's `compile_timeout_ms`.
pub const COMPILE_TIMEOUT: Duration = Duration::from_millis(1500);
/// The crafted plugin's `compile_memory_mib`.
pub const COMPILE_MEMORY_MIB: u64 = 256;
/// How much later than the compile limit a start may end on a loaded machine: the worker's
/// start, the kill and the reap, the dfl plugin's start.
pub const SLACK: Duration = Duration::from_secs(10);
/// What the host may peak at beyond three copies of the component: the host, its instances.
pub const PEAK_CONSTANT: u64 = 48 << 20;

/// The shapes a recipe's first byte picks.
const SHAPES: u8 = 5;

/// A little-endian `u16` of `data` at `at`, zero past its end.
fn u16_at(data: &[u8], at: usize) -> u32 {
    u32::from(data.get(at).copied().unwrap_or(0))
        | (u32::from(data.get(at + 1).copied().unwrap_or(0)) << 8)
}

/// The component an input stands for: `[shape, scale (u16), rest...]`.
/// - shape 0: one function of `1000 + 6 × scale` blocks over 1,000 locals (7 MiB at the top
///   of the scale, under wasmparser's limit on a body; 5 MiB is minutes of Cranelift's time);
/// - shape 1: `1000 + 5 × scale` functions, each a few instructions of `rest`;
/// - shape 2: a memory with a data segment of `scale` KiB, up to 64 MiB;
/// - shape 3: a table of `160 × scale` elements, up to 10 million, with a segment that fills
///   `scale` of them;
/// - shape 4: one function whose body is `rest` as it is (mostly invalid).
pub fn component(data: &[u8]) -> Vec<u8> {
    let shape = data.first().copied().unwrap_or(0) % SHAPES;
    let scale = u16_at(data, 1);
    let rest = data.get(3..).unwrap_or(&[]);
    let mut module = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([], []);
    module.section(&types);
    let bodies: Vec<Function> = match shape {
        0 => vec![huge_function(1000 + 6 * scale, rest)],
        1 => {
            let body = small_function(rest);
            vec![body; (1000 + 5 * scale) as usize]
        }
        3 => vec![small_function(rest)],
        _ => vec![small_function(rest)],
    };
    let mut functions = FunctionSection::new();
    for _ in &bodies {
        functions.function(0);
    }
    module.section(&functions);
    if shape == 3 {
        let mut tables = TableSection::new();
        tables.table(TableType {
            element_type: RefType::FUNCREF,
            table64: false,
            minimum: u64::from(160 * scale),
            maximum: None,
            shared: false,
        });
        module.section(&tables);
    }
    if shape == 2 {
        let pages = u64::from(scale).div_ceil(64).max(1);
        let mut memories = MemorySection::new();
        memories.memory(MemoryType {
            minimum: pages,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        module.section(&memories);
    }
    if shape == 3 && scale > 0 {
        let mut elements = ElementSection::new();
        let refs = vec![0u32; scale as usize];
        elements.active(
            Some(0),
            &ConstExpr::i32_const(0),
            Elements::Functions(refs.into()),
        );
        module.section(&elements);
    }
    if shape == 4 {
        // A code section of one body made of the input's bytes, as they are.
        let mut raw = Vec::new();
        leb(&mut raw, 1);
        leb(&mut raw, rest.len() as u64);
        raw.extend_from_slice(rest);
        module.section(&RawSection { id: 10, data: &raw });
    } else {
        let mut code = CodeSection::new();
        for body in &bodies {
            code.function(body);
        }
        module.section(&code);
    }
    if shape == 2 {
        let mut segments = DataSection::new();
        let byte = rest.first().copied().unwrap_or(0xa5);
        segments.active(
            0,
            &ConstExpr::i32_const(0),
            vec![byte; scale as usize * 1024],
        );
        module.section(&segments);
    }
    let mut component = Component::new();
    component.section(&ModuleSection(&module));
    component.finish()
}

/// Appends `value` as unsigned LEB128.
fn leb(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// `blocks` blocks over 1,000 locals, each adding two into a third and branching on one;
/// `rest` picks the locals.
fn huge_function(blocks: u32, rest: &[u8]) -> Function {
    const LOCALS: u32 = 1000;
    let mut body = Function::new([(LOCALS, ValType::I32)]);
    for i in 0..blocks {
        let salt = u32::from(
            rest.get(i as usize % rest.len().max(1))
                .copied()
                .unwrap_or(7),
        );
        let (a, b, c) = (
            (i + salt) % LOCALS,
            (i * 7 + 3) % LOCALS,
            (i * 13 + salt) % LOCALS,
        );
        body.instruction(&Instruction::Block(BlockType::Empty))
            .instruction(&Instruction::LocalGet(a))
            .instruction(&Instruction::LocalGet(b))
            .instruction(&Instruction::I32Add)
            .instruction(&Instruction::LocalSet(c))
            .instruction(&Instruction::LocalGet(b))
            .instruction(&Instruction::BrIf(0))
            .instruction(&Instruction::End);
    }
    body.instruction(&Instruction::End);
    body
}

/// A function of a few arithmetic instructions, one per byte of `rest` (at most 16).
fn small_function(rest: &[u8]) -> Function {
    let mut body = Function::new([(1, ValType::I64)]);
    for byte in rest.iter().take(16) {
        body.instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::I64Const(i64::from(*byte)))
            .instruction(if byte & 1 == 0 {
                &Instruction::I64Add
            } else {
                &Instruction::I64Mul
            })
            .instruction(&Instruction::LocalSet(0));
    }
    body.instruction(&Instruction::End);
    body
}

/// Runs one input.
pub fn run(data: &[u8]) {
    assert!(
        accelhost::compile_worker::program().is_some(),
        "the compile target needs a compile worker: set {} to an accelhost binary (see \
         host/fuzz/README.md)",
        accelhost::compile_worker::WORKER_ENV
    );
    // One input at a time: the oracles read process-wide figures.
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(PoisonError::into_inner);
    let wasm = component(data);
    let dir = scratch();
    let module = dir.join("crafted.wasm");
    std::fs::write(&module, &wasm).expect("the scratch directory takes the component");
    let cache = cache_dir();
    let entries_before = compiled_entries(&cache);
    let config = format!(
        r#"{{
  "devices": [{{"id": "w0", "family": "dfl"}}],
  "plugins": [
    {{"name": "crafted", "module": {},
     "load_policy": {{"compile_timeout_ms": {}, "compile_memory_mib": {COMPILE_MEMORY_MIB}}}}},
    {{"name": "dfl", "module": "builtin:dfl", "grants": {{"devices": ["emu:w0"]}}}}
  ]
}}"#,
        serde_json::to_string(&module.to_string_lossy()).expect("a path is JSON"),
        COMPILE_TIMEOUT.as_millis()
    );
    let config = Config::parse(&config, ConfigSource::Embedded).expect("the config is valid");

    let peak_from = accelhost::perf::restart_peak().expect("the kernel resets the peak");
    let started = Instant::now();
    let host = Host::builder()
        .config(config)
        .cache_dir(&cache)
        .build()
        .unwrap_or_else(|err| panic!("the host must start whatever the component is: {err}"));
    let took = started.elapsed();
    assert!(
        took <= COMPILE_TIMEOUT + SLACK,
        "the start took {took:?}, past the compile limit of {COMPILE_TIMEOUT:?} and {SLACK:?}"
    );
    let peak = accelhost::perf::peak_resident_bytes().saturating_sub(peak_from);
    let bound = 3 * wasm.len() as u64 + PEAK_CONSTANT;
    assert!(
        peak <= bound,
        "the host peaked {} MiB above where it was for a {} KiB component ({} MiB allowed)",
        peak >> 20,
        wasm.len() >> 10,
        bound >> 20
    );
    let crafted = host
        .plugins()
        .into_iter()
        .find(|p| p.name == "crafted")
        .expect("the crafted plugin is listed");
    if std::env::var_os(crate::imports::VERBOSE_ENV).is_some() {
        eprintln!(
            "compile: {} KiB in {took:?}, peak +{} MiB: {}",
            wasm.len() >> 10,
            peak >> 20,
            crafted.status
        );
    }
    assert!(
        matches!(&crafted.status, PluginStatus::LoadFailed { reason } if !reason.is_empty()),
        "a component with no accel:plugin exports must fail to load: {:?}",
        crafted.status
    );
    assert!(
        host.enumerate(&[])
            .tokens
            .iter()
            .any(|t| t.plugin() == "dfl"),
        "the dfl plugin lists its port whatever the crafted one did"
    );
    drop(host);
    let left = workers_left();
    assert!(
        left.is_empty(),
        "compile workers outlived the start: {left:?}"
    );
    assert_eq!(
        compiled_entries(&cache),
        entries_before,
        "a refused component left compiled code in the cache"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// This process's compile cache: its own, so that every run compiles its inputs again (a
/// shared cache would remember their refusals from the last run and compile nothing), made
/// once and removed when the process exits; those of processes that ended without exiting
/// (killed, or a crash the fuzzer found) are removed first.
fn cache_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = crate::process_dir::own("accelhost-fuzz-compile-cache-");
        // The dfl plugin compiled once, so that the entries an input finds are all there
        // before it.
        let config = r#"{"plugins": [{"name": "dfl", "module": "builtin:dfl"}]}"#;
        let config = Config::parse(config, ConfigSource::Embedded).expect("the config is valid");
        drop(Host::builder().config(config).cache_dir(&dir).build());
        dir
    })
    .clone()
}

/// A fresh scratch directory for one input's file.
fn scratch() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("accelhost-fuzz-compile-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temporary directory takes a scratch directory");
    dir
}

/// The compiled entries of the cache at `dir`, by name.
fn compiled_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".cwasm"))
        .collect();
    names.sort();
    names
}

/// The pids of this process's children that are still there (a worker not reaped, or alive).
fn workers_left() -> Vec<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                // The parent's pid is the second field after the command's closing paren.
                stat.rsplit_once(')')
                    .and_then(|(_, after)| after.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(me)
            })
        })
        .collect()
}

/// Checks that every shape makes the component it means to (the raw body aside, whose bytes
/// are no function) and that the large ones are large: the smoke run's check of its own
/// inputs.
pub fn check_shapes() {
    let validate = |wasm: &[u8]| {
        wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all()).validate_all(wasm)
    };
    for shape in 0..SHAPES {
        let wasm = component(&[shape, 10, 0, 1, 2, 3]);
        let valid = validate(&wasm);
        if shape == 4 {
            assert!(valid.is_err(), "raw bytes 1, 2, 3 are no function body");
        } else {
            valid.unwrap_or_else(|e| panic!("shape {shape}: {e}"));
        }
    }
    let huge = component(&[0, 0xff, 0xff]);
    assert!(
        (6 << 20..7_654_321).contains(&huge.len()),
        "{} bytes: large, and one body under wasmparser's limit",
        huge.len()
    );
    let data = component(&[2, 0xff, 0xff]);
    assert!(data.len() > 60 << 20, "{} bytes", data.len());
}

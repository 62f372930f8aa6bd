//! Kernels for the emulated XRT card from the forms their authors have: Vitis-style C or C++
//! sources, built with the system's clang into one WebAssembly module of the card's kernel
//! contract (see the emulator's `kernels`), their arguments read from clang's syntax tree;
//! OpenCL C (`build_opencl`), each kernel wrapped in a loop over its NDRange (a kernel that
//! meets at barriers split there into loops over its work-group's work-items,
//! [`work_item_loops`], or, where that rewrite does not take the program, suspended at them
//! by binaryen's asyncify); or a prebuilt
//! module, its kernels' signatures given as text (`mmult(a: ptr, n: i32)`).

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::emu::{MODULE_OWN_BYTES, SHARE_EXPORT};
use super::xclbin::{ArgKind, KERNEL_ARGS_END, KernelArg, KernelMeta};
use crate::types::Guid;

mod spirv;
mod work_item_loops;

pub use spirv::{
    IL_VERSIONS, SpecType, field_pointer, field_pointer_name, is_spirv, spec_constants,
};

/// The environment variable naming the C compiler (default `clang` on `PATH`), as the SDK's.
pub const CLANG_ENV: &str = "ACCELHOST_CLANG";
/// What to install when clang or its WebAssembly parts are missing (Debian's names).
pub const INSTALL_HINT: &str = "apt-get install clang lld wasi-libc";
/// The stack every kernel gets (local arrays of HLS kernels live there).
pub const STACK_BYTES: u64 = 1 << 20;
/// The largest buffer a kernel is sure to take: a launch's memory is what 32-bit WebAssembly
/// addresses (4 GiB), and twice the most a module may declare for itself (its data and stack)
/// is kept beside its buffers for that memory and the launch's value arguments.
pub const KERNEL_BUFFER_BYTES: u64 = (4 << 30) - 2 * MODULE_OWN_BYTES;
/// The longest a kernel name may be. SYCL names kernels by their mangled C++ types (60 to
/// 272 characters in dpnp); compute units whose `name:name_N` does not fit the card's 64-byte
/// IP name are named apart, the metadata saying whose they are.
pub const MAX_NAME: usize = 1024;
/// The environment variable naming binaryen's `wasm-opt` (default `wasm-opt` on `PATH`),
/// which makes OpenCL C work-items suspendable at barriers.
pub const WASM_OPT_ENV: &str = "ACCELHOST_WASM_OPT";
/// What to install when `wasm-opt` is missing (Debian's name).
pub const BINARYEN_HINT: &str = "apt-get install binaryen";
/// The most `__local` memory (all `__local` arguments together) one launch of an OpenCL C
/// kernel is given.
pub const LOCAL_MEMORY_BYTES: u64 = 256 << 10;
/// The most work-items of a work-group of an OpenCL C kernel.
pub const MAX_GROUP_ITEMS: u64 = 1024;
/// What each work-item of a kernel that calls barrier takes: its own stack (8 KiB) and the
/// area its frames are saved in at a barrier (4 KiB).
const BARRIER_ITEM_STACK: u64 = 8 << 10;
const BARRIER_ITEM_SAVE: u64 = 4 << 10;
const BARRIER_ITEM_BYTES: u64 = BARRIER_ITEM_STACK + BARRIER_ITEM_SAVE;
/// The most a work-group of a kernel split at its barriers ([`work_item_loops`]) keeps of its
/// work-items' own variables, all work-items together (4 KiB each at 1,024).
const GROUP_PRIVATE_BYTES: u64 = 4 << 20;
/// The environment variable naming LLVM's SPIR-V translator (default `llvm-spirv-N`, N
/// clang's major version, whose IR it writes).
pub const LLVM_SPIRV_ENV: &str = "ACCELHOST_LLVM_SPIRV";
/// What to install when the SPIR-V translator is missing (Debian's name, for clang 14).
pub const SPIRV_HINT: &str = "apt-get install llvm-spirv-14";
/// The most SPIR-V a program may have: a bound on what a build reads and translates.
pub const MAX_IL_BYTES: usize = 16 << 20;
/// The C name of a kernel's NDRange loop (exported under the kernel's name).
const LOOP_PREFIX: &str = "__accelhost_ndrange_";
/// How long one clang run may take before it is stopped.
const COMPILE_DEADLINE: Duration = Duration::from_secs(120);
/// The most of each of a tool's two streams of messages a build keeps.
const MAX_LOG_BYTES: u64 = 1 << 20;
/// The most a tool may say before it is stopped (the log keeps [`MAX_LOG_BYTES`] of it).
const MAX_MESSAGE_BYTES: u64 = 16 << 20;
/// The most a build reads of clang's syntax tree of a program, as JSON.
const MAX_DUMP_BYTES: u64 = 64 << 20;

/// HLS headers whose types the emulated card does not provide, with what they declare.
const UNSUPPORTED_HEADERS: &[(&str, &str)] = &[
    ("hls_stream.h", "hls::stream (streaming kernel ports)"),
    (
        "ap_int.h",
        "ap_int / ap_uint (arbitrary-precision integers)",
    ),
    ("ap_fixed.h", "ap_fixed (fixed-point numbers)"),
    ("ap_axi_sdata.h", "ap_axis (AXI4-Stream side channels)"),
    ("hls_vector.h", "hls::vector"),
];

/// Kernels built into one module, with the metadata an xclbin carries for them.
#[derive(Clone, Debug)]
pub struct BuiltKernels {
    /// Each kernel's arguments, at the offsets Vitis HLS gives them.
    pub kernels: Vec<KernelMeta>,
    /// The module, exporting each kernel by name.
    pub module: Vec<u8>,
    /// What the compiler said (warnings), if anything.
    pub log: String,
}

impl BuiltKernels {
    /// A uuid for an image of these kernels: the same kernels give the same uuid.
    pub fn uuid(&self) -> Guid {
        let mut digest = Sha256::new();
        digest.update(&self.module);
        for kernel in &self.kernels {
            digest.update(format!("{kernel:?}"));
        }
        let bytes: [u8; 16] = digest.finalize()[..16].try_into().expect("16 of 32 bytes");
        Guid::from_bytes(bytes)
    }
}

/// Where [`build_opencl`] keeps what it built, by a digest of everything the build read
/// (the program as preprocessed, its options, the tools and this build pipeline), so that a
/// later build of the same program, in any process, takes it instead of running clang. The
/// runtime every build links is kept there too, under a digest no program's build has.
pub trait KeptBuilds {
    /// The build kept under `key`, if there is one.
    fn find_build(&self, key: &[u8; 32]) -> Option<Vec<u8>>;
    /// Keeps `built` under `key`.
    fn keep_build(&self, key: &[u8; 32], built: &[u8]);
}

impl BuiltKernels {
    /// The build as [`KeptBuilds`] keeps it: the kernels (name, then each argument's name,
    /// index, offset, size and kind), the log, then the module; lengths and counts are
    /// little-endian `u32`s.
    fn to_kept(&self) -> Vec<u8> {
        fn text(out: &mut Vec<u8>, text: &str) {
            out.extend_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        let mut out = Vec::with_capacity(self.module.len() + self.log.len() + 256);
        out.extend_from_slice(&(self.kernels.len() as u32).to_le_bytes());
        for kernel in &self.kernels {
            text(&mut out, &kernel.name);
            out.extend_from_slice(&(kernel.args.len() as u32).to_le_bytes());
            for arg in &kernel.args {
                text(&mut out, &arg.name);
                for word in [arg.index, arg.offset, arg.size] {
                    out.extend_from_slice(&word.to_le_bytes());
                }
                out.push(match arg.kind {
                    ArgKind::Scalar => 0,
                    ArgKind::Global => 1,
                    ArgKind::Local => 3,
                });
            }
        }
        text(&mut out, &self.log);
        out.extend_from_slice(&self.module);
        out
    }

    /// A build [`to_kept`](Self::to_kept) made, if `bytes` are one whole.
    fn from_kept(bytes: &[u8]) -> Option<BuiltKernels> {
        struct Reader<'a>(&'a [u8]);
        impl<'a> Reader<'a> {
            fn take(&mut self, n: usize) -> Option<&'a [u8]> {
                let (head, rest) = self.0.split_at_checked(n)?;
                self.0 = rest;
                Some(head)
            }
            fn word(&mut self) -> Option<u32> {
                Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
            }
            fn text(&mut self) -> Option<String> {
                let len = self.word()? as usize;
                String::from_utf8(self.take(len)?.to_vec()).ok()
            }
        }
        let mut reader = Reader(bytes);
        let count = reader.word()?;
        let mut kernels = Vec::new();
        for _ in 0..count {
            let name = reader.text()?;
            let arg_count = reader.word()?;
            let mut args = Vec::new();
            for _ in 0..arg_count {
                args.push(KernelArg {
                    name: reader.text()?,
                    index: reader.word()?,
                    offset: reader.word()?,
                    size: reader.word()?,
                    kind: match reader.take(1)?[0] {
                        0 => ArgKind::Scalar,
                        1 => ArgKind::Global,
                        3 => ArgKind::Local,
                        _ => return None,
                    },
                });
            }
            kernels.push(KernelMeta { name, args });
        }
        let log = reader.text()?;
        let module = reader.0.to_vec();
        module.starts_with(b"\0asm").then_some(BuiltKernels {
            kernels,
            module,
            log,
        })
    }
}

/// Why kernels could not be built.
#[derive(Debug, thiserror::Error)]
pub enum KernelBuildError {
    /// No kernel was named.
    #[error("name the kernels to build (as v++ -k does); no kernel was named")]
    NoKernel,
    /// A prebuilt module is not WebAssembly.
    #[error("the module is not WebAssembly (it does not start with \\0asm)")]
    NotWasm,
    /// A build option the devices do not take.
    #[error("bad build options: {0}")]
    Options(String),
    /// No usable clang.
    #[error("no C compiler for kernels: {0} ({INSTALL_HINT}; {CLANG_ENV} names another clang)")]
    NoCompiler(String),
    /// A source uses what the card does not provide.
    #[error("{file}:{line}: {what} is not supported by the emulated card")]
    Unsupported {
        /// The source.
        file: PathBuf,
        /// The line of the `#include`.
        line: usize,
        /// What it would have declared.
        what: &'static str,
    },
    /// The compiler refused the sources.
    #[error("clang refused the kernel sources:\n{0}")]
    Compile(String),
    /// No usable SPIR-V translator.
    #[error("no SPIR-V translator for kernels: {0} ({SPIRV_HINT}; {LLVM_SPIRV_ENV} names another)")]
    NoTranslator(String),
    /// A SPIR-V module the card cannot run.
    #[error("the SPIR-V program cannot run on the card: {0}")]
    Spirv(String),
    /// A kernel is missing or cannot be a kernel of the card.
    #[error("kernel '{kernel}': {why}")]
    Kernel {
        /// The kernel.
        kernel: String,
        /// Why.
        why: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn kernel_error(kernel: &str, why: impl Into<String>) -> KernelBuildError {
    KernelBuildError::Kernel {
        kernel: kernel.to_owned(),
        why: why.into(),
    }
}

/// Builds the `kernels` of C/C++ `sources` (C++ by extension: `.cpp`, `.cc`, `.cxx`) into one
/// module, with `flags` (`-D`, `-I`, `-O`) passed to clang. HLS pragmas are accepted and
/// ignored; HLS headers the card does not provide are refused by name.
pub fn build_c(
    sources: &[PathBuf],
    kernels: &[String],
    flags: &[String],
) -> Result<BuiltKernels, KernelBuildError> {
    if kernels.is_empty() {
        return Err(KernelBuildError::NoKernel);
    }
    for kernel in kernels {
        check_name(kernel)?;
    }
    for source in sources {
        refuse_unsupported(source)?;
    }
    let clang = clang_program();
    let scratch = scratch_file("wasm");
    let mut command = Command::new(&clang);
    command.args([
        "--target=wasm32-wasi",
        "-O2",
        "-msimd128",
        "-mbulk-memory",
        "-nostartfiles",
        "-fno-exceptions",
        "-fno-rtti",
        "-Wno-unknown-pragmas",
        "-Wl,--no-entry",
        "-Wl,--import-memory",
        "-Wl,--stack-first",
        "-Wl,--strip-debug",
    ]);
    command.arg(format!("-Wl,-z,stack-size={STACK_BYTES}"));
    for kernel in kernels {
        command.arg(format!("-Wl,--export={kernel}"));
    }
    command.args(flags).args(sources).arg("-o").arg(&scratch);
    let log = run_clang(command, &clang).map_err(|err| match err {
        KernelBuildError::Compile(log) => match kernels
            .iter()
            .find(|k| log.contains(&format!("--export not found: {k}")))
        {
            Some(kernel) => kernel_error(
                kernel,
                "no function of that name in the sources (a C++ kernel needs extern \"C\")",
            ),
            None => KernelBuildError::Compile(log),
        },
        other => other,
    })?;
    let module = std::fs::read(&scratch).map_err(|source| KernelBuildError::Io {
        path: scratch.clone(),
        source,
    });
    let _ = std::fs::remove_file(&scratch);
    let module = module?;
    let mut metas = Vec::with_capacity(kernels.len());
    for kernel in kernels {
        metas.push(signature_from_source(&clang, sources, flags, kernel)?);
    }
    checked(BuiltKernels {
        kernels: metas,
        module,
        log,
    })
}

/// A prebuilt `module` with kernels of `signatures` (`name(arg: type, ...)`, types `ptr`,
/// `i32`, `u32`, `f32`, `i64`, `u64`, `f64`); the card checks the module against them when it
/// loads the image.
pub fn from_module(
    module: Vec<u8>,
    signatures: &[String],
) -> Result<BuiltKernels, KernelBuildError> {
    if signatures.is_empty() {
        return Err(KernelBuildError::NoKernel);
    }
    if !module.starts_with(super::xclbin::WASM_MAGIC) {
        return Err(KernelBuildError::NotWasm);
    }
    let kernels = signatures
        .iter()
        .map(|s| parse_signature(s))
        .collect::<Result<_, _>>()?;
    checked(BuiltKernels {
        kernels,
        module,
        log: String::new(),
    })
}

/// `built`, once the card's own check (the one loading an image makes) passed.
fn checked(built: BuiltKernels) -> Result<BuiltKernels, KernelBuildError> {
    super::emu::check_kernel_module(&built.module, &built.kernels)
        .map_err(|why| kernel_error(&names(&built.kernels), why))?;
    Ok(built)
}

fn names(kernels: &[KernelMeta]) -> String {
    kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `name(arg: type, ...)`.
pub fn parse_signature(text: &str) -> Result<KernelMeta, KernelBuildError> {
    let bad = |why: &str| {
        kernel_error(
            text,
            format!(
                "{why}; a signature reads name(arg: type, ...) with types ptr, i32, u32, f32, i64, u64, f64"
            ),
        )
    };
    let (name, rest) = text.split_once('(').ok_or_else(|| bad("no '('"))?;
    let inner = rest
        .trim()
        .strip_suffix(')')
        .ok_or_else(|| bad("no closing ')'"))?;
    let name = name.trim();
    check_name(name)?;
    let mut args = Vec::new();
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (arg, ty) = part
            .split_once(':')
            .ok_or_else(|| bad(&format!("argument '{part}' has no ': type'")))?;
        let (kind, size) = match ty.trim() {
            "ptr" => (ArgKind::Global, 8),
            "i32" | "u32" | "f32" => (ArgKind::Scalar, 4),
            "i64" | "u64" | "f64" => (ArgKind::Scalar, 8),
            other => {
                return Err(bad(&format!(
                    "argument '{}' has unknown type '{other}'",
                    arg.trim()
                )));
            }
        };
        args.push((arg.trim().to_owned(), kind, size));
    }
    finish_meta(name, &args)
}

fn finish_meta(
    name: &str,
    args: &[(String, ArgKind, u32)],
) -> Result<KernelMeta, KernelBuildError> {
    let meta = KernelMeta::with_hls_offsets(name, args);
    if meta.args_end() > KERNEL_ARGS_END {
        return Err(kernel_error(
            name,
            format!(
                "its {} arguments need registers up to {:#x}; a compute unit of the card has them up to {KERNEL_ARGS_END:#x}",
                args.len(),
                meta.args_end()
            ),
        ));
    }
    Ok(meta)
}

fn check_name(name: &str) -> Result<(), KernelBuildError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(kernel_error(
            name,
            format!("a kernel name is a C identifier of at most {MAX_NAME} characters"),
        ))
    }
}

fn refuse_unsupported(source: &Path) -> Result<(), KernelBuildError> {
    let text = std::fs::read_to_string(source).map_err(|e| KernelBuildError::Io {
        path: source.to_owned(),
        source: e,
    })?;
    for (line, content) in (1..).zip(text.lines()) {
        let content = content.trim_start();
        let Some(include) = content
            .strip_prefix('#')
            .map(str::trim_start)
            .and_then(|c| c.strip_prefix("include"))
        else {
            continue;
        };
        if let Some((_, what)) = UNSUPPORTED_HEADERS
            .iter()
            .find(|(header, _)| include.contains(header))
        {
            return Err(KernelBuildError::Unsupported {
                file: source.to_owned(),
                line,
                what,
            });
        }
    }
    Ok(())
}

fn clang_program() -> OsString {
    std::env::var_os(CLANG_ENV).unwrap_or_else(|| "clang".into())
}

fn scratch_file(extension: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "accelhost-kernel-{}-{}.{extension}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Runs clang (or the tool `tool` names) to its end or [`COMPILE_DEADLINE`]; `Ok` holds its
/// messages, the first [`MAX_LOG_BYTES`] of each stream.
fn run_clang(command: Command, clang: &OsString) -> Result<String, KernelBuildError> {
    let ran = run_bounded(command, clang, MAX_LOG_BYTES)?;
    let mut log = ran.log;
    log.push_str(&String::from_utf8_lossy(&ran.stdout));
    if ran.status.success() {
        Ok(log)
    } else if log.contains("unable to find library")
        || log.contains("wasm-ld: not found")
        || log.contains("No such file or directory: 'wasm-ld'")
        || log.contains("unable to execute command")
    {
        Err(KernelBuildError::NoCompiler(log.trim().to_owned()))
    } else {
        Err(KernelBuildError::Compile(log.trim().to_owned()))
    }
}

/// What a tool run by [`run_bounded`] left behind.
struct Ran {
    status: std::process::ExitStatus,
    /// Its standard output, whole (a tool that wrote more than its bound failed instead).
    stdout: Vec<u8>,
    /// Its messages, cut at [`MAX_LOG_BYTES`] (the cut said at the end).
    log: String,
}

/// Runs `command` (the tool `tool` names) to its end or [`COMPILE_DEADLINE`], its standard
/// output (at most `stdout_max` bytes) and its messages written to files of its own. Pipes
/// would stop a tool that says more than a pipe holds (64 KiB: a thousand warnings) until
/// the deadline, since nothing reads them while it runs; the files are bounded instead, and
/// a tool that writes past either bound is stopped and its build fails, naming the bound.
fn run_bounded(
    mut command: Command,
    tool: &OsString,
    stdout_max: u64,
) -> Result<Ran, KernelBuildError> {
    let mut stdout = unnamed_file()?;
    let mut stderr = unnamed_file()?;
    let io = |err: std::io::Error| KernelBuildError::Compile(err.to_string());
    command
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().map_err(io)?)
        .stderr(stderr.try_clone().map_err(io)?);
    let mut child = command.spawn().map_err(|e| {
        KernelBuildError::NoCompiler(format!("{} cannot be run: {e}", tool.to_string_lossy()))
    })?;
    // The child holds its own copies of the files.
    drop(command);
    let exited = exit_watch(&child);
    let written = |file: &std::fs::File| file.metadata().map_or(0, |m| m.len());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io)? {
            break status;
        }
        let stop = if started.elapsed() > COMPILE_DEADLINE {
            Some(format!(
                "ran for more than {} s",
                COMPILE_DEADLINE.as_secs()
            ))
        } else if written(&stdout) > stdout_max {
            Some(format!(
                "wrote more than {} MiB of output",
                stdout_max >> 20
            ))
        } else if written(&stderr) > MAX_MESSAGE_BYTES {
            Some(format!("said more than {} MiB", MAX_MESSAGE_BYTES >> 20))
        } else {
            None
        };
        if let Some(why) = stop {
            let _ = child.kill();
            let _ = child.wait();
            return Err(KernelBuildError::Compile(format!(
                "{} {why} and was stopped",
                tool_name(tool)
            )));
        }
        wait_for_exit(exited.as_ref());
    };
    if written(&stdout) > stdout_max {
        return Err(KernelBuildError::Compile(format!(
            "{} wrote more than {} MiB of output",
            tool_name(tool),
            stdout_max >> 20
        )));
    }
    Ok(Ran {
        status,
        stdout: read_at_most(&mut stdout, stdout_max).map_err(io)?.0,
        log: {
            let (said, cut) = read_at_most(&mut stderr, MAX_LOG_BYTES).map_err(io)?;
            let mut log = String::from_utf8_lossy(&said).into_owned();
            if cut > 0 {
                log.push_str(&format!("\n[{cut} more bytes of messages left out]\n"));
            }
            log
        },
    })
}

/// A descriptor that becomes readable when `child` exits (Linux's pidfd), so that a wait for
/// a tool ends as it does rather than at the next tick; `None` where the kernel has none.
fn exit_watch(child: &std::process::Child) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags; the child is ours and not yet reaped.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, child.id(), 0) };
    let raw = i32::try_from(raw).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: a descriptor pidfd_open just returned, owned by no one else.
    Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) })
}

/// Waits until the child `exited` watches ends, or one tick at most: each tick checks the
/// deadline and the bounds of what the tool wrote.
fn wait_for_exit(exited: Option<&std::os::fd::OwnedFd>) {
    const TICK: Duration = Duration::from_millis(50);
    let Some(exited) = exited else {
        std::thread::sleep(Duration::from_millis(5));
        return;
    };
    use std::os::fd::AsRawFd;
    let mut watched = libc::pollfd {
        fd: exited.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd, valid for the call; an interrupted poll only ends the tick early.
    unsafe { libc::poll(&mut watched, 1, TICK.as_millis() as i32) };
}

/// A file of the temporary folder that no name reaches (removed once open), for a tool's
/// output: nothing is left behind, whatever happens to the build.
fn unnamed_file() -> Result<std::fs::File, KernelBuildError> {
    let path = scratch_file("out");
    let file = std::fs::File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|source| KernelBuildError::Io {
            path: path.clone(),
            source,
        })?;
    let _ = std::fs::remove_file(&path);
    Ok(file)
}

/// The first `max` bytes of `file`, and how many more it holds.
fn read_at_most(file: &mut std::fs::File, max: u64) -> std::io::Result<(Vec<u8>, u64)> {
    use std::io::{Read, Seek};
    let len = file.metadata()?.len();
    file.rewind()?;
    let mut bytes = Vec::with_capacity(len.min(max) as usize);
    file.take(max).read_to_end(&mut bytes)?;
    Ok((bytes, len.saturating_sub(max)))
}

/// The tool's file name, as messages name it.
fn tool_name(tool: &OsString) -> String {
    Path::new(tool)
        .file_name()
        .unwrap_or(tool)
        .to_string_lossy()
        .into_owned()
}

/// `kernel`'s arguments, from clang's syntax tree of the sources.
fn signature_from_source(
    clang: &OsString,
    sources: &[PathBuf],
    flags: &[String],
    kernel: &str,
) -> Result<KernelMeta, KernelBuildError> {
    for source in sources {
        let mut command = Command::new(clang);
        command
            .args([
                "--target=wasm32-wasi",
                "-fsyntax-only",
                "-Wno-unknown-pragmas",
                "-Xclang",
            ])
            .arg("-ast-dump=json")
            .arg("-Xclang")
            .arg(format!("-ast-dump-filter={kernel}"))
            .args(flags)
            .arg(source);
        if let Some(decl) = function_decl(&run_clang_stdout(command, clang)?, kernel) {
            return meta_of_decl(kernel, &decl);
        }
    }
    Err(kernel_error(
        kernel,
        "no function of that name in the sources",
    ))
}

/// What clang printed (whether or not it failed), bounded as [`run_bounded`] bounds it.
fn run_clang_stdout(command: Command, clang: &OsString) -> Result<String, KernelBuildError> {
    let ran = run_bounded(command, clang, MAX_DUMP_BYTES)?;
    Ok(String::from_utf8_lossy(&ran.stdout).into_owned())
}

/// The metadata of a `FunctionDecl` node: each parameter a pointer (8 bytes) or a scalar of
/// its wasm32 size.
fn meta_of_decl(kernel: &str, decl: &serde_json::Value) -> Result<KernelMeta, KernelBuildError> {
    if decl["mangledName"].as_str().is_some_and(|m| m != kernel) {
        return Err(kernel_error(
            kernel,
            "it is a C++ function with a mangled name: declare it extern \"C\", as Vitis kernels are",
        ));
    }
    let mut args = Vec::new();
    for param in decl["inner"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["kind"] == "ParmVarDecl")
    {
        let name = param["name"].as_str().unwrap_or("").to_owned();
        let ty = &param["type"];
        let shown = ty["qualType"].as_str().unwrap_or("?");
        let plain = ty["desugaredQualType"].as_str().unwrap_or(shown);
        let (kind, size) = scalar_or_pointer(plain).ok_or_else(|| {
            kernel_error(
                kernel,
                format!(
                    "argument '{name}' has type '{shown}'; a kernel argument is a pointer or a \
                     number (int, unsigned, float, long long, double, ...)"
                ),
            )
        })?;
        args.push((name, kind, size));
    }
    finish_meta(kernel, &args)
}

/// How a C type (desugared) travels: a pointer in 8 bytes, a number in its wasm32 size.
fn scalar_or_pointer(ty: &str) -> Option<(ArgKind, u32)> {
    let ty = ty.trim();
    if ty.ends_with('*')
        || ty.ends_with("*restrict")
        || ty.ends_with("* restrict")
        || ty.ends_with("*__restrict")
    {
        return Some((ArgKind::Global, 8));
    }
    let bare = ty
        .trim_start_matches("const ")
        .trim_start_matches("volatile ")
        .trim_end_matches(" const");
    match bare {
        "char" | "signed char" | "unsigned char" | "short" | "unsigned short" | "int"
        | "unsigned int" | "long" | "unsigned long" | "float" | "bool" | "_Bool" => {
            Some((ArgKind::Scalar, 4))
        }
        "long long" | "unsigned long long" | "double" => Some((ArgKind::Scalar, 8)),
        _ => None,
    }
}

/// The arguments the runtime appends to an OpenCL C kernel's own: the launch's NDRange
/// (`clEnqueueNDRangeKernel`'s dimensions, global and local sizes and offsets).
pub const NDRANGE_ARGS: [&str; 10] = [
    "__work_dim",
    "__global_size0",
    "__global_size1",
    "__global_size2",
    "__local_size0",
    "__local_size1",
    "__local_size2",
    "__global_offset0",
    "__global_offset1",
    "__global_offset2",
];

/// Whether `kernel` is an OpenCL C kernel built by [`build_opencl`]: its last arguments are
/// [`NDRANGE_ARGS`].
pub fn is_ndrange(kernel: &KernelMeta) -> bool {
    kernel.args.len() >= NDRANGE_ARGS.len()
        && kernel.args[kernel.args.len() - NDRANGE_ARGS.len()..]
            .iter()
            .zip(NDRANGE_ARGS)
            .all(|(arg, name)| arg.name == name)
}

/// The work-item functions and built-ins an OpenCL C kernel calls, in C with the mangled
/// names OpenCL's overloads have; compiled once per process, then linked with each build's
/// NDRange loops.
const OPENCL_RUNTIME: &str = include_str!("kernel_source/opencl_runtime.c");
/// OpenCL C's asynchronous copies, defined in OpenCL C and appended to a program that names
/// one of [`ASYNC_COPY_FUNCTIONS`].
const ASYNC_COPIES: &str = include_str!("kernel_source/async_copies.cl");
/// OpenCL 2.0's sub-group and work-group functions, which the runtime defines for SPIR-V
/// programs (`USES_OPENCL_2_GROUPS`; the work-group ones meet at barriers).
const OPENCL_2_GROUP_FUNCTIONS: [&str; 34] = [
    "get_sub_group_size",
    "get_max_sub_group_size",
    "get_num_sub_groups",
    "get_enqueued_num_sub_groups",
    "get_sub_group_id",
    "get_sub_group_local_id",
    "sub_group_barrier",
    "sub_group_all",
    "sub_group_any",
    "sub_group_broadcast",
    "intel_sub_group_shuffle",
    "sub_group_reduce_add",
    "sub_group_reduce_min",
    "sub_group_reduce_max",
    "sub_group_scan_inclusive_add",
    "sub_group_scan_inclusive_min",
    "sub_group_scan_inclusive_max",
    "sub_group_scan_exclusive_add",
    "sub_group_scan_exclusive_min",
    "sub_group_scan_exclusive_max",
    "work_group_barrier",
    "work_group_all",
    "work_group_any",
    "work_group_broadcast",
    "work_group_reduce_add",
    "work_group_reduce_min",
    "work_group_reduce_max",
    "work_group_scan_inclusive_add",
    "work_group_scan_inclusive_min",
    "work_group_scan_inclusive_max",
    "work_group_scan_exclusive_add",
    "work_group_scan_exclusive_min",
    "work_group_scan_exclusive_max",
    "intel_sub_group_shuffle_xor",
];
const ASYNC_COPY_FUNCTIONS: [&str; 4] = [
    "async_work_group_copy",
    "async_work_group_strided_copy",
    "wait_group_events",
    "prefetch",
];

/// How OpenCL C is read, in every step of a build and in its precompiled header.
const OPENCL_LANGUAGE: [&str; 17] = [
    "-cl-std=CL1.2",
    "--target=wasm32-wasi",
    // Float to integer conversions saturate rather than trap (OpenCL leaves out-of-range
    // values undefined; a trap would fail the launch).
    "-mnontrapping-fptoint",
    "-msimd128",
    "-nostdlibinc",
    // WebAssembly computes in doubles natively.
    // The 32-bit and 64-bit atomic extensions declare `atom_*`, which the runtime defines
    // beside OpenCL C 1.2's `atomic_*`.
    "-Xclang",
    "-cl-ext=+cl_khr_fp64,+cl_khr_global_int32_base_atomics,+cl_khr_global_int32_extended_atomics,+cl_khr_local_int32_base_atomics,+cl_khr_local_int32_extended_atomics,+cl_khr_int64_base_atomics,+cl_khr_int64_extended_atomics,+cl_khr_byte_addressable_store",
    // OpenCL's long is 64 bits; clang's wasm32 target leaves it at 32. The built-ins come
    // from clang's whole header (opencl-c.h), which this definition reaches, rather than from
    // the declarations clang makes by default, which it does not (convert_long4 would give
    // 32-bit elements).
    "-Dlong=long long",
    "-cl-no-stdinc",
    // size_t and the pointer-sized types stay 32 bits, as wasm32's pointers are (their
    // predefined spellings say long, which the definition above would widen).
    "-U__SIZE_TYPE__",
    "-D__SIZE_TYPE__=__typeof__(sizeof(0))",
    "-U__UINTPTR_TYPE__",
    "-D__UINTPTR_TYPE__=__typeof__(sizeof(0))",
    "-U__PTRDIFF_TYPE__",
    "-D__PTRDIFF_TYPE__=__typeof__((char *)0 - (char *)0)",
    "-U__INTPTR_TYPE__",
    "-D__INTPTR_TYPE__=__typeof__((char *)0 - (char *)0)",
];

/// What a build compiles the same way for every program of a kind, compiled once per
/// process for each `clang` and `kind` (and kept in memory: a few MiB each, at most
/// [`MAX_COMPILED_ONCE`]); each build writes its copy in its own folder. Parsing clang's
/// whole OpenCL header cost each step of a build ~0.15 s, and compiling the runtime 0.8 s.
fn compiled_once(
    clang: &OsString,
    kind: String,
    compile: impl FnOnce() -> Result<Vec<u8>, KernelBuildError>,
) -> Result<Arc<Vec<u8>>, KernelBuildError> {
    type Compiled = HashMap<(OsString, String), Arc<Vec<u8>>>;
    static COMPILED: Mutex<Option<Compiled>> = Mutex::new(None);
    let key = (clang.clone(), kind);
    let mut compiled = COMPILED.lock().unwrap_or_else(PoisonError::into_inner);
    let compiled = compiled.get_or_insert_with(HashMap::new);
    if let Some(made) = compiled.get(&key) {
        return Ok(made.clone());
    }
    let made = Arc::new(compile()?);
    if compiled.len() >= MAX_COMPILED_ONCE {
        compiled.clear();
    }
    compiled.insert(key, made.clone());
    Ok(made)
}

/// The most pieces [`compiled_once`] keeps.
const MAX_COMPILED_ONCE: usize = 16;

/// clang run on OpenCL C for the card, with the OpenCL header precompiled at `header` (by
/// [`opencl_header`]): every step of a build reads the program so.
fn opencl_command(clang: &OsString, header: &Path) -> Command {
    let mut command = Command::new(clang);
    command
        .args(["-x", "cl"])
        .args(OPENCL_LANGUAGE)
        .arg("-include-pch")
        .arg(header);
    command
}

/// clang's OpenCL header, precompiled with the build's `-cl-*` options (they change how it
/// is read), at `out`. Beyond this process it is found in `kept` (and kept there when
/// compiled): each process that built a kernel precompiled it, about 0.3 s, before it could
/// find even a kept build.
fn opencl_header(
    clang: &OsString,
    work: &Path,
    cl_options: &[String],
    out: &Path,
    kept: Option<&dyn KeptBuilds>,
) -> Result<(), KernelBuildError> {
    let pch = compiled_once(clang, format!("header {}", cl_options.join(" ")), || {
        let kept = kept.map(|kept| (kept, header_key(clang, cl_options)));
        if let Some(pch) = kept.as_ref().and_then(|(kept, key)| kept.find_build(key)) {
            return Ok(pch);
        }
        let resource = resource_dir(clang);
        let made = work.join("made.pch");
        let mut precompile = Command::new(clang);
        precompile
            .args(["-x", "cl-header"])
            .args(OPENCL_LANGUAGE)
            .args(cl_options)
            .arg(Path::new(resource.trim()).join("include/opencl-c.h"))
            .arg("-o")
            .arg(&made);
        run_clang(precompile, clang)?;
        let pch = read(&made)?;
        if let Some((kept, key)) = kept {
            kept.keep_build(&key, &pch);
        }
        Ok(pch)
    })?;
    write(out, &pch)
}

/// The digest the header precompiled with `cl_options` is kept under, as
/// [`runtime_key`]'s: after a first field no program's build key starts with.
fn header_key(clang: &OsString, cl_options: &[String]) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest_field(&mut digest, b"the OpenCL header, precompiled");
    digest_field(&mut digest, &pipeline_digest(clang, cl_options).finalize());
    digest.finalize().into()
}

/// The runtime with the optional `parts` a program names, compiled for link-time
/// optimization with its kernels, at `out`. Beyond this process it is found in `kept` (and
/// kept there when compiled): each process that builds a kernel compiled it, 0.5 s or more.
fn opencl_runtime(
    clang: &OsString,
    work: &Path,
    parts: &str,
    out: &Path,
    kept: Option<&dyn KeptBuilds>,
) -> Result<(), KernelBuildError> {
    let object = compiled_once(clang, format!("runtime {parts}"), || {
        let kept = kept.map(|kept| (kept, runtime_key(clang, parts)));
        if let Some(object) = kept.as_ref().and_then(|(kept, key)| kept.find_build(key)) {
            return Ok(object);
        }
        let source = work.join("runtime.c");
        write(&source, format!("{parts}{OPENCL_RUNTIME}").as_bytes())?;
        let made = work.join("made.o");
        lto_object(clang, &source, &made)?;
        let object = read(&made)?;
        if let Some((kept, key)) = kept {
            kept.keep_build(&key, &object);
        }
        Ok(object)
    })?;
    write(out, &object)
}

/// The digest the runtime compiled with `parts` is kept under: what a program's build is
/// kept under ([`pipeline_digest`]) with the parts, after a first field no build key starts
/// with (theirs is the library's version), so that no program's text can name it.
fn runtime_key(clang: &OsString, parts: &str) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest_field(&mut digest, b"the OpenCL runtime, compiled");
    digest_field(&mut digest, &pipeline_digest(clang, &[]).finalize());
    digest_field(&mut digest, parts.as_bytes());
    digest.finalize().into()
}

/// How every piece of a program is optimized: for wasm32 with the target features all pieces
/// share (so that they may inline into one another).
const OPTIMIZED_FOR_THE_CARD: [&str; 4] = [
    "--target=wasm32-wasi",
    "-O2",
    "-msimd128",
    "-mnontrapping-fptoint",
];

/// Compiles `source` (C or LLVM IR) at `out` for link-time optimization, with the target
/// features every piece of a program shares, so that a kernel may inline into its loop and
/// the runtime into both. `Ok` holds clang's messages.
fn lto_object(clang: &OsString, source: &Path, out: &Path) -> Result<String, KernelBuildError> {
    let mut compile = Command::new(clang);
    compile
        .args(OPTIMIZED_FOR_THE_CARD)
        .args(["-flto", "-c"])
        .arg(source)
        .arg("-o")
        .arg(out);
    run_clang(compile, clang)
}

fn read(path: &Path) -> Result<Vec<u8>, KernelBuildError> {
    std::fs::read(path).map_err(|source| KernelBuildError::Io {
        path: path.to_owned(),
        source,
    })
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), KernelBuildError> {
    std::fs::write(path, bytes).map_err(|source| KernelBuildError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Builds every kernel of OpenCL C 1.2 `source` with the build `options` a program passes
/// to `clBuildProgram`. Each kernel is exported under its name as a loop over the work-items
/// of its NDRange (one work-group after another, its `__local` memory given by the loop,
/// its work-items suspended at barriers when it calls `barrier`, its by-value vectors and
/// structs taken through a shim); arguments of an unnamed struct type are refused, naming
/// them. With `kept`, a build of the same program (as preprocessed, with the same options,
/// tools and pipeline) made before, in any process, is taken from there instead of built,
/// and a new build is kept there.
pub fn build_opencl(
    source: &str,
    options: &str,
    kept: Option<&dyn KeptBuilds>,
) -> Result<BuiltKernels, KernelBuildError> {
    let flags = opencl_options(options)?;
    refuse_include_paths(source)?;
    in_scratch(|work| build_opencl_kept(work, source, &flags, kept))
}

/// An OpenCL C program compiled apart (`clCompileProgram`), for [`link_opencl`] to link with
/// others: clang's IR of it and what its kernels take.
#[derive(Clone, Debug)]
pub struct CompiledOpencl {
    /// clang's IR of each of its modules, the kernels as plain functions.
    modules: Vec<String>,
    kernels: Vec<CompiledKernel>,
    /// The runtime's parts it names ([`parts_named`]).
    parts: BTreeSet<String>,
    /// Whether its work-groups may run at once (it uses no atomic operations).
    shareable: bool,
    log: String,
}

/// A kernel of a [`CompiledOpencl`]: its metadata, the C type each of its own arguments
/// travels as, and the function its NDRange loop calls.
#[derive(Clone, Debug)]
struct CompiledKernel {
    meta: KernelMeta,
    c_types: Vec<&'static str>,
    entry: String,
    /// It meets at barriers and runs its whole work-group per call ([`work_item_loops`]).
    grouped: bool,
}

impl CompiledOpencl {
    /// What the compiler said (warnings), if anything.
    pub fn log(&self) -> &str {
        &self.log
    }

    /// The names of the kernels it defines.
    pub fn kernel_names(&self) -> impl Iterator<Item = &str> {
        self.kernels.iter().map(|k| k.meta.name.as_str())
    }
}

/// The most embedded headers one compile takes.
pub const MAX_HEADERS: usize = 256;

/// Compiles OpenCL C 1.2 `source` with the `options` a program passes to `clCompileProgram`,
/// without linking: a program with no kernels (functions others call) compiles too. Each
/// of `headers` is (the name `#include` gives it, its text); the program includes them as
/// it would a file beside it.
pub fn compile_opencl(
    source: &str,
    options: &str,
    headers: &[(String, String)],
) -> Result<CompiledOpencl, KernelBuildError> {
    let flags = opencl_options(options)?;
    if headers.len() > MAX_HEADERS {
        return Err(KernelBuildError::Compile(format!(
            "{} embedded headers: a compile takes at most {MAX_HEADERS}",
            headers.len()
        )));
    }
    refuse_include_paths(source)?;
    for (name, text) in headers {
        let plain = !name.is_empty()
            && name.len() <= 255
            && Path::new(name)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain {
            return Err(KernelBuildError::Compile(format!(
                "embedded header '{name}': a header is named by a relative path without '..'"
            )));
        }
        refuse_include_paths(text)?;
    }
    in_scratch(|work| {
        // Beside the program, as `#include "name"` finds a file; never over the build's own
        // files, which sit in the folder itself.
        let folder = work.join("headers");
        for (name, text) in headers {
            let path = folder.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| KernelBuildError::Io {
                    path: parent.to_owned(),
                    source,
                })?;
            }
            write(&path, text.as_bytes())?;
        }
        write(&work.join("program.cl"), source.as_bytes())?;
        let mut flags = flags.clone();
        flags.push(format!("-I{}", folder.display()));
        let preprocessed = preprocess(&clang_program(), work, &flags, None)?;
        compile_in(work, source, &flags, &preprocessed)
    })
}

/// Links compiled OpenCL C programs (`clLinkProgram`) into one module of all their kernels,
/// as [`build_opencl`] makes of one program: a function one declares and another defines is
/// found; a kernel defined twice, a function defined nowhere or no kernel at all is refused.
/// The runtime they link with is taken from `kept` when it holds it.
pub fn link_opencl(
    programs: &[&CompiledOpencl],
    kept: Option<&dyn KeptBuilds>,
) -> Result<BuiltKernels, KernelBuildError> {
    in_scratch(|work| link_in(work, programs, kept))
}

/// Builds a SPIR-V program (`clCreateProgramWithIL`, `olCreateProgram`) into one module of
/// its kernels, as [`build_opencl`] builds OpenCL C: LLVM's translator gives the module back
/// as SPIR IR, [`spirv`] rewrites that for the card, and it is linked with the runtime. The
/// `options` are checked as a build's; none changes a program already compiled to IL.
/// `constants` set specialization constants by id (each value's bytes, little-endian, as
/// many as [`spec_constants`] says its type takes).
pub fn build_spirv(
    il: &[u8],
    options: &str,
    constants: &[(u32, Vec<u8>)],
    kept: Option<&dyn KeptBuilds>,
) -> Result<BuiltKernels, KernelBuildError> {
    let flags = opencl_options(options)?;
    check_spirv(il)?;
    let set = spec_options(il, constants)?;
    let kept = kept.map(|kept| {
        let clang = clang_program();
        let mut digest = pipeline_digest(&clang, &flags);
        digest_field(&mut digest, b"SPIR-V");
        digest_field(
            &mut digest,
            tool_identity(&spirv_translator(&clang)).as_bytes(),
        );
        digest_field(&mut digest, il);
        for option in &set {
            digest_field(&mut digest, option.as_bytes());
        }
        (kept, <[u8; 32]>::from(digest.finalize()))
    });
    if let Some((kept, key)) = &kept
        && let Some(built) = kept
            .find_build(key)
            .as_deref()
            .and_then(BuiltKernels::from_kept)
    {
        return Ok(built);
    }
    let built = in_scratch(|work| {
        link_in(
            work,
            &[&compile_spirv_in(work, il, &set)?],
            kept.as_ref().map(|(kept, _)| *kept),
        )
    })?;
    if let Some((kept, key)) = kept {
        kept.keep_build(&key, &built.to_kept());
    }
    Ok(built)
}

/// Compiles a SPIR-V program without linking (`clCompileProgram` of a program made from
/// IL), for [`link_opencl`] to link with others; `constants` as [`build_spirv`] takes them.
pub fn compile_spirv(
    il: &[u8],
    options: &str,
    constants: &[(u32, Vec<u8>)],
) -> Result<CompiledOpencl, KernelBuildError> {
    opencl_options(options)?;
    check_spirv(il)?;
    let set = spec_options(il, constants)?;
    in_scratch(|work| compile_spirv_in(work, il, &set))
}

/// The translator's `--spec-const` entries for `constants` of `il`; an id the module does not
/// declare, or a value of another size than its type's, is refused by name.
fn spec_options(il: &[u8], constants: &[(u32, Vec<u8>)]) -> Result<Vec<String>, KernelBuildError> {
    if constants.is_empty() {
        return Ok(Vec::new());
    }
    let declared = spec_constants(il).map_err(KernelBuildError::Spirv)?;
    constants
        .iter()
        .map(|(id, value)| {
            let ty = declared.get(id).ok_or_else(|| {
                KernelBuildError::Spirv(format!("the module has no specialization constant {id}"))
            })?;
            ty.option(*id, value).ok_or_else(|| {
                KernelBuildError::Spirv(format!(
                    "specialization constant {id} takes {} bytes, not {}",
                    ty.size(),
                    value.len()
                ))
            })
        })
        .collect()
}

/// Whether this system translates SPIR-V: the translator [`LLVM_SPIRV_ENV`] names, or the
/// one of clang's version, runs. Asked once per translator in a process.
pub fn translates_spirv() -> bool {
    static RUNS: Mutex<Vec<(OsString, bool)>> = Mutex::new(Vec::new());
    let translator = spirv_translator(&clang_program());
    let mut known = RUNS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, runs)) = known.iter().find(|(t, _)| *t == translator) {
        return *runs;
    }
    let runs = Command::new(&translator)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    known.push((translator, runs));
    runs
}

/// The SPIR-V translator builds run: [`LLVM_SPIRV_ENV`]'s, else `llvm-spirv-N` for the
/// major version N of the clang [`CLANG_ENV`] names (the translator writes IR of one LLVM
/// version, which that clang must read).
pub fn spirv_translator_program() -> OsString {
    spirv_translator(&clang_program())
}

fn spirv_translator(clang: &OsString) -> OsString {
    static MAJORS: Mutex<Vec<(OsString, Option<String>)>> = Mutex::new(Vec::new());
    if let Some(named) = std::env::var_os(LLVM_SPIRV_ENV) {
        return named;
    }
    let mut majors = MAJORS.lock().unwrap_or_else(PoisonError::into_inner);
    let major = match majors.iter().find(|(c, _)| c == clang) {
        Some((_, major)) => major.clone(),
        None => {
            let mut version = Command::new(clang);
            version.arg("-dumpversion");
            let major = run_clang_stdout(version, clang).ok().and_then(|v| {
                let major = v.trim().split('.').next()?.to_owned();
                major.chars().all(|c| c.is_ascii_digit()).then_some(major)
            });
            majors.push((clang.clone(), major.clone()));
            major
        }
    };
    match major {
        Some(major) if !major.is_empty() => format!("llvm-spirv-{major}").into(),
        _ => "llvm-spirv".into(),
    }
}

/// Refuses what cannot be a SPIR-V module (its header, read before anything runs on it), or
/// more of one than a build reads.
pub fn check_spirv(il: &[u8]) -> Result<(), KernelBuildError> {
    if il.len() > MAX_IL_BYTES {
        return Err(KernelBuildError::Spirv(format!(
            "{} bytes of SPIR-V: a program has at most {MAX_IL_BYTES}",
            il.len()
        )));
    }
    spirv::check_module(il).map_err(KernelBuildError::Spirv)
}

/// Compiles the SPIR-V `il` in `work`: translated to SPIR IR, rewritten for the card, and
/// its built-ins' bridges compiled from OpenCL C beside it. Kernels that meet at barriers
/// are suspended there by asyncify (the split into loops reads clang's unoptimized IR of
/// OpenCL C, which a translated module is not).
fn compile_spirv_in(
    work: &Path,
    il: &[u8],
    constants: &[String],
) -> Result<CompiledOpencl, KernelBuildError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| KernelBuildError::Io { path, source }
    };
    let clang = clang_program();
    let translator = spirv_translator(&clang);
    let module = work.join("program.spv");
    write(&module, il)?;
    let bitcode = work.join("program.bc");
    let mut translate = Command::new(&translator);
    translate.args(["-r", "--spirv-target-env=CL1.2"]);
    if !constants.is_empty() {
        translate.arg(format!("--spec-const={}", constants.join(" ")));
    }
    translate.arg(&module).arg("-o").arg(&bitcode);
    run_clang(translate, &translator).map_err(|err| match err {
        KernelBuildError::NoCompiler(why) => KernelBuildError::NoTranslator(why),
        KernelBuildError::Compile(log) => KernelBuildError::Spirv(format!(
            "LLVM's SPIR-V translator refused the module:\n{}",
            log.lines().take(12).collect::<Vec<_>>().join("\n")
        )),
        other => other,
    })?;
    let spir = work.join("program-spir.ll");
    let mut disassemble = Command::new(&clang);
    disassemble
        .args([
            "--target=spir64-unknown-unknown",
            "-x",
            "ir",
            "-S",
            "-emit-llvm",
        ])
        .args(["-Xclang", "-disable-llvm-passes"])
        .arg(&bitcode)
        .arg("-o")
        .arg(&spir);
    run_clang(disassemble, &clang)?;
    let text = std::fs::read_to_string(&spir).map_err(io(&spir))?;
    let translated = spirv::translate(&text).map_err(KernelBuildError::Spirv)?;
    let mut kernels = Vec::with_capacity(translated.kernels.len());
    for kernel in &translated.kernels {
        check_name(&kernel.name)?;
        let mut read = OpenclKernel {
            name: kernel.name.clone(),
            args: Vec::new(),
            c_types: Vec::new(),
            spelled: Vec::new(),
            values: Vec::new(),
        };
        for (name, arg) in &kernel.args {
            let (kind, c_type, size) = match arg {
                spirv::Arg::Global => (ArgKind::Global, "void *", 8),
                spirv::Arg::Local => (ArgKind::Local, "void *", 4),
                spirv::Arg::Number(c_type, size) => (ArgKind::Scalar, *c_type, *size),
            };
            read.args.push((name.clone(), kind, size));
            read.c_types.push(c_type);
            read.spelled.push(String::new());
        }
        let (meta, c_types) = read.finish(&HashMap::new())?;
        kernels.push(CompiledKernel {
            meta,
            c_types,
            entry: kernel.entry.clone(),
            grouped: false,
        });
    }
    let called: Vec<&str> = translated.built_ins.iter().map(String::as_str).collect();
    let mut parts = parts_named(&called.join("\n"));
    let mut bridges = translated.bridges.clone();
    if parts.remove("USES_ASYNC_COPIES") {
        bridges.insert_str(0, ASYNC_COPIES);
    }
    let mut modules = Vec::with_capacity(2);
    let mut log = String::new();
    if !bridges.is_empty() {
        let header = work.join("opencl-c.pch");
        opencl_header(&clang, work, &[], &header, None)?;
        let source = work.join("bridges.cl");
        write(&source, bridges.as_bytes())?;
        let ir = work.join("bridges.ll");
        let mut emit = opencl_command(&clang, &header);
        emit.args(["-O2", "-S", "-emit-llvm", "-w"])
            .arg(&source)
            .arg("-o")
            .arg(&ir);
        log.push_str(&run_clang(emit, &clang).map_err(|err| match err {
            KernelBuildError::Compile(why) => KernelBuildError::Spirv(format!(
                "it calls built-ins these devices do not provide in those forms:\n{why}"
            )),
            other => other,
        })?);
        modules.push(std::fs::read_to_string(&ir).map_err(io(&ir))?);
    }
    let shareable = !translated.ir.contains("atomicrmw")
        && !translated.ir.contains("cmpxchg")
        && !parts.contains("USES_ATOMICS");
    modules.insert(0, translated.ir);
    Ok(CompiledOpencl {
        modules,
        kernels,
        parts,
        shareable,
        log,
    })
}

/// Refuses a program that includes a header by path rather than by name from its folders.
fn refuse_include_paths(source: &str) -> Result<(), KernelBuildError> {
    // Headers come from the -I folders a program names (PyOpenCL names its own), never from
    // anywhere a path could reach.
    match source.lines().find(|l| {
        let l = l.trim_start();
        l.starts_with('#')
            && l.contains("include")
            && (l.contains("..") || l.contains("\"/") || l.contains("</"))
    }) {
        Some(line) => Err(KernelBuildError::Compile(format!(
            "'{}': a program includes headers by name from its -I folders, not by path",
            line.trim()
        ))),
        None => Ok(()),
    }
}

/// Runs `build` in a scratch folder of its own, removed afterwards whatever the outcome.
fn in_scratch<T>(
    build: impl FnOnce(&Path) -> Result<T, KernelBuildError>,
) -> Result<T, KernelBuildError> {
    let work = scratch_file("cl");
    std::fs::create_dir_all(&work).map_err(|source| KernelBuildError::Io {
        path: work.clone(),
        source,
    })?;
    let result = build(&work);
    let _ = std::fs::remove_dir_all(&work);
    result
}

/// [`build_opencl_in`], or the build `kept` holds under the program's [`build_key`].
fn build_opencl_kept(
    work: &Path,
    source: &str,
    flags: &[String],
    kept: Option<&dyn KeptBuilds>,
) -> Result<BuiltKernels, KernelBuildError> {
    let clang = clang_program();
    write(&work.join("program.cl"), source.as_bytes())?;
    let preprocessed = preprocess(&clang, work, flags, kept)?;
    let Some(kept) = kept else {
        return build_opencl_in(work, source, flags, &preprocessed, None);
    };
    let key = build_key(&clang, flags, &preprocessed);
    if let Some(built) = kept
        .find_build(&key)
        .as_deref()
        .and_then(BuiltKernels::from_kept)
    {
        return Ok(built);
    }
    let built = build_opencl_in(work, source, flags, &preprocessed, Some(kept))?;
    kept.keep_build(&key, &built.to_kept());
    Ok(built)
}

/// The digest a build of a program `preprocessed` (by [`preprocess`]) with `flags` is kept
/// under: the [`pipeline_digest`], then the program's lines as preprocessed (the `-D`s and
/// the headers it includes are in there; clang's OpenCL header, precompiled, is not, and is
/// the same for the same clang and options), without the line markers, which name the
/// build's own folder, and blank lines, where comments and directives were.
fn build_key(clang: &OsString, flags: &[String], preprocessed: &str) -> [u8; 32] {
    let mut digest = pipeline_digest(clang, flags);
    for line in preprocessed
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty() && !is_line_marker(l))
    {
        digest_field(&mut digest, line.as_bytes());
    }
    digest.finalize().into()
}

/// Whether `line` of preprocessed output is a marker of where the lines after it come from
/// (`# 12 "file.h" 1`).
fn is_line_marker(line: &str) -> bool {
    line.strip_prefix("# ")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// `work`'s `program.cl` preprocessed with clang's OpenCL header (precompiled, left in
/// `work` for the compile), its line markers kept. The headers it reads are checked before
/// anything shows what is in them: one outside its `-I` folders is refused, naming it.
fn preprocess(
    clang: &OsString,
    work: &Path,
    flags: &[String],
    kept: Option<&dyn KeptBuilds>,
) -> Result<String, KernelBuildError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| KernelBuildError::Io { path, source }
    };
    let header = work.join("opencl-c.pch");
    let cl_options: Vec<String> = flags
        .iter()
        .filter(|f| f.starts_with("-cl-"))
        .cloned()
        .collect();
    opencl_header(clang, work, &cl_options, &header, kept)?;
    let deps = work.join("program.d");
    let preprocessed = work.join("program.i");
    let mut command = opencl_command(clang, &header);
    command
        .args(["-E", "-MD", "-MF"])
        .arg(&deps)
        .args(flags)
        .arg(work.join("program.cl"))
        .arg("-o")
        .arg(&preprocessed);
    match run_clang(command, clang) {
        Ok(_) => {}
        // Only what is said about the program's own lines: a header outside its folders is
        // not shown, whatever it holds.
        Err(KernelBuildError::Compile(log)) => {
            let said: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("program.cl:") && l.contains("error:"))
                .collect();
            return Err(KernelBuildError::Compile(format!(
                "the program's source does not preprocess:\n{}",
                said.join("\n")
            )));
        }
        Err(other) => return Err(other),
    }
    check_headers(
        clang,
        work,
        flags,
        &std::fs::read_to_string(&deps).map_err(io(&deps))?,
    )?;
    std::fs::read_to_string(&preprocessed).map_err(io(&preprocessed))
}

/// Adds `bytes` to `digest` as one field (its length first).
fn digest_field(digest: &mut Sha256, bytes: &[u8]) {
    digest.update((bytes.len() as u64).to_le_bytes());
    digest.update(bytes);
}

/// A digest of what every build's outcome depends on but the program: this build pipeline
/// (its source and runtime, the card's kernel contract, the library's version), the tools it
/// runs (clang, wasm-ld and wasm-opt, by path, size and modification time, and clang's
/// resource folder and OpenCL header) and the options that are not `-D` or `-I`.
fn pipeline_digest(clang: &OsString, flags: &[String]) -> Sha256 {
    // This pipeline, and the card's contract for what it makes (a build checked against an
    // older contract would fail at every load).
    const PIPELINE: [&str; 6] = [
        include_str!("kernel_source.rs"),
        include_str!("kernel_source/work_item_loops.rs"),
        include_str!("kernel_source/spirv.rs"),
        OPENCL_RUNTIME,
        ASYNC_COPIES,
        include_str!("emu/kernels.rs"),
    ];
    let mut digest = Sha256::new();
    digest_field(&mut digest, env!("CARGO_PKG_VERSION").as_bytes());
    for part in PIPELINE {
        digest_field(&mut digest, part.as_bytes());
    }
    let wasm_opt = std::env::var_os(WASM_OPT_ENV).unwrap_or_else(|| "wasm-opt".into());
    for tool in [clang, &OsString::from("wasm-ld"), &wasm_opt] {
        digest_field(&mut digest, tool_identity(tool).as_bytes());
    }
    let resource = resource_dir(clang);
    digest_field(&mut digest, resource.as_bytes());
    // The OpenCL header too: updated in place (clang's headers come in a package of their
    // own), a kept precompiled header would be refused by clang at every build.
    let header = Path::new(&resource).join("include/opencl-c.h");
    digest_field(
        &mut digest,
        tool_identity(&header.into_os_string()).as_bytes(),
    );
    for flag in flags
        .iter()
        .filter(|f| !f.starts_with("-D") && !f.starts_with("-I"))
    {
        digest_field(&mut digest, flag.as_bytes());
    }
    digest
}

/// Which file `tool` runs (found on `PATH` when it names no folder), with its size and
/// modification time: another install of it is another identity. Empty when it is not found.
fn tool_identity(tool: &OsString) -> String {
    let named = Path::new(tool);
    let found = if named.components().count() > 1 {
        Some(named.to_owned())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|folder| folder.join(named))
                .find(|candidate| candidate.is_file())
        })
    };
    let Some(path) = found.and_then(|p| std::fs::canonicalize(p).ok()) else {
        return String::new();
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return String::new();
    };
    use std::os::unix::fs::MetadataExt;
    format!(
        "{} {} {}.{}",
        path.display(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec()
    )
}

/// Builds `work`'s `program.cl` (`source`) whole: compiled, then linked alone.
fn build_opencl_in(
    work: &Path,
    source: &str,
    flags: &[String],
    preprocessed: &str,
    kept: Option<&dyn KeptBuilds>,
) -> Result<BuiltKernels, KernelBuildError> {
    let compiled = compile_in(work, source, flags, preprocessed)?;
    if compiled.kernels.is_empty() {
        return Err(KernelBuildError::Compile(
            "the program declares no __kernel function".into(),
        ));
    }
    link_in(work, &[&compiled], kept)
}

/// Compiles `work`'s `program.cl` (`source`, its headers beside it or in its `-I` folders),
/// [`preprocess`]ed into `preprocessed`, into an object of clang's IR with its kernels'
/// descriptions.
fn compile_in(
    work: &Path,
    source: &str,
    flags: &[String],
    preprocessed: &str,
) -> Result<CompiledOpencl, KernelBuildError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| KernelBuildError::Io { path, source }
    };
    let clang = clang_program();
    let program = work.join("program.cl");
    let header = work.join("opencl-c.pch");
    // Kernels are named after macros expand (PyOpenCL's are declared through them).
    let names = kernel_names(&own_lines(preprocessed));
    // One syntax tree of the whole program (the precompiled header's declarations are not
    // in it) serves every kernel: a dump per kernel parsed the program once per kernel.
    let mut declared = HashMap::new();
    if !names.is_empty() {
        let mut dump = opencl_command(&clang, &header);
        dump.args(["-fsyntax-only", "-Xclang", "-ast-dump=json"])
            .args(flags)
            .arg(&program);
        declared = top_level_functions(&run_clang_stdout(dump, &clang)?, &names);
    }
    let mut kernels = Vec::with_capacity(names.len());
    for name in &names {
        let Some(decl) = declared.remove(name) else {
            // The compile below says what is wrong with the source.
            continue;
        };
        kernels.push(opencl_params(name, &decl)?);
    }
    let mut parts = parts_named(preprocessed);
    let mut appended = by_value_shims(&kernels);
    if parts.remove("USES_ASYNC_COPIES") {
        appended.push_str(ASYNC_COPIES);
    }
    if !appended.is_empty() {
        write(&program, format!("{source}\n{appended}").as_bytes())?;
    }
    // WebAssembly has no kernel calling convention: clang's IR of the program is compiled
    // with its kernels as plain functions (which the NDRange loops call). A `__local` array
    // stays what OpenCL makes it, one variable of the work-group (work-groups run one after
    // another).
    let ir = work.join("program.ll");
    let split = if parts.contains("USES_BARRIER") {
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        split_at_barriers(&clang, work, &header, flags, &program, &names, &ir)?
    } else {
        None
    };
    let (log, grouped) = match split {
        Some((log, grouped)) => {
            parts.remove("USES_BARRIER");
            parts.insert("USES_GROUPS".to_owned());
            (log, grouped)
        }
        None => {
            let mut emit = opencl_command(&clang, &header);
            emit.args(["-O2", "-S", "-emit-llvm", "-Wno-unknown-pragmas"])
                .args(flags)
                .arg(&program)
                .arg("-o")
                .arg(&ir);
            (run_clang(emit, &clang)?, Vec::new())
        }
    };
    let text = std::fs::read_to_string(&ir).map_err(io(&ir))?;
    let sizes = probed_sizes(&text);
    let mut compiled = Vec::with_capacity(kernels.len());
    for kernel in kernels {
        let entry = entry_of(&kernel);
        let (meta, c_types) = kernel.finish(&sizes)?;
        compiled.push(CompiledKernel {
            grouped: grouped.contains(&meta.name),
            meta,
            c_types,
            entry,
        });
    }
    Ok(CompiledOpencl {
        // Work-groups may run at once in instances of their own unless they could meet
        // through atomic operations on global memory (the runtime's atomic functions are
        // atomic within one instance only).
        shareable: !text.contains("atomicrmw")
            && !text.contains("cmpxchg")
            && !parts.contains("USES_ATOMICS"),
        modules: vec![kernels_as_functions(&text)],
        kernels: compiled,
        parts,
        log,
    })
}

/// Links compiled `programs` in `work` into one module of all their kernels, each exported
/// under its name as its NDRange loop, with the runtime's parts any of them names.
fn link_in(
    work: &Path,
    programs: &[&CompiledOpencl],
    kept: Option<&dyn KeptBuilds>,
) -> Result<BuiltKernels, KernelBuildError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| KernelBuildError::Io { path, source }
    };
    let clang = clang_program();
    let mut log = String::new();
    let mut objects = Vec::with_capacity(programs.len());
    let (mut metas, mut wrappers, mut entries) = (Vec::new(), Vec::new(), Vec::new());
    let mut grouped = Vec::new();
    let mut parts = BTreeSet::new();
    for (index, program) in programs.iter().enumerate() {
        log.push_str(&program.log);
        for kernel in &program.kernels {
            if metas
                .iter()
                .any(|m: &KernelMeta| m.name == kernel.meta.name)
            {
                return Err(kernel_error(
                    &kernel.meta.name,
                    "is defined by two of the programs linked",
                ));
            }
            metas.push(kernel.meta.clone());
            wrappers.push(kernel.c_types.clone());
            entries.push(kernel.entry.clone());
            grouped.push(kernel.grouped);
        }
        parts.extend(program.parts.iter().cloned());
        for (part, module) in program.modules.iter().enumerate() {
            let ir = work.join(format!("program-{index}-{part}.ll"));
            write(&ir, module.as_bytes())?;
            let object = work.join(format!("program-{index}-{part}.o"));
            log.push_str(&lto_object(&clang, &ir, &object)?);
            objects.push(object);
        }
    }
    if metas.is_empty() {
        return Err(KernelBuildError::Compile(
            "the programs linked declare no __kernel function".into(),
        ));
    }
    let shareable = programs.iter().all(|p| p.shareable);
    let runtime = work.join("runtime.o");
    let barriers = parts.contains("USES_BARRIER");
    opencl_runtime(&clang, work, &runtime_parts(&parts), &runtime, kept)?;
    let loops_source = work.join("ndrange.c");
    write(
        &loops_source,
        ndrange_loops(&metas, &wrappers, &entries, &grouped, barriers, shareable).as_bytes(),
    )?;
    let loops = work.join("ndrange.o");
    lto_object(&clang, &loops_source, &loops)?;
    // The loop's stack holds the launch's local memory and, with barriers, the work-items'
    // records.
    let mut stack = STACK_BYTES + LOCAL_MEMORY_BYTES;
    if barriers {
        stack += MAX_GROUP_ITEMS * BARRIER_ITEM_BYTES;
    }
    if grouped.contains(&true) {
        stack += GROUP_PRIVATE_BYTES;
    }
    let linked = work.join("linked.wasm");
    let mut link = Command::new(&clang);
    // No -O: link-time optimization runs at wasm-ld's -O2 anyway, and clang given -O would
    // run binaryen's optimizer (when installed) on the module, inlining each work-item's
    // function into its loop and dropping the names asyncify is told.
    link.args([
        "--target=wasm32-wasi",
        "-flto",
        "-nostartfiles",
        "-Wl,--no-entry",
        "-Wl,--import-memory",
        "-Wl,--stack-first",
    ])
    .arg(format!("-Wl,-z,stack-size={stack}"))
    .args(&objects)
    .arg(&runtime)
    .arg(&loops)
    .arg("-o")
    .arg(&linked);
    log.push_str(&run_clang(link, &clang).map_err(|err| match err {
        KernelBuildError::Compile(log) => {
            unprovided(&log).unwrap_or(KernelBuildError::Compile(log))
        }
        other => other,
    })?);
    let module_path = if barriers {
        let suspendable = work.join("program.wasm");
        suspend_at_barriers(&linked, &metas, &suspendable)?;
        suspendable
    } else {
        linked
    };
    let module = std::fs::read(&module_path).map_err(io(&module_path))?;
    checked(BuiltKernels {
        kernels: metas,
        module,
        log,
    })
}

/// Writes at `out` the optimized IR of `program` with each of its kernels that meets at
/// barriers running its whole work-group ([`work_item_loops`]); `Ok(Some)` holds clang's
/// messages and those kernels' names, `Ok(None)` says the rewrite does not take this
/// program (it is left to asyncify).
fn split_at_barriers(
    clang: &OsString,
    work: &Path,
    header: &Path,
    flags: &[String],
    program: &Path,
    kernels: &[&str],
    out: &Path,
) -> Result<Option<(String, Vec<String>)>, KernelBuildError> {
    let unoptimized = work.join("program-unoptimized.ll");
    let mut emit = opencl_command(clang, header);
    // Unoptimized (each variable in its alloca) but compiled as the precompiled header was.
    emit.args(["-O2", "-Xclang", "-disable-llvm-passes"])
        .args(["-S", "-emit-llvm", "-Wno-unknown-pragmas"])
        .args(flags)
        .arg(program)
        .arg("-o")
        .arg(&unoptimized);
    let log = run_clang(emit, clang)?;
    let text = std::fs::read_to_string(&unoptimized).map_err(|source| KernelBuildError::Io {
        path: unoptimized.clone(),
        source,
    })?;
    Ok(split_ir(clang, work, &text, kernels, out)?.map(|grouped| (log, grouped)))
}

/// Writes at `out` the optimized IR `text` with each of `kernels` that meets at barriers
/// running its whole work-group ([`work_item_loops`]); `Ok(Some)` holds those kernels'
/// names, `Ok(None)` says the rewrite does not take this IR (it is left to asyncify).
fn split_ir(
    clang: &OsString,
    work: &Path,
    text: &str,
    kernels: &[&str],
    out: &Path,
) -> Result<Option<Vec<String>>, KernelBuildError> {
    let Some((split, grouped)) = work_item_loops::rewrite(text, kernels) else {
        return Ok(None);
    };
    let source = work.join("program-split.ll");
    write(&source, split.as_bytes())?;
    let mut optimize = Command::new(clang);
    optimize
        .args(OPTIMIZED_FOR_THE_CARD)
        .args(["-S", "-emit-llvm", "-x", "ir"])
        .arg(&source)
        .arg("-o")
        .arg(out);
    match run_clang(optimize, clang) {
        Ok(_) => Ok(Some(grouped)),
        // What the rewrite could not follow (a value used across a barrier outside memory)
        // fails clang's check of the IR; asyncify takes the program as it is.
        Err(KernelBuildError::Compile(why)) => {
            tracing::debug!("work-groups not split at barriers: {why}");
            Ok(None)
        }
        Err(other) => Err(other),
    }
}

/// Makes the work-items of `linked` suspendable at barriers, at `out`: binaryen's asyncify
/// instruments the functions that reach a barrier, all but the NDRange loops, which drive
/// it.
fn suspend_at_barriers(
    linked: &Path,
    kernels: &[KernelMeta],
    out: &Path,
) -> Result<(), KernelBuildError> {
    let wasm_opt = std::env::var_os(WASM_OPT_ENV).unwrap_or_else(|| "wasm-opt".into());
    let loops: Vec<String> = kernels
        .iter()
        .map(|k| format!("{LOOP_PREFIX}{}", k.name))
        .collect();
    let mut command = Command::new(&wasm_opt);
    command
        .arg(linked)
        .arg("--asyncify")
        .arg(format!(
            "--pass-arg=asyncify-removelist@{}",
            loops.join(",")
        ))
        .arg("--pass-arg=asyncify-ignore-indirect")
        .args(["-O2", "--strip-debug"])
        .arg("-o")
        .arg(out);
    run_clang(command, &wasm_opt).map_err(|err| match err {
        KernelBuildError::NoCompiler(why) => KernelBuildError::NoCompiler(format!(
            "kernels that call barrier need binaryen's wasm-opt ({BINARYEN_HINT}; \
             {WASM_OPT_ENV} names another): {why}"
        )),
        other => other,
    })?;
    Ok(())
}

/// clang's IR of an OpenCL C program with its kernels' calling convention (which
/// WebAssembly has not) taken off their definitions, declarations and calls.
fn kernels_as_functions(ir: &str) -> String {
    let mut plain = String::with_capacity(ir.len());
    for line in ir.lines() {
        let code = line.trim_start();
        if code.starts_with("define ") || code.starts_with("declare ") || code.contains("call ") {
            plain.push_str(&line.replace(" spir_kernel ", " "));
        } else {
            plain.push_str(line);
        }
        plain.push('\n');
    }
    plain
}

/// The build options clang takes for a program (`-D`, `-w`, `-Werror`, `-cl-*`); any other
/// is refused, naming it, as `CL_INVALID_BUILD_OPTIONS`.
fn opencl_options(options: &str) -> Result<Vec<String>, KernelBuildError> {
    let mut flags = Vec::new();
    let mut words = options.split_whitespace();
    while let Some(word) = words.next() {
        match word {
            "-D" => match words.next() {
                Some(definition) => flags.push(format!("-D{definition}")),
                None => return Err(KernelBuildError::Options("-D without a name".into())),
            },
            "-w" | "-Werror" => flags.push(word.to_owned()),
            "-I" => match words.next() {
                Some(folder) => flags.push(format!("-I{folder}")),
                None => return Err(KernelBuildError::Options("-I without a folder".into())),
            },
            _ if word.starts_with("-I") => flags.push(word.to_owned()),
            // The language is OpenCL C 1.2 whatever a program asks.
            _ if word.starts_with("-cl-std=") => {}
            _ if word.starts_with("-D") || word.starts_with("-cl-") => flags.push(word.to_owned()),
            other => {
                return Err(KernelBuildError::Options(format!(
                    "'{other}' is not a build option of these devices (they take -D, -I, -w, \
                     -Werror and -cl-* options)"
                )));
            }
        }
    }
    Ok(flags)
}

/// Every file a build read (`deps`, make's form) lies in the build's folder, a `-I` folder
/// of `flags` or clang's own headers: a program cannot build a host file into a kernel.
/// clang's resource folder (its own headers), asked once per process of each clang (empty
/// when it does not answer).
fn resource_dir(clang: &OsString) -> String {
    static ASKED: Mutex<Vec<(OsString, String)>> = Mutex::new(Vec::new());
    let mut asked = ASKED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, resource)) = asked.iter().find(|(c, _)| c == clang) {
        return resource.clone();
    }
    let mut command = Command::new(clang);
    command.arg("-print-resource-dir");
    let resource = run_bounded(command, clang, MAX_LOG_BYTES)
        .ok()
        .filter(|ran| ran.status.success())
        .map(|ran| String::from_utf8_lossy(&ran.stdout).trim().to_owned())
        .unwrap_or_default();
    if !resource.is_empty() && asked.len() < MAX_COMPILED_ONCE {
        asked.push((clang.clone(), resource.clone()));
    }
    resource
}

fn check_headers(
    clang: &OsString,
    work: &Path,
    flags: &[String],
    deps: &str,
) -> Result<(), KernelBuildError> {
    let resource = resource_dir(clang);
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let mut allowed: Vec<PathBuf> = vec![canonical(work)];
    if !resource.is_empty() {
        allowed.push(canonical(Path::new(&resource)));
    }
    allowed.extend(
        flags
            .iter()
            .filter_map(|f| f.strip_prefix("-I"))
            .map(|folder| canonical(Path::new(folder))),
    );
    let files = deps
        .split_once(':')
        .map_or("", |(_, files)| files)
        .split_whitespace()
        .filter(|word| *word != "\\");
    for file in files {
        let path = canonical(Path::new(file));
        if !allowed.iter().any(|folder| path.starts_with(folder)) {
            return Err(KernelBuildError::Compile(format!(
                "the program includes {}, outside its -I folders",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The lines of preprocessed output that come from the program's own source (not from the
/// headers it or the compiler included), by clang's line markers.
fn own_lines(preprocessed: &str) -> String {
    let mut own = false;
    let mut kept = String::new();
    for line in preprocessed.lines() {
        if let Some(marker) = line.strip_prefix("# ") {
            own = marker
                .split('"')
                .nth(1)
                .is_some_and(|file| file.ends_with("program.cl"));
            continue;
        }
        if own {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// The names of the functions `source` declares `__kernel` (or `kernel`), in order.
fn kernel_names(source: &str) -> Vec<String> {
    let words: Vec<&str> = source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut names = Vec::new();
    for (at, word) in words.iter().enumerate() {
        if (*word == "__kernel" || *word == "kernel")
            && let Some(position) = words[at + 1..].iter().position(|w| *w == "void")
            && position <= 8
            && let Some(name) = words.get(at + 1 + position + 1)
            && !names.iter().any(|n| n == name)
        {
            names.push((*name).to_owned());
        }
    }
    names
}

/// The `FunctionDecl` named `name` in clang's JSON dump, its definition if there is one.
fn function_decl(dump: &str, name: &str) -> Option<serde_json::Value> {
    let values = serde_json::Deserializer::from_str(dump)
        .into_iter::<serde_json::Value>()
        .map_while(Result::ok);
    let names = [name.to_owned()];
    functions_named(values, &names).remove(name)
}

/// The top-level functions named `names` in clang's JSON syntax tree of a whole program
/// (`-ast-dump=json`, unfiltered), each as [`function_decl`] picks it.
fn top_level_functions(dump: &str, names: &[String]) -> HashMap<String, serde_json::Value> {
    let Ok(serde_json::Value::Object(mut unit)) = serde_json::from_str(dump) else {
        return HashMap::new();
    };
    match unit.remove("inner") {
        Some(serde_json::Value::Array(decls)) => functions_named(decls.into_iter(), names),
        _ => HashMap::new(),
    }
}

/// The `FunctionDecl`s among `values` named one of `names`: of each name its definition, or
/// its first declaration when none defines it.
fn functions_named(
    values: impl Iterator<Item = serde_json::Value>,
    names: &[String],
) -> HashMap<String, serde_json::Value> {
    let mut found: HashMap<String, serde_json::Value> = HashMap::new();
    for value in values {
        if value["kind"] != "FunctionDecl" {
            continue;
        }
        let Some(name) = value["name"]
            .as_str()
            .filter(|n| names.iter().any(|w| w == n))
        else {
            continue;
        };
        let defined = value["inner"]
            .as_array()
            .is_some_and(|inner| inner.iter().any(|n| n["kind"] == "CompoundStmt"));
        if defined || !found.contains_key(name) {
            found.insert(name.to_owned(), value);
        }
    }
    found
}

/// An OpenCL C kernel's own arguments, as its declaration gives them.
struct OpenclKernel {
    name: String,
    /// Each argument's name, kind and register bytes (0 for a by-value vector or struct
    /// until its size is known).
    args: Vec<(String, ArgKind, u32)>,
    /// The C type each argument travels as into the NDRange loop.
    c_types: Vec<&'static str>,
    /// Each argument's type as the program spells it.
    spelled: Vec<String>,
    /// The by-value vector and struct arguments, by position.
    values: Vec<usize>,
}

/// The symbol of the size of `kernel`'s by-value argument `index`, which the build reads
/// back from clang's IR.
fn size_symbol(kernel: &str, index: usize) -> String {
    format!("__accelhost_size_{kernel}_{index}")
}

/// The function the NDRange loop calls for `kernel`: the kernel itself, or a shim taking its
/// by-value vectors and structs in the words a compute unit's registers hold them.
fn entry_of(kernel: &OpenclKernel) -> String {
    if kernel.values.is_empty() {
        kernel.name.clone()
    } else {
        format!("__accelhost_args_{}", kernel.name)
    }
}

/// An OpenCL C kernel's own arguments from its `FunctionDecl`.
fn opencl_params(kernel: &str, decl: &serde_json::Value) -> Result<OpenclKernel, KernelBuildError> {
    check_name(kernel)?;
    let mut read = OpenclKernel {
        name: kernel.to_owned(),
        args: Vec::new(),
        c_types: Vec::new(),
        spelled: Vec::new(),
        values: Vec::new(),
    };
    for param in decl["inner"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["kind"] == "ParmVarDecl")
    {
        let name = param["name"].as_str().unwrap_or("").to_owned();
        let shown = param["type"]["qualType"].as_str().unwrap_or("?");
        let plain = param["type"]["desugaredQualType"].as_str().unwrap_or(shown);
        // `const __private int` reads `const int` (the space each qualifier leaves closes).
        let words = |ty: &str| {
            ty.replace("__private", "")
                .replace("__global", "")
                .replace("__constant", "")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let plain = words(plain);
        read.spelled.push(
            shown
                .replace("__private", "")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .trim_start_matches("const ")
                .to_owned(),
        );
        if shown.contains("__local") {
            read.c_types.push("void *");
            read.args.push((name, ArgKind::Local, 4));
            continue;
        }
        let Some((kind, size)) = scalar_or_pointer(&plain) else {
            if shown.contains('*') || shown.contains("(unnamed") || shown.contains("(anonymous") {
                return Err(kernel_error(
                    kernel,
                    format!(
                        "argument '{name}' has type '{shown}'; these devices take pointers, \
                         numbers, vectors and named structs"
                    ),
                ));
            }
            read.values.push(read.args.len());
            read.c_types.push("");
            read.args.push((name, ArgKind::Scalar, 0));
            continue;
        };
        let bare = plain.trim_start_matches("const ");
        read.c_types.push(match (kind, size, bare) {
            (ArgKind::Global, _, _) => "void *",
            (_, _, "float") => "float",
            (_, _, "double") => "double",
            (_, 8, _) => "unsigned long long",
            (_, _, "char" | "signed char") => "signed char",
            (_, _, "unsigned char") => "unsigned char",
            (_, _, "short") => "short",
            (_, _, "unsigned short") => "unsigned short",
            _ => "unsigned int",
        });
        read.args.push((name, kind, size));
    }
    Ok(read)
}

/// What a program gets appended when kernels take vectors or structs by value: the size of
/// each (read back from clang's IR) and, per kernel, a shim the NDRange loop calls, which
/// takes each such value in the words the registers hold (up to 8 bytes) or as a pointer to
/// its copy (larger), and calls the kernel with it.
fn by_value_shims(kernels: &[OpenclKernel]) -> String {
    // The types are spelled as clang shows them, `long` already widened.
    let mut text = String::from("#undef long\n");
    for kernel in kernels.iter().filter(|k| !k.values.is_empty()) {
        let mut params = Vec::new();
        let mut forwarded = Vec::new();
        for (i, spelled) in kernel.spelled.iter().enumerate() {
            if kernel.values.contains(&i) {
                text.push_str(&format!(
                    "__constant uint {} __attribute__((used)) = sizeof({spelled});\n",
                    size_symbol(&kernel.name, i)
                ));
                params.push(format!(
                    "__typeof__(__builtin_choose_expr(sizeof({spelled}) <= 4, (uint)0, \
                     __builtin_choose_expr(sizeof({spelled}) <= 8, (ulong)0, \
                     (__global const {spelled} *)0))) a{i}"
                ));
                forwarded.push(format!(
                    "__builtin_choose_expr(sizeof({spelled}) <= 8, *({spelled} *)&a{i}, \
                     **(__global const {spelled} **)&a{i})"
                ));
            } else {
                params.push(format!("{spelled} a{i}"));
                forwarded.push(format!("a{i}"));
            }
        }
        text.push_str(&format!(
            "__kernel void {}({}) {{\n    {}({});\n}}\n",
            entry_of(kernel),
            params.join(", "),
            kernel.name,
            forwarded.join(", ")
        ));
    }
    if text.lines().count() == 1 {
        text.clear();
    }
    text
}

/// The sizes clang gave the by-value arguments' types, by symbol, from its IR.
fn probed_sizes(ir: &str) -> HashMap<&str, u32> {
    ir.lines()
        .filter(|line| line.starts_with("@__accelhost_size_"))
        .filter_map(|line| {
            let (symbol, rest) = line[1..].split_once(" = ")?;
            let value = rest.split_once("i32 ")?.1;
            let digits = value.split(|c: char| !c.is_ascii_digit()).next()?;
            Some((symbol, digits.parse().ok()?))
        })
        .collect()
}

impl OpenclKernel {
    /// The kernel's metadata (its own arguments, then [`NDRANGE_ARGS`]) and the C type each
    /// of its own arguments travels as, its by-value arguments' sizes from `sizes`.
    fn finish(
        mut self,
        sizes: &HashMap<&str, u32>,
    ) -> Result<(KernelMeta, Vec<&'static str>), KernelBuildError> {
        for &i in &self.values {
            let size = *sizes
                .get(size_symbol(&self.name, i).as_str())
                .ok_or_else(|| {
                    kernel_error(
                        &self.name,
                        format!("the size of argument '{}' is not known", self.args[i].0),
                    )
                })?;
            self.args[i].2 = size.next_multiple_of(4).max(4);
            self.c_types[i] = match size {
                0..=4 => "unsigned int",
                5..=8 => "unsigned long long",
                _ => "void *",
            };
        }
        self.args.extend(
            NDRANGE_ARGS
                .iter()
                .map(|n| ((*n).to_owned(), ArgKind::Scalar, 4)),
        );
        Ok((finish_meta(&self.name, &self.args)?, self.c_types))
    }
}

/// The optional parts of the runtime a program names (`USES_convert_T`, with
/// `USES_convert_T_modes` for `_sat` and `_rt*`, `USES_VLOADSTOREN`,
/// `USES_BARRIER`, `USES_ATOMICS`, `USES_HALF`, `USES_SHUFFLE` and `USES_ASYNC_COPIES`,
/// which the program carries itself, [`ASYNC_COPIES`]): the conversions to each type, the
/// vector loads and stores of each width, barriers, the atomic functions, the loads and
/// stores of halves, the shuffles and the asynchronous copies. Read from the whole preprocessed program (its headers' macros
/// expanded) but clang's own OpenCL headers, which declare them all.
fn parts_named(preprocessed: &str) -> BTreeSet<String> {
    const CONVERTIBLE: [&str; 10] = [
        "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double",
    ];
    let mut clang_header = false;
    let mut parts = BTreeSet::new();
    for line in preprocessed.lines() {
        if let Some(marker) = line.strip_prefix("# ") {
            clang_header = marker.split('"').nth(1).is_some_and(|file| {
                file.ends_with("/opencl-c.h") || file.ends_with("/opencl-c-base.h")
            });
            continue;
        }
        if clang_header {
            continue;
        }
        for word in line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if let Some(to) = word.strip_prefix("convert_") {
                let ty = to.split(|c: char| c.is_ascii_digit() || c == '_').next();
                if let Some(ty) = ty.filter(|ty| CONVERTIBLE.contains(ty)) {
                    parts.insert(format!("USES_convert_{ty}"));
                    let mode = to[ty.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
                    if mode.starts_with("_sat") || mode.starts_with("_rt") {
                        parts.insert(format!("USES_convert_{ty}_modes"));
                    }
                }
            } else if word == "barrier" {
                parts.insert("USES_BARRIER".to_owned());
            } else if OPENCL_2_GROUP_FUNCTIONS.contains(&word) {
                parts.insert("USES_OPENCL_2_GROUPS".to_owned());
                parts.insert("USES_BARRIER".to_owned());
            } else if word.starts_with("atomic_") || word.starts_with("atom_") {
                parts.insert("USES_ATOMICS".to_owned());
            } else if ["vload_half", "vloada_half", "vstore_half", "vstorea_half"]
                .iter()
                .any(|half| word.starts_with(half))
            {
                parts.insert("USES_HALF".to_owned());
            } else if word == "shuffle" || word == "shuffle2" {
                parts.insert("USES_SHUFFLE".to_owned());
            } else if ASYNC_COPY_FUNCTIONS.contains(&word) {
                parts.insert("USES_ASYNC_COPIES".to_owned());
            } else if let Some(width) = word
                .strip_prefix("vload")
                .or_else(|| word.strip_prefix("vstore"))
                .filter(|n| ["2", "3", "4", "8", "16"].contains(n))
            {
                parts.insert(format!("USES_VLOADSTORE{width}"));
            }
        }
    }
    parts
}

/// The `#define`s the runtime's text reads for `parts` ([`parts_named`]), with the sizes of
/// a work-item's records when barriers are among them, and of a work-group's private
/// memory when work-groups are split at barriers.
fn runtime_parts(parts: &BTreeSet<String>) -> String {
    let mut defines: String = parts
        .iter()
        .map(|part| format!("#define {part}\n"))
        .collect();
    if parts.contains("USES_BARRIER") {
        defines.push_str(&format!(
            "#define ITEM_STACK {BARRIER_ITEM_STACK}\n#define ITEM_SAVE {BARRIER_ITEM_SAVE}\n"
        ));
    }
    if parts.contains("USES_GROUPS") {
        defines.push_str(&format!(
            "#define GROUP_PRIVATE_BYTES {GROUP_PRIVATE_BYTES}ull\n"
        ));
    }
    if parts.contains("USES_BARRIER") || parts.contains("USES_GROUPS") {
        defines.push_str(&format!("#define MAX_ITEMS {MAX_GROUP_ITEMS}\n"));
    }
    defines
}

/// Each kernel's NDRange loop, exported under the kernel's name, over the runtime's
/// work-item functions. A `__local` argument arrives as its byte count and is given that
/// much of the loop's stack. A `grouped` kernel is called once per work-group (it runs its
/// work-items itself, [`work_item_loops`]); with `barriers`, each work-item of the others
/// runs through a function of its own, which the runtime suspends at barriers (see
/// `USES_BARRIER` in the runtime). Each loop calls its kernel's entry (the kernel, or its
/// by-value shim); numbers narrower than a word arrive in one and are narrowed as the kernel
/// takes them.
fn ndrange_loops(
    kernels: &[KernelMeta],
    c_types: &[Vec<&'static str>],
    entries: &[String],
    grouped: &[bool],
    barriers: bool,
    shareable: bool,
) -> String {
    let mut text = String::from(
        "extern int __accelhost_begin(unsigned, unsigned, unsigned, unsigned, unsigned, \
         unsigned, unsigned, unsigned, unsigned, unsigned);\n\
         extern unsigned long __accelhost_row_length(void);\n\
         extern void __accelhost_set_x(unsigned long);\n\
         extern int __accelhost_next_row(void);\n\
         extern int __accelhost_next_group(void);\n\
         extern unsigned __accelhost_items_bytes(void);\n\
         extern void __accelhost_group_begin(void *);\n\
         extern unsigned __accelhost_resume(void);\n\
         extern void __accelhost_suspended(void);\n\
         extern unsigned __accelhost_get_sp(void);\n\
         extern void __accelhost_set_sp(unsigned);\n\
         extern void __accelhost_set_share(unsigned, unsigned);\n",
    );
    if shareable {
        text.push_str(&format!(
            "__attribute__((export_name(\"{SHARE_EXPORT}\")))\n\
             void __accelhost_share(unsigned index, unsigned count) {{\n\
             \x20   __accelhost_set_share(index, count);\n}}\n"
        ));
    }
    for (((kernel, own), entry), &grouped) in kernels.iter().zip(c_types).zip(entries).zip(grouped)
    {
        let name = &kernel.name;
        let mut params = Vec::with_capacity(own.len());
        let mut locals = String::new();
        let mut forwarded = Vec::with_capacity(own.len());
        for (i, (ty, arg)) in own.iter().zip(&kernel.args).enumerate() {
            if arg.kind == ArgKind::Local {
                params.push(format!("unsigned a{i}"));
                locals.push_str(&format!(
                    "    if (a{i} > {LOCAL_MEMORY_BYTES}u) __builtin_trap();\n\
                     \x20   local_bytes += (a{i} + 15u) & ~15u;\n\
                     \x20   if (local_bytes > {LOCAL_MEMORY_BYTES}u) __builtin_trap();\n\
                     \x20   void *local{i} = __builtin_alloca((a{i} + 15u) & ~15u);\n"
                ));
                forwarded.push(format!("local{i}"));
            } else {
                let carried = match *ty {
                    "signed char" | "unsigned char" | "short" | "unsigned short" => "unsigned",
                    other => other,
                };
                params.push(format!("{carried} a{i}"));
                forwarded.push(format!("a{i}"));
            }
        }
        let types = if own.is_empty() {
            "void".to_owned()
        } else {
            own.join(", ")
        };
        let declared: Vec<String> = own
            .iter()
            .enumerate()
            .map(|(i, ty)| format!("{ty} a{i}"))
            .collect();
        let declared = if own.is_empty() {
            "void".to_owned()
        } else {
            declared.join(", ")
        };
        text.push_str(&format!("\nextern void {entry}({types});\n"));
        if !locals.is_empty() {
            locals.insert_str(0, "    unsigned local_bytes = 0;\n");
        }
        let run = if grouped {
            format!(
                "    do {{ {entry}({}); }} while (__accelhost_next_group());\n",
                forwarded.join(", ")
            )
        } else if barriers {
            text.push_str(&format!(
                "__attribute__((noinline)) static void __accelhost_item_{name}({declared}) {{\n\
                 \x20   {entry}({});\n}}\n",
                (0..own.len())
                    .map(|i| format!("a{i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            format!(
                "    unsigned items_bytes = __accelhost_items_bytes();\n\
                 \x20   if (items_bytes == 0) __builtin_trap();\n\
                 \x20   void *items = __builtin_alloca(items_bytes);\n\
                 \x20   do {{\n\
                 \x20       __accelhost_group_begin(items);\n\
                 \x20       unsigned sp;\n\
                 \x20       while ((sp = __accelhost_resume()) != 0) {{\n\
                 \x20           unsigned loop_sp = __accelhost_get_sp();\n\
                 \x20           __accelhost_set_sp(sp);\n\
                 \x20           __accelhost_item_{name}({forwarded});\n\
                 \x20           __accelhost_set_sp(loop_sp);\n\
                 \x20           __accelhost_suspended();\n\
                 \x20       }}\n\
                 \x20   }} while (__accelhost_next_group());\n",
                forwarded = forwarded.join(", "),
            )
        } else {
            format!(
                "    unsigned long row = __accelhost_row_length();\n\
                 \x20   do {{\n\
                 \x20       for (unsigned long x = 0; x < row; x++) {{\n\
                 \x20           __accelhost_set_x(x);\n\
                 \x20           {entry}({});\n\
                 \x20       }}\n\
                 \x20   }} while (__accelhost_next_row());\n",
                forwarded.join(", ")
            )
        };
        text.push_str(&format!(
            "__attribute__((export_name(\"{name}\")))\n\
             void {LOOP_PREFIX}{name}({params}{sep}unsigned dim, unsigned g0, unsigned g1, \
             unsigned g2, unsigned l0, unsigned l1, unsigned l2, unsigned o0, unsigned o1, \
             unsigned o2) {{\n\
             \x20   int begun = __accelhost_begin(dim, g0, g1, g2, l0, l1, l2, o0, o1, o2);\n\
             \x20   if (begun == 0) __builtin_trap();\n\
             \x20   if (begun == 2) return;\n\
             {locals}{run}}}\n",
            params = params.join(", "),
            sep = if own.is_empty() { "" } else { ", " },
        ));
    }
    text
}

/// The build error for the functions a link could not find (built-ins the devices do not
/// provide, or functions no program defines), named as a program writes them.
fn unprovided(log: &str) -> Option<KernelBuildError> {
    let missing: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split("undefined symbol: ").nth(1))
        .map(str::trim)
        .collect();
    if missing.is_empty() {
        return None;
    }
    // wasm-ld names them as a program writes them (`barrier(unsigned int)`).
    Some(KernelBuildError::Compile(format!(
        "these functions are not defined by the program (or the programs linked) and not \
         provided by the devices yet: {}",
        missing.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_build_reads_back_whole_and_a_cut_or_altered_one_does_not() {
        let built = BuiltKernels {
            kernels: vec![
                opencl_meta_for_test(),
                parse_signature("m(a: ptr, n: i64)").unwrap(),
            ],
            module: b"\0asm\x01\0\0\0rest".to_vec(),
            log: "warning: unused variable".into(),
        };
        let kept = built.to_kept();
        let back = BuiltKernels::from_kept(&kept).unwrap();
        assert_eq!(back.kernels, built.kernels);
        assert_eq!((&back.module, &back.log), (&built.module, &built.log));
        // Cut inside the metadata or the log: not a build.
        for len in [0, 3, 4, 9, kept.len() - built.module.len() - 1] {
            assert!(
                BuiltKernels::from_kept(&kept[..len]).is_none(),
                "cut at {len}"
            );
        }
        let mut kind = kept.clone();
        // The first argument's kind: after the count, the kernel's name, its argument count,
        // the argument's name and three words.
        let at =
            4 + 4 + built.kernels[0].name.len() + 4 + 4 + built.kernels[0].args[0].name.len() + 12;
        kind[at] = 2;
        assert!(
            BuiltKernels::from_kept(&kind).is_none(),
            "an unknown argument kind"
        );
        let mut count = kept.clone();
        count[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            BuiltKernels::from_kept(&count).is_none(),
            "a count past the bytes"
        );
    }

    /// Whether clang is here to run; panics without it under `ACCELHOST_REQUIRE_TOOLCHAINS=1`.
    fn clang_here() -> bool {
        let here = Command::new(clang_program())
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
        if !here && std::env::var_os("ACCELHOST_REQUIRE_TOOLCHAINS").is_some_and(|v| v == "1") {
            panic!("no clang, and ACCELHOST_REQUIRE_TOOLCHAINS=1");
        }
        here
    }

    #[test]
    fn an_embedded_header_is_named_by_a_relative_path_without_dot_dot() {
        for name in ["../x.h", "/etc/hostname", "a/../../x.h", ""] {
            let refused = compile_opencl("void f(void) {}", "", &[(name.into(), "".into())]);
            assert!(
                matches!(&refused, Err(KernelBuildError::Compile(why)) if why.contains("relative path")),
                "{name:?}: {refused:?}"
            );
        }
        let many = vec![("x.h".to_owned(), String::new()); MAX_HEADERS + 1];
        assert!(compile_opencl("void f(void) {}", "", &many).is_err());
    }

    #[test]
    fn every_kernel_of_a_program_gets_its_arguments_from_one_syntax_tree() {
        if !clang_here() {
            eprintln!("skipped: no clang ({INSTALL_HINT})");
            return;
        }
        // Declared before it is defined, named through a header's macro, and one whose
        // name is the start of another's.
        let header = [(
            "kernels.h".to_owned(),
            "#define NAMED(n) __kernel void n(__global char *c, float4 v) { c[0] = v.x; }\n\
             int later_helper(int y) { return y + 1; }\n"
                .to_owned(),
        )];
        let source = "#include \"kernels.h\"\n\
            __kernel void later(__global int *x, int y);\n\
            NAMED(through_macro)\n\
            __kernel void lat(uint n, __global float *f) { f[0] = n; }\n\
            __kernel void later(__global int *x, int y) { x[0] = later_helper(y); }\n";
        let compiled = compile_opencl(source, "", &header).unwrap();
        let arguments = |kernel: &str| -> Vec<String> {
            let kernel = compiled
                .kernels
                .iter()
                .find(|k| k.meta.name == kernel)
                .unwrap_or_else(|| panic!("no kernel {kernel}"));
            kernel.meta.args.iter().map(|a| a.name.clone()).collect()
        };
        assert_eq!(compiled.kernels.len(), 3);
        assert_eq!(arguments("lat")[..2], ["n", "f"]);
        assert_eq!(arguments("later")[..2], ["x", "y"]);
        assert_eq!(arguments("through_macro")[..2], ["c", "v"]);
    }

    #[test]
    fn a_program_that_warns_past_what_a_pipe_holds_builds_with_its_messages_cut() {
        if !clang_here() {
            eprintln!("skipped: no clang ({INSTALL_HINT})");
            return;
        }
        // About 1.6 MiB of warnings: a pipe nobody reads holds 64 KiB, and the build waited
        // on it until the deadline, then failed as a compile that ran too long.
        let mut source = String::from("__kernel void k(__global int *a) {\n");
        for line in 0..8_000 {
            source.push_str(&format!("  a[{line}] = {line} / 0;\n"));
        }
        source.push_str("}\n");
        let compiled = compile_opencl(&source, "", &[]).unwrap();
        let log = compiled.log();
        assert!(
            log.contains("division by zero"),
            "{}",
            &log[..log.len().min(400)]
        );
        assert!(
            log.len() <= MAX_LOG_BYTES as usize + 100,
            "{} bytes of messages kept",
            log.len()
        );
        assert!(
            log.contains("more bytes of messages left out"),
            "{}",
            &log[log.len().saturating_sub(200)..]
        );
    }

    #[test]
    fn programs_compiled_apart_link_into_one_module_of_all_their_kernels() {
        if !clang_here() {
            eprintln!("skipped: no clang ({INSTALL_HINT})");
            return;
        }
        let header = [(
            "sub/twice.h".to_owned(),
            "#define TWICE(x) (2 * (x))\n".to_owned(),
        )];
        let helper = compile_opencl(
            "#include \"sub/twice.h\"\nint helped(int x) { return TWICE(x); }",
            "",
            &header,
        )
        .unwrap();
        assert_eq!(
            helper.kernel_names().count(),
            0,
            "a program without kernels compiles"
        );
        let user = compile_opencl(
            "int helped(int x);\n__kernel void k(__global int *x) { x[0] = helped(x[0]); }",
            "",
            &[],
        )
        .unwrap();
        let built = link_opencl(&[&helper, &user], None).unwrap();
        assert_eq!(names(&built.kernels), "k");
        let refused = link_opencl(&[&user], None).unwrap_err().to_string();
        assert!(refused.contains("yet: helped"), "{refused}");
        let refused = link_opencl(&[&user, &helper, &user], None)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("two of the programs linked"), "{refused}");
        let refused = link_opencl(&[&helper], None).unwrap_err().to_string();
        assert!(refused.contains("no __kernel function"), "{refused}");
    }

    #[test]
    fn kernels_meeting_at_barriers_are_split_there_unless_a_helper_reaches_one() {
        if !clang_here() {
            eprintln!("skipped: no clang ({INSTALL_HINT})");
            return;
        }
        let split = compile_opencl(
            "__kernel void halves(__global int *x, __local int *part) {\n\
             \x20   size_t l = get_local_id(0);\n\
             \x20   part[l] = x[get_global_id(0)];\n\
             \x20   for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {\n\
             \x20       barrier(CLK_LOCAL_MEM_FENCE);\n\
             \x20       if (l < s) part[l] += part[l + s];\n\
             \x20   }\n\
             \x20   if (l == 0) x[get_group_id(0)] = part[0];\n}\n\
             __kernel void plain(__global int *x) { x[get_global_id(0)] = 1; }\n",
            "",
            &[],
        )
        .unwrap();
        let grouped: Vec<(&str, bool)> = split
            .kernels
            .iter()
            .map(|k| (k.meta.name.as_str(), k.grouped))
            .collect();
        assert_eq!(grouped, [("halves", true), ("plain", false)]);
        assert!(split.parts.contains("USES_GROUPS") && !split.parts.contains("USES_BARRIER"));
        let module = link_opencl(&[&split], None).unwrap().module;
        assert!(
            !module.windows(8).any(|w| w == b"asyncify"),
            "a split program needs no asyncify"
        );

        let through_helper = compile_opencl(
            "void meet(void) { barrier(CLK_LOCAL_MEM_FENCE); }\n\
             __kernel void k(__global int *x) { x[get_local_id(0)] = 1; meet(); }\n",
            "",
            &[],
        )
        .unwrap();
        assert!(!through_helper.kernels[0].grouped);
        assert!(through_helper.parts.contains("USES_BARRIER"));
        let module = link_opencl(&[&through_helper], None).unwrap().module;
        assert!(module.windows(8).any(|w| w == b"asyncify"));
    }

    #[test]
    fn a_builds_key_follows_what_the_program_reads_and_not_its_comments() {
        if !clang_here() {
            eprintln!("skipped: no clang ({INSTALL_HINT})");
            return;
        }
        struct Removed(PathBuf);
        impl Drop for Removed {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let work = scratch_file("key-test");
        let _removed = Removed(work.clone());
        let headers = work.join("headers");
        std::fs::create_dir_all(&headers).unwrap();
        let key = |source: &str, header: &str, options: &str| {
            std::fs::write(work.join("program.cl"), source).unwrap();
            std::fs::write(headers.join("step.h"), header).unwrap();
            let mut flags = opencl_options(options).unwrap();
            flags.push(format!("-I{}", headers.display()));
            let preprocessed = preprocess(&clang_program(), &work, &flags, None).ok()?;
            Some(build_key(&clang_program(), &flags, &preprocessed))
        };
        let program =
            "#include \"step.h\"\n__kernel void k(__global int *a) { a[0] = STEP + SCALE; }\n";
        let header = "#define STEP 1\n";
        let first = key(program, header, "-DSCALE=2").expect("the program preprocesses");
        assert_eq!(
            key(program, header, "-DSCALE=2"),
            Some(first),
            "the same inputs"
        );
        let commented = format!("// a comment\n{program}");
        assert_eq!(
            key(&commented, header, "-DSCALE=2"),
            Some(first),
            "a comment"
        );
        assert_ne!(
            key(program, header, "-DSCALE=3"),
            Some(first),
            "another -D value"
        );
        assert_ne!(
            key(program, "#define STEP 2\n", "-DSCALE=2"),
            Some(first),
            "another header"
        );
        assert_ne!(
            key(program, header, "-DSCALE=2 -cl-fast-relaxed-math"),
            Some(first),
            "another -cl option"
        );
        // A program that does not preprocess, or reads a header from outside its folders, is
        // refused before it has a key.
        assert_eq!(key("#include \"absent.h\"\n", header, ""), None);
        assert!(Path::new("/etc/passwd").is_file());
        let outside = key("#include \"/etc/passwd\"\n", header, "");
        assert_eq!(outside, None, "a header by path outside the folders");
    }

    /// `source` compiled to SPIR-V as a SYCL or OpenCL toolchain hands it on (clang's 64-bit
    /// SPIR, then LLVM's translator), or `None`, saying why, without clang or the translator
    /// (a panic under `ACCELHOST_REQUIRE_TOOLCHAINS=1`).
    pub(crate) fn spirv_of(source: &str) -> Option<Vec<u8>> {
        if !clang_here() {
            eprintln!("skipped: no clang ({INSTALL_HINT})");
            return None;
        }
        if !translates_spirv() {
            if std::env::var_os("ACCELHOST_REQUIRE_TOOLCHAINS").is_some_and(|v| v == "1") {
                panic!("no SPIR-V translator, and ACCELHOST_REQUIRE_TOOLCHAINS=1");
            }
            eprintln!("skipped: no SPIR-V translator ({SPIRV_HINT})");
            return None;
        }
        let work = scratch_file("spirv-test");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("k.cl"), source).unwrap();
        let mut compile = Command::new(clang_program());
        compile
            .args([
                "-x",
                "cl",
                "-cl-std=CL1.2",
                "--target=spir64-unknown-unknown",
            ])
            .args([
                "-Xclang",
                "-finclude-default-header",
                "-O2",
                "-emit-llvm",
                "-c",
            ])
            // Its arguments keep their names, as they do in SPIR-V with debug names.
            .arg("-fno-discard-value-names")
            .arg(work.join("k.cl"))
            .arg("-o")
            .arg(work.join("k.bc"));
        run_clang(compile, &clang_program()).unwrap();
        let translator = spirv_translator(&clang_program());
        let mut translate = Command::new(&translator);
        translate
            .arg(work.join("k.bc"))
            .arg("-o")
            .arg(work.join("k.spv"));
        run_clang(translate, &translator).unwrap();
        let il = std::fs::read(work.join("k.spv")).unwrap();
        std::fs::remove_dir_all(&work).unwrap();
        Some(il)
    }

    #[test]
    fn spirv_builds_into_the_cards_kernels_with_their_arguments() {
        let Some(il) = spirv_of(
            "__kernel void scale(__global float *data, __local float *tile, uchar by, ulong n) {\n\
             size_t i = get_global_id(0);\n\
             tile[get_local_id(0)] = data[i];\n\
             barrier(CLK_LOCAL_MEM_FENCE);\n\
             if (i < n) data[i] = tile[get_local_size(0) - 1 - get_local_id(0)] * by;\n\
             }\n\
             __kernel void sums(__global int *out, __global const int4 *in) {\n\
             atomic_add(out, (int)abs((long)vload4(get_global_id(0), (__global const int *)in).x));\n\
             }\n",
        ) else {
            return;
        };
        let built = build_spirv(&il, "-cl-fast-relaxed-math", &[], None).unwrap();
        assert_eq!(names(&built.kernels), "scale, sums");
        let scale = &built.kernels[0];
        let kinds: Vec<(&str, ArgKind, u32)> = scale
            .args
            .iter()
            .take(4)
            .map(|a| (a.name.as_str(), a.kind, a.size))
            .collect();
        assert_eq!(
            kinds,
            [
                ("data", ArgKind::Global, 8),
                ("tile", ArgKind::Local, 4),
                ("by", ArgKind::Scalar, 4),
                ("n", ArgKind::Scalar, 8),
            ]
        );
        assert!(is_ndrange(scale), "the NDRange follows its own arguments");
        // Its barrier suspends work-items.
        assert!(built.module.windows(8).any(|w| w == b"asyncify"));
        let kept = BuiltKernels::from_kept(&built.to_kept()).unwrap();
        assert_eq!(kept.module, built.module);

        let refused = build_spirv(b"__kernel void k() {}", "", &[], None).unwrap_err();
        assert!(
            matches!(&refused, KernelBuildError::Spirv(why) if why.contains("magic number")),
            "{refused}"
        );
        let refused = build_spirv(&il[..16], "", &[], None)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("16 bytes are not a SPIR-V module"),
            "{refused}"
        );
        let mut cut = il.clone();
        cut.truncate(il.len() / 8 * 4);
        let refused = build_spirv(&cut, "", &[], None).unwrap_err().to_string();
        assert!(
            refused.contains("translator refused the module"),
            "{refused}"
        );
        let refused = build_spirv(&il, "-O9", &[], None).unwrap_err();
        assert!(matches!(refused, KernelBuildError::Options(_)), "{refused}");
    }

    #[test]
    fn signatures_read_as_written_and_bad_ones_say_why() {
        let meta = parse_signature("mmult(a: ptr, b: ptr, n: i32, scale: f64)").unwrap();
        let kinds: Vec<(&str, ArgKind, u32, u32)> = meta
            .args
            .iter()
            .map(|a| (a.name.as_str(), a.kind, a.size, a.offset))
            .collect();
        assert_eq!(
            kinds,
            [
                ("a", ArgKind::Global, 8, 0x10),
                ("b", ArgKind::Global, 8, 0x1c),
                ("n", ArgKind::Scalar, 4, 0x28),
                ("scale", ArgKind::Scalar, 8, 0x30),
            ]
        );
        for (bad, says) in [
            ("mmult", "no '('"),
            ("mmult(a: ptr", "no closing ')'"),
            ("mmult(a)", "has no ': type'"),
            ("mmult(a: float)", "unknown type 'float'"),
            ("1mmult(a: ptr)", "a C identifier"),
        ] {
            let err = parse_signature(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let many = format!(
            "wide({})",
            (0..400)
                .map(|i| format!("a{i}: ptr"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let err = parse_signature(&many).unwrap_err().to_string();
        assert!(err.contains("registers up to"), "{err}");
    }

    #[test]
    fn c_types_travel_as_pointers_or_numbers_of_their_wasm32_size() {
        assert_eq!(
            scalar_or_pointer("const float *"),
            Some((ArgKind::Global, 8))
        );
        assert_eq!(
            scalar_or_pointer("float *restrict"),
            Some((ArgKind::Global, 8))
        );
        assert_eq!(
            scalar_or_pointer("unsigned long"),
            Some((ArgKind::Scalar, 4))
        );
        assert_eq!(scalar_or_pointer("const int"), Some((ArgKind::Scalar, 4)));
        assert_eq!(
            scalar_or_pointer("unsigned long long"),
            Some((ArgKind::Scalar, 8))
        );
        assert_eq!(scalar_or_pointer("double"), Some((ArgKind::Scalar, 8)));
        assert_eq!(scalar_or_pointer("struct pair"), None);
        assert_eq!(scalar_or_pointer("float &"), None);
    }

    #[test]
    fn opencl_kernels_are_found_in_the_programs_own_lines_after_macros() {
        let preprocessed = "# 1 \"program.cl\"\n\
            # 1 \"/usr/lib/clang/14/include/opencl-c.h\" 1\n\
            __kernel void from_a_header(int x);\n\
            # 3 \"program.cl\" 2\n\
            __kernel __attribute__((reqd_work_group_size(64, 1, 1))) void scan(__global int *a)\n\
            { }\n\
            void helper(void) {}\n\
            kernel void twice(int x) {} kernel void twice(int x);\n";
        assert_eq!(kernel_names(&own_lines(preprocessed)), ["scan", "twice"]);
    }

    #[test]
    fn the_runtime_builds_the_conversions_and_vector_widths_a_program_names() {
        let preprocessed = "# 1 \"/usr/lib/clang/14/include/opencl-c.h\" 1\n\
            float4 convert_float4(uint4); void vstore8(float8, size_t, float *);\n\
            # 3 \"program.cl\" 2\n\
            f[0] = convert_int_sat(g) + convert_float4(u).x + convert_half(h); vload16(0, p);\n\
            # 1 \"/pyopencl/cl/pyopencl-complex.h\" 1\n\
            vstore3(v, 0, q); my_convert_ulong2(x); vload5(0, p); convert_uchar4_rte(c);\n";
        assert_eq!(
            runtime_parts(&parts_named(preprocessed)),
            "#define USES_VLOADSTORE16\n#define USES_VLOADSTORE3\n#define USES_convert_float\n\
             #define USES_convert_int\n#define USES_convert_int_modes\n\
             #define USES_convert_uchar\n#define USES_convert_uchar_modes\n"
        );
    }

    #[test]
    fn opencl_2_group_functions_are_named_by_their_own_words_and_bring_barriers() {
        let parts = parts_named("x = work_group_reduce_add(y) + get_sub_group_id();\n");
        assert_eq!(
            parts.iter().map(String::as_str).collect::<Vec<_>>(),
            ["USES_BARRIER", "USES_OPENCL_2_GROUPS"]
        );
        // A program's own function of a like name is not one.
        assert!(parts_named("int work_group_sum(int x);\n").is_empty());
    }

    #[test]
    fn the_atomic_functions_are_named_by_either_spelling() {
        let header = "# 1 \"/usr/lib/clang/14/include/opencl-c.h\" 1\n\
            int atom_add(volatile __global int *p, int v);\n\
            # 3 \"program.cl\" 2\n";
        assert_eq!(runtime_parts(&parts_named(header)), "");
        for call in [
            "atomic_inc(&n[0]);",
            "atom_inc(&n[0]);",
            "atom_cmpxchg(p, 0, 1);",
        ] {
            assert_eq!(
                runtime_parts(&parts_named(&format!("{header}{call}\n"))),
                "#define USES_ATOMICS\n",
                "{call}"
            );
        }
    }

    #[test]
    fn shuffles_are_named_by_their_own_words_only() {
        let header = "# 1 \"/usr/lib/clang/14/include/opencl-c.h\" 1\n\
            float4 shuffle(float4 x, uint4 mask);\n\
            # 3 \"program.cl\" 2\n";
        assert_eq!(runtime_parts(&parts_named(header)), "");
        for call in ["y = shuffle(x, m);", "y = shuffle2(x, x, m);"] {
            assert_eq!(
                runtime_parts(&parts_named(&format!("{header}{call}\n"))),
                "#define USES_SHUFFLE\n",
                "{call}"
            );
        }
        let other = format!("{header}int shuffled = reshuffle(1);\n");
        assert_eq!(runtime_parts(&parts_named(&other)), "");
    }

    #[test]
    fn a_program_calling_barrier_gets_suspendable_work_items_of_the_sizes_the_link_gives() {
        let preprocessed = "# 1 \"/usr/lib/clang/14/include/opencl-c.h\" 1\n\
            void barrier(cl_mem_fence_flags);\n\
            # 3 \"program.cl\" 2\n";
        assert_eq!(
            runtime_parts(&parts_named(preprocessed)),
            "",
            "clang's header alone names nothing"
        );
        let parts = runtime_parts(&parts_named(&format!(
            "{preprocessed}x[l] = 1; barrier(1);\n"
        )));
        assert_eq!(
            parts,
            format!(
                "#define USES_BARRIER\n#define ITEM_STACK {BARRIER_ITEM_STACK}\n\
                 #define ITEM_SAVE {BARRIER_ITEM_SAVE}\n#define MAX_ITEMS {MAX_GROUP_ITEMS}\n"
            )
        );
    }

    #[test]
    fn kernels_lose_their_calling_convention_in_code_and_nowhere_else() {
        let ir = "@.str = private constant [20 x i8] c\"a spir_kernel word \\00\"\n\
            define hidden spir_kernel void @k(float* %0) #0 {\n\
            \x20 tail call spir_kernel void @j(float* %0)\n\
            \x20 ret void\n}\n\
            declare spir_kernel void @j(float*)\n";
        let plain = kernels_as_functions(ir);
        assert_eq!(plain.matches("spir_kernel").count(), 1, "{plain}");
        assert!(plain.contains("define hidden void @k(") && plain.contains("tail call void @j("));
        assert!(plain.contains("declare void @j("), "{plain}");
    }

    #[test]
    fn local_arguments_are_given_bounded_memory_of_the_loop_and_barriers_a_loop_of_items() {
        let meta = opencl_meta_for_test();
        let types = vec![vec!["void *", "void *"]];
        let entries = ["k".to_owned()];
        let plain = ndrange_loops(
            std::slice::from_ref(&meta),
            &types,
            &entries,
            &[false],
            false,
            true,
        );
        assert!(plain.contains("void __accelhost_ndrange_k(void * a0, unsigned a1, unsigned dim"));
        assert!(plain.contains(&format!(
            "if (a1 > {LOCAL_MEMORY_BYTES}u) __builtin_trap();"
        )));
        assert!(
            plain.contains("        __accelhost_set_x(x);\n            k(a0, local1);\n"),
            "{plain}"
        );
        assert!(!plain.contains("__accelhost_item_k"));
        assert!(plain.contains(&format!("export_name(\"{SHARE_EXPORT}\")")));
        let suspendable = ndrange_loops(
            std::slice::from_ref(&meta),
            &types,
            &entries,
            &[false],
            true,
            false,
        );
        assert!(suspendable.contains("__attribute__((noinline)) static void __accelhost_item_k("));
        assert!(
            suspendable.contains("__accelhost_item_k(a0, local1);"),
            "{suspendable}"
        );
        assert!(
            !suspendable.contains(SHARE_EXPORT),
            "not shareable: no share export"
        );
    }

    #[test]
    fn by_value_arguments_take_the_size_clang_gives_in_whole_words_through_a_shim() {
        let kernel = || OpenclKernel {
            name: "k".into(),
            args: vec![
                ("x".into(), ArgKind::Global, 8),
                ("c".into(), ArgKind::Scalar, 0),
                ("w".into(), ArgKind::Scalar, 0),
            ],
            c_types: vec!["void *", "", ""],
            spelled: vec![
                "__global float *".into(),
                "cfloat_t".into(),
                "wide_t".into(),
            ],
            values: vec![1, 2],
        };
        let shim = by_value_shims(&[kernel()]);
        assert!(shim.contains(
            "__constant uint __accelhost_size_k_1 __attribute__((used)) = sizeof(cfloat_t);"
        ));
        assert!(
            shim.contains("__kernel void __accelhost_args_k(__global float * a0, "),
            "{shim}"
        );
        assert!(
            shim.contains("k(a0, __builtin_choose_expr(sizeof(cfloat_t) <= 8"),
            "{shim}"
        );
        assert_eq!(entry_of(&kernel()), "__accelhost_args_k");
        let ir = "@__accelhost_size_k_1 = hidden constant i32 6, align 4\n\
                  @__accelhost_size_k_2 = hidden constant i32 28, align 4\n\
                  @other = hidden constant i32 5, align 4\n";
        let sizes = probed_sizes(ir);
        assert_eq!(sizes.len(), 2);
        let (meta, c_types) = kernel().finish(&sizes).unwrap();
        let words: Vec<u32> = meta.args[..3].iter().map(|a| a.size).collect();
        assert_eq!(words, [8, 8, 28]);
        assert_eq!(c_types, ["void *", "unsigned long long", "void *"]);
        let err = kernel().finish(&HashMap::new()).unwrap_err().to_string();
        assert!(
            err.contains("the size of argument 'c' is not known"),
            "{err}"
        );
    }

    fn opencl_meta_for_test() -> KernelMeta {
        let mut args = vec![
            ("x".to_owned(), ArgKind::Global, 8),
            ("scratch".to_owned(), ArgKind::Local, 4),
        ];
        args.extend(
            NDRANGE_ARGS
                .iter()
                .map(|n| ((*n).to_owned(), ArgKind::Scalar, 4)),
        );
        KernelMeta::with_hls_offsets("k", &args)
    }

    #[test]
    fn build_options_are_taken_or_refused_by_name() {
        assert_eq!(
            opencl_options("-D N=4 -DM -I /inc -Iother -w -cl-mad-enable -cl-std=CL2.0").unwrap(),
            ["-DN=4", "-DM", "-I/inc", "-Iother", "-w", "-cl-mad-enable"]
        );
        for (bad, says) in [
            ("-D", "-D without a name"),
            ("-I", "-I without a folder"),
            (
                "-fplugin=evil.so",
                "'-fplugin=evil.so' is not a build option",
            ),
            ("-o /etc/passwd", "'-o' is not a build option"),
        ] {
            let err = opencl_options(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn ndrange_kernels_are_told_by_their_last_arguments() {
        let mut args: Vec<(String, ArgKind, u32)> = vec![("x".into(), ArgKind::Global, 8)];
        assert!(!is_ndrange(&KernelMeta::with_hls_offsets("k", &args)));
        args.extend(
            NDRANGE_ARGS
                .iter()
                .map(|n| ((*n).to_owned(), ArgKind::Scalar, 4)),
        );
        assert!(is_ndrange(&KernelMeta::with_hls_offsets("k", &args)));
    }

    #[test]
    fn hls_headers_the_card_lacks_are_refused_by_name_and_line() {
        let dir = std::env::temp_dir().join(format!("accelhost-kernel-src-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("stream.cpp");
        std::fs::write(
            &source,
            "// a streaming kernel\n#include <stdint.h>\n  #  include \"hls_stream.h\"\nvoid k() {}\n",
        )
        .unwrap();
        let err = build_c(std::slice::from_ref(&source), &["k".into()], &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("stream.cpp:3: hls::stream"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

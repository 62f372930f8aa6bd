//! Kernels for the emulated XRT card from the forms their authors have: Vitis-style C or C++
//! sources, built with the system's clang into one WebAssembly module of the card's kernel
//! contract (see the emulator's `kernels`), their arguments read from clang's syntax tree; or
//! a prebuilt module, its kernels' signatures given as text (`mmult(a: ptr, n: i32)`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::xclbin::{ArgKind, KERNEL_ARGS_END, KernelMeta};
use crate::types::Guid;

/// The environment variable naming the C compiler (default `clang` on `PATH`), as the SDK's.
pub const CLANG_ENV: &str = "ACCELHOST_CLANG";
/// What to install when clang or its WebAssembly parts are missing (Debian's names).
pub const INSTALL_HINT: &str = "apt-get install clang lld wasi-libc";
/// The stack every kernel gets (local arrays of HLS kernels live there).
pub const STACK_BYTES: u64 = 1 << 20;
/// The longest a kernel name may be: its compute units are named `name:name_N` in a 64-byte
/// field.
pub const MAX_NAME: usize = 40;
/// How long one clang run may take before it is stopped.
const COMPILE_DEADLINE: Duration = Duration::from_secs(120);

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

/// Why kernels could not be built.
#[derive(Debug, thiserror::Error)]
pub enum KernelBuildError {
    /// No kernel was named.
    #[error("name the kernels to build (as v++ -k does); no kernel was named")]
    NoKernel,
    /// A prebuilt module is not WebAssembly.
    #[error("the module is not WebAssembly (it does not start with \\0asm)")]
    NotWasm,
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

/// Runs clang to its end or [`COMPILE_DEADLINE`]; `Ok` holds its messages.
fn run_clang(mut command: Command, clang: &OsString) -> Result<String, KernelBuildError> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().map_err(|e| {
        KernelBuildError::NoCompiler(format!("{} cannot be run: {e}", clang.to_string_lossy()))
    })?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| KernelBuildError::Compile(e.to_string()))?
        {
            break status;
        }
        if started.elapsed() > COMPILE_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(KernelBuildError::Compile(format!(
                "clang ran for more than {} s and was stopped",
                COMPILE_DEADLINE.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let output = child
        .wait_with_output()
        .map_err(|e| KernelBuildError::Compile(e.to_string()))?;
    let mut log = String::from_utf8_lossy(&output.stderr).into_owned();
    log.push_str(&String::from_utf8_lossy(&output.stdout));
    if status.success() {
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
        let dump = run_clang_stdout(command, clang)?;
        let mut found = None;
        for value in serde_json::Deserializer::from_str(&dump).into_iter::<serde_json::Value>() {
            let Ok(value) = value else { break };
            if value["kind"] == "FunctionDecl" && value["name"] == kernel {
                let defined = value["inner"]
                    .as_array()
                    .is_some_and(|inner| inner.iter().any(|n| n["kind"] == "CompoundStmt"));
                if defined || found.is_none() {
                    found = Some(value);
                }
            }
        }
        if let Some(decl) = found {
            return meta_of_decl(kernel, &decl);
        }
    }
    Err(kernel_error(
        kernel,
        "no function of that name in the sources",
    ))
}

fn run_clang_stdout(mut command: Command, clang: &OsString) -> Result<String, KernelBuildError> {
    command.stdin(Stdio::null()).stderr(Stdio::null());
    let output = command.output().map_err(|e| {
        KernelBuildError::NoCompiler(format!("{} cannot be run: {e}", clang.to_string_lossy()))
    })?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
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

#[cfg(test)]
mod tests {
    use super::*;

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
            (0..30)
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

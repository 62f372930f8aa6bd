//! SPIR-V programs brought to the card's kernels. LLVM's SPIR-V translator gives a program
//! back as 64-bit SPIR IR (`spir64`: 64-bit pointers and `size_t`, address spaces on
//! pointers, the `spir_kernel`/`spir_func` calling conventions, OpenCL's built-ins as calls of
//! their mangled overloads); [`translate`] rewrites that IR for 32-bit WebAssembly, where the
//! OpenCL C build takes it on: one flat memory (every address space is it), the calling
//! conventions dropped, and each built-in whose SPIR form differs from the card's reached
//! through a bridge written in OpenCL C, which clang compiles against the runtime's overloads.
//!
//! Invariants of the rewritten IR: it names no address space and no SPIR calling convention;
//! every `_Z` function it declares but does not define is called under a bridge's name
//! (`__accelhost_spirv_` and the SPIR name) unless its SPIR form is the card's (numbers and
//! vectors of them only, no `size_t` returned); its kernels are plain functions of pointers
//! and numbers. A pointer is an offset into the kernel's one memory, whatever the program
//! made it from: a SPIR-V kernel reaches no more than an OpenCL C one.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

/// The first word of every SPIR-V module.
pub const MAGIC: u32 = 0x0723_0203;
/// The SPIR-V versions the translator reads, as OpenCL names them (`CL_DEVICE_IL_VERSION`).
pub const IL_VERSIONS: [(u32, u32); 5] = [(1, 0), (1, 1), (1, 2), (1, 3), (1, 4)];
/// The prefix of a bridge's name.
const BRIDGE: &str = "__accelhost_spirv_";
/// The data layout and target of the card's kernels (clang's for `wasm32-wasi`).
const WASM32_TARGET: &str = "target datalayout = \"e-m:e-p:32:32-p10:8:8-p20:8:8-i64:64-n32:64-S128-ni:1:10:20\"\n\
                             target triple = \"wasm32-unknown-wasi\"\n";
/// OpenCL 2.0's work-item functions, which the card's OpenCL C 1.2 runtime has not, as
/// OpenCL 1.2 computes them (every work-group is whole: its size is the enqueued one).
const OPENCL_2_WORK_ITEMS: [(&str, &str); 3] = [
    (
        "get_global_linear_id",
        "(get_global_id(2) - get_global_offset(2)) * get_global_size(1) * get_global_size(0) \
         + (get_global_id(1) - get_global_offset(1)) * get_global_size(0) \
         + (get_global_id(0) - get_global_offset(0))",
    ),
    (
        "get_local_linear_id",
        "(get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0) \
         + get_local_id(0)",
    ),
    ("get_enqueued_local_size", "get_local_size(a0)"),
];
/// What the bridges' OpenCL C 1.2 needs declared to call OpenCL 2.0's sub-group and
/// work-group functions, which the runtime defines (`USES_OPENCL_2_GROUPS`), and its `ctz`,
/// which it always does.
const OPENCL_2_GROUP_DECLARATIONS: &str = "\
#define ACCELHOST_CTZ(T) T __attribute__((overloadable)) ctz(T);
ACCELHOST_CTZ(char) ACCELHOST_CTZ(uchar) ACCELHOST_CTZ(short) ACCELHOST_CTZ(ushort)
ACCELHOST_CTZ(int) ACCELHOST_CTZ(uint) ACCELHOST_CTZ(long) ACCELHOST_CTZ(ulong)
#define ACCELHOST_GROUPS(T) \\
    T __attribute__((overloadable)) sub_group_broadcast(T, uint); \\
    T __attribute__((overloadable)) intel_sub_group_shuffle(T, uint); \\
    T __attribute__((overloadable)) intel_sub_group_shuffle_xor(T, uint); \\
    T __attribute__((overloadable)) work_group_broadcast(T, size_t); \\
    T __attribute__((overloadable)) work_group_broadcast(T, size_t, size_t); \\
    T __attribute__((overloadable)) work_group_broadcast(T, size_t, size_t, size_t); \\
    ACCELHOST_FOLDS(T, sub_group) ACCELHOST_FOLDS(T, work_group)
#define ACCELHOST_FOLDS(T, G) \\
    T __attribute__((overloadable)) G##_reduce_add(T); \\
    T __attribute__((overloadable)) G##_reduce_min(T); \\
    T __attribute__((overloadable)) G##_reduce_max(T); \\
    T __attribute__((overloadable)) G##_scan_inclusive_add(T); \\
    T __attribute__((overloadable)) G##_scan_inclusive_min(T); \\
    T __attribute__((overloadable)) G##_scan_inclusive_max(T); \\
    T __attribute__((overloadable)) G##_scan_exclusive_add(T); \\
    T __attribute__((overloadable)) G##_scan_exclusive_min(T); \\
    T __attribute__((overloadable)) G##_scan_exclusive_max(T);
ACCELHOST_GROUPS(int) ACCELHOST_GROUPS(uint) ACCELHOST_GROUPS(long) ACCELHOST_GROUPS(ulong)
ACCELHOST_GROUPS(float) ACCELHOST_GROUPS(double)
";
/// The built-ins whose result is a `size_t` (64 bits in SPIR, 32 on the card).
const SIZE_RESULTS: [&str; 10] = [
    "get_global_id",
    "get_local_id",
    "get_group_id",
    "get_global_size",
    "get_local_size",
    "get_num_groups",
    "get_global_offset",
    "get_enqueued_local_size",
    "get_global_linear_id",
    "get_local_linear_id",
];

/// Whether `bytes` start as a SPIR-V module does: its magic number, in either byte order.
pub fn is_spirv(bytes: &[u8]) -> bool {
    bytes.get(..4).is_some_and(|word| {
        let word: [u8; 4] = word.try_into().expect("4 bytes");
        u32::from_le_bytes(word) == MAGIC || u32::from_be_bytes(word) == MAGIC
    })
}

/// Whether `il` can be a SPIR-V module: whole words, the magic number first (in either byte
/// order), a version the translator reads; why not, when it cannot.
pub fn check_module(il: &[u8]) -> Result<(), String> {
    if il.len() < 20 || !il.len().is_multiple_of(4) {
        return Err(format!(
            "{} bytes are not a SPIR-V module (a header of 5 words, then whole words)",
            il.len()
        ));
    }
    let word = |at: usize, little: bool| {
        let bytes: [u8; 4] = il[at..at + 4].try_into().expect("4 bytes");
        if little {
            u32::from_le_bytes(bytes)
        } else {
            u32::from_be_bytes(bytes)
        }
    };
    let little = if word(0, true) == MAGIC {
        true
    } else if word(0, false) == MAGIC {
        false
    } else {
        return Err(format!(
            "the module does not start with SPIR-V's magic number {MAGIC:#010x}"
        ));
    };
    let version = word(4, little);
    let (major, minor) = (version >> 16 & 0xff, version >> 8 & 0xff);
    if !IL_VERSIONS.contains(&(major, minor)) {
        return Err(format!(
            "SPIR-V {major}.{minor}: these devices take SPIR-V {}",
            IL_VERSIONS
                .iter()
                .map(|(a, b)| format!("{a}.{b}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// A specialization constant's type, as the module declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecType {
    /// `OpTypeBool`: one byte, zero or not.
    Bool,
    /// `OpTypeInt` of this many bits.
    Int(u32),
    /// `OpTypeFloat` of this many bits.
    Float(u32),
}

impl SpecType {
    /// The bytes a value of it takes (`clSetProgramSpecializationConstant`'s `spec_size`).
    pub fn size(self) -> usize {
        match self {
            SpecType::Bool => 1,
            SpecType::Int(bits) | SpecType::Float(bits) => bits as usize / 8,
        }
    }

    /// The translator's `--spec-const` entry setting constant `id` to `value` (its bytes,
    /// little-endian, [`size`](Self::size) of them); `None` when they are not.
    pub fn option(self, id: u32, value: &[u8]) -> Option<String> {
        if value.len() != self.size() {
            return None;
        }
        let mut word = [0u8; 8];
        word[..value.len()].copy_from_slice(value);
        let bits = u64::from_le_bytes(word);
        let (ty, text) = match self {
            SpecType::Bool => ("i1", u64::from(bits != 0).to_string()),
            SpecType::Int(width) => (
                match width {
                    8 => "i8",
                    16 => "i16",
                    32 => "i32",
                    _ => "i64",
                },
                bits.to_string(),
            ),
            SpecType::Float(16) => ("f16", float_text(f64::from(half_to_f32(bits as u16)))),
            SpecType::Float(32) => ("f32", float_text(f64::from(f32::from_bits(bits as u32)))),
            SpecType::Float(_) => ("f64", float_text(f64::from_bits(bits))),
        };
        Some(format!("{id}:{ty}:{text}"))
    }
}

/// A float as LLVM reads one: decimal digits that give back the same value, `inf` or `nan`.
fn float_text(value: f64) -> String {
    if value.is_nan() {
        "nan".into()
    } else if value.is_infinite() {
        if value > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{value:e}")
    }
}

/// A half's value (IEEE 754 binary16 bits).
fn half_to_f32(bits: u16) -> f32 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f32::from(bits & 0x3ff);
    sign * match exponent {
        0 => fraction * 2f32.powi(-24),
        31 if fraction == 0.0 => f32::INFINITY,
        31 => f32::NAN,
        _ => (1.0 + fraction / 1024.0) * 2f32.powi(exponent - 15),
    }
}

/// The specialization constants `il` declares (an `OpSpecConstant`, `OpSpecConstantTrue` or
/// `OpSpecConstantFalse` decorated with a `SpecId`), by id with their types; why not, when
/// the module's instructions do not read whole. Read from the module itself, in one pass.
pub fn spec_constants(il: &[u8]) -> Result<BTreeMap<u32, SpecType>, String> {
    const OP_TYPE_BOOL: u32 = 20;
    const OP_TYPE_INT: u32 = 21;
    const OP_TYPE_FLOAT: u32 = 22;
    const OP_SPEC_CONSTANT_TRUE: u32 = 48;
    const OP_SPEC_CONSTANT_FALSE: u32 = 49;
    const OP_SPEC_CONSTANT: u32 = 50;
    const OP_DECORATE: u32 = 71;
    const SPEC_ID: u32 = 1;
    check_module(il)?;
    let little = il[..4] == MAGIC.to_le_bytes();
    let words: Vec<u32> = il
        .as_chunks::<4>()
        .0
        .iter()
        .map(|&w| {
            if little {
                u32::from_le_bytes(w)
            } else {
                u32::from_be_bytes(w)
            }
        })
        .collect();
    let (mut types, mut constants, mut ids) = (BTreeMap::new(), BTreeMap::new(), Vec::new());
    let mut at = 5;
    while at < words.len() {
        let (count, opcode) = ((words[at] >> 16) as usize, words[at] & 0xffff);
        let Some(operands) = words.get(at + 1..at + count).filter(|_| count > 0) else {
            return Err(format!(
                "the instruction at word {at} runs past the module's end"
            ));
        };
        match (opcode, operands) {
            (OP_TYPE_BOOL, [id, ..]) => {
                types.insert(*id, SpecType::Bool);
            }
            (OP_TYPE_INT, [id, width, ..]) if [8, 16, 32, 64].contains(width) => {
                types.insert(*id, SpecType::Int(*width));
            }
            (OP_TYPE_FLOAT, [id, width, ..]) if [16, 32, 64].contains(width) => {
                types.insert(*id, SpecType::Float(*width));
            }
            (OP_SPEC_CONSTANT_TRUE | OP_SPEC_CONSTANT_FALSE | OP_SPEC_CONSTANT, [ty, id, ..]) => {
                constants.insert(*id, *ty);
            }
            (OP_DECORATE, [target, SPEC_ID, spec_id, ..]) => ids.push((*target, *spec_id)),
            _ => {}
        }
        at += count;
    }
    Ok(ids
        .into_iter()
        .filter_map(|(target, spec_id)| {
            let ty = types.get(constants.get(&target)?)?;
            Some((spec_id, *ty))
        })
        .collect())
}

/// A kernel's argument, as the card passes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A pointer to global or constant memory (a buffer).
    Global,
    /// A pointer to local memory, which the launch gives.
    Local,
    /// A number, or a struct or vector by value, travelling into the NDRange loop as this C
    /// type in this many bytes: a value of up to 8 bytes in a word or two, a larger one as a
    /// pointer to its copy.
    Number(&'static str, u32),
}

/// A kernel of the program, with its arguments' names and kinds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// Its name (the function's).
    pub name: String,
    /// The function the NDRange loop calls: the kernel, or a shim taking its by-value
    /// arguments as the card passes them (see [`Arg::Number`]).
    pub entry: String,
    /// Each argument's name (its own, or `argN`) and kind.
    pub args: Vec<(String, Arg)>,
}

/// A SPIR program rewritten for the card ([`translate`]).
#[derive(Debug)]
pub struct Translated {
    /// The IR, for `wasm32`.
    pub ir: String,
    /// OpenCL C defining every bridge the IR calls.
    pub bridges: String,
    /// The base names of the built-ins the program calls (`vload4`, `barrier`), each once.
    pub built_ins: BTreeSet<String>,
    /// Its kernels.
    pub kernels: Vec<Kernel>,
}

/// Rewrites `spir`, the translator's 64-bit SPIR IR of a program, for the card (see the
/// module's invariants); why not, naming the kernel, argument or function, when it cannot.
pub fn translate(spir: &str) -> Result<Translated, String> {
    let defined: BTreeSet<&str> = spir
        .lines()
        .filter(|l| l.starts_with("define "))
        .filter_map(function_name)
        .collect();
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    let mut bridges = String::new();
    let mut built_ins = BTreeSet::new();
    let mut kernels = Vec::new();
    let mut shims = String::new();
    let mut redefined: HashMap<&str, String> = HashMap::new();
    let definitions = Definitions::of(spir);
    for line in spir.lines() {
        if line.starts_with("define ") && line.contains(" spir_kernel ") {
            let (kernel, shim, definition) = kernel_of(line, &definitions)?;
            kernels.push(kernel);
            shims.push_str(&shim);
            if let Some(definition) = definition {
                redefined.insert(line, definition);
            }
        }
        if !line.starts_with("declare ") {
            continue;
        }
        let Some(name) = function_name(line) else {
            continue;
        };
        if defined.contains(name) || !name.starts_with("_Z") {
            continue;
        }
        let call = Mangled::parse(name)
            .ok_or_else(|| format!("the built-in '{name}' is not one these devices know"))?;
        built_ins.insert(call.base.clone());
        let result = result_type(line).ok_or_else(|| {
            format!("the built-in '{name}' returns a type these devices do not pass")
        })?;
        if !call.needs_bridge(&result) {
            continue;
        }
        let bridge = format!("{BRIDGE}{name}");
        let _ = writeln!(bridges, "{}", call.bridge(&bridge, &result));
        renamed.insert(name.to_owned(), bridge);
    }
    if kernels.is_empty() {
        return Err("the module has no kernel (an OpEntryPoint of the Kernel model)".into());
    }
    let mut ir = String::with_capacity(spir.len() + 256);
    ir.push_str(WASM32_TARGET);
    let mut declared = BTreeSet::new();
    for line in spir.lines().chain(shims.lines()) {
        if line.starts_with("target datalayout") || line.starts_with("target triple") {
            continue;
        }
        let line = redefined.get(line).map_or(line, String::as_str);
        let line = renamed_functions(&flat_memory(line), &renamed);
        if line.starts_with("declare ")
            && function_name(&line).is_some_and(|name| GENERIC_CASTS.contains(&name))
        {
            continue;
        }
        let line = generic_cast(&line).unwrap_or(line);
        // Intrinsics named after their pointers' address spaces become one (declared once,
        // whatever attributes each declaration had).
        if line.starts_with("declare ")
            && let Some(name) = function_name(&line)
            && !declared.insert(name.to_owned())
        {
            continue;
        }
        ir.push_str(&line);
        ir.push('\n');
    }
    if !bridges.is_empty() {
        bridges.insert_str(0, OPENCL_2_GROUP_DECLARATIONS);
    }
    Ok(Translated {
        ir,
        bridges,
        built_ins,
        kernels,
    })
}

/// What the translator calls for OpenCL 2.0's casts of a generic pointer to a named space
/// (`to_global`, SPIR-V's `OpGenericCastToPtrExplicit`).
const GENERIC_CASTS: [&str; 3] = ["__to_global", "__to_local", "__to_private"];

/// A call of one of [`GENERIC_CASTS`] in flat memory, as the cast it is there: the card's
/// kernels have one memory, in which a generic pointer is every space's (so a cast never
/// gives NULL, and what the pointer reaches stays the launch's own memory).
fn generic_cast(line: &str) -> Option<String> {
    let (result, call) = line.split_once(" = ")?;
    let call = call.strip_prefix("tail ").unwrap_or(call);
    let rest = call.strip_prefix("call ")?;
    let (to, rest) = rest.split_once(" @")?;
    let (name, argument) = rest.split_once('(')?;
    if !GENERIC_CASTS.contains(&name) {
        return None;
    }
    let argument = &argument[..argument.rfind(')')?];
    let (from, value) = argument.rsplit_once(' ')?;
    Some(format!("{result} = bitcast {from} {value} to {to}"))
}

/// The function a `define` or `declare` line names.
fn function_name(line: &str) -> Option<&str> {
    let at = line.find(" @")? + 2;
    let rest = &line[at..];
    let end = rest.find('(')?;
    Some(rest[..end].trim_matches('"'))
}

/// `line` with every address space taken off (types, globals, intrinsics' names), address
/// space casts as plain casts, and no SPIR calling convention.
fn flat_memory(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("addrspace(") {
        let after = &rest[at + "addrspace(".len()..];
        let Some(close) = after.find(')') else { break };
        if !after[..close].chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        }
        // `T addrspace(1)*` and `@g = addrspace(3) global` lose the space before it too.
        let kept = rest[..at].strip_suffix(' ').unwrap_or(&rest[..at]);
        out.push_str(kept);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    let out = out
        .replace("addrspacecast", "bitcast")
        .replace("spir_kernel ", "")
        .replace("spir_func ", "");
    intrinsics_in_flat_memory(&out)
}

/// `line` with the pointer parts of intrinsics' names (`llvm.memcpy.p1i8.p4i8.i64`) in
/// address space 0.
fn intrinsics_in_flat_memory(line: &str) -> String {
    if !line.contains("@llvm.") {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("@llvm.") {
        out.push_str(&rest[..at]);
        let name_len = rest[at + 1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(rest.len() - at - 1);
        let name = &rest[at + 1..at + 1 + name_len];
        out.push('@');
        for (index, part) in name.split('.').enumerate() {
            if index > 0 {
                out.push('.');
            }
            match part.strip_prefix('p') {
                Some(digits)
                    if digits.starts_with(|c: char| c.is_ascii_digit())
                        && part.len() > 1
                        && index > 1 =>
                {
                    let tail = digits.trim_start_matches(|c: char| c.is_ascii_digit());
                    out.push_str("p0");
                    out.push_str(tail);
                }
                _ => out.push_str(part),
            }
        }
        rest = &rest[at + 1 + name_len..];
    }
    out.push_str(rest);
    out
}

/// `line` with each function of `renamed` called by its new name.
fn renamed_functions(line: &str, renamed: &BTreeMap<String, String>) -> String {
    if renamed.is_empty() || !line.contains("@_Z") {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len() + 64);
    let mut rest = line;
    while let Some(at) = rest.find("@_Z") {
        out.push_str(&rest[..=at]);
        let name_len = rest[at + 1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len() - at - 1);
        let name = &rest[at + 1..at + 1 + name_len];
        out.push_str(renamed.get(name).map_or(name, String::as_str));
        rest = &rest[at + 1 + name_len..];
    }
    out.push_str(rest);
    out
}

/// The OpenCL C type of a declaration's LLVM result type (`void`, `event_t`, a number or a
/// vector of numbers; integers unsigned, as SPIR does not say).
fn result_type(declare: &str) -> Option<String> {
    let after = declare.strip_prefix("declare ")?;
    let before_name = &after[..after.find(" @")?];
    let ty = before_name
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "spir_func"
                    | "zeroext"
                    | "signext"
                    | "noundef"
                    | "dso_local"
                    | "local_unnamed_addr"
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    llvm_to_opencl(&ty)
}

/// OpenCL C's name of an LLVM number or vector type.
fn llvm_to_opencl(ty: &str) -> Option<String> {
    let scalar = |t: &str| {
        Some(match t {
            "void" => "void",
            "i8" => "uchar",
            "i16" => "ushort",
            "i32" => "uint",
            "i64" => "ulong",
            "half" => "half",
            "float" => "float",
            "double" => "double",
            _ => return None,
        })
    };
    if ty == "%opencl.event_t*" {
        return Some("event_t".to_owned());
    }
    if let Some(inner) = ty.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
        let (count, element) = inner.split_once(" x ")?;
        let count: u32 = count.trim().parse().ok()?;
        let element = scalar(element.trim())?;
        return (element != "void" && [2, 3, 4, 8, 16].contains(&count))
            .then(|| format!("{element}{count}"));
    }
    scalar(ty).map(str::to_owned)
}

/// A parameter type of a mangled built-in.
#[derive(Clone, Debug, PartialEq)]
enum Type {
    /// OpenCL C's name of a number type (`uint`), or `void`.
    Number(&'static str),
    /// A vector of a number type.
    Vector(u32, &'static str),
    /// `event_t`.
    Event,
    /// Qualifiers on a pointed-to type: its address space (SPIR's number, 0 private) and
    /// whether it is const and volatile.
    Qualified {
        space: u32,
        constant: bool,
        volatile: bool,
        of: Box<Type>,
    },
    /// A pointer.
    Pointer(Box<Type>),
}

/// A built-in's mangled name, read: its base name and parameter types.
#[derive(Debug, PartialEq)]
struct Mangled {
    base: String,
    params: Vec<Type>,
}

impl Mangled {
    /// Reads `_Z<length><name><parameters>` (Itanium's mangling, as OpenCL's overloads use
    /// it: numbers, vectors, pointers with address spaces, `event_t`, substitutions).
    fn parse(name: &str) -> Option<Mangled> {
        let mut rest = name.strip_prefix("_Z")?;
        let base = source_name(&mut rest)?.to_owned();
        let mut substitutions = Vec::new();
        let mut params = Vec::new();
        if rest.is_empty() {
            return None;
        }
        while !rest.is_empty() {
            params.push(parse_type(&mut rest, &mut substitutions)?);
        }
        if params == [Type::Number("void")] {
            params.clear();
        }
        Some(Mangled { base, params })
    }

    /// Whether the card's overload of this built-in has another name or other types than
    /// SPIR's: a pointer (address spaces mangle differently), a 64-bit integer (`long` is
    /// `long long` on the card) or a `size_t` result.
    fn needs_bridge(&self, result: &str) -> bool {
        let wide = |t: &str| matches!(t, "long" | "ulong");
        SIZE_RESULTS.contains(&self.base.as_str()) && result == "ulong"
            || self.params.iter().any(|p| match p {
                Type::Pointer(_) | Type::Event | Type::Qualified { .. } => true,
                Type::Number(t) | Type::Vector(_, t) => wide(t),
            })
    }

    /// The bridge named `bridge`: a function of SPIR's types returning `result`, which calls
    /// the built-in with them (clang picks the overload and converts `size_t`s).
    fn bridge(&self, bridge: &str, result: &str) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{} a{i}", self.spell(p)))
            .collect();
        let args: Vec<String> = (0..self.params.len()).map(|i| format!("a{i}")).collect();
        let call = match OPENCL_2_WORK_ITEMS
            .iter()
            .find(|(name, _)| *name == self.base)
        {
            Some((_, computed)) => format!("({computed})"),
            None => format!("{}({})", self.base, args.join(", ")),
        };
        let body = if result == "void" {
            format!("{call};")
        } else if result == "event_t" {
            format!("return {call};")
        } else if result.ends_with(|c: char| c.is_ascii_digit()) {
            format!("return as_{result}({call});")
        } else {
            format!("return ({result}){call};")
        };
        format!(
            "__attribute__((always_inline)) {result} {bridge}({}) {{ {body} }}",
            if params.is_empty() {
                "void".to_owned()
            } else {
                params.join(", ")
            }
        )
    }

    /// OpenCL C's spelling of `ty` as a parameter of this built-in.
    fn spell(&self, ty: &Type) -> String {
        match ty {
            Type::Number(t) => (*t).to_owned(),
            Type::Vector(n, t) => format!("{t}{n}"),
            Type::Event => "event_t".to_owned(),
            Type::Qualified {
                space,
                constant,
                volatile,
                of,
            } => {
                let space = match space {
                    1 => "__global",
                    2 => "__constant",
                    3 => "__local",
                    // The generic space (OpenCL 2.0's) is the one memory too: the atomic
                    // functions are defined for global pointers, the rest for private ones.
                    4 if self.base.starts_with("atom") => "__global",
                    _ => "__private",
                };
                format!(
                    "{space} {}{}{}",
                    if *constant { "const " } else { "" },
                    if *volatile { "volatile " } else { "" },
                    self.spell(of)
                )
            }
            Type::Pointer(to) => match to.as_ref() {
                Type::Qualified { .. } => format!("{} *", self.spell(to)),
                plain => format!("__private {} *", self.spell(plain)),
            },
        }
    }
}

/// Reads `<length><name>`.
fn source_name<'a>(rest: &mut &'a str) -> Option<&'a str> {
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let length: usize = rest[..digits].parse().ok()?;
    let name = rest.get(digits..digits + length)?;
    *rest = &rest[digits + length..];
    Some(name)
}

/// Reads one type, adding to `substitutions` what Itanium's mangling makes substitutable
/// (all but the builtin types).
fn parse_type(rest: &mut &str, substitutions: &mut Vec<Type>) -> Option<Type> {
    let first = rest.chars().next()?;
    let number = |c: char| {
        Some(match c {
            'v' => "void",
            'b' => "bool",
            'c' | 'a' => "char",
            'h' => "uchar",
            's' => "short",
            't' => "ushort",
            'i' => "int",
            'j' => "uint",
            'l' | 'x' => "long",
            'm' | 'y' => "ulong",
            'f' => "float",
            'd' => "double",
            _ => return None,
        })
    };
    if let Some(t) = number(first) {
        *rest = &rest[1..];
        return Some(Type::Number(t));
    }
    let ty = match first {
        'D' if rest.starts_with("Dh") => {
            *rest = &rest[2..];
            return Some(Type::Number("half"));
        }
        'D' if rest.starts_with("Dv") => {
            *rest = &rest[2..];
            let digits = rest.find('_')?;
            let count: u32 = rest[..digits].parse().ok()?;
            *rest = &rest[digits + 1..];
            let element = match parse_type(rest, substitutions)? {
                Type::Number(t) if t != "void" && t != "bool" => t,
                _ => return None,
            };
            Type::Vector(count, element)
        }
        'S' => {
            *rest = &rest[1..];
            let end = rest.find('_')?;
            let index = if end == 0 {
                0
            } else {
                usize::from_str_radix(&rest[..end], 36).ok()? + 1
            };
            *rest = &rest[end + 1..];
            return substitutions.get(index).cloned();
        }
        'P' => {
            *rest = &rest[1..];
            let mut space = 0;
            let (mut constant, mut volatile, mut qualified) = (false, false, false);
            if let Some(vendor) = rest.strip_prefix('U') {
                *rest = vendor;
                let name = source_name(rest)?;
                space = name.strip_prefix("AS")?.parse().ok()?;
                qualified = true;
            }
            loop {
                match rest.chars().next()? {
                    'r' => {}
                    'V' => volatile = true,
                    'K' => constant = true,
                    _ => break,
                }
                qualified = true;
                *rest = &rest[1..];
            }
            let of = parse_type(rest, substitutions)?;
            let to = if qualified {
                let qualified = Type::Qualified {
                    space,
                    constant,
                    volatile,
                    of: Box::new(of),
                };
                substitutions.push(qualified.clone());
                qualified
            } else {
                of
            };
            Type::Pointer(Box::new(to))
        }
        '0'..='9' => match source_name(rest)? {
            "ocl_event" => Type::Event,
            _ => return None,
        },
        _ => return None,
    };
    substitutions.push(ty.clone());
    Some(ty)
}

/// A kernel's name and arguments from its `define` line, with the kinds its SPIR types and
/// `kernel_arg_type` metadata (for the signedness of small numbers) give, the shim (IR,
/// empty when none) that takes its structs and vectors by value as the card passes them, and
/// the `define` line rewritten when the kernel takes a struct holding pointers.
fn kernel_of(
    define: &str,
    module: &Definitions,
) -> Result<(Kernel, String, Option<String>), String> {
    let name = function_name(define)
        .ok_or_else(|| "a kernel's definition names no function".to_owned())?
        .to_owned();
    let open = define
        .find('(')
        .expect("a function name ends at its parameters");
    let mut depth = 0usize;
    let mut close = None;
    for (at, c) in define[open..].char_indices() {
        match c {
            '(' | '<' | '{' | '[' => depth += 1,
            ')' | '>' | '}' | ']' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + at);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close.ok_or_else(|| format!("kernel '{name}': its parameters do not close"))?;
    let types = module.metadata_strings(define, "!kernel_arg_type");
    let mut args = Vec::new();
    // The global pointers of structs passed by value, after every argument of the kernel's.
    let mut hidden = Vec::new();
    // The `byval` attributes of those structs, which the kernel's definition loses: the shim
    // hands it the struct in the host's layout, which is larger than the card's.
    let mut unbyval = Vec::new();
    let mut shim = Shim::default();
    for (index, param) in top_level_commas(&define[open + 1..close])
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .enumerate()
    {
        let param = param.trim();
        let own = param
            .rsplit_once(' ')
            .map(|(_, last)| last)
            .filter(|last| last.starts_with('%'))
            .map(|last| last.trim_start_matches('%').trim_matches('"'))
            .filter(|n| !n.is_empty() && !n.chars().all(|c| c.is_ascii_digit()));
        let arg_name = own.map_or_else(|| format!("arg{index}"), str::to_owned);
        let refuse = |why: &str| format!("kernel '{name}': argument '{arg_name}' {why}");
        let ty = param_type(param);
        let spelled = types.get(index).map(String::as_str).unwrap_or("");
        let unsigned = spelled.starts_with('u') || spelled.starts_with("size_t");
        if let Some(value) = between(param, "byval(", ')') {
            let attribute = format!("byval({value})");
            if let Some((size, _)) = module.layout(value, 0) {
                args.push((arg_name, by_value(size)));
                shim.by_value(index, &ty, size, Some(&attribute));
                continue;
            }
            let (size, pointers) = module.host_pointers(value).ok_or_else(|| {
                refuse(&format!(
                    "is a struct by value of type '{value}' holding a pointer that is not to \
                     global or constant memory, a pointer to pointers, a vector of pointers, \
                     more than {MAX_POINTERS} pointers, or a type of no known layout"
                ))
            })?;
            if let Some(line) = module.layout_dependent_use(value) {
                let line: String = line.chars().take(200).collect();
                return Err(refuse(&format!(
                    "is a struct by value of type '{value}' holding pointers, which the \
                     program reads by the card's layout, where the host's is given: '{line}'"
                )));
            }
            for (at, _) in &pointers {
                hidden.push((field_pointer_name(index, *at), Arg::Global));
            }
            args.push((arg_name, by_value(size)));
            shim.holding_pointers(index, &ty, size, &pointers);
            unbyval.push(attribute);
            continue;
        }
        if param.contains("byref(") {
            return Err(refuse("is passed by reference, which no kernel takes"));
        }
        let kind = if let Some(pointer) = pointer_space(&ty) {
            if points_to_pointers(&ty) {
                return Err(refuse(&format!(
                    "has type '{ty}', a pointer to pointers: the card cannot follow addresses \
                     a program stores in memory, only the allocations passed to the kernel"
                )));
            }
            match pointer {
                1 | 2 => Arg::Global,
                3 => Arg::Local,
                _ => {
                    return Err(refuse(
                        "is a private or generic pointer, which no kernel takes",
                    ));
                }
            }
        } else if ty.starts_with('<') {
            let (size, _) = module
                .layout(&ty, 0)
                .ok_or_else(|| refuse(&format!("has type '{ty}', a vector of no number")))?;
            shim.by_value(index, &ty, size, None);
            args.push((arg_name, by_value(size)));
            continue;
        } else {
            match ty.as_str() {
                "i8" if unsigned => Arg::Number("unsigned char", 4),
                "i8" => Arg::Number("signed char", 4),
                "i16" if unsigned => Arg::Number("unsigned short", 4),
                "i16" => Arg::Number("short", 4),
                "i32" => Arg::Number("unsigned int", 4),
                "i64" => Arg::Number("unsigned long long", 8),
                "float" => Arg::Number("float", 4),
                "double" => Arg::Number("double", 8),
                other => {
                    return Err(refuse(&format!(
                        "has type '{other}': these devices take pointers, numbers, and structs \
                         and vectors by value from SPIR-V"
                    )));
                }
            }
        };
        shim.plain(index, &ty);
        args.push((arg_name, kind));
    }
    args.extend(hidden);
    let (entry, shim) = shim.finish(&name);
    let definition = unbyval
        .iter()
        .fold(define.to_owned(), |definition, attribute| {
            definition.replace(&format!(" {attribute}"), "")
        });
    Ok((
        Kernel { name, entry, args },
        shim,
        (definition != define).then_some(definition),
    ))
}

/// What names an argument [`field_pointer_name`] makes.
const FIELD_POINTER: &str = "__field_pointer";

/// The name of the argument that carries the global pointer at byte `offset` (in the host's
/// layout) of struct argument `index`, which a kernel built from SPIR-V takes by value. Such
/// arguments follow the kernel's own (before the NDRange's); a door sets each from the
/// pointer it finds in the struct's bytes, as it sets a pointer argument, and the card puts
/// the struct together in its own layout.
pub fn field_pointer_name(index: usize, offset: u64) -> String {
    format!("{FIELD_POINTER}{index}@{offset}")
}

/// The struct argument and byte offset that an argument named by [`field_pointer_name`]
/// stands for; `None` for any other argument.
pub fn field_pointer(name: &str) -> Option<(usize, u64)> {
    let (index, offset) = name.strip_prefix(FIELD_POINTER)?.split_once('@')?;
    Some((index.parse().ok()?, offset.parse().ok()?))
}

/// The most global pointers a struct passed by value may hold.
const MAX_POINTERS: usize = 256;

/// How a value of `size` bytes travels from the card's registers: in a word, two, or as a
/// pointer to its copy.
fn by_value(size: u64) -> Arg {
    match size {
        0..=4 => Arg::Number("unsigned int", 4),
        5..=8 => Arg::Number("unsigned long long", 8),
        _ => Arg::Number("void *", size.next_multiple_of(4) as u32),
    }
}

/// A kernel's shim in the making: its parameters and what it passes the kernel.
#[derive(Default)]
struct Shim {
    params: Vec<String>,
    /// The parameters after every argument of the kernel's: the pointers of its structs.
    hidden: Vec<String>,
    body: String,
    args: Vec<String>,
    needed: bool,
}

impl Shim {
    /// Parameter `index`, passed on as it comes.
    fn plain(&mut self, index: usize, ty: &str) {
        self.params.push(format!("{ty} %a{index}"));
        self.args.push(format!("{ty} %a{index}"));
    }

    /// Parameter `index`, a value of `size` bytes the kernel takes as `ty` (a vector, or, with
    /// `byval`, a pointer to its struct): up to 8 bytes it arrives in a word or two and is
    /// put in memory; larger it arrives as a pointer to its copy.
    fn by_value(&mut self, index: usize, ty: &str, size: u64, byval: Option<&str>) {
        self.needed = true;
        let pointer = match byval {
            Some(_) => ty.to_owned(),
            None => format!("{ty}*"),
        };
        if size <= 8 {
            let word = if size <= 4 { "i32" } else { "i64" };
            self.params.push(format!("{word} %a{index}"));
            let _ = write!(
                self.body,
                "  %s{index} = alloca {word}, align 16\n\
                 \x20 store {word} %a{index}, {word}* %s{index}\n\
                 \x20 %p{index} = bitcast {word}* %s{index} to {pointer}\n"
            );
        } else {
            self.params.push(format!("i8* %a{index}"));
            let _ = writeln!(
                self.body,
                "  %p{index} = bitcast i8* %a{index} to {pointer}"
            );
        }
        match byval {
            Some(attribute) => self.args.push(format!("{ty} {attribute} %p{index}")),
            None => {
                let _ = writeln!(
                    self.body,
                    "  %v{index} = load {ty}, {pointer} %p{index}, align 1"
                );
                self.args.push(format!("{ty} %v{index}"));
            }
        }
    }

    /// Parameter `index`, a struct of `size` bytes in the host's layout holding global
    /// `pointers` (where, and of which type), which the kernel takes as `ty`: it arrives as a
    /// pointer to its copy, and each of its pointers as a parameter after the kernel's own.
    /// The kernel gets the struct in the host's layout, each pointer's 8 bytes holding the
    /// card's address: SYCL's kernels read such a struct as the host's, its pointers as
    /// 64-bit integers (so the kernel's definition takes it by pointer, not by value, whose
    /// copy would be of the card's smaller layout).
    fn holding_pointers(&mut self, index: usize, ty: &str, size: u64, pointers: &[(u64, String)]) {
        self.needed = true;
        self.params.push(format!("i8* %a{index}"));
        let bytes = format!("[{size} x i8]");
        let _ = write!(
            self.body,
            "  %c{index} = alloca {bytes}, align 16\n\
             \x20 %b{index} = bitcast i8* %a{index} to {bytes}*\n\
             \x20 %v{index} = load {bytes}, {bytes}* %b{index}, align 1\n\
             \x20 store {bytes} %v{index}, {bytes}* %c{index}, align 16\n"
        );
        for (n, (at, pointer_ty)) in pointers.iter().enumerate() {
            let pointer = format!("%h{}", self.hidden.len());
            self.hidden.push(format!("{pointer_ty} {pointer}"));
            let _ = write!(
                self.body,
                "  %q{index}_{n} = getelementptr inbounds {bytes}, {bytes}* %c{index}, i32 0, i32 {at}\n\
                 \x20 %w{index}_{n} = bitcast i8* %q{index}_{n} to i64*\n\
                 \x20 %x{index}_{n} = ptrtoint {pointer_ty} {pointer} to i64\n\
                 \x20 store i64 %x{index}_{n}, i64* %w{index}_{n}, align 1\n"
            );
        }
        let _ = writeln!(
            self.body,
            "  %p{index} = bitcast {bytes}* %c{index} to {ty}"
        );
        self.args.push(format!("{ty} %p{index}"));
    }

    /// The function the NDRange loop calls for kernel `name`, and the shim's IR (empty when
    /// the kernel takes everything as it comes).
    fn finish(mut self, name: &str) -> (String, String) {
        if !self.needed {
            return (name.to_owned(), String::new());
        }
        self.params.append(&mut self.hidden);
        let entry = format!("__accelhost_args_{name}");
        let ir = format!(
            "define void @{entry}({}) {{\n{}  call void @{name}({})\n  ret void\n}}\n",
            self.params.join(", "),
            self.body,
            self.args.join(", ")
        );
        (entry, ir)
    }
}

/// A parameter's type: its first bracketed word, with the address space and pointer marks
/// after it (`float addrspace(1)*`, `<4 x i32>`, `%struct.S*`).
fn param_type(param: &str) -> String {
    let mut depth = 0i32;
    let mut end = param.len();
    for (at, c) in param.char_indices() {
        match c {
            '(' | '<' | '{' | '[' => depth += 1,
            ')' | '>' | '}' | ']' => depth -= 1,
            ' ' if depth == 0 => {
                end = at;
                break;
            }
            _ => {}
        }
    }
    let mut ty = param[..end].to_owned();
    let mut rest = &param[end..];
    loop {
        if let Some(after) = rest.strip_prefix(" addrspace(") {
            let Some(close) = after.find(')') else { break };
            ty.push_str(&rest[.." addrspace(".len() + close + 1]);
            rest = &after[close + 1..];
        } else if let Some(after) = rest.strip_prefix('*') {
            ty.push('*');
            rest = after;
        } else {
            break;
        }
    }
    ty
}

/// The text between `open` and the `close` that balances it, in `text`.
fn between<'a>(text: &'a str, open: &str, close: char) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let mut depth = 0i32;
    for (at, c) in text[start..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 && close == ')' => return Some(&text[start..start + at]),
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// What a module defines that its kernels' signatures refer to, read once: its named types
/// (with their layouts as they are worked out) and its metadata nodes. Lookups cost the same
/// however many kernels and arguments a module has.
struct Definitions<'a> {
    spir: &'a str,
    types: HashMap<&'a str, &'a str>,
    nodes: HashMap<&'a str, &'a str>,
    layouts: RefCell<HashMap<&'a str, Option<(u64, u64)>>>,
}

impl<'a> Definitions<'a> {
    /// The definitions of module `spir` (`%name = type ...`, `!N = !{...}`).
    fn of(spir: &'a str) -> Definitions<'a> {
        let (mut types, mut nodes) = (HashMap::new(), HashMap::new());
        for line in spir.lines() {
            if line.starts_with('%') {
                if let Some((name, body)) = line.split_once(" = type ") {
                    types.insert(name, body);
                }
            } else if line.starts_with('!')
                && let Some((name, body)) = line.split_once(" = !{")
            {
                nodes.insert(name, body);
            }
        }
        Definitions {
            spir,
            types,
            nodes,
            layouts: RefCell::new(HashMap::new()),
        }
    }

    /// The size and alignment of an LLVM type of numbers, vectors, arrays and structs, in
    /// the layout both SPIR and the card give it (no pointers: theirs differ); `None` for any
    /// other type, or nesting past 16.
    fn layout(&self, ty: &str, depth: u32) -> Option<(u64, u64)> {
        if depth > 16 {
            return None;
        }
        let ty = ty.trim();
        let scalar = |t: &str| -> Option<(u64, u64)> {
            let size = match t {
                "i1" | "i8" => 1,
                "i16" | "half" => 2,
                "i32" | "float" => 4,
                "i64" | "double" => 8,
                _ => return None,
            };
            Some((size, size))
        };
        if let Some(inner) = ty.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
            if let Some(fields) = inner.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
                return self.struct_layout(fields, depth, true);
            }
            let (count, element) = inner.split_once(" x ")?;
            let count: u64 = count.trim().parse().ok()?;
            let (element, _) = scalar(element.trim())?;
            let size = count.checked_next_power_of_two()?.checked_mul(element)?;
            return Some((size, size));
        }
        if let Some(inner) = ty.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            let (count, element) = inner.split_once(" x ")?;
            let (size, align) = self.layout(element, depth + 1)?;
            return Some((count.trim().parse::<u64>().ok()?.checked_mul(size)?, align));
        }
        if let Some(fields) = ty.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            return self.struct_layout(fields, depth, false);
        }
        if ty.starts_with('%') && !ty.ends_with('*') {
            let (&name, body) = self.types.get_key_value(ty)?;
            if let Some(known) = self.layouts.borrow().get(name) {
                return *known;
            }
            let worked_out = self.layout(body, depth + 1);
            self.layouts.borrow_mut().insert(name, worked_out);
            return worked_out;
        }
        scalar(ty)
    }

    /// The size and alignment of type `ty` as the host lays it out: as [`layout`](Self::layout)
    /// does, with pointers to global, constant or generic memory of 8 bytes (SPIR's 64-bit
    /// layout, which the host's C++ matches); `None` for other pointers, vectors of pointers,
    /// and nesting past 16.
    fn host_layout(&self, ty: &str, depth: u32) -> Option<(u64, u64)> {
        self.layout_with_pointers(ty, 8, depth)
    }

    /// [`host_layout`](Self::host_layout) with pointers of `pointer` bytes: 8 for the host's
    /// layout, 4 for the card's.
    fn layout_with_pointers(&self, ty: &str, pointer: u64, depth: u32) -> Option<(u64, u64)> {
        if depth > 16 {
            return None;
        }
        let ty = ty.trim();
        if let Some(known) = self.layout(ty, depth) {
            return Some(known);
        }
        if ty.ends_with('*') {
            return (matches!(pointer_space(ty)?, 1 | 2 | 4) && !points_to_pointers(ty))
                .then_some((pointer, pointer));
        }
        if let Some((fields, packed)) = struct_fields(ty) {
            let (mut size, mut align) = (0u64, 1u64);
            for field in fields {
                let (field_size, field_align) =
                    self.layout_with_pointers(field, pointer, depth + 1)?;
                let field_align = if packed { 1 } else { field_align };
                size = size.next_multiple_of(field_align).checked_add(field_size)?;
                align = align.max(field_align);
            }
            return Some((size.next_multiple_of(align), align));
        }
        if let Some((count, element)) = array_of(ty) {
            let (size, align) = self.layout_with_pointers(element, pointer, depth + 1)?;
            return Some((count.checked_mul(size)?, align));
        }
        let body = self.types.get(ty)?;
        self.layout_with_pointers(body, pointer, depth + 1)
    }

    /// Where a `getelementptr` over type `ty` with `indices` (its constant ones, `None` for one
    /// computed) lands in the host's layout and in the card's (pointers 8 and 4 bytes), while
    /// both are known; `None` once an index is computed or past what the type holds.
    fn offsets(&self, ty: &str, indices: &[Option<u64>]) -> Option<(u64, u64)> {
        let (first, rest) = indices.split_first()?;
        let (host_size, _) = self.layout_with_pointers(ty, 8, 0)?;
        let (card_size, _) = self.layout_with_pointers(ty, 4, 0)?;
        let (mut host, mut card) = (
            host_size.checked_mul((*first)?)?,
            card_size.checked_mul((*first)?)?,
        );
        let mut ty = ty.trim().to_owned();
        for index in rest {
            let index = (*index)?;
            while let Some(body) = self.types.get(ty.as_str()) {
                ty = body.trim().to_owned();
            }
            if let Some((fields, packed)) = struct_fields(&ty) {
                let field = fields.get(usize::try_from(index).ok()?)?;
                for (pointer, at) in [(8, &mut host), (4, &mut card)] {
                    let mut offset = 0u64;
                    for earlier in &fields[..index as usize] {
                        let (size, align) = self.layout_with_pointers(earlier, pointer, 0)?;
                        offset = offset.next_multiple_of(if packed { 1 } else { align }) + size;
                    }
                    let (_, align) = self.layout_with_pointers(field, pointer, 0)?;
                    *at += offset.next_multiple_of(if packed { 1 } else { align });
                }
                ty = field.trim().to_owned();
            } else if let Some((_, element)) = array_of(&ty) {
                host += self
                    .layout_with_pointers(element, 8, 0)?
                    .0
                    .checked_mul(index)?;
                card += self
                    .layout_with_pointers(element, 4, 0)?
                    .0
                    .checked_mul(index)?;
                ty = element.trim().to_owned();
            } else {
                return None;
            }
        }
        Some((host, card))
    }

    /// The first instruction of `spir` that reads a struct of type `ty` (which holds pointers)
    /// where the host's layout and the card's differ: a `getelementptr` over the type that
    /// lands at different offsets in the two, or one with a computed index, or the whole
    /// struct loaded, stored or allocated. A kernel's struct is the host's bytes (SYCL's
    /// kernels read it as the host's); an access by the card's layout would read the wrong
    /// bytes, so such a program is refused.
    fn layout_dependent_use(&self, ty: &str) -> Option<&'a str> {
        let over = format!("{ty}, {ty}* ");
        let (load, alloca, store) = (
            format!("= load {ty}, "),
            format!("= alloca {ty}"),
            format!("store {ty} "),
        );
        self.spir.lines().map(str::trim).find(|line| {
            if line.contains(&load) || line.contains(&alloca) || line.starts_with(&store) {
                return true;
            }
            let Some(at) = line
                .find("getelementptr")
                .and_then(|g| line[g..].find(&over).map(|o| g + o))
            else {
                return false;
            };
            // The indices follow the base operand: `, i64 0, i32 2`, up to a `)` closing a
            // constant expression.
            let rest = &line[at + over.len()..];
            let rest = rest.split(')').next().unwrap_or(rest);
            let indices: Vec<Option<u64>> = rest
                .split(',')
                .skip(1)
                .map(|index| index.trim().rsplit(' ').next().and_then(|n| n.parse().ok()))
                .collect();
            !matches!(self.offsets(ty, &indices), Some((host, card)) if host == card)
        })
    }

    /// The size of a struct of type `ty` as the host lays it out, and where its global
    /// pointers are in it, with their types; `None` where [`host_layout`](Self::host_layout)
    /// has no layout, or for more than [`MAX_POINTERS`] pointers.
    fn host_pointers(&self, ty: &str) -> Option<(u64, Vec<(u64, String)>)> {
        let (size, _) = self.host_layout(ty, 0)?;
        let mut pointers = Vec::new();
        self.place_pointers(ty, 0, &mut pointers, 0)?;
        Some((size, pointers))
    }

    fn place_pointers(
        &self,
        ty: &str,
        at: u64,
        pointers: &mut Vec<(u64, String)>,
        depth: u32,
    ) -> Option<()> {
        let ty = ty.trim();
        if depth > 16 || pointers.len() > MAX_POINTERS {
            return None;
        }
        if self.layout(ty, depth).is_some() {
            return Some(());
        }
        if ty.ends_with('*') {
            self.host_layout(ty, depth)?;
            pointers.push((at, ty.to_owned()));
            return Some(());
        }
        if let Some((fields, packed)) = struct_fields(ty) {
            let mut offset = 0u64;
            for field in fields {
                let (size, align) = self.host_layout(field, depth + 1)?;
                offset = offset.next_multiple_of(if packed { 1 } else { align });
                self.place_pointers(field, at + offset, pointers, depth + 1)?;
                offset += size;
            }
            return Some(());
        }
        if let Some((count, element)) = array_of(ty) {
            let (size, _) = self.host_layout(element, depth + 1)?;
            for index in 0..count.min(MAX_POINTERS as u64 + 1) {
                self.place_pointers(element, at + index * size, pointers, depth + 1)?;
            }
            return Some(());
        }
        let body = self.types.get(ty)?;
        self.place_pointers(body, at, pointers, depth + 1)
    }

    /// The layout of a struct's fields (`i32, float`), packed or aligned.
    fn struct_layout(&self, fields: &str, depth: u32, packed: bool) -> Option<(u64, u64)> {
        let (mut size, mut align) = (0u64, 1u64);
        for field in top_level_commas(fields)
            .into_iter()
            .filter(|f| !f.trim().is_empty())
        {
            let (field_size, field_align) = self.layout(field, depth + 1)?;
            let field_align = if packed { 1 } else { field_align };
            size = size.next_multiple_of(field_align).checked_add(field_size)?;
            align = align.max(field_align);
        }
        Some((size.next_multiple_of(align), align))
    }

    /// The strings of the metadata node `key` (`!kernel_arg_type !7`) a definition points to.
    fn metadata_strings(&self, define: &str, key: &str) -> Vec<String> {
        let Some(at) = define.find(&format!("{key} !")) else {
            return Vec::new();
        };
        let node = define[at + key.len() + 1..]
            .split(|c: char| c.is_whitespace() || c == '{')
            .next()
            .unwrap_or("");
        self.nodes
            .get(node)
            .map(|body| {
                body.split("!\"")
                    .skip(1)
                    .map(|s| s.split('"').next().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The address space of a pointer type, its own and not its pointee's (`float addrspace(1)*`
/// is 1, `float*` 0, `i8 addrspace(4)* addrspace(1)*` 1), or `None` when it is not a pointer.
fn pointer_space(ty: &str) -> Option<u32> {
    let star = ty.rfind('*')?;
    let before = &ty[..star];
    if before.contains('(') && !before.contains("addrspace(") {
        return None;
    }
    match before.rfind("addrspace(") {
        Some(at)
            if before[at..]
                .find(')')
                .is_some_and(|c| at + c + 1 == before.len()) =>
        {
            before[at + "addrspace(".len()..before.len() - 1]
                .parse()
                .ok()
        }
        _ => Some(0),
    }
}

/// Whether pointer type `ty` points to pointers: addresses the program keeps in memory, which
/// name the program's allocations, not the card's memory, so no kernel could follow them.
fn points_to_pointers(ty: &str) -> bool {
    ty.rfind('*').is_some_and(|star| ty[..star].contains('*'))
}

/// The fields of a literal struct type (`{ i32, float }`), and whether it is packed
/// (`<{ ... }>`).
fn struct_fields(ty: &str) -> Option<(Vec<&str>, bool)> {
    let (inner, packed) = match ty.strip_prefix("<{").and_then(|t| t.strip_suffix("}>")) {
        Some(inner) => (inner, true),
        None => (ty.strip_prefix('{')?.strip_suffix('}')?, false),
    };
    let fields = top_level_commas(inner)
        .into_iter()
        .filter(|field| !field.trim().is_empty())
        .collect();
    Some((fields, packed))
}

/// The length and element type of an array type (`[3 x i64]`).
fn array_of(ty: &str) -> Option<(u64, &str)> {
    let (count, element) = ty.strip_prefix('[')?.strip_suffix(']')?.split_once(" x ")?;
    Some((count.trim().parse().ok()?, element))
}

/// `text` split at the commas outside brackets.
fn top_level_commas(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (at, c) in text.char_indices() {
        match c {
            '(' | '<' | '{' | '[' => depth += 1,
            ')' | '>' | '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mangled_built_ins_read_with_their_address_spaces_and_substitutions() {
        let vload = Mangled::parse("_Z6vload4mPU3AS1Kf").unwrap();
        assert_eq!(vload.base, "vload4");
        assert_eq!(vload.spell(&vload.params[1]), "__global const float *");
        assert_eq!(vload.spell(&vload.params[0]), "ulong");
        let fract = Mangled::parse("_Z5fractDv2_fPS_").unwrap();
        assert_eq!(fract.spell(&fract.params[1]), "__private float2 *");
        let wait = Mangled::parse("_Z17wait_group_eventsiPU3AS49ocl_event").unwrap();
        assert_eq!(wait.spell(&wait.params[1]), "__private event_t *");
        let atomic = Mangled::parse("_Z10atomic_addPU3AS4Vii").unwrap();
        assert_eq!(atomic.spell(&atomic.params[0]), "__global volatile int *");
        let copy =
            Mangled::parse("_Z29async_work_group_strided_copyPU3AS3fPU3AS1Kfmm9ocl_event").unwrap();
        assert_eq!(copy.params.len(), 5);
        // The second pointer's `float` is the first's qualified type's, not substitutable alone.
        let twice = Mangled::parse("_Z6selectPU3AS1fS_").unwrap();
        assert_eq!(twice.spell(&twice.params[1]), "__global float");
        assert_eq!(
            Mangled::parse("_Z20get_global_linear_idv").unwrap().params,
            []
        );
        for bad in [
            "_Z3foo",
            "_Z3sin",
            "_Z3sinQ",
            "_Z5imageP11ocl_image2d",
            "_Z3fooS0_",
        ] {
            assert_eq!(Mangled::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_built_ins_whose_spir_form_differs_get_a_bridge() {
        let sin = Mangled::parse("_Z3sinf").unwrap();
        assert!(!sin.needs_bridge("float"));
        let id = Mangled::parse("_Z13get_global_idj").unwrap();
        assert!(id.needs_bridge("ulong"));
        assert_eq!(
            id.bridge("__accelhost_spirv__Z13get_global_idj", "ulong"),
            "__attribute__((always_inline)) ulong __accelhost_spirv__Z13get_global_idj(uint a0) \
             { return (ulong)get_global_id(a0); }"
        );
        let abs = Mangled::parse("_Z3absDv4_l").unwrap();
        assert!(abs.needs_bridge("<4 x i64>"));
        assert!(
            abs.bridge("b", "ulong4")
                .contains("return as_ulong4(abs(a0));")
        );
        let linear = Mangled::parse("_Z20get_global_linear_idv").unwrap();
        assert!(linear.needs_bridge("ulong"));
        let bridge = linear.bridge("b", "ulong");
        assert!(
            bridge.contains("ulong b(void) { return (ulong)((get_global_id(2)"),
            "{bridge}"
        );
        let barrier = Mangled::parse("_Z7barrierj").unwrap();
        assert!(!barrier.needs_bridge("void"));
    }

    #[test]
    fn casts_of_a_generic_pointer_to_a_space_are_the_pointer_in_flat_memory() {
        let line = flat_memory(
            "  %9 = call spir_func i8 addrspace(1)* @__to_global(i8 addrspace(4)* %8) #1",
        );
        assert_eq!(
            generic_cast(&line).as_deref(),
            Some("  %9 = bitcast i8* %8 to i8*")
        );
        let local = flat_memory(
            "  %2 = tail call spir_func %struct.s addrspace(3)* @__to_local(%struct.s addrspace(4)* %1)",
        );
        assert_eq!(
            generic_cast(&local).as_deref(),
            Some("  %2 = bitcast %struct.s* %1 to %struct.s*")
        );
        let other = flat_memory("  %5 = call spir_func float @_Z3sinf(float 0.0)");
        assert_eq!(generic_cast(&other), None);
        let module = SPIR.replace(
            "  ret void",
            "  %6 = call spir_func i8 addrspace(1)* @__to_global(i8 addrspace(4)* null)\n  ret void",
        ) + "declare spir_func i8 addrspace(1)* @__to_global(i8 addrspace(4)*)\n";
        let ir = translate(&module).unwrap().ir;
        assert!(ir.contains("%6 = bitcast i8* null to i8*"), "{ir}");
        assert!(!ir.contains("__to_global"), "{ir}");
    }

    const SPIR: &str = r#"target datalayout = "e-p:64:64:64"
target triple = "spir64-unknown-unknown"

@tile = internal addrspace(3) global [64 x float] undef, align 4

define spir_kernel void @scale(float addrspace(1)* nocapture %data, float addrspace(3)* %scratch, i8 %by, i64 %count) #0 !kernel_arg_addr_space !5 !kernel_arg_type !7 {
  %1 = call spir_func i64 @_Z13get_global_idj(i32 0) #1
  %2 = getelementptr inbounds float, float addrspace(1)* %data, i64 %1
  %3 = addrspacecast float addrspace(1)* %2 to float addrspace(4)*
  %4 = call spir_func <4 x float> @_Z6vload4mPU3AS1Kf(i64 %1, float addrspace(1)* %2)
  call void @llvm.memcpy.p1i8.p3i8.i64(i8 addrspace(1)* null, i8 addrspace(3)* null, i64 4, i1 false)
  call void @llvm.memcpy.p0i8.p0i8.i64(i8* null, i8* null, i64 4, i1 false)
  call spir_func void @_Z7barrierj(i32 1)
  %5 = call spir_func float @_Z3sinf(float 0.0)
  ret void
}

declare spir_func i64 @_Z13get_global_idj(i32) #1
declare spir_func <4 x float> @_Z6vload4mPU3AS1Kf(i64, float addrspace(1)*)
declare spir_func void @_Z7barrierj(i32)
declare spir_func float @_Z3sinf(float)
declare void @llvm.memcpy.p1i8.p3i8.i64(i8 addrspace(1)* noalias, i8 addrspace(3)* noalias, i64, i1)
declare void @llvm.memcpy.p0i8.p0i8.i64(i8* noalias, i8* noalias, i64, i1) #2

!5 = !{i32 1, i32 3, i32 0, i32 0}
!7 = !{!"float*", !"float*", !"uchar", !"ulong"}
"#;

    #[test]
    fn spir_is_rewritten_for_one_flat_memory_and_bridged_built_ins() {
        let translated = translate(SPIR).unwrap();
        let ir = &translated.ir;
        assert!(ir.starts_with(WASM32_TARGET), "{ir}");
        for gone in [
            "addrspace",
            "spir_func",
            "spir_kernel",
            "spir64",
            "p1i8",
            "p3i8",
        ] {
            assert!(!ir.contains(gone), "{gone} left in {ir}");
        }
        assert!(ir.contains("@tile = internal global [64 x float]"), "{ir}");
        assert!(ir.contains("%3 = bitcast float* %2 to float*"), "{ir}");
        assert!(
            ir.contains("call i64 @__accelhost_spirv__Z13get_global_idj(i32 0)"),
            "{ir}"
        );
        assert!(
            ir.contains("declare <4 x float> @__accelhost_spirv__Z6vload4mPU3AS1Kf(i64, float*)")
        );
        // The same name and types on the card: called as they are.
        assert!(ir.contains("call void @_Z7barrierj(i32 1)"), "{ir}");
        assert!(ir.contains("call float @_Z3sinf(float 0.0)"), "{ir}");
        assert_eq!(
            ir.matches("declare void @llvm.memcpy.p0i8.p0i8.i64")
                .count(),
            1,
            "{ir}"
        );
        let bridges = &translated.bridges;
        assert!(bridges.contains("float4 __accelhost_spirv__Z6vload4mPU3AS1Kf(ulong a0, __global const float * a1) { return as_float4(vload4(a0, a1)); }"), "{bridges}");
        assert_eq!(bridges.matches(BRIDGE).count(), 2, "{bridges}");
        let names: Vec<&str> = translated.built_ins.iter().map(String::as_str).collect();
        assert_eq!(names, ["barrier", "get_global_id", "sin", "vload4"]);
        assert_eq!(
            translated.kernels,
            [Kernel {
                name: "scale".into(),
                entry: "scale".into(),
                args: vec![
                    ("data".into(), Arg::Global),
                    ("scratch".into(), Arg::Local),
                    ("by".into(), Arg::Number("unsigned char", 4)),
                    ("count".into(), Arg::Number("unsigned long long", 8)),
                ],
            }]
        );
    }

    #[test]
    fn what_the_card_cannot_take_is_refused_by_name() {
        let private = SPIR.replace("float addrspace(3)* %scratch", "float* %scratch");
        let err = translate(&private).unwrap_err();
        assert!(
            err.contains("kernel 'scale': argument 'scratch' is a private"),
            "{err}"
        );
        // A struct may hold global pointers, which reach what the door finds them in; never
        // private or local ones, which would be addresses of no memory the card gives it.
        for pointer in [
            "float*",
            "float addrspace(3)*",
            "<2 x float addrspace(1)*>",
            "float addrspace(1)* addrspace(1)*",
        ] {
            let holding_a_pointer = SPIR.replace(
                "i8 %by",
                "%struct.holder* byval(%struct.holder) align 8 %by",
            ) + &format!("%struct.holder = type {{ i32, {pointer} }}\n");
            let err = translate(&holding_a_pointer).unwrap_err();
            assert!(
                err.contains(
                    "argument 'by' is a struct by value of type '%struct.holder' holding a \
                     pointer that is not to global or constant memory"
                ),
                "{pointer}: {err}"
            );
        }
        // dpnp's take: a global array of USM addresses, which name no memory of the card's.
        let addresses = SPIR.replace("i8 %by", "i8 addrspace(4)* addrspace(1)* %by");
        let err = translate(&addresses).unwrap_err();
        assert!(
            err.contains(
                "argument 'by' has type 'i8 addrspace(4)* addrspace(1)*', a pointer to pointers"
            ),
            "{err}"
        );
        let half_vector = SPIR.replace("i8 %by", "<4 x i1024> %by");
        let err = translate(&half_vector).unwrap_err();
        assert!(
            err.contains("argument 'by' has type '<4 x i1024>'"),
            "{err}"
        );
        let image = SPIR.replace("_Z3sinf", "_Z11read_imagef11ocl_image2d");
        let err = translate(&image).unwrap_err();
        assert!(
            err.contains("'_Z11read_imagef11ocl_image2d' is not one these devices know"),
            "{err}"
        );
        let no_kernel = SPIR.replace("spir_kernel", "spir_func");
        assert!(translate(&no_kernel).unwrap_err().contains("no kernel"));
    }

    #[test]
    fn a_structs_global_pointers_arrive_as_arguments_of_their_own_and_the_shim_puts_it_together() {
        // dpnp's indexers: pointers after numbers, and structs of them, nested.
        let by_value = SPIR.replace(
            "i8 %by, i64 %count",
            "%struct.strided* byval(%struct.strided) align 8 %by, i64 %count, \
             %struct.combined* byval(%struct.combined) align 8 %both",
        ) + "%struct.strided = type { i32, i64, i8 addrspace(1)* }\n\
             %struct.combined = type { %struct.strided, [2 x i16], { float addrspace(1)*, i32 } }\n";
        let translated = translate(&by_value).unwrap();
        let kernel = &translated.kernels[0];
        let args: Vec<(&str, &Arg)> = kernel
            .args
            .iter()
            .map(|(name, arg)| (name.as_str(), arg))
            .collect();
        // The host's layouts: 24 bytes, its pointer at 16; 48, its pointers at 16 and 32.
        assert_eq!(
            args[2..],
            [
                ("by", &Arg::Number("void *", 24)),
                ("count", &Arg::Number("unsigned long long", 8)),
                ("both", &Arg::Number("void *", 48)),
                ("__field_pointer2@16", &Arg::Global),
                ("__field_pointer4@16", &Arg::Global),
                ("__field_pointer4@32", &Arg::Global),
            ]
        );
        assert_eq!(super::field_pointer("__field_pointer4@32"), Some((4, 32)));
        assert_eq!(super::field_pointer("count"), None);
        let ir = &translated.ir;
        for line in [
            "define void @__accelhost_args_scale(float* %a0, float* %a1, i8* %a2, i64 %a3, \
             i8* %a4, i8* %h0, i8* %h1, float* %h2) {",
            // The struct in the host's layout, each pointer's 8 bytes the card's address.
            "  %c2 = alloca [24 x i8], align 16",
            "  %v2 = load [24 x i8], [24 x i8]* %b2, align 1",
            "  %q2_0 = getelementptr inbounds [24 x i8], [24 x i8]* %c2, i32 0, i32 16",
            "  %x2_0 = ptrtoint i8* %h0 to i64",
            "  store i64 %x2_0, i64* %w2_0, align 1",
            "  %p2 = bitcast [24 x i8]* %c2 to %struct.strided*",
            // The nested struct's pointer at 32 of 48.
            "  %q4_1 = getelementptr inbounds [48 x i8], [48 x i8]* %c4, i32 0, i32 32",
            "  %x4_1 = ptrtoint float* %h2 to i64",
            "  call void @scale(float* %a0, float* %a1, %struct.strided* %p2, i64 %a3, \
             %struct.combined* %p4)",
            // The kernel takes them by pointer: a copy by value would be the card's layout.
            "%struct.strided* align 8 %by, i64 %count, %struct.combined* align 8 %both)",
        ] {
            assert!(ir.contains(line), "{line} in {ir}");
        }
        assert!(!ir.contains("byval(%struct.strided)"), "{ir}");

        // The kernel gets the host's bytes: reading the struct by its own type where the
        // card's layout puts a field elsewhere is refused, naming the instruction.
        let reading = |gep: &str| {
            translate(&by_value.replace(
                "  ret void\n}",
                &format!("  %t = getelementptr inbounds {gep}\n  ret void\n}}"),
            ))
        };
        let same_place = "%struct.combined, %struct.combined* %both, i64 0, i32 1";
        assert!(reading(same_place).is_ok());
        for elsewhere in [
            "%struct.combined, %struct.combined* %both, i64 0, i32 2, i32 1",
            "%struct.combined, %struct.combined* %both, i64 %count",
        ] {
            let err = reading(elsewhere).unwrap_err();
            assert!(
                err.contains(
                    "argument 'both' is a struct by value of type '%struct.combined' \
                     holding pointers, which the program reads by the card's layout"
                ) && err.contains(elsewhere),
                "{err}"
            );
        }
        let module = Definitions::of(&by_value);
        assert_eq!(module.host_layout("%struct.combined", 0), Some((48, 8)));
        assert_eq!(module.layout("%struct.combined", 0), None);
    }

    #[test]
    fn structs_and_vectors_by_value_reach_the_kernel_through_a_shim_as_the_card_passes_them() {
        let by_value = SPIR.replace(
            "i8 %by, i64 %count",
            "%struct.range* byval(%struct.range) align 8 %by, %struct.pair* byval(%struct.pair) \
             align 2 %pair, <3 x float> %v, <2 x i16> %w",
        ) + "%struct.range = type { [3 x i64] }\n%struct.pair = type { i16, i16 }\n";
        let translated = translate(&by_value).unwrap();
        let kernel = &translated.kernels[0];
        assert_eq!(kernel.entry, "__accelhost_args_scale");
        let kinds: Vec<&Arg> = kernel.args.iter().map(|(_, arg)| arg).collect();
        assert_eq!(
            kinds[2..],
            [
                &Arg::Number("void *", 24),
                &Arg::Number("unsigned int", 4),
                &Arg::Number("void *", 16),
                &Arg::Number("unsigned int", 4),
            ]
        );
        let ir = &translated.ir;
        for line in [
            "define void @__accelhost_args_scale(float* %a0, float* %a1, i8* %a2, i32 %a3, i8* %a4, i32 %a5) {",
            "  %p2 = bitcast i8* %a2 to %struct.range*",
            "  %s3 = alloca i32, align 16",
            "  store i32 %a3, i32* %s3",
            "  %p3 = bitcast i32* %s3 to %struct.pair*",
            "  %v4 = load <3 x float>, <3 x float>* %p4, align 1",
            "  %v5 = load <2 x i16>, <2 x i16>* %p5, align 1",
            "  call void @scale(float* %a0, float* %a1, %struct.range* byval(%struct.range) %p2, \
             %struct.pair* byval(%struct.pair) %p3, <3 x float> %v4, <2 x i16> %v5)",
        ] {
            assert!(ir.contains(line), "{line} in {ir}");
        }
        let module = Definitions::of(&by_value);
        assert_eq!(module.layout("%struct.range", 0), Some((24, 8)));
        assert_eq!(module.layout("{ i8, i32, <2 x float> }", 0), Some((16, 8)));
        assert_eq!(module.layout("<{ i8, i32 }>", 0), Some((5, 1)));
        let endless = Definitions::of("%struct.self = type { %struct.self }");
        assert_eq!(endless.layout("%struct.self", 0), None);
        // Each named type is worked out once: 64 fields of 64 fields of ... 16 deep.
        let mut wide = String::new();
        for level in 0..16 {
            let field = if level == 0 {
                "i32".to_owned()
            } else {
                format!("%t{}", level - 1)
            };
            let fields = vec![field; 64].join(", ");
            wide.push_str(&format!("%t{level} = type {{ {fields} }}\n"));
        }
        let wide = Definitions::of(&wide);
        assert_eq!(wide.layout("%t3", 0), Some((4 * 64u64.pow(4), 4)));
    }

    /// A module declaring an i32 constant 7, a float constant 9 and a bool constant 3, in
    /// words: the header, three types, three constants, their decorations.
    #[rustfmt::skip]
    fn module_of_constants() -> Vec<u8> {
        let words: &[u32] = &[
            MAGIC, 0x0001_0000, 0, 20, 0,
            (4 << 16) | 21, 1, 32, 0,           // %1 = OpTypeInt 32 0
            (3 << 16) | 22, 2, 32,              // %2 = OpTypeFloat 32
            (2 << 16) | 20, 3,                  // %3 = OpTypeBool
            (4 << 16) | 50, 1, 10, 5,           // %10 = OpSpecConstant %1 5
            (4 << 16) | 50, 2, 11, 0x3fc0_0000, // %11 = OpSpecConstant %2 1.5
            (3 << 16) | 48, 3, 12,              // %12 = OpSpecConstantTrue %3
            (4 << 16) | 71, 10, 1, 7,           // OpDecorate %10 SpecId 7
            (4 << 16) | 71, 11, 1, 9,           // OpDecorate %11 SpecId 9
            (4 << 16) | 71, 12, 1, 3,           // OpDecorate %12 SpecId 3
        ];
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn specialization_constants_are_read_from_the_module_and_set_as_the_translator_takes_them() {
        let module = module_of_constants();
        let constants = spec_constants(&module).unwrap();
        assert_eq!(
            constants.into_iter().collect::<Vec<_>>(),
            [
                (3, SpecType::Bool),
                (7, SpecType::Int(32)),
                (9, SpecType::Float(32))
            ]
        );
        assert_eq!(
            SpecType::Int(32).option(7, &42u32.to_le_bytes()).unwrap(),
            "7:i32:42"
        );
        assert_eq!(SpecType::Bool.option(3, &[0]).unwrap(), "3:i1:0");
        assert_eq!(
            SpecType::Float(32)
                .option(9, &2.25f32.to_le_bytes())
                .unwrap(),
            "9:f32:2.25e0"
        );
        assert_eq!(
            SpecType::Float(16)
                .option(1, &0x3c00u16.to_le_bytes())
                .unwrap(),
            "1:f16:1e0"
        );
        let third = SpecType::Float(64)
            .option(2, &(1.0f64 / 3.0).to_le_bytes())
            .unwrap();
        assert_eq!(
            third.rsplit(':').next().unwrap().parse::<f64>().unwrap(),
            1.0 / 3.0
        );
        assert_eq!(
            SpecType::Int(32).option(7, &[1, 2]),
            None,
            "a size not the constant's"
        );
        let mut cut = module.clone();
        cut.truncate(module.len() - 8);
        assert!(
            spec_constants(&cut)
                .unwrap_err()
                .contains("past the module's end")
        );
        let mut zero = module;
        zero[20..24].copy_from_slice(&0u32.to_le_bytes());
        assert!(spec_constants(&zero).is_err(), "an instruction of no words");
    }

    #[test]
    fn modules_are_checked_before_the_translator_reads_them() {
        let mut module = MAGIC.to_le_bytes().to_vec();
        module.extend_from_slice(&0x0001_0000u32.to_le_bytes());
        module.extend_from_slice(&[0; 12]);
        assert_eq!(check_module(&module), Ok(()));
        assert!(is_spirv(&module) && !is_spirv(&module[1..]) && !is_spirv(b"\x03\x02"));
        let mut swapped = MAGIC.to_be_bytes().to_vec();
        swapped.extend_from_slice(&0x0001_0200u32.to_be_bytes());
        swapped.extend_from_slice(&[0; 12]);
        assert_eq!(check_module(&swapped), Ok(()));
        assert!(
            check_module(&module[..19])
                .unwrap_err()
                .contains("19 bytes")
        );
        let mut newer = module.clone();
        newer[4..8].copy_from_slice(&0x0001_0600u32.to_le_bytes());
        assert!(check_module(&newer).unwrap_err().contains("SPIR-V 1.6"));
        let mut text = b"__kernel void k() {}".to_vec();
        text.resize(20, b' ');
        assert!(check_module(&text).unwrap_err().contains("magic number"));
    }
}

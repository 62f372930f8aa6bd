//! `accelhost xclbin`: write xclbin images for the emulated XRT card (vadd, or the kernels of
//! C/C++ sources or a prebuilt module), and check images.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost::Guid;
use accelhost::xclbin::{self, XclbinBuilder};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Write an xclbin the emulated card runs: the kernels of C/C++ sources or of a prebuilt
    /// WebAssembly module, or (given no input) the built-in vadd, the Vitis hello world.
    #[command(after_help = BUILD_HELP)]
    Build {
        /// Where to write it.
        output: PathBuf,
        /// Kernel sources (.c, .cpp, .cc, .cxx), or one prebuilt kernel module (.wasm).
        inputs: Vec<PathBuf>,
        /// A kernel to put in the image, repeated per kernel: its name for sources (as
        /// `v++ -k`), its signature for a module (`mmult(a: ptr, b: ptr, n: i32)`).
        #[arg(long = "kernel", short = 'k')]
        kernels: Vec<String>,
        /// A flag for clang (`--cflag=-DSIZE=64`, `--cflag=-Iinclude`), repeatable.
        #[arg(long = "cflag", allow_hyphen_values = true)]
        cflags: Vec<String>,
        /// Compute units per kernel (`vadd_1`, `vadd_2`, ...).
        #[arg(long, default_value_t = 2)]
        cus: u32,
        /// DDR banks of 1 GiB each, for vadd (CU i uses bank i % banks); kernel images have one.
        #[arg(long, default_value_t = 1)]
        banks: u32,
        /// The image's uuid (default: the demo's vadd uuid; for kernels, one derived from
        /// their code, so that the same build gives the same uuid).
        #[arg(long)]
        uuid: Option<Guid>,
    },
    /// Validate an xclbin and show its memory banks, compute units and kernels.
    Show {
        /// The image to read.
        image: PathBuf,
    },
}

const BUILD_HELP: &str = "\
Kernels from sources are built with the system's clang for WebAssembly (clang, lld and
wasi-libc; ACCELHOST_CLANG names another clang). A kernel is a C function, or an extern \"C\"
C++ function, whose arguments are pointers to device memory or numbers; HLS pragmas are
accepted and ignored, and hls::stream, ap_int and ap_fixed are refused. Local arrays live
on the kernel's stack of 1 MiB.

A prebuilt module imports its memory (env.memory) and nothing else, and exports each kernel
by name: a pointer is an i32 offset into that memory.

Examples:
  accelhost xclbin build vadd.xclbin
  accelhost xclbin build mmult.xclbin mmult.cpp -k mmult --cus 1
  accelhost xclbin build scale.xclbin scale.wasm -k 'scale(data: ptr, factor: f32, n: u32)'";

/// Writes an image of the kernels of `inputs` (sources, or one module).
fn build_kernels(
    output: &std::path::Path,
    inputs: &[PathBuf],
    kernels: &[String],
    cflags: &[String],
    cus: u32,
    uuid: Option<Guid>,
) -> anyhow::Result<ExitCode> {
    use accelhost::xclbin::kernels;
    let is_module = |p: &PathBuf| p.extension().is_some_and(|e| e == "wasm");
    let built = match inputs {
        [] => anyhow::bail!("--kernel needs kernel sources or a module to build from"),
        [module] if is_module(module) => {
            if !cflags.is_empty() {
                anyhow::bail!(
                    "--cflag applies to sources; {} is a built module",
                    module.display()
                );
            }
            let bytes = std::fs::read(module)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", module.display()))?;
            kernels::from_module(bytes, kernels)
                .map_err(|e| anyhow::anyhow!("{}: {e}", module.display()))?
        }
        sources => {
            if let Some(module) = sources.iter().find(|p| is_module(p)) {
                anyhow::bail!(
                    "{} is a built module: give it alone, or give only sources",
                    module.display()
                );
            }
            kernels::build_c(sources, kernels, cflags)?
        }
    };
    if !built.log.trim().is_empty() {
        eprintln!("{}", built.log.trim_end());
    }
    let uuid = uuid.unwrap_or_else(|| built.uuid());
    let image = XclbinBuilder::kernels(uuid, &built.kernels, built.module.clone(), cus).build();
    std::fs::write(output, &image)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", output.display()))?;
    let names: Vec<&str> = built.kernels.iter().map(|k| k.name.as_str()).collect();
    println!(
        "{}: xclbin {uuid} of kernel(s) {}, {cus} compute unit(s) each, module of {} bytes, {} bytes",
        output.display(),
        names.join(", "),
        built.module.len(),
        image.len()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Build {
            output,
            inputs,
            kernels,
            cflags,
            cus,
            banks,
            uuid,
        } => {
            if !(1..=128).contains(&cus) || !(1..=16).contains(&banks) {
                anyhow::bail!("--cus takes 1 to 128 and --banks 1 to 16");
            }
            if !inputs.is_empty() || !kernels.is_empty() {
                return build_kernels(&output, &inputs, &kernels, &cflags, cus, uuid);
            }
            let uuid = uuid.unwrap_or(accelhost::workloads::vadd::VADD_UUID);
            let image = XclbinBuilder::vadd(uuid, cus, banks).build();
            std::fs::write(&output, &image)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", output.display()))?;
            println!(
                "{}: vadd xclbin {uuid}, {cus} compute unit(s), {banks} bank(s), {} bytes",
                output.display(),
                image.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { image } => {
            let bytes = std::fs::read(&image)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", image.display()))?;
            let parsed = match xclbin::parse(&bytes) {
                Ok(parsed) => parsed,
                Err(err) => {
                    eprintln!("error: {}: {err}", image.display());
                    return Ok(ExitCode::FAILURE);
                }
            };
            println!(
                "{}: xclbin {} ({} bytes)",
                image.display(),
                parsed.uuid,
                bytes.len()
            );
            for bank in &parsed.banks {
                println!(
                    "  bank {} {:?} '{}' at {:#x}, {} MiB{}",
                    bank.index,
                    bank.kind,
                    bank.tag,
                    bank.base,
                    bank.size >> 20,
                    if bank.used { "" } else { " (unused)" }
                );
            }
            for (index, cu) in parsed.compute_units().iter().enumerate() {
                println!("  compute unit {index}: {} at {:#x}", cu.name, cu.base);
            }
            for kernel in &parsed.kernels {
                let args: Vec<String> = kernel
                    .args
                    .iter()
                    .map(|a| format!("{}@{:#x}", a.name, a.offset))
                    .collect();
                println!("  kernel {}({})", kernel.name, args.join(", "));
            }
            match &parsed.kernel_module {
                Some(module) => println!("  kernel module: {} bytes of WebAssembly", module.len()),
                None => {
                    println!("  no kernel module: the emulated card runs only its built-in vadd")
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

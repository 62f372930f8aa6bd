//! C plugins: bindings from `wit/` by wit-bindgen's C generator, Debian's clang + lld +
//! wasi-libc for a `wasm32-wasi` reactor module, and wit-component with wasmtime's WASI
//! preview1 reactor adapter to make it a component.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use wit_bindgen_core::Files;

use crate::checkout::{Language, Sdk, WORLD, plugin_world};
use crate::process::{self, run};

/// The version of the wit-bindgen C generator linked into this tool.
pub const WIT_BINDGEN_VERSION: &str = "0.63.0";
/// The wasmtime release whose WASI preview1 reactor adapter wraps C modules.
pub const ADAPTER_VERSION: &str = "50.0.1";
/// The environment variable that names the C compiler (default `clang`).
pub const CLANG_ENV: &str = "ACCELHOST_CLANG";

/// The C compiler, checked to build a `wasm32-wasi` reactor with wasi-libc.
#[derive(Clone, Debug)]
pub struct Clang {
    program: PathBuf,
    /// `clang --version`'s first line.
    pub version: String,
}

/// The system packages the C toolchain is (Debian's names).
pub const INSTALL_HINT: &str = "apt-get install clang lld wasi-libc libclang-rt-dev-wasm32 (sdk/install-toolchains.sh c does it)";

impl Clang {
    /// Finds clang (`$ACCELHOST_CLANG`, else `clang` on PATH) and checks that it links a
    /// `wasm32-wasi` reactor against wasi-libc; `Err` says what is missing.
    pub fn probe(scratch: &Path) -> Result<Clang, String> {
        let program = std::env::var_os(CLANG_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("clang"));
        let version = process::version_line(&program, &["--version"])?;
        let clang = Clang { program, version };
        // A one-line reactor exercises the compiler's wasm backend, wasi-libc's headers and
        // crt1-reactor.o, compiler-rt's builtins and wasm-ld, which is everything a plugin uses.
        std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        let source = scratch.join("probe.c");
        let module = scratch.join("probe.wasm");
        std::fs::write(
            &source,
            "#include <stdlib.h>\n__attribute__((export_name(\"probe\"))) \
             void *probe(unsigned long n) { return malloc(n * 3 / 2); }\n",
        )
        .map_err(|e| format!("{}: {e}", source.display()))?;
        let mut command = clang.link_command();
        command.arg(&source).arg("-o").arg(&module);
        run(&mut command, "building a wasm32-wasi test module").map_err(|err| {
            format!(
                "{} cannot build wasm32-wasi reactors ({INSTALL_HINT}): {err:#}",
                clang.version
            )
        })?;
        Ok(clang)
    }

    /// A clang command with the flags every plugin object and link needs.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        // Debian's clang finds wasi-libc in /usr/{include,lib}/wasm32-wasi by itself; a
        // `--sysroot` would hide it.
        command.args(["--target=wasm32-wasi", "-O2"]);
        command
    }

    /// A clang command that links a plugin: a reactor, as a plugin has no `main`.
    fn link_command(&self) -> Command {
        let mut command = self.command();
        command.arg("-mexec-model=reactor");
        command
    }
}

/// Writes the C bindings of the `plugin` world of `wit_dir` into `out_dir`: `plugin.h`,
/// `plugin.c` and `plugin_component_type.o` (the world's type, which wit-component reads).
pub fn generate_bindings(wit_dir: &Path, out_dir: &Path) -> Result<Vec<PathBuf>> {
    let (mut resolve, world) = plugin_world(wit_dir)?;
    let mut files = Files::default();
    wit_bindgen_c::Opts {
        // The bindings drop the borrowed handles an export receives (the `image` of
        // `reconfigure` and `program-create`) when it returns, as the component model requires
        // and as the Rust SDK does.
        autodrop_borrows: wit_bindgen_c::Enabled::Yes,
        ..Default::default()
    }
    .build()
    .generate(&mut resolve, world, &mut files)
    .context("generating the C bindings with wit-bindgen-c")?;
    let mut written = Vec::new();
    for (name, bytes) in files.iter() {
        let path = out_dir.join(name);
        process::write(&path, bytes)?;
        written.push(path);
    }
    Ok(written)
}

/// Wraps a core module built against wasi-libc into a component, with the WASI preview1
/// reactor adapter of wasmtime [`ADAPTER_VERSION`] translating its WASI calls.
pub fn componentize(core: &[u8]) -> Result<Vec<u8>> {
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(core)
        .context("reading the core module's component type (was plugin_component_type.o linked?)")?
        .adapter(
            "wasi_snapshot_preview1",
            wasi_preview1_component_adapter_provider::WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .context("adding the WASI preview1 reactor adapter")?
        .encode()
        .context("encoding the component")
}

/// Builds the C plugin in `plugin_dir` (every `*.c` file in it, plus the SDK's helpers) into
/// the component `out`, with intermediate files in `work`.
pub fn build(sdk: &Sdk, clang: &Clang, plugin_dir: &Path, out: &Path, work: &Path) -> Result<()> {
    process::fresh_dir(work)?;
    let generated = work.join("generated");
    generate_bindings(&sdk.wit_dir(Language::C), &generated)?;

    let mut sources = c_files(plugin_dir)?;
    if sources.is_empty() {
        bail!("{} has no .c file to build", plugin_dir.display());
    }
    sources.push(sdk.c_dir().join("src/accelhost.c"));
    let generated_source = generated.join(format!("{WORLD}.c"));

    let mut objects = Vec::new();
    for source in sources.iter().chain([&generated_source]) {
        let stem = source.file_stem().unwrap_or_default().to_string_lossy();
        let object = work.join(format!("{}-{stem}.o", objects.len()));
        let mut command = clang.command();
        command.args(["-std=c11", "-c"]);
        if source != &generated_source {
            command.args(["-Wall", "-Wextra", "-Wno-unused-parameter"]);
        }
        command
            .arg("-I")
            .arg(sdk.c_dir().join("include"))
            .arg("-I")
            .arg(&generated)
            .arg(source)
            .arg("-o")
            .arg(&object);
        let compiled = run(&mut command, &format!("compiling {}", source.display()))?;
        // Warnings do not stop the build, but an author must see them.
        eprint!("{}", String::from_utf8_lossy(&compiled.stderr));
        objects.push(object);
    }

    let core = work.join("core.wasm");
    let mut link = clang.link_command();
    link.args(&objects)
        .arg(generated.join(format!("{WORLD}_component_type.o")))
        .arg("-o")
        .arg(&core);
    run(
        &mut link,
        &format!("linking the plugin of {}", plugin_dir.display()),
    )?;
    let component = componentize(&process::read(&core)?)
        .with_context(|| format!("making a component of {}", core.display()))?;
    process::write(out, &component)
}

/// The `.c` files directly in `dir`, sorted.
fn c_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "c"))
        .collect();
    files.sort();
    Ok(files)
}

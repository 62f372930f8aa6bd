//! JavaScript plugins: `plugin.js` is type-checked by TypeScript against the types jco
//! generated from `wit/` (`sdk/js/generated`), then bundled with the SDK helpers
//! (`sdk/js/accelhost.js`, imported as `accelhost-sdk`) and componentized by `jco componentize`
//! (componentize-js, StarlingMonkey). Every tool comes from the per-user toolchain directory
//! ([`Sdk::js_toolchain`]), which `accelhost-sdk toolchains --install js` fills from the pinned
//! `package-lock.json`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::checkout::{Language, Sdk, WORLD};
use crate::process::{self, run};

/// The module specifier plugins import the SDK helpers by.
pub const SDK_MODULE: &str = "accelhost-sdk";
/// The entry module of a JavaScript plugin, in its directory.
pub const ENTRY: &str = "plugin.js";

/// Why a JavaScript build is not byte-reproducible ([`crate::Reproducibility`]).
pub const NOT_REPRODUCIBLE: &str = "componentize-js pre-initializes StarlingMonkey with \
     wizer 10.0.0, which gives it the build machine's clocks and randomness and has no option \
     to fix them, and the snapshot keeps what the engine made of them (timestamps, GC timings, \
     random hash keys and the hash tables built on them)";

/// componentize-js works in `$TMPDIR/<12 hex digits of sha256(Math.random())>/sources` and
/// that path enters the component: StarlingMonkey keeps its arguments (the path of the
/// initializer script) and its module paths in the snapshot. This V8 flag fixes the seed of
/// node's `Math.random`, so the directory has the same name every build.
const NODE_RANDOM_SEED: &str = "--random-seed=1";

/// The fixed `$TMPDIR` of `jco componentize`, under the system's temporary directory: with
/// [`NODE_RANDOM_SEED`], componentize-js's directory is the same path every build. A lock
/// next to it keeps concurrent builds from sharing the directory.
const COMPONENTIZE_TMPDIR: &str = "accelhost-sdk-js";

/// node and the jco, componentize-js and TypeScript of the per-user toolchain directory.
#[derive(Clone, Debug)]
pub struct Jco {
    node: PathBuf,
    node_version: String,
    jco_version: String,
    componentize_js_version: String,
    typescript_version: String,
}

impl Jco {
    /// Finds node (`$ACCELHOST_NODE`, else `node`) and the npm packages installed in the
    /// toolchain directory, checking they are the versions `sdk/js/package.json` pins.
    pub fn probe(sdk: &Sdk) -> Result<Jco, String> {
        let node = std::env::var_os("ACCELHOST_NODE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("node"));
        let node_version = process::version_line(&node, &["--version"])?;
        let js = sdk.js_dir();
        let modules = sdk.js_toolchain().join("node_modules");
        let installed = |package: &str| -> Result<String, String> {
            let manifest = modules.join(package).join("package.json");
            if !manifest.is_file() {
                return Err(format!(
                    "{package} is not installed in {}: run `accelhost-sdk toolchains --install js`",
                    modules.display(),
                ));
            }
            json_field(&read_json(&manifest)?, &["version"])
                .ok_or_else(|| format!("{} has no version", manifest.display()))
        };
        let jco_version = installed("@bytecodealliance/jco")?;
        let typescript_version = installed("typescript")?;
        // jco componentize runs the componentize-js its own dependency range resolves to.
        let componentize_js_version =
            installed("@bytecodealliance/jco/node_modules/@bytecodealliance/componentize-js")
                .or_else(|_| installed("@bytecodealliance/componentize-js"))?;
        let manifest = js.join("package.json");
        let pinned = read_json(&manifest)?;
        for (package, found) in [
            ("@bytecodealliance/jco", &jco_version),
            ("typescript", &typescript_version),
        ] {
            let wanted = json_field(&pinned, &["devDependencies", package])
                .ok_or_else(|| format!("{} does not pin {package}", manifest.display()))?;
            if &wanted != found {
                return Err(format!(
                    "{package} {found} is installed in {}, but {} pins {wanted}: run `accelhost-sdk toolchains --install js`",
                    modules.display(),
                    manifest.display(),
                ));
            }
        }
        Ok(Jco {
            node,
            node_version,
            jco_version,
            componentize_js_version,
            typescript_version,
        })
    }

    /// The tools and their versions.
    pub fn versions(&self) -> String {
        format!(
            "node {}, jco {} (componentize-js {}, StarlingMonkey), TypeScript {} (type check)",
            self.node_version.trim_start_matches('v'),
            self.jco_version,
            self.componentize_js_version,
            self.typescript_version
        )
    }

    /// Type-checks and componentizes `plugin_dir/plugin.js` into `out`.
    pub fn build(&self, sdk: &Sdk, plugin_dir: &Path, out: &Path, work: &Path) -> Result<()> {
        process::fresh_dir(work)?;
        let js = absolute(&sdk.js_dir())?;
        let modules = absolute(&sdk.js_toolchain().join("node_modules"))?;
        let entry = absolute(&plugin_dir.join(ENTRY))
            .with_context(|| format!("a JavaScript plugin needs {ENTRY}"))?;
        let helpers = js.join("accelhost.js");
        let generated = js.join("generated").join(format!("{WORLD}.d.ts"));

        // The component engine reports a type mistake only when the call runs, as a trap;
        // TypeScript finds it before the build, naming the file and line.
        let tsconfig = work.join("tsconfig.json");
        process::write(
            &tsconfig,
            format!(
                r#"{{
  "compilerOptions": {{
    "noEmit": true, "allowJs": true, "checkJs": true, "strict": true,
    "target": "es2022", "module": "esnext", "moduleResolution": "bundler",
    "lib": ["esnext"], "types": [],
    "paths": {{ "{SDK_MODULE}": [{helpers}] }}
  }},
  "files": [{generated}, {entry}]
}}
"#,
                helpers = json_string(&helpers),
                generated = json_string(&generated),
                entry = json_string(&entry),
            )
            .as_bytes(),
        )?;
        let mut check = Command::new(&self.node);
        check
            .arg(modules.join("typescript/bin/tsc"))
            .arg("--pretty")
            .arg("false")
            .arg("-p")
            .arg(&tsconfig);
        run(
            &mut check,
            &format!("type-checking {} with TypeScript", entry.display()),
        )?;

        // The bundler resolves `accelhost-sdk` to the helpers and leaves the WIT imports to
        // componentize-js; `sourceLines` appends the table by which the helpers report an
        // exception at the author's file and line, not the bundle's.
        let bundle_config = work.join("bundle.config.mjs");
        process::write(
            &bundle_config,
            format!(
                "import {{ sourceLines }} from {source_lines};\n\
                 export default {{\n\
                 \x20 resolve: {{ alias: {{ {module}: {helpers} }} }},\n\
                 \x20 external: [/^accel:/],\n\
                 \x20 output: {{ sourcemap: 'hidden' }},\n\
                 \x20 plugins: [sourceLines({plugin_dir})],\n\
                 }};\n",
                source_lines = json_string(&js.join("source-lines.mjs")),
                module = json_string_str(SDK_MODULE),
                helpers = json_string(&helpers),
                plugin_dir = json_string(&absolute(plugin_dir)?),
            )
            .as_bytes(),
        )?;
        let out = absolute_new(out)?;
        let tmp = std::path::absolute(std::env::temp_dir().join(COMPONENTIZE_TMPDIR))
            .context("the temporary directory")?;
        let _one_build_at_a_time = lock(&tmp.with_extension("lock"))?;
        // A build that was killed may have left its directory behind, and componentize-js
        // refuses to reuse one.
        process::fresh_dir(&tmp)?;
        let mut componentize = Command::new(&self.node);
        componentize
            .arg(NODE_RANDOM_SEED)
            .arg(modules.join("@bytecodealliance/jco/dist/jco.js"))
            .arg("componentize")
            .arg(&entry)
            .arg("--wit")
            .arg(absolute(&sdk.wit_dir(Language::Js))?)
            .args(["--world-name", WORLD])
            // The host links WASI but not wasi:http; a plugin has no use for fetch.
            .args(["--disable", "http", "fetch-event"])
            .arg("--bundle")
            .arg("--bundle-config")
            .arg(&bundle_config)
            .arg("--cwd")
            .arg(work)
            .arg("-o")
            .arg(&out)
            .env("TMPDIR", &tmp)
            .current_dir(work);
        run(
            &mut componentize,
            &format!("componentizing {} with jco", entry.display()),
        )?;
        Ok(())
    }
}

/// Regenerates the TypeScript types of `wit/` into `sdk/js/generated` (what `npm run types`
/// does), into `out_dir` instead when given.
pub fn generate_types(sdk: &Sdk, jco: &Jco, out_dir: &Path) -> Result<()> {
    let modules = absolute(&sdk.js_toolchain().join("node_modules"))?;
    let mut command = Command::new(&jco.node);
    command
        .arg(modules.join("@bytecodealliance/jco/dist/jco.js"))
        .arg("guest-types")
        .arg(absolute(&sdk.wit_dir(Language::Js))?)
        .args(["--world-name", WORLD, "--quiet", "-o"])
        .arg(out_dir);
    run(
        &mut command,
        "generating the TypeScript types of wit/ with jco",
    )?;
    Ok(())
}

/// Holds an exclusive lock on the file `path` (created if missing) until the result is dropped.
fn lock(path: &Path) -> Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening the lock {}", path.display()))?;
    file.lock()
        .with_context(|| format!("locking {}", path.display()))?;
    Ok(file)
}

/// A string field of a package.json, by its path of keys.
fn json_field(json: &serde_json::Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .try_fold(json, |value, key| value.get(key))?
        .as_str()
        .map(str::to_string)
}

fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn json_string(path: &Path) -> String {
    json_string_str(&path.to_string_lossy())
}

fn json_string_str(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).with_context(|| format!("{} does not exist", path.display()))
}

/// `path` made absolute (its directory created) for a file that does not exist yet.
fn absolute_new(path: &Path) -> Result<PathBuf> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = match dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            absolute(dir)?
        }
        None => std::env::current_dir().context("the working directory")?,
    };
    Ok(dir.join(path.file_name().context("the output needs a file name")?))
}

/// Installs the npm packages `sdk/js/package-lock.json` pins into the toolchain directory,
/// unless the same lock was installed there already.
pub fn install(sdk: &Sdk) -> Result<()> {
    let dir = sdk.js_toolchain();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let lock = std::fs::read(sdk.js_dir().join("package-lock.json"))
        .context("reading the SDK's package-lock.json")?;
    let installed = dir.join(INSTALLED_LOCK);
    if std::fs::read(&installed).is_ok_and(|done| done == lock)
        && dir.join("node_modules/.package-lock.json").is_file()
    {
        println!("js: {} is up to date", dir.display());
        return Ok(());
    }
    for file in ["package.json", "package-lock.json"] {
        std::fs::copy(sdk.js_dir().join(file), dir.join(file))
            .with_context(|| format!("copying {file} into {}", dir.display()))?;
    }
    println!("js: npm install in {} (package-lock.json)", dir.display());
    // Not `npm ci`: it refuses a lock that lacks optional packages of other platforms the
    // registry does not carry (win32-arm64, musl, ...).
    let mut npm = Command::new("npm");
    npm.arg("install").arg("--prefix").arg(&dir).args([
        "--no-save",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ]);
    run(&mut npm, "installing the JavaScript toolchain with npm")?;
    process::write(&installed, &lock)
}

/// The copy of the lock the toolchain directory was last installed from.
const INSTALLED_LOCK: &str = ".installed-package-lock.json";

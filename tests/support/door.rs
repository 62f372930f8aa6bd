//! What the tests of a door library (`xrt/`, `offload/`) share: the library installed into
//! a scratch prefix with the door's `install.sh`, C and C++ programs built with only the
//! flags of its pkg-config file, and run on the embedded default (or a config of the
//! test's) with the library found through the prefix.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::SystemTime;

use crate::harness::Outcome;

/// One door's library and files.
pub struct Door {
    /// Its folder in the workspace and its pkg-config name (`xrt`, `offload`).
    pub name: &'static str,
    /// The library file (`libxrt_coreutil.so`).
    pub library: &'static str,
    /// The door's crate folder (`CARGO_MANIFEST_DIR`).
    pub crate_dir: &'static str,
    /// Where its scratch folders go (`CARGO_TARGET_TMPDIR`).
    pub tmp: &'static str,
    /// Where the library is installed, once per run ([`Door::prefix`]).
    pub prefix: OnceLock<PathBuf>,
}

/// Skips with `why`, or fails where CI requires the tools.
pub fn missing(why: String) -> Outcome {
    if std::env::var_os("ACCELHOST_REQUIRE_TOOLCHAINS").is_some_and(|v| v == "1") {
        panic!("{why}, and ACCELHOST_REQUIRE_TOOLCHAINS=1");
    }
    Outcome::Skipped(why)
}

/// The compile cache the programs these tests run share with every other test of the run
/// (under the target, not the user's cache, nor one per program's scratch home): a plugin
/// compiles once per run, not once per program.
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("accelhost-cache")
}

/// Runs `command` to its end.
pub fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"))
}

/// A finished program's status and output, for assertions.
pub fn text(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

impl Door {
    /// The door's crate folder.
    pub fn dir(&self) -> &Path {
        Path::new(self.crate_dir)
    }

    fn scratch_root(&self) -> PathBuf {
        Path::new(self.tmp).join(format!("{}-{}", self.name, std::process::id()))
    }

    /// An empty scratch folder for `label`.
    pub fn scratch(&self, label: &str) -> PathBuf {
        let dir = self.scratch_root().join(label);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Removes every scratch folder of this run.
    pub fn clean(&self) {
        let _ = std::fs::remove_dir_all(self.scratch_root());
    }

    /// The freshest library of this profile: `cargo test` builds it in target/<profile>/deps,
    /// `cargo build` in target/<profile>.
    fn library_dir(&self) -> PathBuf {
        let exe = std::env::current_exe().unwrap();
        let deps = exe.parent().unwrap().to_path_buf();
        let profile_dir = deps.parent().unwrap().to_path_buf();
        [deps, profile_dir]
            .into_iter()
            .filter_map(|dir| {
                let modified = std::fs::metadata(dir.join(self.library))
                    .and_then(|m| m.modified())
                    .ok()?;
                Some((modified, dir))
            })
            .max_by_key(|(modified, _): &(SystemTime, PathBuf)| *modified)
            .map(|(_, dir)| dir)
            .unwrap_or_else(|| panic!("cargo builds {} with this test", self.library))
    }

    /// The prefix the library is installed into (once per run).
    pub fn prefix(&self) -> &Path {
        self.prefix.get_or_init(|| {
            let prefix = self.scratch("prefix");
            let out = run(Command::new("sh")
                .arg(self.dir().join("install.sh"))
                .arg("--lib-dir")
                .arg(self.library_dir())
                .arg("--link")
                .arg(&prefix));
            assert!(out.status.success(), "install.sh failed:\n{}", text(&out));
            prefix
        })
    }

    /// `pkg-config --cflags --libs <door>` against the prefix: only -I and -L/-l.
    fn pkg_config_flags(&self) -> Result<Vec<String>, Outcome> {
        let out = match Command::new("pkg-config")
            .args(["--cflags", "--libs", self.name])
            .env("PKG_CONFIG_PATH", self.prefix().join("lib/pkgconfig"))
            .output()
        {
            Ok(out) => out,
            Err(err) => return Err(missing(format!("no pkg-config: {err}"))),
        };
        assert!(out.status.success(), "pkg-config failed:\n{}", text(&out));
        let flags: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        assert!(
            flags
                .iter()
                .all(|f| f.starts_with("-I") || f.starts_with("-L") || f.starts_with("-l")),
            "{flags:?}"
        );
        Ok(flags)
    }

    /// Compiles the door's `tests/<source>` into `dir` with `compiler` (`cc` or `c++`), the
    /// language `standard`, and only pkg-config's flags.
    pub fn build(
        &self,
        compiler: &str,
        standard: &str,
        source: &str,
        dir: &Path,
    ) -> Result<PathBuf, Outcome> {
        let flags = self.pkg_config_flags()?;
        let exe = dir.join(Path::new(source).file_stem().unwrap());
        let out = match Command::new(compiler)
            .args([standard, "-pthread", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&exe)
            .arg(self.dir().join("tests").join(source))
            .args(&flags)
            .output()
        {
            Ok(out) => out,
            Err(err) => return Err(missing(format!("no {compiler}: {err}"))),
        };
        assert!(
            out.status.success(),
            "{source} does not build:\n{}",
            text(&out)
        );
        Ok(exe)
    }

    /// Runs a built program with `args` in `dir`, on the embedded default config (or
    /// `config`), the library found through the prefix and plugins compiled into the run's
    /// shared cache ([`cache_dir`]).
    pub fn run_program(
        &self,
        exe: &Path,
        args: &[&str],
        dir: &Path,
        config: Option<&Path>,
    ) -> Output {
        let mut command = Command::new(exe);
        command
            .args(args)
            .current_dir(dir)
            .env("LD_LIBRARY_PATH", self.prefix().join("lib"))
            .env_remove("ACCELHOST_CONFIG")
            .env_remove("ACCELHOST_ENDPOINT")
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("HOME", dir)
            .env("ACCELHOST_CACHE_DIR", cache_dir());
        if let Some(config) = config {
            command.env("ACCELHOST_CONFIG", config);
        }
        run(&mut command)
    }

    /// The install script's `--help` and its refusals of bad input.
    pub fn check_install_script(&self) {
        let script = self.dir().join("install.sh");
        let help = run(Command::new("sh").arg(&script).arg("--help"));
        assert!(help.status.success(), "{}", text(&help));
        let says = format!("pkg-config --cflags --libs {}", self.name);
        assert!(text(&help).contains(&says), "{}", text(&help));
        let dir = self.scratch("install");
        std::fs::write(dir.join("a-file"), "").unwrap();
        for (args, says) in [
            (vec![], "no PREFIX given"),
            (vec!["--bogus", "p"], "unknown option '--bogus'"),
            (vec!["--lib-dir"], "--lib-dir needs a directory"),
            (vec!["a", "b"], "one PREFIX, not 'a' and 'b'"),
            (
                vec!["a-file"],
                "PREFIX 'a-file' exists and is not a directory",
            ),
        ] {
            let out = run(Command::new("sh")
                .arg(&script)
                .args(&args)
                .current_dir(&dir));
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
        }
        let out = run(Command::new("sh")
            .arg(&script)
            .args(["--lib-dir", "nowhere", "p"])
            .current_dir(&dir));
        let says = format!("nowhere/{} not found", self.library);
        assert!(
            !out.status.success() && text(&out).contains(&says),
            "{}",
            text(&out)
        );
    }
}

/// The embedded default config with the chaos plugin added, configured with `settings`:
/// written to `dir`, its path returned.
pub fn config_with_chaos(dir: &Path, settings: serde_json::Value) -> PathBuf {
    let mut config: serde_json::Value =
        serde_json::from_str(accelhost::builtin::embedded_default_text()).unwrap();
    config["plugins"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "name": "chaos",
            "module": "builtin:chaos",
            "config": settings,
            "load_policy": {"on_fault": "disable"}
        }));
    let path = dir.join("accelhost.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// The embedded default with launches of the XRT card's own kernels ended after `ms`.
pub fn config_with_kernel_deadline(dir: &Path, ms: u64) -> PathBuf {
    let mut config: serde_json::Value =
        serde_json::from_str(accelhost::builtin::embedded_default_text()).unwrap();
    for card in config["devices"].as_array_mut().unwrap() {
        if card["family"] == "xocl" {
            card["kernel_deadline_ms"] = ms.into();
        }
    }
    let path = dir.join("accelhost.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// An xclbin of `kernels` from the workspace's `tests/kernels/<source>`, built as
/// `accelhost xclbin build` does; a missing clang skips (or fails in CI).
pub fn kernel_image(source: &str, kernels: &[&str]) -> Result<Vec<u8>, Outcome> {
    use accelhost::xclbin::kernels::{KernelBuildError, build_c};
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/kernels")
        .join(source);
    let names: Vec<String> = kernels.iter().map(|k| k.to_string()).collect();
    match build_c(&[path], &names, &[]) {
        Ok(built) => Ok(accelhost::xclbin::XclbinBuilder::kernels(
            built.uuid(),
            &built.kernels,
            built.module,
            1,
        )
        .build()),
        Err(KernelBuildError::NoCompiler(why)) => Err(missing(why)),
        Err(err) => panic!("{source}: {err}"),
    }
}

/// SPIR-V of the workspace's `tests/kernels/<source>` (OpenCL C, or SPIR when it ends in
/// `.ll`), as a SYCL or OpenCL toolchain hands it on: clang's 64-bit SPIR, then LLVM's SPIR-V
/// translator of clang's version; a missing clang or translator skips (or fails in CI).
pub fn spirv_of(source: &str) -> Result<Vec<u8>, Outcome> {
    use accelhost::xclbin::kernels::{SPIRV_HINT, spirv_translator_program, translates_spirv};
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/kernels")
        .join(source);
    if !translates_spirv() {
        return Err(missing(format!(
            "no SPIR-V translator ({} does not run; {SPIRV_HINT})",
            spirv_translator_program().to_string_lossy()
        )));
    }
    let work =
        std::env::temp_dir().join(format!("accelhost-spirv-{}-{source}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let (bitcode, module) = (work.join("k.bc"), work.join("k.spv"));
    // SPIR is written as a SYCL compiler hands it on, already optimized: clang's optimizer
    // would lay its struct accesses out anew.
    let language: &[&str] = if source.ends_with(".ll") {
        &["-x", "ir", "-O0"]
    } else {
        &[
            "-x",
            "cl",
            "-cl-std=CL1.2",
            "-Xclang",
            "-finclude-default-header",
            "-O2",
        ]
    };
    let compiled = Command::new("clang")
        .args(language)
        .args(["--target=spir64-unknown-unknown", "-emit-llvm", "-c"])
        .arg(&path)
        .arg("-o")
        .arg(&bitcode)
        .status();
    let Ok(compiled) = compiled else {
        return Err(missing("no clang to compile OpenCL C to SPIR with".into()));
    };
    assert!(compiled.success(), "clang refused {source}");
    let translated = Command::new(spirv_translator_program())
        .arg(&bitcode)
        .arg("-o")
        .arg(&module)
        .status()
        .unwrap();
    assert!(translated.success(), "the translator refused {source}");
    let il = std::fs::read(&module).unwrap();
    std::fs::remove_dir_all(&work).unwrap();
    Ok(il)
}

/// Whether `text` holds no active character (control or C1): a plugin's terminal attacks
/// reached it inert.
pub fn inert(text: &str) -> bool {
    !text
        .chars()
        .any(|c| (c.is_control() && c != '\n') || ('\u{80}'..='\u{9f}').contains(&c))
}

/// The chaos plugin's `load_policy` when it lies in the doors' tests: limits small enough
/// that its worst case (`accelhost::worst_case_host_memory`) is a few tens of MiB, and an
/// event deadline of [`LIAR_EVENT_DEADLINE_MS`].
pub fn liar_policy() -> serde_json::Value {
    serde_json::json!({
        "on_fault": "disable",
        "call_timeout_ms": 2000,
        "event_deadline_ms": LIAR_EVENT_DEADLINE_MS,
        "memory_mib": 16,
        "max_table_elements": 4096,
        "host_memory_mib": 4,
        "max_resources": 4096
    })
}

/// The event deadline of the lying plugin in the doors' tests.
pub const LIAR_EVENT_DEADLINE_MS: u64 = 1500;

/// The embedded default config with the chaos plugin added, telling `lies` (its `lie` list,
/// with `settings` merged in) under [`liar_policy`]: written to `dir`, its path returned, with
/// the most host memory that plugin can make the host hold.
pub fn config_with_liar(dir: &Path, lies: &[&str], settings: serde_json::Value) -> (PathBuf, u64) {
    let mut config: serde_json::Value =
        serde_json::from_str(accelhost::builtin::embedded_default_text()).unwrap();
    let mut plugin_config = serde_json::json!({ "lie": lies });
    for (key, value) in settings.as_object().into_iter().flatten() {
        plugin_config[key] = value.clone();
    }
    config["plugins"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "name": "chaos",
            "module": "builtin:chaos",
            "config": plugin_config,
            "load_policy": liar_policy(),
            "grants": {"dma_memory_mib": 8}
        }));
    let path = dir.join("accelhost.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let parsed = accelhost::Config::load(&path).unwrap();
    let entry = parsed.plugins.iter().find(|p| p.name == "chaos").unwrap();
    (path, accelhost::worst_case_host_memory(entry))
}

/// The number after `label` in `report` (a line `label N`).
pub fn figure(report: &str, label: &str) -> Option<f64> {
    report
        .lines()
        .find_map(|line| line.strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// The events a program keeps in the doors' RSS checks (the count the hostile tests were
/// tried with, outside the team).
pub const KEPT_EVENTS: u64 = 200_000;

/// Checks what the `kept` runs of a door's liar program printed: the program that kept
/// [`KEPT_EVENTS`] events failed by a plugin with a message of its own each grew by at most
/// the plugin's worst case plus 32 MiB more than one that kept as many honest events.
pub fn check_kept(liar: &str, honest: &str, worst_case: u64) {
    let growth = |report: &str| {
        figure(report, "peak rss growth KiB:")
            .unwrap_or_else(|| panic!("no peak RSS in:\n{report}"))
    };
    let (liar_kib, honest_kib) = (growth(liar), growth(honest));
    let allowed_kib = (worst_case + (32 << 20)) as f64 / 1024.0;
    assert!(
        liar_kib - honest_kib <= allowed_kib,
        "the lying plugin's events took {liar_kib} KiB, honest ones {honest_kib} KiB: more than \
         its worst case plus 32 MiB ({allowed_kib} KiB)\n{liar}"
    );
}

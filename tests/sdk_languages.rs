//! Plugins in C, JavaScript and Python: each language's NLB0 example (`examples/<lang>-nlb0`)
//! and template (`sdk/<lang>/template`) are built with the SDK tool (`sdk/tool`), loaded by the
//! host, and the example runs OPAE's hello_fpga loopback through the host's MMIO fast path,
//! byte-exact, as the Rust dfl plugin does in dfl_flow.rs. Rebuilding a template must give the
//! same bytes, for the languages whose toolchain the SDK tool says is reproducible, and a
//! rebuild of unchanged sources keeps the component, in every language.
//!
//! A language whose toolchain is not installed is reported `ignored` with the reason (this
//! target has its own harness, `support::harness`, since libtest cannot skip at run time),
//! unless `ACCELHOST_REQUIRE_TOOLCHAINS=1` (CI), which makes it a failure. The builds go under the cargo
//! target directory; the compiled components go to the tests' shared compile cache, so a second
//! run loads them in milliseconds. The trials run side by side (`--test-threads 1` for figures no
//! other build or compile skews), and each language trial prints its figures and a row for the
//! table in sdk/README.md.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use accelhost::families::dfl::abi::nlb0;
use accelhost::workloads::nlb0::loopback;
use accelhost::{AcceleratorState, ErrorCode, Filter, Host, OpenMode, PluginStatus};
use accelhost_sdk_tool::{Built, Language, Reproducibility, Sdk, Toolchain, probe};
use support::harness::{Outcome, Trial};
use support::{cache_dir, json_path, scratch_dir};

/// Set to `1` to make a missing toolchain fail the test instead of skipping it.
const REQUIRE_ENV: &str = "ACCELHOST_REQUIRE_TOOLCHAINS";

/// The copies the NLB0 workload makes: the 64 KiB and 1 MiB the SDK promise names, and one
/// past `NUM_LINES`' 32 MiB limit, which takes two runs.
const LOOPBACK_BYTES: [u64; 3] = [64 << 10, 1 << 20, (33 << 20) + 4096];

fn main() -> std::process::ExitCode {
    support::harness::run(
        &[
            Trial {
                name: "c_plugin_runs_the_nlb0_workload",
                run: || run_language(Language::C),
            },
            Trial {
                name: "javascript_plugin_runs_the_nlb0_workload",
                run: || run_language(Language::Js),
            },
            Trial {
                name: "python_plugin_runs_the_nlb0_workload",
                run: || run_language(Language::Python),
            },
            Trial {
                name: "c_rebuilds_are_byte_identical",
                run: || rebuilds_are_byte_identical(Language::C),
            },
            Trial {
                name: "javascript_rebuilds_are_byte_identical",
                run: || rebuilds_are_byte_identical(Language::Js),
            },
            Trial {
                name: "python_rebuilds_are_byte_identical",
                run: || rebuilds_are_byte_identical(Language::Python),
            },
            Trial {
                name: "a_javascript_exception_is_an_internal_error_naming_its_file_and_line",
                run: || an_exception_is_an_internal_error_saying_where(Language::Js),
            },
            Trial {
                name: "a_python_exception_is_an_internal_error_naming_its_line",
                run: || an_exception_is_an_internal_error_saying_where(Language::Python),
            },
            Trial {
                name: "the_checked_in_typescript_types_match_the_wit",
                run: the_checked_in_typescript_types_match_the_wit,
            },
            Trial {
                name: "a_failing_build_names_the_file_and_the_tool",
                run: a_failing_build_names_the_file_and_the_tool,
            },
            Trial {
                name: "a_python_syntax_error_names_the_authors_file_and_line_at_once",
                run: a_python_syntax_error_names_the_authors_file_and_line_at_once,
            },
            Trial {
                name: "an_empty_c_plugin_directory_names_what_it_lacks",
                run: || empty_plugin_directory(Language::C, "has no .c file to build"),
            },
            Trial {
                name: "an_empty_javascript_plugin_directory_names_what_it_lacks",
                run: || empty_plugin_directory(Language::Js, "needs plugin.js"),
            },
            Trial {
                name: "an_empty_python_plugin_directory_names_what_it_lacks",
                run: || {
                    empty_plugin_directory(
                        Language::Python,
                        "app.py: the module that defines its exports",
                    )
                },
            },
        ],
        support::harness::Overlap::AsLibtest,
    )
}

/// A plugin whose `enumerate` throws what the SDK does not know (a plain `Error`, a
/// `ValueError`): its call fails as `internal`, saying what was thrown and at which of the
/// author's files and lines (in JavaScript, a second module of the plugin, bundled with the
/// first and the SDK), and the plugin goes on running.
fn an_exception_is_an_internal_error_saying_where(language: Language) -> Outcome {
    const JS: &str = "import { exportPlugin } from 'accelhost-sdk';\n\
                      import { check } from './check.js';\n\
                      \n\
                      class Throwing {\n\
                      \x20 /** @returns {never} */\n\
                      \x20 enumerate() {\n\
                      \x20   return check();\n\
                      \x20 }\n\
                      }\n\
                      \n\
                      export const { lifecycle, discovery, fpga, offload, attributes } = \
                      exportPlugin(new Throwing());\n";
    const PYTHON: &str = "import accelhost\n\
                          from accelhost import Attributes, Discovery, Fpga, Lifecycle, Offload  # noqa: F401\n\
                          \n\
                          \n\
                          class Throwing(accelhost.Plugin):\n\
                          \x20   def enumerate(self, filters):\n\
                          \x20       raise ValueError(\"boom\")\n\
                          \n\
                          \n\
                          accelhost.export_plugin(Throwing())\n";
    let (entry, source, says) = match language {
        Language::Js => ("plugin.js", JS, "Error: boom (at check.js:3)"),
        Language::Python => ("app.py", PYTHON, "ValueError: boom (at app.py:7)"),
        Language::C | Language::Rust => unreachable!("{language} has no exceptions"),
    };
    let sdk = Sdk::installed().unwrap();
    let toolchain = match toolchain(&sdk, language) {
        Ok(toolchain) => toolchain,
        Err(skipped) => return skipped,
    };
    let dir = scratch_dir("throwing-plugin");
    let plugin = dir.join("plugin");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(plugin.join(entry), source).unwrap();
    if language == Language::Js {
        std::fs::write(
            plugin.join("check.js"),
            "/** @returns {never} */\nexport function check() {\n  throw new Error('boom');\n}\n",
        )
        .unwrap();
    }
    let built = toolchain
        .build(&sdk, &plugin, &dir.join("throwing.wasm"), &dir.join("work"))
        .unwrap_or_else(|err| panic!("{err:#}"));
    let host = support::host(&format!(
        r#"{{"plugins": [{{"name": "throwing", "module": "{}"}}]}}"#,
        json_path(&built.component)
    ))
    .unwrap();
    let found = host.enumerate(&[]);
    let [err] = found.failures.as_slice() else {
        panic!("{language}: one failure expected: {:?}", found.failures)
    };
    assert_eq!(err.code(), ErrorCode::Internal, "{language}: {err}");
    assert!(err.to_string().contains(says), "{language}: {err}");
    let status = &host.plugins()[0].status;
    assert_eq!(
        *status,
        PluginStatus::Running,
        "{language}: a failed call is not a fault"
    );
    Outcome::Passed
}

/// Building the template twice, into other output files and work directories, gives the same
/// bytes, so the host's compile cache (keyed by them) still has the component after a rebuild.
/// A toolchain the SDK tool says is not reproducible is skipped with its reason, unbuilt.
fn rebuilds_are_byte_identical(language: Language) -> Outcome {
    let sdk = Sdk::installed().unwrap();
    let toolchain = match toolchain(&sdk, language) {
        Ok(toolchain) => toolchain,
        Err(skipped) => return skipped,
    };
    if let Reproducibility::NotReproducible(why) = toolchain.reproducibility() {
        return Outcome::Skipped(format!("{language} builds are not reproducible: {why}"));
    }
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sdk-languages")
        .join("rebuild")
        .join(language.key());
    // Fresh outputs: a kept component would make the two builds trivially the same.
    let _ = std::fs::remove_dir_all(&out_dir);
    let [first, second] = ["first", "second"].map(|name| {
        toolchain
            .build(
                &sdk,
                &sdk.template_dir(language),
                &out_dir.join(format!("{name}.wasm")),
                &out_dir.join("work").join(name),
            )
            .unwrap_or_else(|err| panic!("{err:#}"))
    });
    assert!(!first.kept && !second.kept, "{language}: both were built");
    assert_eq!(
        first.sha256,
        second.sha256,
        "{language}: rebuilding the unchanged template gave other bytes ({} and {})",
        first.component.display(),
        second.component.display()
    );
    Outcome::Passed
}

fn the_checked_in_typescript_types_match_the_wit() -> Outcome {
    let sdk = Sdk::installed().unwrap();
    let jco = match toolchain(&sdk, Language::Js) {
        Ok(Toolchain::Js(jco)) => jco,
        Ok(_) => unreachable!("the JavaScript probe finds jco"),
        Err(skipped) => return skipped,
    };
    let fresh = scratch_dir("js-types");
    accelhost_sdk_tool::js::generate_types(&sdk, &jco, &fresh).unwrap();
    let checked_in = sdk.js_dir().join("generated");
    let (want, have) = (files_under(&fresh), files_under(&checked_in));
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        have.keys().collect::<Vec<_>>(),
        "sdk/js/generated lists other files than jco generates: run `npm --prefix sdk/js run types`"
    );
    for (name, text) in &want {
        assert!(
            have[name] == *text,
            "sdk/js/generated/{name} is out of date with wit/: run `npm --prefix sdk/js run types`"
        );
    }
    Outcome::Passed
}

fn a_failing_build_names_the_file_and_the_tool() -> Outcome {
    let sdk = Sdk::installed().unwrap();
    let toolchain = match toolchain(&sdk, Language::C) {
        Ok(toolchain) => toolchain,
        Err(skipped) => return skipped,
    };
    let dir = scratch_dir("broken-c");
    std::fs::write(
        dir.join("broken.c"),
        "int broken(void) { return missing; }\n",
    )
    .unwrap();
    let err = toolchain
        .build(&sdk, &dir, &dir.join("out.wasm"), &dir.join("work"))
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("broken.c"), "{text}");
    assert!(text.contains("missing"), "the compiler's message: {text}");
    assert!(text.contains("clang"), "{text}");
    Outcome::Passed
}

/// A syntax error is found before componentize-py runs (which takes seconds and names its own
/// copy, `/0/app.py`), naming the author's file, line and column.
fn a_python_syntax_error_names_the_authors_file_and_line_at_once() -> Outcome {
    let sdk = Sdk::installed().unwrap();
    let toolchain = match toolchain(&sdk, Language::Python) {
        Ok(toolchain) => toolchain,
        Err(skipped) => return skipped,
    };
    let dir = scratch_dir("python-syntax");
    std::fs::write(
        dir.join("app.py"),
        "import accelhost\n\n\ndef broken(:\n    pass\n",
    )
    .unwrap();
    let err = toolchain
        .build(&sdk, &dir, &dir.join("out.wasm"), &dir.join("work"))
        .unwrap_err();
    let text = format!("{err:#}");
    let app = dir.join("app.py").display().to_string();
    assert!(text.contains(&format!("{app}:4:12: SyntaxError")), "{text}");
    assert!(
        !text.contains("componentize-py"),
        "found before componentize-py runs: {text}"
    );
    Outcome::Passed
}

fn empty_plugin_directory(language: Language, needle: &str) -> Outcome {
    let sdk = Sdk::installed().unwrap();
    let toolchain = match toolchain(&sdk, language) {
        Ok(toolchain) => toolchain,
        Err(skipped) => return skipped,
    };
    let dir = scratch_dir("empty-plugin");
    let err = toolchain
        .build(&sdk, &dir, &dir.join("out.wasm"), &dir.join("work"))
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains(needle), "{language}: {text}");
    assert!(
        text.contains(&dir.display().to_string()),
        "{language} names the directory: {text}"
    );
    Outcome::Passed
}

/// The toolchain of `language`; when it is missing and not required, the trial's skip.
fn toolchain(sdk: &Sdk, language: Language) -> Result<Toolchain, Outcome> {
    let scratch = scratch_dir(&format!("probe-{}", language.key()));
    match probe(sdk, language, &scratch) {
        Ok(toolchain) => Ok(toolchain),
        Err(why) if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") => {
            panic!("{REQUIRE_ENV}=1 but the {language} toolchain is missing: {why}")
        }
        Err(why) => Err(Outcome::Skipped(format!(
            "the {language} toolchain is missing ({why}); sdk/install-toolchains.sh installs it"
        ))),
    }
}

/// How long loading a component took, as `accelhost check-config` sees it: compiling it when
/// the cache does not have it yet (`cold`), then from the compile cache (`cached`).
struct LoadTimes {
    cold: Option<Duration>,
    cached: Duration,
}

fn run_language(language: Language) -> Outcome {
    let sdk = Sdk::installed().unwrap();
    let toolchain = match toolchain(&sdk, language) {
        Ok(toolchain) => toolchain,
        Err(skipped) => return skipped,
    };
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("sdk-languages")
        .join(language.key());
    let try_build = |dir: &Path, name: &str| {
        toolchain.build(
            &sdk,
            dir,
            &out_dir.join(format!("{name}.wasm")),
            &out_dir.join("work").join(name),
        )
    };
    let build = |dir: &Path, name: &str| -> Built {
        try_build(dir, name).unwrap_or_else(|err| panic!("{err:#}"))
    };
    // A copy of the template, which the run edits at its end.
    let template_dir = out_dir.join("template-plugin");
    let template_entry = template_dir.join(entry_file(language));
    std::fs::create_dir_all(&template_dir).unwrap();
    std::fs::copy(
        sdk.template_dir(language).join(entry_file(language)),
        &template_entry,
    )
    .unwrap();
    let template = build(&template_dir, "template");
    let example = build(&sdk.example_dir(language), "nlb0");

    let version = sdk.wit_version(language).unwrap();
    let load = measure_load(&example, &version);
    let template_load = measure_load(&template, &version);

    let config = format!(
        r#"{{"devices": [{{"id": "card0", "family": "dfl"}}],
            "plugins": [
              {{"name": "nlb0", "module": "{}", "grants": {{"devices": ["emu:card0"], "dma_memory_mib": 256}}}},
              {{"name": "template", "module": "{}"}}
            ]}}"#,
        json_path(&example.component),
        json_path(&template.component)
    );
    let started = Instant::now();
    let host = support::host(&config).unwrap_or_else(|e| panic!("{e}"));
    let host_start = started.elapsed();
    for plugin in host.plugins() {
        assert_eq!(
            plugin.status,
            PluginStatus::Running,
            "{language} plugin '{}' ({})",
            plugin.name,
            plugin.module
        );
        assert_eq!(plugin.wit_version.as_deref(), Some(version.as_str()));
    }

    check_template(&host, language);
    check_nlb0_semantics(&host, language);
    let rates = run_loopbacks(&host);

    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1e3);
    let cold = |load: &LoadTimes| match load.cold {
        Some(d) => ms(d),
        None => "(in the cache from an earlier run)".to_string(),
    };
    let result = LOOPBACK_BYTES
        .iter()
        .zip(&rates)
        .map(|(bytes, rate)| format!("{} {rate:.2} GB/s", size_label(*bytes)))
        .collect::<Vec<_>>()
        .join(", ");
    let describe = |label: &str, built: &Built, load: &LoadTimes| {
        format!(
            "{label} {}: {} bytes ({:.2} MiB), built in {:.1} s; load: cold {}, cached {}",
            built.component.display(),
            built.bytes,
            mib(built.bytes),
            built.took.as_secs_f64(),
            cold(load),
            ms(load.cached)
        )
    };
    println!(
        "\n{language}: {versions}\n  {}\n  {}\n  host start with both: {}\n  \
         NLB0 loopback verified byte-exact: {result}\n  \
         table row: | {language} | {versions} | {:.2} MiB | {} | {} | verified: {result} |",
        describe("example ", &example, &load),
        describe("template", &template, &template_load),
        ms(host_start),
        mib(example.bytes),
        cold(&load),
        ms(load.cached),
        versions = toolchain.versions(),
    );
    keeps_its_component_until_an_edit(language, &template, &template_entry, || {
        try_build(&template_dir, "template")
    });
    Outcome::Passed
}

/// Rebuilding the template's copy unchanged keeps its component, bytes and all (so the host's
/// compile cache still has it, whatever the toolchain's reproducibility). An edit is read
/// again: one that does not build fails the build at once, naming the file, where a kept
/// component would come back without its source being read (and a whole rebuild would cost
/// JavaScript and Python seconds that show nothing more).
fn keeps_its_component_until_an_edit<E: std::fmt::Display>(
    language: Language,
    built: &Built,
    entry: &Path,
    rebuild: impl Fn() -> Result<Built, E>,
) {
    let again = rebuild().unwrap_or_else(|err| panic!("{err:#}"));
    assert!(
        again.kept,
        "{language}: nothing changed, yet it was built again"
    );
    assert_eq!(again.sha256, built.sha256);
    let breaking_edit = match language {
        Language::C => "int edited(void) { return missing; }",
        Language::Js => "export const edited = ;",
        Language::Python => "def edited(:",
        Language::Rust => unreachable!("Rust plugins are not built here"),
    };
    let source = std::fs::read_to_string(entry).unwrap();
    std::fs::write(entry, format!("{source}\n{breaking_edit}\n")).unwrap();
    let err = rebuild().expect_err("an edited source is built again, and the edit does not build");
    let text = format!("{err:#}");
    let name = entry.file_name().unwrap().to_string_lossy();
    assert!(text.contains(&*name), "{language}: {text}");
}

/// The one source file of `language`'s template.
fn entry_file(language: Language) -> &'static str {
    match language {
        Language::C => "plugin.c",
        Language::Js => accelhost_sdk_tool::js::ENTRY,
        Language::Python => "app.py",
        Language::Rust => unreachable!("the Rust template is not built here"),
    }
}

/// The template loads, reports its one device, opens and closes it, and answers
/// `unsupported` for what it leaves to the SDK's defaults.
fn check_template(host: &Host, language: Language) {
    let found = host.enumerate(&[Filter::new().guid(accelhost::Guid::new(0x1234, 0x5678))]);
    assert!(found.failures.is_empty(), "{:?}", found.failures);
    assert_eq!(found.tokens.len(), 1, "{language} template");
    let token = &found.tokens[0];
    assert_eq!(token.plugin(), "template");
    assert_eq!(token.properties().name, "template0");
    assert_eq!(token.properties().device_type, "fpga");
    let handle = host.open(token, OpenMode::Shared).unwrap();
    // The template declares no MMIO region: the host refuses a map before asking it.
    let err = handle.map_mmio(0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("0 MMIO region(s)"), "{err}");
    let err = handle.prepare_buffer(4096).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    handle.close().unwrap();
    assert!(
        host.enumerate(&[Filter::new().device_type("gpu")])
            .tokens
            .is_empty(),
        "the template's filters"
    );
}

/// What the workload relies on, as the Rust dfl plugin does it: properties, exclusive opens,
/// MMIO regions, buffers and their errors, and the SDK's `unsupported` defaults.
fn check_nlb0_semantics(host: &Host, language: Language) {
    let found = host.enumerate(&[Filter::new().guid(nlb0::AFU_ID)]);
    assert!(found.failures.is_empty(), "{:?}", found.failures);
    assert_eq!(found.tokens.len(), 1, "{language}: one NLB0 port");
    let token = &found.tokens[0];
    assert_eq!(token.id(), "nlb0/emu:card0");
    let p = token.properties();
    assert_eq!(p.name, "emu:card0");
    assert_eq!(p.device_type, "fpga");
    assert_eq!(p.host, "localhost");
    assert_eq!(p.num_mmio, 1);
    assert_eq!((p.vendor_id, p.device_id), (0x8086, 0x0A5E));
    assert_eq!(p.accelerator_state, Some(AcceleratorState::Unassigned));
    let extra = |key: &str| {
        p.extras
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(extra("path"), Some("emu:card0"));
    assert_eq!(extra("emulated"), Some("true"));
    assert_eq!(extra("language"), Some(language_extra(language)));
    assert_eq!(
        host.enumerate(&[Filter::new().guid(nlb0::AFU_ID).host("^localhost")])
            .tokens
            .len(),
        0,
        "filters"
    );

    let handle = host.open(token, OpenMode::Exclusive).unwrap();
    let err = host.open(token, OpenMode::Exclusive).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Busy, "{err}");
    assert!(err.to_string().contains("emu:card0"), "{err}");
    let err = host.open(token, OpenMode::Shared).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Busy, "{err}");
    assert_eq!(
        token.refresh().unwrap().accelerator_state,
        Some(AcceleratorState::Assigned),
        "describe sees the exclusive holder"
    );

    let mmio = handle.map_mmio(0).unwrap();
    assert_eq!(mmio.read64(nlb0::CSR_AFU_ID_H).unwrap(), nlb0::AFU_ID.high);
    let err = handle.map_mmio(1).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    assert!(err.to_string().contains("1 MMIO region"), "{err}");

    let buffer = handle.prepare_buffer(10).unwrap();
    assert_eq!(buffer.size(), 4096, "rounded up to a page");
    assert_ne!(buffer.iova(), 0);
    let second = handle.prepare_buffer(4096).unwrap();
    assert_ne!(second.id(), buffer.id(), "buffer ids are distinct");
    assert_ne!(second.iova(), buffer.iova());
    buffer.write(0, b"byte-exact").unwrap();
    let mut back = [0u8; 10];
    buffer.read(0, &mut back).unwrap();
    assert_eq!(&back, b"byte-exact");
    buffer.release().unwrap();
    second.release().unwrap();
    let err = handle.prepare_buffer(0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    let err = handle.prepare_buffer(1 << 30).unwrap_err();
    assert_eq!(err.code(), ErrorCode::OutOfMemory, "{err}");

    let err = handle.reconfigure(0, &[0u8; 4096]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    assert!(err.to_string().contains("reconfigure"), "{err}");
    handle.reset().unwrap();
    handle.close().unwrap();
    assert_eq!(mmio.read64(0).unwrap_err().code(), ErrorCode::Stale);

    // The port was really closed: it opens exclusively again.
    let shared_a = host.open(token, OpenMode::Shared).unwrap();
    let shared_b = host.open(token, OpenMode::Shared).unwrap();
    let err = host.open(token, OpenMode::Exclusive).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Busy, "{err}");
    shared_a.close().unwrap();
    shared_b.close().unwrap();
}

/// hello_fpga for each of `LOOPBACK_BYTES` on one exclusive open; the GB/s of each.
fn run_loopbacks(host: &Host) -> Vec<f64> {
    let token = host
        .enumerate(&[Filter::new().guid(nlb0::AFU_ID)])
        .tokens
        .remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    let mut rates = Vec::new();
    for bytes in LOOPBACK_BYTES {
        let report = loopback(&handle, bytes).unwrap_or_else(|e| panic!("{bytes} bytes: {e}"));
        assert!(report.verified(), "{bytes} bytes: {report:?}");
        assert_eq!(report.bytes, bytes);
        assert_eq!(report.runs, bytes.div_ceil(32 << 20) as u32);
        rates.push(report.gigabytes_per_second());
    }
    handle.close().unwrap();
    rates
}

/// Loads `built` twice on the tests' compile cache, each time as a fresh process would
/// (nothing compiled kept in memory): the first compiles it unless the cache has it. Each
/// load finds it built for accel:plugin `version`.
fn measure_load(built: &Built, version: &str) -> LoadTimes {
    let component = &built.component;
    let was_cached = in_cache(built);
    let config = accelhost::Config::parse(
        &format!(
            r#"{{"plugins": [{{"name": "measured", "module": "{}"}}]}}"#,
            json_path(component)
        ),
        accelhost::config::ConfigSource::Embedded,
    )
    .unwrap();
    let cache = accelhost::ComponentCache::at(Some(cache_dir()));
    let check = || {
        accelhost::perf::forget_loaded();
        let started = Instant::now();
        let found = accelhost::check_module(&config.plugins[0], &cache)
            .unwrap_or_else(|e| panic!("{}: {e}", component.display()))
            .wit_version;
        let took = started.elapsed();
        assert_eq!(found, version, "{}", component.display());
        took
    };
    let first = check();
    assert!(in_cache(built), "the compile cache keeps the component");
    let cached = check();
    LoadTimes {
        cold: (!was_cached).then_some(first),
        cached,
    }
}

/// Whether the compile cache has an entry for the built component (named by its sha256).
fn in_cache(built: &Built) -> bool {
    std::fs::read_dir(cache_dir()).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&built.sha256))
    })
}

fn size_label(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 20 {
        format!(
            "{:.0} MiB + {} KiB",
            (bytes >> 20) as f64,
            (bytes % (1 << 20)) >> 10
        )
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// Every file under `dir`, by path relative to it, with its text.
fn files_under(dir: &Path) -> std::collections::BTreeMap<String, String> {
    let mut files = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

/// The `language` extra each example reports.
fn language_extra(language: Language) -> &'static str {
    match language {
        Language::C => "c",
        Language::Js => "javascript",
        Language::Python => "python",
        Language::Rust => unreachable!("the Rust NLB0 plugin is the shipped dfl plugin"),
    }
}

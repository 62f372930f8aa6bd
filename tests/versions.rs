//! The contract grows without breaking a built plugin: the host serves every `accel:plugin`
//! version side by side. A plugin built for 0.1.0 and kept byte for byte runs the hello_fpga
//! flow; one built for 0.2.0 (devices through `discovery`) lists what today's lists through
//! `inventory`, property for property; every function of every served version links (a component importing and exporting
//! everything a version has, synthesized from its WIT); a plugin that exports only the required
//! core loads, and the calls it does not export are answered `unsupported`; a plugin built for
//! a newer major is refused, naming both versions.

use crate::support;

use std::path::{Path, PathBuf};

use accelhost::workloads::nlb0::{is_nlb0, loopback};
use accelhost::{
    AcceleratorState, ErrorCode, Filter, ObjectType, OpenMode, PluginStatus, Properties,
    WIT_VERSION,
};
use support::{guest, host, json_path, scratch_dir};
use wit_parser::{ManglingAndAbi, Resolve};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A host with the dfl port `dfl0` and one plugin, `module`, granted it.
fn host_with(module: &Path) -> accelhost::Host {
    host(&format!(
        r#"{{"devices": [{{"id": "dfl0", "family": "dfl"}}],
            "plugins": [{{"name": "p", "module": "{}", "grants": {{"devices": ["emu:dfl0"]}},
                          "load_policy": {{"on_fault": "disable"}}}}]}}"#,
        json_path(module)
    ))
    .expect("the host starts")
}

fn info(host: &accelhost::Host) -> accelhost::PluginInfo {
    host.plugins().into_iter().next().expect("one plugin")
}

#[test]
fn a_plugin_built_for_0_1_0_runs_hello_fpga_byte_exact() {
    let fixture = workspace().join("tests/fixtures/v0.1.0/dfl.wasm");
    let host = host_with(&fixture);
    let plugin = info(&host);
    assert_eq!(plugin.status, PluginStatus::Running, "{:?}", plugin.status);
    assert_eq!(plugin.wit_version.as_deref(), Some("0.1.0"));
    assert_ne!(WIT_VERSION, "0.1.0", "the host has moved on");
    assert_eq!(plugin.capabilities, ["fpga", "offload"]);
    let token = host
        .enumerate(&[])
        .tokens
        .into_iter()
        .find(is_nlb0)
        .expect("the 0.1.0 plugin lists the NLB0 port");
    for bytes in [64 << 10, 1 << 20] {
        let handle = host.open(&token, OpenMode::Exclusive).unwrap();
        let report = loopback(&handle, bytes).unwrap();
        assert!(report.verified(), "{bytes} bytes: {report:?}");
        handle.close().unwrap();
    }
}

/// Every device `host` lists for each of a few filters (none, device objects, a device
/// type), by name, with its properties.
fn listings(host: &accelhost::Host) -> Vec<Vec<(String, Properties)>> {
    let filters = [
        vec![],
        vec![Filter::new().object_type(ObjectType::Device)],
        vec![Filter::new().device_type("fpga")],
    ];
    filters
        .iter()
        .map(|filters| {
            let found = host.enumerate(filters);
            assert!(found.failures.is_empty(), "{:?}", found.failures);
            let mut listed: Vec<(String, Properties)> = found
                .tokens
                .iter()
                .map(|t| (t.properties().name.to_string(), t.properties().clone()))
                .collect();
            listed.sort_by(|a, b| a.0.cmp(&b.0));
            listed
        })
        .collect()
}

#[test]
fn a_plugin_built_for_0_2_0_lists_what_an_inventory_lists_and_runs_hello_fpga() {
    // Ports on two cards, one of them held exclusively, so that rows differ in their card,
    // number, path and state.
    let config = |module: &Path| {
        format!(
            r#"{{"devices": [{{"id": "dfl0", "family": "dfl"}}, {{"id": "dfl1", "family": "dfl"}},
                            {{"id": "dfl2", "family": "dfl", "port_id": 1}}],
                "plugins": [{{"name": "p", "module": "{}",
                              "grants": {{"devices": ["emu:dfl*"]}}}}]}}"#,
            json_path(module)
        )
    };
    let old = host(&config(&workspace().join("tests/fixtures/v0.2.0/dfl.wasm"))).unwrap();
    let today = host(&config(&guest("accelhost_plugin_dfl"))).unwrap();
    assert_eq!(info(&old).wit_version.as_deref(), Some("0.2.0"));
    assert_eq!(info(&today).wit_version.as_deref(), Some(WIT_VERSION));
    assert_ne!(WIT_VERSION, "0.2.0", "the host has moved on");
    assert!(!info(&old).capabilities.contains(&"inventory"));
    assert!(!info(&old).capabilities.contains(&"batch"));
    assert!(
        info(&today).capabilities.contains(&"inventory"),
        "listed by table"
    );
    for host in [&old, &today] {
        let held = host.enumerate(&[]).tokens.into_iter().next().unwrap();
        std::mem::forget(host.open(&held, OpenMode::Exclusive).unwrap());
    }
    let (before, now) = (listings(&old), listings(&today));
    assert_eq!(before[0].len(), 3, "{:?}", before[0]);
    assert!(
        !before[1].is_empty(),
        "the FMEs are listed: {:?}",
        before[1]
    );
    assert_eq!(before, now, "the same devices with the same properties");
    let token = old
        .enumerate(&[])
        .tokens
        .into_iter()
        .find(|t| {
            is_nlb0(t) && t.properties().accelerator_state == Some(AcceleratorState::Unassigned)
        })
        .expect("the 0.2.0 plugin lists an NLB0 port that is not held");
    let handle = old.open(&token, OpenMode::Exclusive).unwrap();
    let report = loopback(&handle, 1 << 20).unwrap();
    assert!(report.verified(), "{report:?}");
}

/// A component that imports and exports everything `world` of the WIT in `dir` has, each
/// function a trap: what a plugin using every function of that version looks like to the
/// linker.
fn everything_of(dir: &Path, world: &str) -> PathBuf {
    let mut resolve = Resolve::default();
    let (package, _) = resolve.push_dir(dir).expect("the WIT parses");
    let world = resolve
        .select_world(&[package], Some(world))
        .expect("the world exists");
    let mut module = wit_component::dummy_module(
        &resolve,
        world,
        ManglingAndAbi::Legacy(wit_parser::LiftLowerAbi::Sync),
    );
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )
    .unwrap();
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap();
    let path = scratch_dir("everything").join("plugin.wasm");
    std::fs::write(&path, component).unwrap();
    path
}

#[test]
fn every_function_of_every_served_version_links() {
    let wit = workspace().join("wit");
    for (dir, world, version) in [
        (wit.join("0.1.0"), "plugin", "0.1.0"),
        (wit.join("0.2.0"), "plugin", "0.2.0"),
        (wit.clone(), "plugin", WIT_VERSION),
        (wit.clone(), "core", WIT_VERSION),
    ] {
        let host = host_with(&everything_of(&dir, world));
        let plugin = info(&host);
        assert_eq!(plugin.wit_version.as_deref(), Some(version));
        // Linking and the check of every export's type come before `configure`, which traps.
        match &plugin.status {
            PluginStatus::LoadFailed { reason } => assert!(
                reason.starts_with("configure faulted: wasm trap"),
                "{version} {world}: {reason}"
            ),
            other => panic!("{version} {world}: {other:?}"),
        }
    }
}

#[test]
fn a_plugin_without_capability_interfaces_loads_and_its_calls_are_unsupported() {
    let host = host_with(&guest("fixture_core_only"));
    let plugin = info(&host);
    assert_eq!(plugin.status, PluginStatus::Running, "{:?}", plugin.status);
    assert!(plugin.capabilities.is_empty(), "{:?}", plugin.capabilities);
    let token = host
        .enumerate(&[Filter::new().device_type("fpga")])
        .tokens
        .into_iter()
        .next()
        .expect("its device is listed");
    assert_eq!(token.refresh().unwrap().name, "core0");
    let err = host.open(&token, OpenMode::Shared).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Unsupported, "{err}");
    assert!(
        err.to_string()
            .contains("does not export accel:plugin/fpga"),
        "{err}"
    );
    assert_eq!(info(&host).status, PluginStatus::Running, "not a fault");
}

#[test]
fn a_plugin_for_a_newer_major_is_refused_naming_both_versions() {
    let config = format!(
        r#"{{"plugins": [{{"name": "future", "module": "{}"}}]}}"#,
        json_path(&guest("fixture_future_wit"))
    );
    let host = host(&config).unwrap();
    let PluginStatus::LoadFailed { reason } = info(&host).status else {
        panic!("a 1.0.0 plugin must not load");
    };
    assert!(
        reason.contains("accel:plugin@1.0.0")
            && reason.contains("0.1.0")
            && reason.contains(WIT_VERSION),
        "{reason}"
    );
}

use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(
        text,
        ConfigSource::File(PathBuf::from("/cfg/accelhost.json")),
    )
}

/// Every device's bus address, as text.
fn bus_addresses(config: &Config) -> Vec<String> {
    config
        .devices
        .iter()
        .map(|d| d.bus_address.unwrap().to_string())
        .collect()
}

fn error(text: &str) -> ConfigError {
    parse(text).expect_err("the config should be refused")
}

const MINIMAL: &str = r#"{"plugins": [{"name": "dfl", "module": "builtin:dfl"}]}"#;

#[test]
fn embedded_default_is_valid() {
    let config = Config::embedded_default();
    assert_eq!(config.source, ConfigSource::Embedded);
    let names: Vec<&str> = config.plugins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["dfl", "cxl", "xocl"]);
    let ids: Vec<&str> = config.devices.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["dfl0", "capi0.0", "capi0.1", "xocl0"]);
    let (dfl, xocl) = (&config.plugins[0].grants, &config.plugins[2].grants);
    assert!(config.plugins[1].grants.allows_device("/dev/cxl/afu0.0"));
    assert!(dfl.allows_device("emu:dfl0") && !dfl.allows_device("emu:xocl0"));
    assert!(dfl.allows_device("/dev/dfl-port.3"));
    assert!(!dfl.allows_device("/dev/cxl/afu0.0m"));
    assert!(xocl.allows_device("emu:xocl0") && xocl.allows_device("/dev/dri/renderD128"));
}

#[test]
fn minimal_config_gets_defaults() {
    let config = parse(MINIMAL).unwrap();
    let plugin = &config.plugins[0];
    assert_eq!(plugin.module, ModuleSource::Builtin("dfl".into()));
    assert_eq!(plugin.grants, Grants::default());
    assert_eq!(plugin.load_policy.on_error, OnLoadError::Skip);
    assert!(plugin.enabled);
    assert_eq!(plugin.config, serde_json::json!({}));
    assert_eq!(config.linux.sysfs_root, PathBuf::from("/sys"));
}

#[test]
fn syntax_errors_name_the_file_and_line() {
    let err = error("{\n  \"plugins\": [\n    {,}\n  ]\n}");
    assert_eq!(err.file, "/cfg/accelhost.json");
    assert_eq!(err.line, Some(3));
    assert!(
        err.to_string().starts_with("/cfg/accelhost.json:3"),
        "{err}"
    );
}

#[test]
fn trailing_text_is_refused() {
    let err = error(&format!("{MINIMAL} {{}}"));
    assert!(err.message.contains("after the JSON document"), "{err}");
}

#[test]
fn unknown_fields_are_errors_naming_the_field() {
    let err = error(r#"{"plugins": [], "plugin": []}"#);
    assert!(err.message.contains("unknown field `plugin`"), "{err}");
    let err = error(r#"{"plugins": [{"name": "a", "module": "builtin:dfl", "modul": "x"}]}"#);
    assert_eq!(err.path, "plugins[0].modul");
    assert!(err.message.contains("unknown field `modul`"), "{err}");
    assert!(err.message.contains("expected one of"), "{err}");
    let err =
        error(r#"{"plugins": [{"name": "a", "module": "builtin:dfl", "grants": {"device": []}}]}"#);
    assert_eq!(err.path, "plugins[0].grants.device");
    assert!(err.message.contains("unknown field `device`"), "{err}");
}

#[test]
fn missing_and_mistyped_fields_name_the_path() {
    let err = error(r#"{"devices": []}"#);
    assert!(err.message.contains("missing field `plugins`"), "{err}");
    let err = error(r#"{"plugins": [{"name": "a"}]}"#);
    assert_eq!(err.path, "plugins[0]");
    assert!(err.message.contains("missing field `module`"), "{err}");
    let err = error(
        r#"{"plugins": [{"name": "a", "module": "builtin:dfl", "load_policy": {"memory_mib": "lots"}}]}"#,
    );
    assert_eq!(err.path, "plugins[0].load_policy.memory_mib");
    assert!(err.message.contains("expected u64"), "{err}");
    let err = error(
        r#"{"plugins": [{"name": "a", "module": "builtin:dfl", "load_policy": {"on_error": "ignore"}}]}"#,
    );
    assert_eq!(err.path, "plugins[0].load_policy.on_error");
    assert!(err.message.contains("expected `skip` or `fail`"), "{err}");
}

#[test]
fn plugin_names_must_be_valid_and_unique() {
    let err = error(r#"{"plugins": [{"name": "a b", "module": "builtin:dfl"}]}"#);
    assert_eq!(err.path, "plugins[0].name");
    let err = error(
        r#"{"plugins": [{"name": "a", "module": "builtin:dfl"}, {"name": "a", "module": "builtin:dfl"}]}"#,
    );
    assert_eq!(err.path, "plugins[1].name");
    assert!(err.message.contains("used twice"), "{err}");
}

#[test]
fn modules_must_exist() {
    let err = error(r#"{"plugins": [{"name": "a", "module": "builtin:nope"}]}"#);
    assert_eq!(err.path, "plugins[0].module");
    assert!(err.message.contains("no built-in plugin 'nope'"), "{err}");
    assert!(
        err.message.contains("dfl"),
        "lists the built-in plugins: {err}"
    );
    let err = error(r#"{"plugins": [{"name": "a", "module": "plugins/missing.wasm"}]}"#);
    assert_eq!(err.path, "plugins[0].module");
    assert!(err.message.contains("/cfg/plugins/missing.wasm"), "{err}");
}

#[test]
fn relative_modules_resolve_against_the_config_directory() {
    let dir = std::env::temp_dir().join(format!("accelhost-config-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(dir.join("plugins/p.wasm"), b"").unwrap();
    let file = dir.join("accelhost.json");
    std::fs::write(
        &file,
        r#"{"plugins": [{"name": "p", "module": "plugins/p.wasm"}]}"#,
    )
    .unwrap();
    let config = Config::load(&file).unwrap();
    assert_eq!(
        config.plugins[0].module,
        ModuleSource::File(dir.join("plugins/p.wasm"))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn grants_are_checked() {
    let with_grant = |grant: &str| {
        format!(
            r#"{{"devices": [{{"id": "d0", "family": "dfl"}}],
                "plugins": [{{"name": "a", "module": "builtin:dfl", "grants": {{"devices": ["emu:d0", {grant}]}}}}]}}"#
        )
    };
    let err = error(&with_grant("\"*\""));
    assert_eq!(err.path, "plugins[0].grants.devices[1]");
    assert!(err.message.contains("bare '*'"), "{err}");
    let err = error(&with_grant("\"emu:d9\""));
    assert!(err.message.contains("no emulated device 'd9'"), "{err}");
    assert!(err.message.contains("declared: d0"), "{err}");
    let err = error(&with_grant("\"dfl-port.0\""));
    assert!(err.message.contains("not a device name"), "{err}");
    assert!(parse(&with_grant("\"/dev/dfl-port.*\"")).is_ok());
    let err = error(
        r#"{"plugins": [{"name": "a", "module": "builtin:dfl", "load_policy": {"call_timeout_ms": 0}}]}"#,
    );
    assert_eq!(err.path, "plugins[0].load_policy.call_timeout_ms");
    assert!(err.message.contains("expected 1 to 600000"), "{err}");
}

#[test]
fn load_policy_fields_are_checked() {
    let with_policy = |policy: &str| {
        format!(
            r#"{{"plugins": [{{"name": "a", "module": "builtin:dfl", "load_policy": {{{policy}}}}}]}}"#
        )
    };
    let cases = [
        (r#""on_fault": "ignore""#, "on_fault", "unknown variant"),
        (
            r#""max_restarts": 5000"#,
            "max_restarts",
            "expected 0 to 1000",
        ),
        (
            r#""restart_backoff_ms": 700000"#,
            "restart_backoff_ms",
            "expected 0 to 600000",
        ),
        (r#""memory_mib": 0"#, "memory_mib", "expected 1 to 4096"),
        (r#""fuel": 0"#, "fuel", "expected 1 to"),
        (
            r#""max_instances": 2"#,
            "max_instances",
            "expected 4 to 10000",
        ),
        (
            r#""max_table_elements": 8"#,
            "max_table_elements",
            "expected 64 to",
        ),
        (r#""max_resources": 1"#, "max_resources", "expected 16 to"),
        (
            r#""max_handles": 0"#,
            "max_handles",
            "expected 1 to 1000000",
        ),
        (
            r#""log_bytes_per_second": -1"#,
            "log_bytes_per_second",
            "invalid value",
        ),
        (
            r#""compile_timeout_ms": 50"#,
            "compile_timeout_ms",
            "50 is out of range: expected 100 to 3600000",
        ),
        (
            r#""compile_memory_mib": 32"#,
            "compile_memory_mib",
            "32 is out of range: expected 64 to 65536",
        ),
        (
            r#""compile_memory_mib": "lots""#,
            "compile_memory_mib",
            "invalid type",
        ),
        (
            r#""baseline_first_mib": 5000"#,
            "baseline_first_mib",
            "5000 is out of range: expected 0 to 4096",
        ),
    ];
    for (policy, field, message) in cases {
        let err = error(&with_policy(policy));
        assert_eq!(
            err.path,
            format!("plugins[0].load_policy.{field}"),
            "{policy}: {err}"
        );
        assert!(err.message.contains(message), "{policy}: {err}");
    }
    let err = error(&with_policy(r#""memory": 64"#));
    assert!(err.message.contains("unknown field `memory`"), "{err}");
    let policy = parse(&with_policy(r#""on_fault": "disable", "fuel": 1000"#))
        .unwrap()
        .plugins[0]
        .load_policy;
    assert_eq!(policy.on_fault, OnFault::Disable);
    assert_eq!(policy.fuel, Some(1000));
    assert_eq!(
        policy.max_restarts, 3,
        "the other fields keep their defaults"
    );
    let limits = r#""compile_timeout_ms": 1500, "compile_memory_mib": 256"#;
    let policy = parse(&with_policy(limits)).unwrap().plugins[0].load_policy;
    assert_eq!(
        (policy.compile_timeout_ms, policy.compile_memory_mib),
        (1500, 256)
    );
    let defaults = LoadPolicy::default();
    assert_eq!(
        (defaults.compile_timeout_ms, defaults.compile_memory_mib),
        (120_000, 1536),
        "room for the JavaScript and Python plugins' compiles on a slower machine"
    );
    assert_eq!(
        defaults.baseline_first_mib, 4,
        "the JavaScript and Python plugins start on baseline code, Rust and C ones do not"
    );
}

#[test]
fn devices_are_checked() {
    let err = error(r#"{"devices": [{"id": "x", "family": "gpu"}], "plugins": []}"#);
    assert_eq!(err.path, "devices[0].family");
    assert!(err.message.contains("unknown family `gpu`"), "{err}");
    assert!(err.message.contains("`dfl`, `cxl`, `xocl`"), "{err}");
    let err = error(
        r#"{"devices": [{"id": "x", "family": "dfl"}, {"id": "x", "family": "dfl"}], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[1].id");
    let err =
        error(r#"{"devices": [{"id": "x", "family": "dfl", "vendor_id": "8086"}], "plugins": []}"#);
    assert_eq!(err.path, "devices[0].vendor_id");
    let err = error(
        r#"{"devices": [{"id": "x", "family": "dfl", "bus_address": "5e:00"}], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[0].bus_address");
    assert!(err.message.contains("not a PCI address"), "{err}");
    let config = parse(
        r#"{"devices": [{"id": "x", "family": "dfl", "vendor_id": "0x1c2c", "device_id": 4096,
            "bus_address": "0000:5e:00.0"}], "plugins": []}"#,
    )
    .unwrap();
    assert_eq!(config.devices[0].vendor_id, 0x1c2c);
    assert_eq!(config.devices[0].device_id, 4096);
}

#[test]
fn emulated_cards_without_an_address_get_one_around_the_given_ones() {
    let config = parse(
        r#"{"devices": [{"id": "a", "family": "dfl"},
                        {"id": "b", "family": "xocl", "bus_address": "0000:3c:00.0"},
                        {"id": "c", "family": "dfl"},
                        {"id": "d", "family": "dfl", "bus_address": "0001:3b:00.0"}],
            "plugins": []}"#,
    )
    .unwrap();
    assert_eq!(
        bus_addresses(&config),
        [
            "0000:3b:00.0",
            "0000:3c:00.0",
            "0000:3d:00.0",
            "0001:3b:00.0"
        ],
        "bus 3c is the config's; another segment's bus does not count"
    );
}

#[test]
fn family_specific_fields_are_checked() {
    let err = error(
        r#"{"devices": [{"id": "x", "family": "xocl", "accelerator": "nlb0"}], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[0].accelerator");
    assert!(
        err.message.contains("compute units come from the xclbin"),
        "{err}"
    );
    let config = parse(r#"{"devices": [{"id": "x", "family": "xocl"}], "plugins": []}"#).unwrap();
    assert_eq!(
        (config.devices[0].vendor_id, config.devices[0].device_id),
        (0x10EE, 0x5001)
    );
}

#[test]
fn cxl_fields_are_checked() {
    let err = error(
        r#"{"devices": [{"id": "c", "family": "cxl", "max_contexts": 20000}], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[0].max_contexts");
    assert!(err.message.contains("1 to 16384"), "{err}");
    let err = error(
        r#"{"devices": [{"id": "c", "family": "cxl", "accelerator": "vadd", "max_contexts": 2}], "plugins": []}"#,
    );
    assert!(err.message.contains("one context"), "{err}");
    let err = error(r#"{"devices": [{"id": "c", "family": "dfl", "irqs_min": 1}], "plugins": []}"#);
    assert_eq!(err.path, "devices[0].irqs_min");
    assert!(err.message.contains("cxl devices only"), "{err}");
    let err = error(
        r#"{"devices": [{"id": "c", "family": "cxl", "accelerator": "nlb0"}], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[0].accelerator");
    let err = error(
        r#"{"devices": [{"id": "c", "family": "cxl", "irqs_min": 9, "irqs_max": 3}], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[0].irqs_max");
}

#[test]
fn cxl_interrupt_counts_are_checked_against_the_afus_defaults() {
    let err =
        error(r#"{"devices": [{"id": "c", "family": "cxl", "irqs_min": 3000}], "plugins": []}"#);
    assert_eq!(err.path, "devices[0].irqs_min");
    assert!(
        err.message
            .contains("above irqs_max 2037 (irqs_max's default)"),
        "{err}"
    );
    let err =
        error(r#"{"devices": [{"id": "c", "family": "cxl", "irqs_max": 70000}], "plugins": []}"#);
    assert_eq!(err.path, "devices[0].irqs_max");
    assert!(err.message.contains("at most 65535"), "{err}");
    let err = error(
        r#"{"devices": [{"id": "c", "family": "cxl", "accelerator": "vadd", "irqs_max": 4}], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[0].irqs_max");
    assert!(err.message.contains("raises no interrupts"), "{err}");
}

#[test]
fn cxl_slices_are_unique_per_card_and_free_ones_are_given_out_lowest_first() {
    let slices = |text: &str| -> Vec<(u32, u32)> {
        let config = parse(text).unwrap();
        config
            .devices
            .iter()
            .map(|d| {
                let card = d
                    .settings
                    .get::<crate::families::cxl::card::CxlCard>()
                    .unwrap();
                (card.card, card.slice.expect("every slice is settled"))
            })
            .collect()
    };
    assert_eq!(
        slices(
            r#"{"devices": [
                {"id": "a", "family": "cxl"},
                {"id": "b", "family": "cxl", "slice": 0},
                {"id": "c", "family": "cxl", "card": 1},
                {"id": "d", "family": "cxl"}
            ], "plugins": []}"#
        ),
        [(0, 1), (0, 0), (1, 0), (0, 2)],
        "an explicit slice is kept, even when an earlier AFU has none"
    );
    let err = error(
        r#"{"devices": [
            {"id": "a", "family": "cxl", "slice": 0},
            {"id": "b", "family": "dfl"},
            {"id": "c", "family": "cxl", "slice": 0}
        ], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[2].slice");
    assert!(err.message.contains("slice 0 is already 'a's"), "{err}");
}

#[test]
fn the_afus_of_one_capi_card_share_its_bus_address() {
    let config = parse(
        r#"{"devices": [
            {"id": "a", "family": "cxl", "card": 0},
            {"id": "b", "family": "dfl"},
            {"id": "c", "family": "cxl", "card": 0},
            {"id": "d", "family": "cxl", "card": 1, "bus_address": "0000:70:00.0"},
            {"id": "e", "family": "cxl", "card": 1}
        ], "plugins": []}"#,
    )
    .unwrap();
    assert_eq!(
        bus_addresses(&config),
        [
            "0000:3b:00.0",
            "0000:3c:00.0",
            "0000:3b:00.0",
            "0000:70:00.0",
            "0000:70:00.0"
        ]
    );
    let err = error(
        r#"{"devices": [
            {"id": "a", "family": "cxl", "bus_address": "0000:70:00.0"},
            {"id": "b", "family": "cxl", "bus_address": "0000:71:00.0"}
        ], "plugins": []}"#,
    );
    assert_eq!(err.path, "devices[1].bus_address");
    assert!(
        err.message
            .contains("card 0 is at 0000:70:00.0 ('a' says so)"),
        "{err}"
    );
}

#[test]
fn a_family_is_told_apart_from_an_unknown_field() {
    let err = error(r#"{"devices": [{"id": "c", "family": "xocl", "slice": 1}], "plugins": []}"#);
    assert_eq!(err.path, "devices[0].slice");
    assert!(err.message.contains("cxl devices only"), "{err}");
    let err = error(r#"{"devices": [{"id": "c", "family": "dfl", "colour": 1}], "plugins": []}"#);
    assert_eq!(err.path, "devices[0].colour");
    assert!(err.message.contains("unknown field `colour`"), "{err}");
    assert!(
        err.message.contains("port_id"),
        "lists what a dfl card takes: {err}"
    );
    let err =
        error(r#"{"devices": [{"id": "c", "family": "cxl", "slice": "one"}], "plugins": []}"#);
    assert_eq!(err.path, "devices[0].slice");
}

#[test]
fn trusted_for_names_known_families() {
    let err = error(
        r#"{"plugins": [{"name": "p", "module": "builtin:dfl", "trusted_for": ["dfl", "gpu"]}]}"#,
    );
    assert_eq!(err.path, "plugins[0].trusted_for[1]");
    assert!(err.message.contains("unknown family `gpu`"), "{err}");
    let config =
        parse(r#"{"plugins": [{"name": "p", "module": "builtin:dfl", "trusted_for": ["cxl"]}]}"#)
            .unwrap();
    assert!(config.plugins[0].is_trusted_for("cxl"));
    assert!(
        config.plugins[0].is_trusted_for("dfl"),
        "its own shipped plugin"
    );
    assert!(!config.plugins[0].is_trusted_for("xocl"));
}

fn remote_grant(grant: &str) -> String {
    format!(
        r#"{{"plugins": [{{"name": "remote", "module": "builtin:remote",
             "config": {{"hosts": ["n:1"]}}, "grants": {{"remote": [{grant}]}}}}]}}"#
    )
}

#[test]
fn remote_grants_name_an_endpoint_and_its_identity() {
    let config = parse(&remote_grant(
        r#"{"endpoint": "node1:7700", "tls": {"ca": "pki/ca.pem", "certificate": "pki/me.pem", "key": "/abs/me.key"}}"#,
    ))
    .unwrap();
    let grant = &config.plugins[0].grants.remote[0];
    let tls = grant.tls.as_ref().unwrap();
    assert_eq!(
        tls.ca,
        PathBuf::from("/cfg/pki/ca.pem"),
        "relative to the config"
    );
    assert_eq!(tls.key, PathBuf::from("/abs/me.key"));
    match grant.to_endpoint(std::path::Path::new("")).unwrap() {
        crate::remote::RemoteEndpoint::Tls { server_name, .. } => {
            assert_eq!(server_name, "node1", "the endpoint's host by default")
        }
        other => panic!("{other:?}"),
    }
    assert!(parse(&remote_grant(r#"{"endpoint": "unix:///run/n.sock"}"#)).is_ok());
    for (grant, needle) in [
        (r#"{"endpoint": "node1:7700"}"#, "needs tls"),
        (r#"{"endpoint": "node1"}"#, "not an endpoint"),
        (
            r#"{"endpoint": "unix://relative.sock"}"#,
            "absolute socket path",
        ),
        (
            r#"{"endpoint": "unix:///n.sock", "tls": {"ca": "a", "certificate": "b", "key": "c"}}"#,
            "takes no tls",
        ),
        (
            r#"{"endpoint": "unix:///n.sock"}, {"endpoint": "unix:///n.sock"}"#,
            "granted twice",
        ),
    ] {
        let err = error(&remote_grant(grant));
        assert!(
            err.path.starts_with("plugins[0].grants.remote[") && err.message.contains(needle),
            "{grant}: {err}"
        );
    }
    let err = error(&remote_grant(
        r#"{"endpoint": "unix:///n.sock", "cert": "x"}"#,
    ));
    assert!(err.message.contains("cert"), "{err}");
}

#[test]
fn an_endpoint_stands_for_the_proxy_alone_and_takes_a_unix_socket() {
    let config = Config::for_endpoint("unix:///run/accelhost/serve.sock").unwrap();
    assert_eq!(config.plugins.len(), 1);
    let proxy = &config.plugins[0];
    assert_eq!(proxy.module, ModuleSource::Builtin("remote".into()));
    assert_eq!(
        proxy.grants.remote[0].endpoint,
        "unix:///run/accelhost/serve.sock"
    );
    assert!(
        config.devices.is_empty(),
        "no plugins or cards of this process"
    );
    let err = Config::for_endpoint("node1:7700").unwrap_err();
    assert!(err.to_string().contains("ACCELHOST_ENDPOINT"), "{err}");
}

/// A family that exists only in this test: config validation knows the families it is handed
/// and no other.
mod fake_family {
    use super::*;
    use crate::devices::{DeviceRegistry, LinuxRoots};
    use crate::family::{
        CardError, CardSettings, Catalog, Family, ReleaseStage, independent_cards, no_image_format,
        parse_fields,
    };

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Lanes {
        #[serde(default = "one")]
        lanes: u32,
    }

    fn one() -> u32 {
        1
    }

    fn parse_card(
        fields: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<CardSettings, CardError> {
        let parsed: Lanes = parse_fields(fields)?;
        if parsed.lanes == 0 {
            return Err(CardError::new("lanes", "a card has at least one lane"));
        }
        Ok(CardSettings::new(parsed, fields.clone()))
    }

    static FAKE: Family = Family {
        name: "fake",
        builtin: b"",
        default_config: r#"{"devices": [], "plugins": []}"#,
        default_ids: (0x1234, 0x5678),
        card_fields: &["lanes"],
        parse_card,
        resolve_cards: independent_cards,
        emulate: |_: &DeviceDecl, _: &mut DeviceRegistry| {},
        discover: |_: &LinuxRoots, _: &mut DeviceRegistry| Ok(()),
        release: |_: &mut wasmtime::component::ResourceTable, _: ReleaseStage, _: &str| {},
        check_image: no_image_format,
    };

    const ONLY_FAKE: Catalog = Catalog {
        families: &[&FAKE],
        builtins: || vec!["fake", "remote"],
        module: |_| None,
        digest: |_| None,
    };

    fn parse_fake(text: &str) -> Result<Config, ConfigError> {
        Config::parse_with(
            text,
            ConfigSource::File(PathBuf::from("/cfg/fake.json")),
            &ONLY_FAKE,
        )
    }

    #[test]
    fn a_family_registered_by_the_test_alone_is_the_only_one_known() {
        let config = parse_fake(
            r#"{"devices": [{"id": "f0", "family": "fake", "lanes": 4}],
                "plugins": [{"name": "p", "module": "builtin:fake",
                             "grants": {"devices": ["emu:f0"]}, "trusted_for": ["fake"]}]}"#,
        )
        .unwrap();
        let card = &config.devices[0];
        assert_eq!((card.vendor_id, card.device_id), (0x1234, 0x5678));
        assert_eq!(card.settings.get::<Lanes>().map(|l| l.lanes), Some(4));

        let err = parse_fake(
            r#"{"devices": [{"id": "f0", "family": "fake", "lanes": 0}], "plugins": []}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "devices[0].lanes", "{err}");
        assert!(err.message.contains("at least one lane"), "{err}");
        assert_eq!(err.file, "/cfg/fake.json");

        let err = parse_fake(r#"{"devices": [{"id": "d0", "family": "dfl"}], "plugins": []}"#)
            .unwrap_err();
        assert_eq!(err.path, "devices[0].family");
        assert_eq!(err.message, "unknown family `dfl`: expected one of `fake`");

        let err = parse_fake(
            r#"{"devices": [{"id": "f0", "family": "fake", "slice": 1}], "plugins": []}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "devices[0].slice");
        assert!(err.message.contains("a fake card takes"), "{err}");

        let err =
            parse_fake(r#"{"plugins": [{"name": "p", "module": "builtin:dfl"}]}"#).unwrap_err();
        assert_eq!(err.path, "plugins[0].module");
        assert_eq!(
            err.message,
            "there is no built-in plugin 'dfl' (built in: fake, remote)"
        );

        let err = parse_fake(
            r#"{"plugins": [{"name": "p", "module": "builtin:fake", "trusted_for": ["xocl"]}]}"#,
        )
        .unwrap_err();
        assert_eq!(err.path, "plugins[0].trusted_for[0]");
    }
}

#[test]
fn trust_keys_and_signed_by_are_checked_by_name_and_file() {
    let dir = std::env::temp_dir().join(format!("accelhost-config-trust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // An Ed25519 public key (RFC 8410's example).
    std::fs::write(
        dir.join("vendor.pub"),
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n",
    )
    .unwrap();
    std::fs::write(dir.join("p.wasm"), b"").unwrap();
    let load = |trust: &str, plugin: &str| {
        let file = dir.join("accelhost.json");
        std::fs::write(
            &file,
            format!(r#"{{"trust": {{{trust}}}, "plugins": [{{"name": "p", {plugin}}}]}}"#),
        )
        .unwrap();
        Config::load(&file)
    };
    let keys = r#""keys": {"vendor": "vendor.pub"}"#;
    let config = load(keys, r#""module": "p.wasm", "signed_by": ["vendor"]"#).unwrap();
    let policy = &config.plugins[0].signature;
    assert!(policy.required, "signed_by requires a signature");
    assert!(
        policy
            .keys
            .describe()
            .starts_with("the key vendor (sha256:")
    );
    let config = load(keys, r#""module": "p.wasm""#).unwrap();
    assert!(!config.plugins[0].signature.required && config.plugins[0].signature.checks());
    let config = load("", r#""module": "p.wasm""#).unwrap();
    assert!(
        !config.plugins[0].signature.checks(),
        "no keys: nothing to check"
    );

    let err = load(keys, r#""module": "p.wasm", "signed_by": ["ops"]"#).unwrap_err();
    assert_eq!(err.path, "plugins[0].signed_by[0]");
    assert_eq!(err.message, "no key 'ops' in trust.keys (keys: vendor)");
    let err = load(r#""require_signatures": true"#, r#""module": "p.wasm""#).unwrap_err();
    assert!(err.message.contains("trust.keys names no key"), "{err}");
    let err = load(r#""keys": {"ops": "missing.pub"}"#, r#""module": "p.wasm""#).unwrap_err();
    assert_eq!(err.path, "trust.keys.ops");
    assert!(err.message.contains("missing.pub: cannot read it"), "{err}");
    let err = load(r#""keys": {"ops": "p.wasm"}"#, r#""module": "p.wasm""#).unwrap_err();
    assert!(err.message.contains("no PEM public key"), "{err}");
    let err = load(keys, r#""module": "builtin:dfl", "signed_by": ["vendor"]"#).unwrap_err();
    assert_eq!(err.path, "plugins[0].signed_by");
    let err = load(r#""keys": {}, "allow": 1"#, r#""module": "p.wasm""#).unwrap_err();
    assert!(err.message.contains("unknown field `allow`"), "{err}");
    let err = load("", r#""module": "oci://ghcr.io/vendor/p""#).unwrap_err();
    assert_eq!(err.path, "plugins[0].module");
    assert!(
        err.message.contains("names neither a tag nor a digest"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_modules_to_pull_carry_the_signature_their_entry_asks_for() {
    let dir = std::env::temp_dir().join(format!("accelhost-config-pull-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("vendor.pub"),
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n",
    )
    .unwrap();
    let file = dir.join("host.json");
    let list = |text: &str| {
        std::fs::write(&file, text).unwrap();
        Config::modules_to_pull(&file)
    };
    let pulled = list(
        r#"{"store": "pulled", "trust": {"keys": {"vendor": "vendor.pub"}}, "plugins": [
            {"name": "a", "module": "oci://127.0.0.1:5000/plugins/dfl:1.0"},
            {"name": "b", "module": "builtin:dfl"},
            {"name": "c", "module": "./not-there.wasm"},
            {"name": "d", "module": "oci://127.0.0.1:5000/plugins/dfl:1.0"},
            {"name": "e", "module": "oci://registry.example/x:2", "signed_by": ["vendor"]}
        ]}"#,
    )
    .unwrap();
    assert_eq!(
        pulled.store.unwrap().root(),
        dir.join("pulled"),
        "relative to the config's folder"
    );
    let shown: Vec<String> = pulled
        .modules
        .iter()
        .map(|m| m.reference.to_string())
        .collect();
    assert_eq!(
        shown,
        [
            "oci://127.0.0.1:5000/plugins/dfl:1.0",
            "oci://registry.example/x:2"
        ],
        "each module once, nothing looked up in a store"
    );
    let (unsigned_ok, signed) = (&pulled.modules[0].signature, &pulled.modules[1].signature);
    assert!(unsigned_ok.checks() && !unsigned_ok.required);
    assert!(signed.required);
    assert!(signed.keys.describe().starts_with("the key vendor"));

    let pulled = list(
        r#"{"trust": {"keys": {"vendor": "vendor.pub"}, "require_signatures": true},
            "plugins": [{"name": "a", "module": "oci://r.example/p:1"}]}"#,
    )
    .unwrap();
    assert!(pulled.modules[0].signature.required);
    assert_eq!(pulled.store, None);

    let err = list(r#"{"plugins": [{"name": "a", "module": "oci://nothing"}]}"#).unwrap_err();
    assert_eq!(err.path, "plugins[0].module");
    let err = list(
        r#"{"plugins": [{"name": "a", "module": "oci://r.example/p:1", "signed_by": ["ops"]}]}"#,
    )
    .unwrap_err();
    assert_eq!(err.path, "plugins[0].signed_by[0]");
    let err = list(r#"{"plugins": [{"name": "a", "module": "oci://r.example/p:1", "x": 1}]}"#)
        .unwrap_err();
    assert!(err.message.contains("unknown field `x`"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

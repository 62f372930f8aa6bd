//! The plugins shipped inside the host binary, which configs name `builtin:<name>`.

const BUILTINS: &[(&str, &[u8])] = &[
    (
        "chaos",
        include_bytes!(concat!(
            env!("ACCELHOST_GUEST_DIR"),
            "/accelhost_plugin_chaos.wasm"
        )),
    ),
    (
        "cxl",
        include_bytes!(concat!(
            env!("ACCELHOST_GUEST_DIR"),
            "/accelhost_plugin_cxl.wasm"
        )),
    ),
    (
        "dfl",
        include_bytes!(concat!(
            env!("ACCELHOST_GUEST_DIR"),
            "/accelhost_plugin_dfl.wasm"
        )),
    ),
    (
        "xocl",
        include_bytes!(concat!(
            env!("ACCELHOST_GUEST_DIR"),
            "/accelhost_plugin_xocl.wasm"
        )),
    ),
];

/// The component bytes of the built-in plugin `name`.
pub fn module(name: &str) -> Option<&'static [u8]> {
    BUILTINS
        .iter()
        .find(|(builtin, _)| *builtin == name)
        .map(|(_, bytes)| *bytes)
}

/// The names of every built-in plugin.
pub fn names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(name, _)| *name).collect()
}

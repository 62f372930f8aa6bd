//! The bindings generated from the `wit/` directory of the repository. Nothing hand-written
//! lives here.

wit_bindgen::generate!({
    world: "plugin",
    path: "../../wit",
    pub_export_macro: true,
    export_macro_name: "__export_plugin_world",
    default_bindings_module: "accelhost_sdk::bindings",
    runtime_path: "accelhost_sdk::__private::wit_bindgen::rt",
    generate_all,
});

//! Serving an earlier version's imports with the latest implementation.

/// Links the latest implementation of each named interface under its name at an earlier
/// `version`. A component's imports are checked by shape, function by function, when it is
/// linked, so the functions added since are simply not asked for.
macro_rules! link_latest_as {
    ($linker:expr, $version:literal, $($iface:ident),* $(,)?) => {$(
        crate::bindings::accel::plugin::$iface::add_to_linker_instance::<
            crate::state::PluginState,
            wasmtime::component::HasSelf<crate::state::PluginState>,
        >(
            &mut $linker.instance(concat!("accel:plugin/", stringify!($iface), "@", $version))?,
            |state| state,
        )?;
    )*};
}
pub(crate) use link_latest_as;

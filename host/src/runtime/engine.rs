//! The engine configuration, apart from the runtime that starts engines: a compile worker
//! makes its engine from it too.

use wasmtime::OptLevel;

/// The engine configuration of the plain (`metered: false`) or fuel-metering flavor, without
/// its instance allocator. The one place it is made: a compile worker builds its engine from
/// it too, so that the code it compiles is what the host's engine loads. The allocator is left
/// out because it does not change compiled code (the engines' compatibility hashes agree).
pub(crate) fn engine_config(metered: bool) -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .consume_fuel(metered)
        .concurrency_support(false)
        .cranelift_opt_level(OptLevel::Speed)
        .parallel_compilation(true);
    config
}

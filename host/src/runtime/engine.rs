//! The engine configurations, apart from the runtime that starts engines: a compile worker
//! makes its engine from them too.

use wasmtime::{OptLevel, Strategy};

/// Which code an engine makes: whether it counts fuel, and with which compiler. Each kind is
/// an engine of its own, since code of one kind does not load into an engine of another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct EngineKind {
    /// Counts fuel (`load_policy.fuel`).
    pub metered: bool,
    /// Compiled by the optimizing compiler (Cranelift) or the baseline one (Winch).
    pub tier: Tier,
}

/// The compiler an engine compiles with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Cranelift, optimizing: the code plugins run on, and the code the compile cache keeps.
    Optimized,
    /// Winch, a single-pass compiler about five times as fast to compile with: large plugins
    /// run on it while their optimized code is compiled in the background.
    Baseline,
}

impl EngineKind {
    /// The kinds, in the order the runtime keeps their engines.
    pub const ALL: [EngineKind; 4] = [
        EngineKind::optimized(false),
        EngineKind::optimized(true),
        EngineKind::baseline(false),
        EngineKind::baseline(true),
    ];

    /// The optimizing engine, metering fuel or not.
    pub const fn optimized(metered: bool) -> EngineKind {
        EngineKind {
            metered,
            tier: Tier::Optimized,
        }
    }

    /// The baseline engine, metering fuel or not.
    pub const fn baseline(metered: bool) -> EngineKind {
        EngineKind {
            metered,
            tier: Tier::Baseline,
        }
    }

    /// Where the runtime keeps this kind's engine in [`EngineKind::ALL`].
    pub fn index(self) -> usize {
        usize::from(self.metered) + 2 * usize::from(self.tier == Tier::Baseline)
    }

    /// The kind's name on a compile worker's command line.
    pub fn arg(self) -> &'static str {
        match (self.metered, self.tier) {
            (false, Tier::Optimized) => "plain",
            (true, Tier::Optimized) => "metered",
            (false, Tier::Baseline) => "plain-baseline",
            (true, Tier::Baseline) => "metered-baseline",
        }
    }

    /// The kind a compile worker's command line names.
    pub fn from_arg(arg: &str) -> Option<EngineKind> {
        EngineKind::ALL.into_iter().find(|kind| kind.arg() == arg)
    }

    /// The engine configuration of this kind, without its instance allocator. The one place
    /// it is made: a compile worker builds its engine from it too, so that the code it
    /// compiles is what the host's engine loads. The allocator is left out because it does
    /// not change compiled code (the engines' compatibility hashes agree).
    pub fn config(self) -> wasmtime::Config {
        let mut config = wasmtime::Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .consume_fuel(self.metered)
            .concurrency_support(false)
            .parallel_compilation(true);
        match self.tier {
            Tier::Optimized => {
                config.cranelift_opt_level(OptLevel::Speed);
            }
            // Winch still leaves the trampolines into escaping functions to Cranelift, a
            // third of a baseline compile's time; unoptimized they take half as long.
            Tier::Baseline => {
                config
                    .strategy(Strategy::Winch)
                    .cranelift_opt_level(OptLevel::None);
            }
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_place_and_name() {
        for (at, kind) in EngineKind::ALL.into_iter().enumerate() {
            assert_eq!(kind.index(), at);
            assert_eq!(EngineKind::from_arg(kind.arg()), Some(kind));
        }
        assert_eq!(EngineKind::from_arg("fast"), None);
    }
}

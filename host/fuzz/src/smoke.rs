//! The stable smoke run of every target: its seeds (generated and checked in), then a fixed
//! number of deterministic mutations of them. A failing input is printed in hex and saved
//! under `host/fuzz/artifacts/<target>/`, where `cargo run --bin <target> -- FILE` replays it.
//! The library's tests run every target but `compile`, which needs a compile worker: its
//! smoke run is `tests/compile.rs`, a binary that serves as one.

use std::hash::{Hash, Hasher};

use crate::mutate::{Xorshift, mutate};
use crate::{TARGETS, Target, corpus_dir, replay, seeds};

/// Mutations each target runs, sized for about a second per target in a dev build.
fn mutations(target: &str) -> usize {
    match target {
        // Every input is a plugin call that may wait on the host or restart the plugins.
        "imports" => 24,
        // Every input is a sequence of the doors' calls, whose waits may run to a deadline.
        "doors" => 24,
        // Every input is a host start whose compile may run to its limit.
        "compile" => 4,
        "config" | "xclbin" | "serve_config" => 1500,
        // Every input is a connection's stream, read through the fix a few bytes at a time.
        "authority" => 3000,
        _ => 5000,
    }
}

/// Saves and prints the input when the target panics on it.
struct Witness<'a> {
    target: &'a str,
    label: String,
    data: &'a [u8],
}

impl Drop for Witness<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("artifacts")
            .join(self.target);
        let path = dir.join(format!("smoke-{}", self.label));
        let saved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, self.data));
        let hex: String = self.data.iter().map(|b| format!("{b:02x}")).collect();
        eprintln!(
            "{} failed on {} ({} bytes, {}): {hex}",
            self.target,
            self.label,
            self.data.len(),
            match saved {
                Ok(()) => format!("saved to {}", path.display()),
                Err(err) => format!("not saved: {err}"),
            }
        );
    }
}

fn run_one(target: &Target, label: String, data: &[u8]) {
    let _witness = Witness {
        target: target.name,
        label,
        data,
    };
    (target.run)(data);
}

/// Runs target `name` over its seeds, its checked-in corpus and its mutations; panics on the
/// first finding. One target at a time: the `imports` and `compile` oracles read the process's
/// peak resident memory, which another target's inputs would move.
pub fn smoke(name: &str) {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let target = TARGETS
        .iter()
        .find(|t| t.name == name)
        .expect("a known target");
    let mut pool: Vec<Vec<u8>> = Vec::new();
    for (seed, data) in seeds::seeds(name) {
        run_one(target, format!("seed-{seed}"), &data);
        pool.push(data);
    }
    let checked_in = replay::inputs(&corpus_dir(name)).expect("the corpus directory reads");
    assert!(!checked_in.is_empty(), "corpus/{name} has no seeds");
    for file in checked_in {
        let data = std::fs::read(&file).expect("a corpus file reads");
        run_one(target, file.display().to_string(), &data);
        pool.push(data);
    }

    let max_len = pool.iter().map(Vec::len).max().unwrap_or(0) + 256;
    let mut hasher = std::hash::DefaultHasher::new();
    name.hash(&mut hasher);
    let mut rng = Xorshift::new(hasher.finish());
    for n in 0..mutations(name) {
        let mut data = pool[rng.below(pool.len())].clone();
        mutate(&mut data, &mut rng, max_len);
        run_one(target, format!("mutation-{n}"), &data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_survives_its_seeds_and_mutations() {
        smoke("config");
    }

    #[test]
    fn xclbin_survives_its_seeds_and_mutations() {
        smoke("xclbin");
    }

    #[test]
    fn ert_survives_its_seeds_and_mutations() {
        smoke("ert");
    }

    #[test]
    fn cxl_survives_its_seeds_and_mutations() {
        smoke("cxl");
    }

    #[test]
    fn serve_config_survives_its_seeds_and_mutations() {
        smoke("serve_config");
    }

    #[test]
    fn authority_survives_its_seeds_and_mutations() {
        smoke("authority");
    }

    #[test]
    fn imports_survives_its_seeds_and_mutations() {
        smoke("imports");
    }

    #[test]
    fn every_target_has_generated_seeds() {
        for target in TARGETS {
            assert!(!seeds::seeds(target.name).is_empty(), "{}", target.name);
        }
    }
}

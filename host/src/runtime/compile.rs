//! Compiling a plugin component, saying so when it takes long: a 20 MiB JavaScript or Python
//! plugin takes Cranelift half a minute on its first load, which would otherwise look like a
//! hang.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::devices::{lock, wait_timeout};
use crate::text::inert;

/// The `tracing` target of the lines that say a long compile is under way; the CLI shows it
/// at `info` by default.
pub const PROGRESS_TARGET: &str = "accelhost::progress";

/// How long a compile runs before it is announced.
const ANNOUNCE_AFTER: Duration = Duration::from_secs(2);

/// Compiles `wasm` for `engine`; a compile that outlasts [`ANNOUNCE_AFTER`] is announced on
/// [`PROGRESS_TARGET`] when it passes that mark and again when it ends.
pub fn compile(engine: &Engine, wasm: &[u8], plugin: &str) -> wasmtime::Result<Component> {
    compile_announcing_after(engine, wasm, plugin, ANNOUNCE_AFTER)
}

fn compile_announcing_after(
    engine: &Engine,
    wasm: &[u8],
    plugin: &str,
    announce_after: Duration,
) -> wasmtime::Result<Component> {
    let done = (Mutex::new(false), Condvar::new());
    let started = Instant::now();
    let mib = wasm.len() as f64 / f64::from(1 << 20);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut finished = lock(&done.0);
            while !*finished {
                let left = announce_after.saturating_sub(started.elapsed());
                if left.is_zero() {
                    tracing::info!(
                        target: PROGRESS_TARGET,
                        "compiling plugin '{}' ({mib:.1} MiB) for its first load; the compiled \
                         code is cached for the next start",
                        inert(plugin)
                    );
                    return;
                }
                finished = wait_timeout(&done.1, finished, left);
            }
        });
        let component = Component::new(engine, wasm);
        *lock(&done.0) = true;
        done.1.notify_all();
        let took = started.elapsed();
        if took >= announce_after {
            tracing::info!(
                target: PROGRESS_TARGET,
                "compiled plugin '{}' in {:.1} s",
                inert(plugin),
                took.as_secs_f64()
            );
        }
        component
    })
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;

    use super::*;

    /// An empty component: compiles in microseconds.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\0\x01\0";

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn progress_of(announce_after: Duration) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            compile_announcing_after(
                &Engine::default(),
                EMPTY_COMPONENT,
                "quick\x1b]0;title\x07",
                announce_after,
            )
            .expect("the empty component compiles");
        });
        String::from_utf8(lock(&captured.0).clone()).unwrap()
    }

    #[test]
    fn only_a_compile_past_the_mark_is_announced() {
        assert_eq!(progress_of(Duration::from_secs(60)), "");
        let said = progress_of(Duration::ZERO);
        assert!(said.contains("compiled plugin 'quick"), "{said}");
        assert!(!said.contains('\x1b'), "the plugin name is inert: {said:?}");
    }
}

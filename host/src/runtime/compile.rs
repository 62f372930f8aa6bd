//! Compiling a plugin component, saying so when it takes long: a 14-18 MiB JavaScript or
//! Python plugin takes Cranelift 10-16 s on its first load, which would otherwise look like a
//! hang. The lines are the same whether the compile runs in this process or in a worker.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::engine::Tier;
use crate::devices::{lock, wait_timeout};
use crate::text::inert;

/// The `tracing` target of the lines that say a long compile is under way; the CLI shows it
/// at `info` by default.
pub const PROGRESS_TARGET: &str = "accelhost::progress";

/// How long a compile runs before it is announced.
const ANNOUNCE_AFTER: Duration = Duration::from_secs(2);

/// What a plugin's start wants to know of the compiles on its thread: when one takes long
/// (the host's start need not wait for it), and whether to give it up (the host shut down).
pub(crate) struct CompileWatch {
    /// Called once a compile passes [`ANNOUNCE_AFTER`].
    pub on_long: Box<dyn Fn() + Send + Sync>,
    /// Set when the compile is no longer wanted; a compile in a worker then ends at once.
    pub abandoned: Arc<AtomicBool>,
}

thread_local! {
    static WATCH: RefCell<Option<Arc<CompileWatch>>> = const { RefCell::new(None) };
}

/// Runs `f` with the compiles on this thread watched by `watch`.
pub(crate) fn watching_compiles<R>(watch: Arc<CompileWatch>, f: impl FnOnce() -> R) -> R {
    let before = WATCH.with(|cell| cell.replace(Some(watch)));
    let result = f();
    WATCH.with(|cell| *cell.borrow_mut() = before);
    result
}

/// Whether the compile running on this thread is no longer wanted.
pub(crate) fn abandoned() -> bool {
    WATCH.with(|cell| {
        cell.borrow()
            .as_ref()
            .is_some_and(|w| w.abandoned.load(Ordering::Acquire))
    })
}

/// Runs `compile`, the compile of the `wasm_len` bytes of `plugin`'s component with the
/// `tier` compiler (in this process or in a worker); one that outlasts [`ANNOUNCE_AFTER`] is
/// announced on [`PROGRESS_TARGET`] when it passes that mark and again when it ends.
pub fn announced<T>(plugin: &str, wasm_len: usize, tier: Tier, compile: impl FnOnce() -> T) -> T {
    announced_after(plugin, wasm_len, tier, ANNOUNCE_AFTER, compile)
}

fn announced_after<T>(
    plugin: &str,
    wasm_len: usize,
    tier: Tier,
    announce_after: Duration,
    compile: impl FnOnce() -> T,
) -> T {
    let done = (Mutex::new(false), Condvar::new());
    let started = Instant::now();
    let mib = wasm_len as f64 / f64::from(1 << 20);
    let watch = WATCH.with(|cell| cell.borrow().clone());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut finished = lock(&done.0);
            while !*finished {
                let left = announce_after.saturating_sub(started.elapsed());
                if left.is_zero() {
                    if let Some(watch) = &watch {
                        (watch.on_long)();
                    }
                    match tier {
                        Tier::Optimized => tracing::info!(
                            target: PROGRESS_TARGET,
                            "compiling plugin '{}' ({mib:.1} MiB) for its first load; the \
                             compiled code is cached for the next start",
                            inert(plugin)
                        ),
                        Tier::Baseline => tracing::info!(
                            target: PROGRESS_TARGET,
                            "compiling plugin '{}' ({mib:.1} MiB) on the baseline compiler for \
                             its first load; its optimized code compiles in the background and \
                             is cached for the next start",
                            inert(plugin)
                        ),
                    }
                    return;
                }
                finished = wait_timeout(&done.1, finished, left);
            }
        });
        // Whatever `compile` does, the announcing thread is told to stop, so that the scope
        // does not wait for it past an unwinding compile.
        struct Finished<'a>(&'a (Mutex<bool>, Condvar));
        impl Drop for Finished<'_> {
            fn drop(&mut self) {
                *lock(&self.0.0) = true;
                self.0.1.notify_all();
            }
        }
        let finished = Finished(&done);
        let compiled = compile();
        drop(finished);
        let took = started.elapsed();
        tracing::debug!(
            "compiled plugin '{}' ({mib:.1} MiB, {tier:?}) in {} ms",
            inert(plugin),
            took.as_millis()
        );
        if took >= announce_after {
            tracing::info!(
                target: PROGRESS_TARGET,
                "compiled plugin '{}' in {:.1} s",
                inert(plugin),
                took.as_secs_f64()
            );
        }
        compiled
    })
}

/// Compiles `wasm` for `engine` in this process, announced as [`announced`] says.
pub fn in_process(
    engine: &Engine,
    wasm: &[u8],
    plugin: &str,
    tier: Tier,
) -> wasmtime::Result<Component> {
    announced(plugin, wasm.len(), tier, || Component::new(engine, wasm))
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
            announced_after(
                "quick\x1b]0;title\x07",
                EMPTY_COMPONENT.len(),
                Tier::Optimized,
                announce_after,
                || Component::new(&Engine::default(), EMPTY_COMPONENT),
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

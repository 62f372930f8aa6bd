//! The WASI a plugin gets, and how each part of it is bounded. A plugin built with any
//! language's standard library imports WASI, so it is linked, but no part of it may hold the
//! host past the call's deadline or make it keep unbounded memory:
//!
//! | interface | what the plugin gets |
//! |---|---|
//! | `wasi:io/poll` | replaced: `poll` and `pollable.block` wait in slices and end the call at its deadline or on a cancel |
//! | `wasi:random/*` | replaced: at most [`MAX_RANDOM_BYTES`] per call, from the kernel |
//! | `wasi:clocks/*` | as is: reading clocks; sleeping is a pollable, bounded by `poll` |
//! | `wasi:cli/*` | no arguments, no environment, empty stdin; stdout and stderr go to the log budget; `exit` ends the instance |
//! | `wasi:io/streams` | as is: the only streams are stdin (empty) and stdout / stderr (never full), so no blocking call waits |
//! | `wasi:filesystem/*` | no preopened directories, so no descriptor exists |
//! | `wasi:sockets/*` | every socket and name lookup refused at creation |

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::DynPollable;
use wasmtime_wasi::p2::bindings::io::poll as async_poll;
use wasmtime_wasi::p2::bindings::random::{insecure, random};
use wasmtime_wasi::p2::bindings::sync::io::poll;
use wasmtime_wasi::runtime::in_tokio;

use crate::state::PluginState;
use crate::state::{HostLimit, StopCondition};

/// The most random bytes one `get-random-bytes` call returns; a larger request ends the
/// instance. Language runtimes ask for a few dozen bytes at a time.
pub const MAX_RANDOM_BYTES: u64 = 1 << 20;

/// Adds WASI to `linker`, with the bounded replacements above.
pub(crate) fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_sync(linker)?;
    linker.allow_shadowing(true);
    poll::add_to_linker::<PluginState, BoundedPoll>(linker, |state| BoundedIo {
        stop: state.stop(),
        table: state.table(),
    })?;
    random::add_to_linker::<PluginState, BoundedRandom>(linker, |_| KernelRandom)?;
    insecure::add_to_linker::<PluginState, BoundedRandom>(linker, |_| KernelRandom)?;
    linker.allow_shadowing(false);
    Ok(())
}

struct BoundedPoll;

impl HasData for BoundedPoll {
    type Data<'a> = BoundedIo<'a>;
}

/// The resource table, and what ends the call waiting on it.
struct BoundedIo<'a> {
    table: &'a mut ResourceTable,
    stop: StopCondition,
}

impl poll::Host for BoundedIo<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        let stop = self.stop.clone();
        let table = &mut *self.table;
        in_tokio(stop.bound(async_poll::Host::poll(table, pollables)))?
    }
}

impl poll::HostPollable for BoundedIo<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        in_tokio(async_poll::HostPollable::ready(self.table, pollable))
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        let stop = self.stop.clone();
        let table = &mut *self.table;
        in_tokio(stop.bound(async_poll::HostPollable::block(table, pollable)))?
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        async_poll::HostPollable::drop(self.table, pollable)
    }
}

struct BoundedRandom;

impl HasData for BoundedRandom {
    type Data<'a> = KernelRandom;
}

/// Random bytes from the system's source (the `getrandom` crate), which is fast in every build of the host (the
/// generator wasmtime-wasi uses takes seconds per MiB in an unoptimized one).
struct KernelRandom;

impl KernelRandom {
    fn bytes(len: u64) -> wasmtime::Result<Vec<u8>> {
        if len > MAX_RANDOM_BYTES {
            return Err(HostLimit::RandomBytes {
                asked: len,
                limit: MAX_RANDOM_BYTES,
            }
            .into());
        }
        let mut bytes = vec![0u8; len as usize];
        getrandom::fill(&mut bytes)
            .map_err(|err| wasmtime::Error::msg(format!("getrandom failed: {err}")))?;
        Ok(bytes)
    }

    fn u64() -> wasmtime::Result<u64> {
        let bytes = Self::bytes(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
    }
}

impl random::Host for KernelRandom {
    fn get_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        Self::bytes(len)
    }

    fn get_random_u64(&mut self) -> wasmtime::Result<u64> {
        Self::u64()
    }
}

impl insecure::Host for KernelRandom {
    fn get_insecure_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        Self::bytes(len)
    }

    fn get_insecure_random_u64(&mut self) -> wasmtime::Result<u64> {
        Self::u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_bytes_are_bounded_and_random() {
        let a = KernelRandom::bytes(4096).unwrap();
        let b = KernelRandom::bytes(4096).unwrap();
        assert_eq!(a.len(), 4096);
        assert_ne!(a, b);
        assert!(KernelRandom::bytes(0).unwrap().is_empty());
        let err = KernelRandom::bytes(MAX_RANDOM_BYTES + 1).unwrap_err();
        assert!(matches!(
            err.downcast_ref::<HostLimit>(),
            Some(HostLimit::RandomBytes { .. })
        ));
    }
}

//! The process-wide host behind a door: started by the first call that needs it, on the
//! config a program names or the usual lookup (`ACCELHOST_ENDPOINT`, `ACCELHOST_CONFIG`,
//! `./accelhost.json`, ..., the embedded default), with remote nodes reachable through
//! `accelhost-node`'s connector. Two first calls at once start one host.

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use accelhost::config::Config;
use accelhost::{ConfigOrigin, Host};

/// Starts a host on `config`, or on the config the usual lookup finds.
pub fn start(config: Option<(Config, ConfigOrigin)>) -> accelhost::Result<Host> {
    let (config, origin) = match config {
        Some(found) => found,
        None => discover(None)?,
    };
    Host::builder()
        .discovered_config(config, origin)
        .remote(Arc::new(accelhost_node::NodeConnector::new()))
        .build()
}

/// The config at `path`, or the one the usual lookup finds when `None`: a file is read as
/// every config is (a regular file, within its size limit, never waited on).
pub fn discover(path: Option<&Path>) -> accelhost::Result<(Config, ConfigOrigin)> {
    Ok(accelhost::builtin::discover(path)?)
}

/// A host a door starts on first use, and may replace or end (OPAE's `fpgaInitialize` and
/// `fpgaFinalize`).
pub struct ProcessHost {
    host: RwLock<Option<Host>>,
    /// Serializes starting, replacing and ending the host.
    starting: Mutex<()>,
}

impl Default for ProcessHost {
    fn default() -> Self {
        Self::new()
    }
}

impl ProcessHost {
    /// No host yet.
    pub const fn new() -> ProcessHost {
        ProcessHost {
            host: RwLock::new(None),
            starting: Mutex::new(()),
        }
    }

    fn current(&self) -> Option<Host> {
        self.host.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set(&self, host: Option<Host>) -> Option<Host> {
        std::mem::replace(
            &mut *self.host.write().unwrap_or_else(|e| e.into_inner()),
            host,
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.starting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The running host, if one runs.
    pub fn running(&self) -> Option<Host> {
        self.current()
    }

    /// The running host, started on the usual lookup if none runs.
    pub fn get(&self) -> accelhost::Result<Host> {
        if let Some(host) = self.current() {
            return Ok(host);
        }
        self.start(None)
    }

    /// Starts a host on `config` (the usual lookup when `None`) unless one runs; returns the
    /// running one.
    pub fn start(&self, config: Option<(Config, ConfigOrigin)>) -> accelhost::Result<Host> {
        let _starting = self.lock();
        if let Some(host) = self.current() {
            return Ok(host);
        }
        let host = start(config)?;
        self.set(Some(host.clone()));
        Ok(host)
    }

    /// Ends the running host: `release` runs first (it drops what C holds), then the host is
    /// dropped (its plugins are finalized when its last clone goes).
    pub fn shut_down(&self, release: impl FnOnce()) {
        let _starting = self.lock();
        release();
        drop(self.set(None));
    }

    /// Replaces the running host with one on `config`, after `release`.
    pub fn replace(
        &self,
        config: (Config, ConfigOrigin),
        release: impl FnOnce(),
    ) -> accelhost::Result<Host> {
        let _starting = self.lock();
        release();
        drop(self.set(None));
        let host = start(Some(config))?;
        self.set(Some(host.clone()));
        Ok(host)
    }
}

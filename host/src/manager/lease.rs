//! Revocable permission to use an object: an application's handles, buffers and MMIO regions
//! check their lease on every use, so that closing a handle or losing a plugin instance cuts
//! them off at once, without waiting for the application to drop them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use crate::error::Error;

#[derive(Debug, Default)]
pub struct Lease {
    revoked: AtomicBool,
    why: OnceLock<String>,
    parent: Option<Arc<Lease>>,
}

impl Lease {
    pub fn new() -> Arc<Self> {
        Arc::new(Lease::default())
    }

    /// A lease that also ends when `parent` ends.
    pub fn child(parent: &Arc<Lease>) -> Arc<Self> {
        Arc::new(Lease {
            parent: Some(parent.clone()),
            ..Lease::default()
        })
    }

    /// Ends the lease; the first reason given is the one reported.
    pub fn revoke(&self, why: impl Into<String>) {
        let _ = self.why.set(why.into());
        self.revoked.store(true, Ordering::Release);
    }

    /// The reason this lease (or an ancestor) ended, if it has.
    pub fn revoked_because(&self) -> Option<String> {
        if self.revoked.load(Ordering::Acquire) {
            return Some(self.why.get().cloned().unwrap_or_default());
        }
        self.parent.as_ref().and_then(|p| p.revoked_because())
    }

    #[inline]
    pub fn is_live(&self) -> bool {
        !self.revoked.load(Ordering::Acquire) && self.parent.as_ref().is_none_or(|p| p.is_live())
    }

    /// `Ok` while the lease holds; otherwise a [`Error::Stale`] naming `what` and why.
    #[inline]
    pub fn check(&self, what: &'static str) -> Result<(), Error> {
        if self.is_live() {
            Ok(())
        } else {
            Err(Error::Stale {
                what,
                why: self.revoked_because().unwrap_or_default(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revoking_a_parent_ends_its_children() {
        let instance = Lease::new();
        let handle = Lease::child(&instance);
        assert!(handle.check("handle").is_ok());
        instance.revoke("plugin 'p' faulted");
        let err = handle.check("handle").unwrap_err();
        assert_eq!(
            err.to_string(),
            "handle is no longer valid: plugin 'p' faulted"
        );
        instance.revoke("second reason is ignored");
        assert_eq!(instance.revoked_because().unwrap(), "plugin 'p' faulted");
    }
}

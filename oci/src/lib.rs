#![warn(missing_docs)]

//! Plugins distributed through OCI registries, as wasmCloud and `wkg` distribute components:
//! [`pull`] fetches a component stored as the CNCF wasm OCI artifact, checks every digest,
//! fetches its cosign signatures and keeps it all in the local [`Store`], pinned by digest;
//! [`push`] uploads a component in that layout, signed with a [`SigningKey`] as
//! `cosign sign --key` would sign it.
//!
//! The registry is not trusted: every answer is read under a size cap checked while it
//! streams, a silence limit and a rate floor, the whole call under a deadline, and nothing is
//! pinned before every digest (and, where asked, a signature) checks out.
//!
//! ```no_run
//! use accelhost_trust::store::{OciReference, Store};
//! use accelhost_oci::{PullOptions, pull_blocking};
//!
//! let reference: OciReference = "oci://registry.example/plugins/dfl:1.0".parse()?;
//! let store = Store::open_default()?;
//! let pulled = pull_blocking(&reference, &store, &PullOptions::default())?;
//! println!("{} {}", pulled.manifest_digest, pulled.layer_size);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod artifact;
mod key;
mod pull;
mod push;
mod registry;

pub use accelhost_trust::store::{OciReference, Store};
pub use accelhost_trust::{SignaturePolicy, Signer, TrustedKeys};
pub use artifact::{
    OCI_CONFIG_MEDIA_TYPE, OCI_MANIFEST_MEDIA_TYPE, SIGNATURE_ANNOTATION,
    SIMPLE_SIGNING_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, sha256_digest,
    signature_tag,
};
pub use key::{KeyAlgorithm, KeyError, SigningKey};
pub use pull::{
    DEFAULT_MIN_BYTES_PER_SEC, DEFAULT_TIMEOUT, Progress, ProgressFn, PullOptions, Pulled, pull,
    pull_blocking,
};
pub use push::{PushOptions, Pushed, push, push_blocking};
pub use registry::{PASSWORD_ENV, Transport, USER_ENV};

/// Why a pull or a push failed; each names the reference (`oci://...`).
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The registry refused a call, or could not be reached.
    #[error("{reference}: {call}: {message}")]
    Registry {
        /// The reference pulled or pushed.
        reference: String,
        /// The call: `manifest`, `blob (layer sha256:…)`, `signature`, `push manifest (…)`.
        call: String,
        /// What the registry (or the connection) said.
        message: String,
    },
    /// Bytes whose sha256 is not the digest that names them: a tampered or corrupt blob, or a
    /// tag that no longer points where a pinned digest says.
    #[error("{what} {expected} of {reference} has digest {actual}")]
    DigestMismatch {
        /// What the bytes are: `manifest`, `layer`, `config`, `signature payload`.
        what: String,
        /// The reference pulled.
        reference: String,
        /// The digest that names them.
        expected: String,
        /// The sha256 of the bytes served.
        actual: String,
    },
    /// A manifest that is not a wasm OCI artifact's.
    #[error("{reference}: {reason}")]
    Layout {
        /// The reference pulled.
        reference: String,
        /// What was found instead.
        reason: String,
    },
    /// A blob larger than the pull allows ([`PullOptions::max_module_mib`]).
    #[error(
        "{what} of {reference} is {size} bytes, more than the {} MiB allowed",
        limit / (1024 * 1024)
    )]
    TooLarge {
        /// Which blob.
        what: String,
        /// The reference pulled.
        reference: String,
        /// Its size as its descriptor states it.
        size: u64,
        /// The limit, in bytes.
        limit: u64,
    },
    /// Keys were given and no signature verifies with them: the tag was not pinned.
    #[error("{reference}: refused, the tag was not pinned: {reason}")]
    NotVerified {
        /// The reference pulled.
        reference: String,
        /// Why: no signature, or none by these keys.
        reason: String,
    },
    /// The local store could not take or give what was pulled.
    #[error("{reference}: the store: {message}")]
    Store {
        /// The reference pulled.
        reference: String,
        /// The store's error.
        message: String,
    },
    /// What a pull or push was given cannot be used: not a component, no tag, plain HTTP to
    /// a registry off the loopback.
    #[error("{reference}: {reason}")]
    Input {
        /// The reference pulled or pushed.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// The whole pull or push took longer than it may ([`PullOptions::timeout`]).
    #[error("{reference}: {call}: not done within the {} s a pull or push may take", timeout.as_secs_f64())]
    TimedOut {
        /// The reference pulled or pushed.
        reference: String,
        /// The call under way.
        call: String,
        /// The time it had.
        timeout: std::time::Duration,
    },
    /// The registry went silent, or sent slower than the floor
    /// ([`PullOptions::min_bytes_per_sec`]).
    #[error("{reference}: {call}: {reason}")]
    Stalled {
        /// The reference pulled or pushed.
        reference: String,
        /// The call under way.
        call: String,
        /// How long it was silent, or how slow.
        reason: String,
    },
    /// No runtime to make the requests on.
    #[error("cannot start the async runtime: {0}")]
    Runtime(String),
}

/// Runs `future` to its end on a runtime of its own (the blocking wrappers' runtime).
fn block_on<T>(
    future: impl std::future::Future<Output = Result<T, OciError>>,
) -> Result<T, OciError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| OciError::Runtime(err.to_string()))?
        .block_on(future)
}

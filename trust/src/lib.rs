#![warn(missing_docs)]
//! Signed plugins: the keys a config trusts, the check that a plugin's component was signed
//! by one of them (which the accelhost library makes before it compiles any of it), and the
//! [store] of plugins pulled from OCI registries. A crate of its own, without wasmtime, so
//! that the SDK's signing and pushing and the OCI client build without the host.
//!
//! Two signature forms are read, both as cosign writes them with a key pair:
//! - beside a plugin file, `<module>.sig`: the base64 signature over the file's bytes
//!   (`cosign sign-blob --key`, `accelhost-sdk sign`, or `openssl dgst -sha256 -sign`);
//! - beside an OCI artifact in the [store](crate::store): the signatures cosign attaches at the
//!   tag `sha256-<manifest hex>.sig`, each over a payload that names the manifest's digest.

mod cosign;
mod error;
mod key;
pub mod private;
pub mod store;
mod verify;

pub use cosign::{
    SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE, SIMPLE_SIGNING_TYPE, simple_signing_payload,
};
pub use error::TrustError;
pub use key::{KeyAlgorithm, PublicKey};
pub use verify::{Provenance, SIGNATURE_EXTENSION, SignaturePolicy, Signer, TrustedKeys};

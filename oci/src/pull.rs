//! `pull`: a wasm OCI artifact and its cosign signatures into the local store, every blob
//! checked against its digest, the tag pinned only once what was asked of it holds.

use std::fmt;
use std::sync::Arc;

use accelhost_trust::store::{OciReference, Store};
use accelhost_trust::{Signer, TrustedKeys};

use crate::OciError;
use crate::artifact::{self, SignatureLayer};
use crate::registry::Repository;

/// The largest config or signature payload read: both are small JSON documents.
const MAX_SMALL_BLOB: u64 = 1024 * 1024;
/// The most signatures of one manifest fetched (cosign appends one per `cosign sign`).
const MAX_SIGNATURES: usize = 64;

/// A blob a pull is fetching, for progress lines: told once when it starts (`received` 0)
/// and once when it is whole.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// What it is: `config`, `layer`, `signature payload`.
    pub what: &'a str,
    /// Its digest.
    pub digest: &'a str,
    /// Its size in bytes, as its descriptor states it.
    pub size: u64,
    /// How many bytes have arrived.
    pub received: u64,
}

/// A receiver of [`Progress`] reports.
pub type ProgressFn = dyn Fn(&Progress<'_>) + Send + Sync;

/// How to pull.
#[derive(Clone)]
pub struct PullOptions {
    /// The keys a signature must verify with before the tag is pinned; empty: the artifact is
    /// stored and pinned unverified (its signatures are stored all the same, for a config's
    /// policy to check at load).
    pub keys: TrustedKeys,
    /// Talk plain HTTP to the registry instead of HTTPS (loopback test registries).
    pub plain_http: bool,
    /// The largest component accepted, in MiB; a larger layer is refused before it is fetched.
    pub max_module_mib: u64,
    /// Told of each blob fetched.
    pub progress: Option<Arc<ProgressFn>>,
}

impl Default for PullOptions {
    fn default() -> Self {
        PullOptions {
            keys: TrustedKeys::default(),
            plain_http: false,
            max_module_mib: 128,
            progress: None,
        }
    }
}

impl fmt::Debug for PullOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PullOptions")
            .field("keys", &self.keys.describe())
            .field("plain_http", &self.plain_http)
            .field("max_module_mib", &self.max_module_mib)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// What a pull stored.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The reference pulled, as given.
    pub reference: OciReference,
    /// The manifest's digest: what the tag is now pinned to.
    pub manifest_digest: String,
    /// The component's (the layer's) digest.
    pub layer_digest: String,
    /// The component's size in bytes.
    pub layer_size: u64,
    /// How many cosign signatures the registry had for it (all stored).
    pub signatures: usize,
    /// Who signed it, when keys were given (they were checked before pinning).
    pub signer: Option<Signer>,
}

/// Pulls `reference` into `store`: the manifest (checked against a pinned digest), its config
/// and its one wasm layer, and the cosign signatures at `sha256-<hex>.sig`, each blob checked
/// against its digest; then pins the reference to the manifest's digest, once a signature
/// verifies with `options.keys` if keys are given.
pub async fn pull(
    reference: &OciReference,
    store: &Store,
    options: &PullOptions,
) -> Result<Pulled, OciError> {
    let repository = Repository::new(reference, options.plain_http)?;
    let shown = &repository.shown;
    let wanted = match (&reference.digest, &reference.tag) {
        (Some(digest), _) => repository.by_digest(digest),
        (None, Some(tag)) => repository.tagged(tag),
        (None, None) => repository.tagged("latest"),
    };
    let (manifest_bytes, manifest_digest) = repository
        .manifest(&wanted, "manifest")
        .await?
        .ok_or_else(|| OciError::Registry {
            reference: shown.clone(),
            call: "manifest".into(),
            message: "the registry has no such manifest (MANIFEST_UNKNOWN)".into(),
        })?;
    let manifest =
        artifact::read_wasm_manifest(&manifest_bytes).map_err(|reason| OciError::Layout {
            reference: shown.clone(),
            reason,
        })?;

    let limit = options.max_module_mib.saturating_mul(1024 * 1024);
    let config = fetch(
        &repository,
        options,
        &manifest.config,
        "config",
        MAX_SMALL_BLOB,
    )
    .await?;
    let layer = fetch(&repository, options, &manifest.layer, "layer", limit).await?;
    let signatures = signatures(&repository, options, &manifest_digest).await?;

    let stored = |err: &dyn fmt::Display| OciError::Store {
        reference: shown.clone(),
        message: err.to_string(),
    };
    for (digest, bytes) in [
        (&manifest_digest, &manifest_bytes),
        (&manifest.config.digest, &config),
        (&manifest.layer.digest, &layer),
    ] {
        store.put_blob(digest, bytes).map_err(|e| stored(&e))?;
    }
    let mut kept = Vec::with_capacity(signatures.len());
    for (signature, payload) in &signatures {
        store
            .put_blob(&signature.payload.digest, payload)
            .map_err(|e| stored(&e))?;
        kept.push((payload.clone(), signature.signature.clone()));
    }
    store
        .put_signatures(&manifest_digest, &kept)
        .map_err(|e| stored(&e))?;

    let signer = if options.keys.is_empty() {
        None
    } else if signatures.is_empty() {
        return Err(OciError::NotVerified {
            reference: shown.clone(),
            reason: format!(
                "it is not signed: the registry has no cosign signature at :{}, and {} was \
                 asked for",
                artifact::signature_tag(&manifest_digest),
                options.keys.describe()
            ),
        });
    } else {
        let stored_artifact = store.artifact(&manifest_digest).map_err(|e| stored(&e))?;
        Some(
            options
                .keys
                .verify_artifact(&stored_artifact)
                .map_err(|err| OciError::NotVerified {
                    reference: shown.clone(),
                    reason: err.to_string(),
                })?,
        )
    };
    store
        .pin(reference, &manifest_digest)
        .map_err(|e| stored(&e))?;
    Ok(Pulled {
        reference: reference.clone(),
        manifest_digest,
        layer_digest: manifest.layer.digest,
        layer_size: layer.len() as u64,
        signatures: signatures.len(),
        signer,
    })
}

/// [`pull`] on a runtime of its own, for callers that have none (the CLI). Must not be
/// called from inside an async runtime.
pub fn pull_blocking(
    reference: &OciReference,
    store: &Store,
    options: &PullOptions,
) -> Result<Pulled, OciError> {
    crate::block_on(pull(reference, store, options))
}

/// One blob, with progress reports.
async fn fetch(
    repository: &Repository,
    options: &PullOptions,
    descriptor: &oci_client::manifest::OciDescriptor,
    what: &str,
    limit: u64,
) -> Result<Vec<u8>, OciError> {
    let size = u64::try_from(descriptor.size).unwrap_or(0);
    let report = |received| {
        if let Some(progress) = &options.progress {
            progress(&Progress {
                what,
                digest: &descriptor.digest,
                size,
                received,
            });
        }
    };
    if size <= limit {
        report(0);
    }
    let bytes = repository.blob(descriptor, what, limit).await?;
    report(bytes.len() as u64);
    Ok(bytes)
}

/// The cosign signatures of the manifest `manifest_digest` and their payloads; none when the
/// registry has no signature manifest for it.
async fn signatures(
    repository: &Repository,
    options: &PullOptions,
    manifest_digest: &str,
) -> Result<Vec<(SignatureLayer, Vec<u8>)>, OciError> {
    let tag = artifact::signature_tag(manifest_digest);
    let Some((bytes, _)) = repository
        .manifest(&repository.tagged(&tag), "signature")
        .await?
    else {
        return Ok(Vec::new());
    };
    let layers = artifact::read_signature_manifest(&bytes).map_err(|reason| OciError::Layout {
        reference: repository.shown.clone(),
        reason: format!("signature :{tag}: {reason}"),
    })?;
    let mut found = Vec::new();
    for layer in layers.into_iter().take(MAX_SIGNATURES) {
        let payload = fetch(
            repository,
            options,
            &layer.payload,
            "signature payload",
            MAX_SMALL_BLOB,
        )
        .await?;
        found.push((layer, payload));
    }
    Ok(found)
}

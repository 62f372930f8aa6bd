//! `pull`: a wasm OCI artifact and its cosign signatures into the local store, every blob
//! checked against its digest, the tag pinned only once what was asked of it holds.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use accelhost_trust::store::{OciReference, Store};
use accelhost_trust::{SignaturePolicy, Signer};

use crate::OciError;
use crate::artifact::{self, Descriptor, SignatureLayer};
use crate::registry::{Access, Bounds, Repository, Transport};

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

/// How long a pull may take by default ([`PullOptions::timeout`]).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The slowest a registry may send by default ([`PullOptions::min_bytes_per_sec`]).
pub const DEFAULT_MIN_BYTES_PER_SEC: u64 = 4096;

/// How to pull.
#[derive(Clone)]
pub struct PullOptions {
    /// What a signature must be before the tag is pinned: with keys, a signature the registry
    /// has must verify with one of them; `required`, there must be one. Without keys the
    /// signatures are stored unchecked (a config's policy checks them at load).
    pub signature: SignaturePolicy,
    /// How the registry is reached: HTTPS, or plain HTTP to the loopback (or, insecure,
    /// anywhere).
    pub transport: Transport,
    /// The largest component accepted, in MiB; a larger layer is refused before it is fetched.
    pub max_module_mib: u64,
    /// How long the whole pull may take, every request and read in it included.
    pub timeout: Duration,
    /// The slowest a registry may send an answer, in bytes a second, once the answer has had
    /// 10 s; a registry silent for 30 s is given up on whatever the rate.
    pub min_bytes_per_sec: u64,
    /// Told of each blob fetched.
    pub progress: Option<Arc<ProgressFn>>,
}

impl Default for PullOptions {
    fn default() -> Self {
        PullOptions {
            signature: SignaturePolicy::default(),
            transport: Transport::Https,
            max_module_mib: 128,
            timeout: DEFAULT_TIMEOUT,
            min_bytes_per_sec: DEFAULT_MIN_BYTES_PER_SEC,
            progress: None,
        }
    }
}

impl fmt::Debug for PullOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PullOptions")
            .field("keys", &self.signature.keys.describe())
            .field("signature_required", &self.signature.required)
            .field("transport", &self.transport)
            .field("max_module_mib", &self.max_module_mib)
            .field("timeout", &self.timeout)
            .field("min_bytes_per_sec", &self.min_bytes_per_sec)
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
/// against its digest; then pins the reference to the manifest's digest, once the signatures
/// meet `options.signature`. The store is checked before anything is asked of the registry,
/// and nothing is written to it before every digest has been checked.
pub async fn pull(
    reference: &OciReference,
    store: &Store,
    options: &PullOptions,
) -> Result<Pulled, OciError> {
    let bounds = Bounds::starting_now(options.timeout, options.min_bytes_per_sec);
    let stored = |err: &dyn fmt::Display| OciError::Store {
        reference: reference.to_string(),
        message: err.to_string(),
    };
    store.prepare().map_err(|e| stored(&e))?;
    let repository = Repository::new(reference, options.transport, Access::Pull, bounds)?;
    let shown = &repository.shown;
    let wanted = match (&reference.digest, &reference.tag) {
        (Some(digest), _) => digest.as_str(),
        (None, Some(tag)) => tag.as_str(),
        (None, None) => "latest",
    };
    let (manifest_bytes, manifest_digest) = repository
        .manifest(wanted, "manifest")
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

    let policy = &options.signature;
    let signer = if !policy.checks() || signatures.is_empty() && !policy.required {
        None
    } else if signatures.is_empty() {
        return Err(OciError::NotVerified {
            reference: shown.clone(),
            reason: format!(
                "it is not signed: the registry has no cosign signature at :{}, and {} was \
                 asked for",
                artifact::signature_tag(&manifest_digest),
                policy.keys.describe()
            ),
        });
    } else {
        let stored_artifact = store.artifact(&manifest_digest).map_err(|e| stored(&e))?;
        Some(
            policy
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
    descriptor: &Descriptor,
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
    let Some((bytes, _)) = repository.manifest(&tag, "signature").await? else {
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

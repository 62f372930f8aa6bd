//! `push`: a component as a wasm OCI artifact, and with a key its cosign signature, so that
//! `accelhost pull` (or wkg, wasmCloud, cosign verify) reads what an author pushed.

use std::collections::BTreeMap;

use accelhost_trust::store::OciReference;

use crate::OciError;
use crate::artifact::{self, OCI_CONFIG_MEDIA_TYPE, SIGNATURE_ANNOTATION};
use crate::artifact::{SIMPLE_SIGNING_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use crate::key::SigningKey;
use crate::registry::Repository;

/// The annotation of the time a manifest was made (OCI's pre-defined key).
const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";

/// How to push.
#[derive(Debug, Default)]
pub struct PushOptions {
    /// Sign the pushed manifest with this key, and push the signature at cosign's tag
    /// `sha256-<hex>.sig`.
    pub signing_key: Option<SigningKey>,
    /// Talk plain HTTP to the registry instead of HTTPS (loopback test registries).
    pub plain_http: bool,
}

/// What a push uploaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// The manifest's digest: `oci://REGISTRY/REPO@<this>` pulls exactly what was pushed.
    pub manifest_digest: String,
    /// The component's (the layer's) digest.
    pub layer_digest: String,
    /// The component's size in bytes.
    pub size: u64,
    /// The tag the signature was pushed at, when a key signed it.
    pub signature_tag: Option<String>,
}

/// Pushes the component `wasm` to `reference`'s tag as a wasm OCI artifact (config
/// `application/vnd.wasm.config.v0+json`, one `application/wasm` layer), then, with
/// `options.signing_key`, its cosign signature; returns the manifest's digest.
pub async fn push(
    wasm: &[u8],
    reference: &OciReference,
    options: &PushOptions,
) -> Result<Pushed, OciError> {
    let input = |reason: String| OciError::Input {
        reference: reference.to_string(),
        reason,
    };
    let Some(tag) = &reference.tag else {
        return Err(input(
            "a push needs a tag (oci://REGISTRY/REPO:TAG): the digest is what the push makes"
                .into(),
        ));
    };
    if reference.digest.is_some() {
        return Err(input(
            "a push goes to a tag; leave the @sha256:... out (the push prints the digest)".into(),
        ));
    }
    check_component(wasm).map_err(input)?;
    let repository = Repository::new(reference, options.plain_http)?;

    let created = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let layer = artifact::descriptor(WASM_LAYER_MEDIA_TYPE, wasm);
    let config_bytes = artifact::wasm_config(&layer.digest, &created);
    let config = artifact::descriptor(WASM_CONFIG_MEDIA_TYPE, &config_bytes);
    let manifest = artifact::manifest_bytes(
        config.clone(),
        vec![layer.clone()],
        Some(BTreeMap::from([(CREATED_ANNOTATION.to_string(), created)])),
    );
    let manifest_digest = artifact::sha256_digest(&manifest);

    repository
        .push_blob(&config_bytes, &config.digest, "config")
        .await?;
    repository.push_blob(wasm, &layer.digest, "layer").await?;
    repository.push_manifest(manifest, tag, "artifact").await?;

    let signature_tag = match &options.signing_key {
        Some(key) => Some(push_signature(&repository, reference, key, &manifest_digest).await?),
        None => None,
    };
    Ok(Pushed {
        manifest_digest,
        layer_digest: layer.digest,
        size: wasm.len() as u64,
        signature_tag,
    })
}

/// [`push`] on a runtime of its own, for callers that have none (the SDK tool). Must not be
/// called from inside an async runtime.
pub fn push_blocking(
    wasm: &[u8],
    reference: &OciReference,
    options: &PushOptions,
) -> Result<Pushed, OciError> {
    crate::block_on(push(wasm, reference, options))
}

/// Signs the manifest `manifest_digest` as cosign does: a simple-signing payload naming the
/// repository and the digest, its signature in the layer's annotation, at `sha256-<hex>.sig`.
async fn push_signature(
    repository: &Repository,
    reference: &OciReference,
    key: &SigningKey,
    manifest_digest: &str,
) -> Result<String, OciError> {
    let payload =
        accelhost_trust::simple_signing_payload(&reference.docker_reference(), manifest_digest);
    let mut layer = artifact::descriptor(SIMPLE_SIGNING_MEDIA_TYPE, &payload);
    layer.annotations = Some(BTreeMap::from([(
        SIGNATURE_ANNOTATION.to_string(),
        key.sign_base64(&payload),
    )]));
    let config_bytes = artifact::signature_config(&layer.digest);
    let config = artifact::descriptor(OCI_CONFIG_MEDIA_TYPE, &config_bytes);
    let manifest = artifact::manifest_bytes(config.clone(), vec![layer.clone()], None);
    let tag = artifact::signature_tag(manifest_digest);

    repository
        .push_blob(&payload, &layer.digest, "signature payload")
        .await?;
    repository
        .push_blob(&config_bytes, &config.digest, "signature config")
        .await?;
    repository
        .push_manifest(manifest, &tag, "signature")
        .await?;
    Ok(tag)
}

/// `wasm` is a WebAssembly component: a core module (or anything else) is refused, since the
/// host loads components only.
fn check_component(wasm: &[u8]) -> Result<(), String> {
    const MAGIC: &[u8] = b"\0asm";
    // The version and layer fields: 0x0d, layer 1 for a component; 1, layer 0 for a module.
    const COMPONENT: [u8; 4] = [0x0d, 0x00, 0x01, 0x00];
    const MODULE: [u8; 4] = [0x01, 0x00, 0x00, 0x00];
    if wasm.len() < 8 || &wasm[..4] != MAGIC {
        return Err("not a WebAssembly file (no \\0asm header)".into());
    }
    match <[u8; 4]>::try_from(&wasm[4..8]) {
        Ok(COMPONENT) => Ok(()),
        Ok(MODULE) => Err(
            "a core WebAssembly module, not a component: plugins are components (build it with \
             accelhost-sdk build, or wasm-tools component new)"
                .into(),
        ),
        _ => Err("a WebAssembly file of an unknown version, not a component".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_components_are_pushed() {
        assert!(check_component(b"\0asm\x0d\x00\x01\x00rest").is_ok());
        let why = check_component(b"\0asm\x01\x00\x00\x00").unwrap_err();
        assert!(why.contains("a core WebAssembly module"), "{why}");
        assert!(
            check_component(b"PK\x03\x04")
                .unwrap_err()
                .contains("not a WebAssembly file")
        );
        assert!(
            check_component(b"\0asm\x02\x00\x00\x00")
                .unwrap_err()
                .contains("unknown version")
        );
    }
}

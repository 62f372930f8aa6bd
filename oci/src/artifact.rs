//! The layouts on the registry: the CNCF wasm OCI artifact a plugin is pushed as, and the
//! signature manifest cosign attaches to it. Pure functions, checked without a registry.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use accelhost_trust::store::{
    WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, digest_of as sha256_digest,
};
pub use accelhost_trust::{SIGNATURE_ANNOTATION, SIMPLE_SIGNING_MEDIA_TYPE};

/// The media type of the manifests pushed: an OCI image manifest.
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config media type of cosign's signature manifest.
pub const OCI_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";

/// The manifest media types a pull accepts (an OCI manifest; Docker's schema 2 is the same
/// structure, as some registries label it).
pub(crate) const ACCEPTED_MANIFEST_TYPES: &[&str] = &[
    OCI_MANIFEST_MEDIA_TYPE,
    "application/vnd.docker.distribution.manifest.v2+json",
];

/// A content descriptor: what a manifest says of its config and of each layer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Descriptor {
    pub media_type: String,
    pub digest: String,
    /// Signed as the specification has it; a negative size is refused when read.
    pub size: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// An OCI image manifest, as far as a wasm artifact or a signature manifest uses it; fields
/// it does not name are left out when read.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageManifest {
    schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    config: Descriptor,
    #[serde(default)]
    layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<BTreeMap<String, String>>,
}

/// The tag cosign keeps a manifest's signatures at: `sha256-<hex>.sig` for `sha256:<hex>`.
pub fn signature_tag(manifest_digest: &str) -> String {
    format!("{}.sig", manifest_digest.replacen(':', "-", 1))
}

/// Whether `digest` is `sha256:` and 64 lowercase hex digits, the only form the store keeps.
pub(crate) fn is_sha256_digest(digest: &str) -> bool {
    accelhost_trust::store::check_digest(digest).is_ok()
}

/// The parts of a manifest that a pull reads: its config and its one wasm layer.
#[derive(Debug)]
pub(crate) struct WasmManifest {
    pub config: Descriptor,
    pub layer: Descriptor,
}

/// Reads `bytes` as a wasm OCI artifact's manifest: an image manifest whose config is
/// [`WASM_CONFIG_MEDIA_TYPE`] and which has exactly one layer, of [`WASM_LAYER_MEDIA_TYPE`].
/// The error says what was found instead.
pub(crate) fn read_wasm_manifest(bytes: &[u8]) -> Result<WasmManifest, String> {
    let manifest: ImageManifest = serde_json::from_slice(bytes)
        .map_err(|err| format!("its manifest is not an OCI image manifest: {err}"))?;
    if manifest.schema_version != 2 {
        return Err(format!(
            "its manifest has schemaVersion {}, not 2",
            manifest.schema_version
        ));
    }
    if let Some(media_type) = &manifest.media_type
        && !ACCEPTED_MANIFEST_TYPES.contains(&media_type.as_str())
    {
        return Err(format!(
            "its manifest is a `{media_type}`, not an image manifest ({OCI_MANIFEST_MEDIA_TYPE})"
        ));
    }
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "not a wasm OCI artifact: its config is a `{}`, not a `{WASM_CONFIG_MEDIA_TYPE}` \
             (a container image?)",
            manifest.config.media_type
        ));
    }
    let wasm = manifest
        .layers
        .iter()
        .filter(|layer| layer.media_type == WASM_LAYER_MEDIA_TYPE)
        .count();
    if manifest.layers.len() != 1 || wasm != 1 {
        let found: Vec<&str> = manifest
            .layers
            .iter()
            .map(|layer| layer.media_type.as_str())
            .collect();
        return Err(format!(
            "a wasm OCI artifact has exactly one layer, a `{WASM_LAYER_MEDIA_TYPE}`; this one has \
             {} ({})",
            found.len(),
            if found.is_empty() {
                "none".to_string()
            } else {
                found.join(", ")
            }
        ));
    }
    for descriptor in [&manifest.config, &manifest.layers[0]] {
        check_descriptor(descriptor)?;
    }
    let layer = manifest.layers[0].clone();
    Ok(WasmManifest {
        config: manifest.config,
        layer,
    })
}

/// A descriptor's digest is a sha256 one and its size is not negative.
fn check_descriptor(descriptor: &Descriptor) -> Result<(), String> {
    if !is_sha256_digest(&descriptor.digest) {
        return Err(format!(
            "its {} descriptor has the digest `{}`, not a sha256 one",
            descriptor.media_type, descriptor.digest
        ));
    }
    if descriptor.size < 0 {
        return Err(format!(
            "its {} descriptor has the size {}",
            descriptor.media_type, descriptor.size
        ));
    }
    Ok(())
}

/// One cosign signature a signature manifest lists: the payload's descriptor and the base64
/// signature over the payload.
#[derive(Debug)]
pub(crate) struct SignatureLayer {
    pub payload: Descriptor,
    pub signature: String,
}

/// The signatures in cosign's signature manifest `bytes`: each simple-signing layer that
/// carries a signature annotation (other layers, such as attestations, are left out).
pub(crate) fn read_signature_manifest(bytes: &[u8]) -> Result<Vec<SignatureLayer>, String> {
    let manifest: ImageManifest = serde_json::from_slice(bytes)
        .map_err(|err| format!("the signature manifest is not an OCI image manifest: {err}"))?;
    let mut found = Vec::new();
    for layer in manifest.layers {
        if layer.media_type != SIMPLE_SIGNING_MEDIA_TYPE {
            continue;
        }
        let Some(signature) = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(SIGNATURE_ANNOTATION))
            .cloned()
        else {
            continue;
        };
        check_descriptor(&layer)?;
        found.push(SignatureLayer {
            payload: layer,
            signature,
        });
    }
    Ok(found)
}

/// A descriptor of `bytes` as `media_type`.
pub(crate) fn descriptor(media_type: &str, bytes: &[u8]) -> Descriptor {
    Descriptor {
        media_type: media_type.to_string(),
        digest: sha256_digest(bytes),
        size: bytes.len() as i64,
        annotations: None,
    }
}

/// The config of a wasm OCI artifact whose one layer is `layer_digest`, made at `created`
/// (RFC 3339).
pub(crate) fn wasm_config(layer_digest: &str, created: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "created": created,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
    }))
    .expect("a JSON value serializes")
}

/// The config of a cosign signature manifest whose one layer is the payload `payload_digest`.
pub(crate) fn signature_config(payload_digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "os": "",
        "config": {},
        "rootfs": {"type": "layers", "diff_ids": [payload_digest]},
    }))
    .expect("a JSON value serializes")
}

/// An OCI image manifest of `config` and `layers`, as the bytes pushed (and digested).
pub(crate) fn manifest_bytes(
    config: Descriptor,
    layers: Vec<Descriptor>,
    annotations: Option<BTreeMap<String, String>>,
) -> Vec<u8> {
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST_MEDIA_TYPE.to_string()),
        config,
        layers,
        annotations,
    };
    serde_json::to_vec(&manifest).expect("a manifest serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wasm_artifact(config_type: &str, layer_types: &[&str]) -> Vec<u8> {
        let layers = layer_types
            .iter()
            .map(|media_type| descriptor(media_type, b"\0asm"))
            .collect();
        manifest_bytes(descriptor(config_type, b"{}"), layers, None)
    }

    #[test]
    fn a_wasm_artifact_manifest_is_read() {
        let bytes = wasm_artifact(WASM_CONFIG_MEDIA_TYPE, &[WASM_LAYER_MEDIA_TYPE]);
        let manifest = read_wasm_manifest(&bytes).unwrap();
        assert_eq!(manifest.layer.digest, sha256_digest(b"\0asm"));
        assert_eq!(manifest.layer.size, 4);
        assert_eq!(manifest.config.digest, sha256_digest(b"{}"));
    }

    #[test]
    fn what_is_not_a_wasm_artifact_is_refused_by_what_it_is() {
        let refused = |bytes: Vec<u8>| read_wasm_manifest(&bytes).unwrap_err();
        let why = refused(wasm_artifact(
            OCI_CONFIG_MEDIA_TYPE,
            &[WASM_LAYER_MEDIA_TYPE],
        ));
        assert!(
            why.contains("its config is a `application/vnd.oci.image.config.v1+json`"),
            "{why}"
        );
        let why = refused(wasm_artifact(
            WASM_CONFIG_MEDIA_TYPE,
            &[WASM_LAYER_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE],
        ));
        assert!(
            why.contains("this one has 2 (application/wasm, application/wasm)"),
            "{why}"
        );
        let why = refused(wasm_artifact(
            WASM_CONFIG_MEDIA_TYPE,
            &["application/vnd.oci.image.layer.v1.tar+gzip"],
        ));
        assert!(
            why.contains("has 1 (application/vnd.oci.image.layer.v1.tar+gzip)"),
            "{why}"
        );
        let why = refused(wasm_artifact(WASM_CONFIG_MEDIA_TYPE, &[]));
        assert!(why.contains("this one has 0 (none)"), "{why}");
        let index =
            br#"{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
            "config": {"mediaType": "x", "digest": "sha256:00", "size": 1}, "layers": []}"#;
        let why = refused(index.to_vec());
        assert!(
            why.contains("a `application/vnd.oci.image.index.v1+json`, not an image manifest"),
            "{why}"
        );
        let why = refused(b"[1, 2]".to_vec());
        assert!(why.contains("not an OCI image manifest"), "{why}");
        let mut bad_digest: serde_json::Value = serde_json::from_slice(&wasm_artifact(
            WASM_CONFIG_MEDIA_TYPE,
            &[WASM_LAYER_MEDIA_TYPE],
        ))
        .unwrap();
        bad_digest["layers"][0]["digest"] = "sha512:00".into();
        let why = refused(serde_json::to_vec(&bad_digest).unwrap());
        assert!(
            why.contains("the digest `sha512:00`, not a sha256 one"),
            "{why}"
        );
    }

    #[test]
    fn signature_manifests_yield_their_annotated_simple_signing_layers() {
        let mut signed = descriptor(SIMPLE_SIGNING_MEDIA_TYPE, b"payload");
        signed.annotations = Some(BTreeMap::from([(
            SIGNATURE_ANNOTATION.to_string(),
            "c2ln".to_string(),
        )]));
        let unannotated = descriptor(SIMPLE_SIGNING_MEDIA_TYPE, b"other");
        let attestation = descriptor("application/vnd.dsse.envelope.v1+json", b"dsse");
        let bytes = manifest_bytes(
            descriptor(OCI_CONFIG_MEDIA_TYPE, &signature_config("sha256:00")),
            vec![signed, unannotated, attestation],
            None,
        );
        let found = read_signature_manifest(&bytes).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].signature, "c2ln");
        assert_eq!(found[0].payload.digest, sha256_digest(b"payload"));
    }

    #[test]
    fn digests_and_signature_tags_are_spelled_as_cosign_spells_them() {
        let digest = sha256_digest(b"");
        assert_eq!(
            digest,
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_sha256_digest(&digest));
        assert!(!is_sha256_digest("sha256:E3B0"));
        assert_eq!(
            signature_tag(&digest),
            "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.sig"
        );
        let config: serde_json::Value =
            serde_json::from_slice(&wasm_config(&digest, "2025-01-02T03:04:05Z")).unwrap();
        assert_eq!(config["architecture"], "wasm");
        assert_eq!(config["os"], "wasip2");
        assert_eq!(config["layerDigests"][0], digest.as_str());
    }
}

//! `push`: a component as a wasm OCI artifact, and with a key its cosign signature, so that
//! `accelhost pull` (or wkg, wasmCloud, cosign verify) reads what an author pushed.

use std::collections::BTreeMap;
use std::time::Duration;

use accelhost_trust::store::OciReference;

use crate::OciError;
use crate::artifact::{self, OCI_CONFIG_MEDIA_TYPE, SIGNATURE_ANNOTATION};
use crate::artifact::{SIMPLE_SIGNING_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use crate::key::SigningKey;
use crate::pull::{DEFAULT_MIN_BYTES_PER_SEC, DEFAULT_TIMEOUT};
use crate::registry::{Access, Bounds, Repository, Transport};

/// The annotation of the time a manifest was made (OCI's pre-defined key).
const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";

/// How to push.
#[derive(Debug)]
pub struct PushOptions {
    /// Sign the pushed manifest with this key, and push the signature at cosign's tag
    /// `sha256-<hex>.sig`.
    pub signing_key: Option<SigningKey>,
    /// How the registry is reached: HTTPS, or plain HTTP to the loopback (or, insecure,
    /// anywhere).
    pub transport: Transport,
    /// How long the whole push may take, uploads included.
    pub timeout: Duration,
}

impl Default for PushOptions {
    fn default() -> Self {
        PushOptions {
            signing_key: None,
            transport: Transport::Https,
            timeout: DEFAULT_TIMEOUT,
        }
    }
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
    let bounds = Bounds::starting_now(options.timeout, DEFAULT_MIN_BYTES_PER_SEC);
    let repository = Repository::new(reference, options.transport, Access::Push, bounds)?;

    let created = utc_timestamp(std::time::SystemTime::now());
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

/// `time` in RFC 3339 at UTC, to the second: `2025-01-02T03:04:05Z`.
fn utc_timestamp(time: std::time::SystemTime) -> String {
    let seconds = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    // The proleptic Gregorian date of a day count since 1970-01-01, by 400-year eras of
    // 146 097 days whose years start on 1 March.
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
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
    fn timestamps_are_rfc3339_at_utc() {
        let at = |seconds| utc_timestamp(std::time::UNIX_EPOCH + Duration::from_secs(seconds));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_735_787_045), "2025-01-02T03:04:05Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
    }

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

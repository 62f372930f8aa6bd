//! cosign's "simple signing" payload: what a signature stored beside an OCI artifact signs.
//! It names the artifact's manifest by digest, so one signature over a few hundred bytes
//! covers the manifest and, through the digests the manifest lists, the component.

use serde::Deserialize;

use crate::error::TrustError;

/// The `critical.type` of a cosign signature payload.
pub const SIMPLE_SIGNING_TYPE: &str = "cosign container image signature";
/// The media type of the layer that holds a payload in a signature manifest.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation of that layer that holds the base64 signature over the payload.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

#[derive(Deserialize)]
struct Payload {
    critical: Critical,
}

#[derive(Deserialize)]
struct Critical {
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    manifest_digest: String,
}

/// The payload cosign signs for the manifest `manifest_digest` (`sha256:<hex>`) of the
/// repository `docker_reference` (`registry/repository`).
pub fn simple_signing_payload(docker_reference: &str, manifest_digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": { "docker-reference": docker_reference },
            "image": { "docker-manifest-digest": manifest_digest },
            "type": SIMPLE_SIGNING_TYPE,
        },
        "optional": null,
    }))
    .expect("a JSON value serializes")
}

/// Checks that `payload` is a cosign signature payload for the manifest `manifest_digest`:
/// a signature over a payload for another manifest signs something else.
pub(crate) fn check_payload(payload: &[u8], manifest_digest: &str) -> Result<(), TrustError> {
    let parsed: Payload = serde_json::from_slice(payload).map_err(|err| TrustError::Payload {
        reason: format!("not a cosign signature payload: {err}"),
    })?;
    if parsed.critical.kind != SIMPLE_SIGNING_TYPE {
        return Err(TrustError::Payload {
            reason: format!(
                "its type is '{}', not '{SIMPLE_SIGNING_TYPE}'",
                parsed.critical.kind
            ),
        });
    }
    if parsed.critical.image.manifest_digest != manifest_digest {
        return Err(TrustError::Payload {
            reason: format!(
                "it signs the manifest {}, not {manifest_digest}",
                parsed.critical.image.manifest_digest
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_names_the_manifest_it_signs() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let payload = simple_signing_payload("127.0.0.1:5000/plugins/nlb0", &digest);
        check_payload(&payload, &digest).unwrap();
        let other = format!("sha256:{}", "cd".repeat(32));
        let err = check_payload(&payload, &other).unwrap_err().to_string();
        assert!(
            err.contains(&format!("it signs the manifest {digest}, not {other}")),
            "{err}"
        );
        let text = String::from_utf8(payload).unwrap();
        let renamed = text.replace(SIMPLE_SIGNING_TYPE, "something else");
        let err = check_payload(renamed.as_bytes(), &digest)
            .unwrap_err()
            .to_string();
        assert!(err.contains("its type is 'something else'"), "{err}");
        let err = check_payload(b"{}", &digest).unwrap_err().to_string();
        assert!(err.contains("not a cosign signature payload"), "{err}");
    }
}

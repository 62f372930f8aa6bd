//! The checks themselves: a plugin file's detached signature over its bytes, or an OCI
//! artifact's cosign signature over the payload naming its manifest, by one of a config's
//! trusted keys; and what a load then knows of who made the component.

use std::fmt;
use std::sync::Arc;

use base64::Engine;
use serde::Serialize;

use crate::cosign;
use crate::error::TrustError;
use crate::key::PublicKey;
use crate::store::Artifact;

/// The extension of a plugin file's detached signature: `plugin.wasm.sig`.
pub const SIGNATURE_EXTENSION: &str = "sig";
/// The longest signature file read: a base64 DER ECDSA signature is under 100 bytes.
const MAX_SIGNATURE_TEXT: u64 = 4096;

/// Who signed a plugin, as its config names the key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Signer {
    /// The key's name in the config's `trust.keys`.
    pub key: String,
    /// The key's fingerprint ([`PublicKey::fingerprint`]).
    pub fingerprint: String,
}

impl fmt::Display for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.key, self.fingerprint)
    }
}

/// What is known of who made a plugin's component.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Provenance {
    /// Not loaded yet, or refused.
    #[default]
    Unknown,
    /// Shipped inside the host binary: trusted as the host is.
    BuiltIn,
    /// Verified to be signed by a trusted key.
    Signed(Signer),
    /// Loaded without a verified signature: none was required.
    Unsigned,
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Provenance::Unknown => f.write_str("-"),
            Provenance::BuiltIn => f.write_str("built in"),
            Provenance::Signed(signer) => write!(f, "signed by {signer}"),
            Provenance::Unsigned => f.write_str("unsigned"),
        }
    }
}

/// Named public keys, any one of which a signature may verify with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedKeys {
    keys: Arc<Vec<(String, PublicKey)>>,
}

impl TrustedKeys {
    /// The keys, by the names messages give them.
    pub fn new(keys: Vec<(String, PublicKey)>) -> TrustedKeys {
        TrustedKeys {
            keys: Arc::new(keys),
        }
    }

    /// Whether there is no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys by name and fingerprint, for messages: `vendor (sha256:…) or ops (sha256:…)`.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self
            .keys
            .iter()
            .map(|(name, key)| format!("{name} ({})", key.fingerprint()))
            .collect();
        match names.len() {
            0 => "no key".into(),
            1 => format!("the key {}", names[0]),
            _ => format!("any of the keys {}", names.join(", ")),
        }
    }

    /// The first key that verifies `signature` over `message`.
    fn signer_of(&self, message: &[u8], signature: &[u8]) -> Option<Signer> {
        self.keys
            .iter()
            .find(|(_, key)| key.verify(message, signature))
            .map(|(name, key)| Signer {
                key: name.clone(),
                fingerprint: key.fingerprint().to_string(),
            })
    }

    /// Verifies the base64 signature `text` (from `origin`, for messages) over `blob`.
    pub fn verify_blob(
        &self,
        blob: &[u8],
        text: &[u8],
        origin: &str,
    ) -> Result<Signer, TrustError> {
        let signature = decode_signature(text, origin)?;
        self.signer_of(blob, &signature)
            .ok_or_else(|| TrustError::NotVerified {
                signature: origin.to_string(),
                keys: self.describe(),
            })
    }

    /// Verifies that one of the signatures stored with `artifact` is a trusted key's over a
    /// payload naming its manifest. The manifest names the component's digest, which loading
    /// checks against the component's bytes.
    pub fn verify_artifact(&self, artifact: &Artifact) -> Result<Signer, TrustError> {
        let origin = format!("cosign signature of {}", artifact.manifest_digest);
        if artifact.signatures.is_empty() {
            return Err(TrustError::Unsigned {
                looked_for: format!("no {origin} in the store"),
                keys: self.describe(),
            });
        }
        let mut last = None;
        for stored in &artifact.signatures {
            let signature = match decode_signature(stored.signature.as_bytes(), &origin) {
                Ok(signature) => signature,
                Err(err) => {
                    last = Some(err);
                    continue;
                }
            };
            let Some(signer) = self.signer_of(&stored.payload, &signature) else {
                continue;
            };
            // Verified first, then read: the payload's text is only believed once signed.
            match cosign::check_payload(&stored.payload, &artifact.manifest_digest) {
                Ok(()) => return Ok(signer),
                Err(err) => last = Some(err),
            }
        }
        Err(last.unwrap_or_else(|| TrustError::NotVerified {
            signature: origin,
            keys: self.describe(),
        }))
    }
}

/// What a plugin's config entry asks of its component's signature.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignaturePolicy {
    /// The keys a signature is verified with: the entry's `signed_by`, else every key of the
    /// config's `trust.keys`.
    pub keys: TrustedKeys,
    /// Whether an unsigned component is refused (`signed_by` given, or
    /// `trust.require_signatures`).
    pub required: bool,
}

impl SignaturePolicy {
    /// Whether a signature is looked at at all: without keys there is nothing to verify with.
    pub fn checks(&self) -> bool {
        self.required || !self.keys.is_empty()
    }
}

/// The signature bytes that base64 `text` stands for (surrounding white space allowed).
fn decode_signature(text: &[u8], origin: &str) -> Result<Vec<u8>, TrustError> {
    let malformed = |reason: String| TrustError::Malformed {
        signature: origin.to_string(),
        reason,
    };
    if text.len() as u64 > MAX_SIGNATURE_TEXT {
        return Err(malformed(format!(
            "{} bytes, more than a signature ({MAX_SIGNATURE_TEXT} at most)",
            text.len()
        )));
    }
    base64::engine::general_purpose::STANDARD
        .decode(text.trim_ascii())
        .map_err(|err| malformed(format!("not base64: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_that_is_not_base64_or_too_long_is_refused_by_what_it_is() {
        let err = decode_signature(b"not base64!", "p.wasm.sig").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("its signature (p.wasm.sig) cannot be read: not base64"),
            "{err}"
        );
        let err = decode_signature(&[b'A'; 5000], "p.wasm.sig").unwrap_err();
        assert!(
            err.to_string()
                .contains("5000 bytes, more than a signature"),
            "{err}"
        );
        assert_eq!(decode_signature(b" AAEC\n", "x").unwrap(), vec![0, 1, 2]);
    }
}

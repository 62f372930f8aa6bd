//! Public keys a config trusts: ECDSA P-256 and Ed25519, read from the SubjectPublicKeyInfo
//! PEM files that `cosign generate-key-pair`, `openssl pkey -pubout` and `accelhost-sdk keygen`
//! write.

use std::fmt;
use std::path::Path;

use ring::signature::{ECDSA_P256_SHA256_ASN1, ED25519, UnparsedPublicKey};
use rustls_pki_types::SubjectPublicKeyInfoDer;
use rustls_pki_types::pem::PemObject;
use sha2::{Digest, Sha256};

use crate::error::TrustError;

/// The DER of a P-256 SubjectPublicKeyInfo up to its 65-byte uncompressed point: the
/// algorithm `id-ecPublicKey` with the named curve `prime256v1`.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];
/// The DER of an Ed25519 SubjectPublicKeyInfo up to its 32-byte key (`id-Ed25519`).
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The signature schemes a trusted key may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyAlgorithm {
    /// ECDSA on P-256 with SHA-256, signatures in ASN.1 DER (cosign's default).
    EcdsaP256,
    /// Ed25519, 64-byte signatures over the whole message.
    Ed25519,
}

impl fmt::Display for KeyAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyAlgorithm::EcdsaP256 => "ECDSA P-256",
            KeyAlgorithm::Ed25519 => "Ed25519",
        })
    }
}

/// A public key that signatures are verified with.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    algorithm: KeyAlgorithm,
    /// The key itself: the uncompressed point (P-256) or the 32 bytes (Ed25519).
    key: Vec<u8>,
    /// Its SubjectPublicKeyInfo, as the PEM file holds it.
    spki: Vec<u8>,
    fingerprint: String,
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({} {})", self.algorithm, self.fingerprint)
    }
}

impl PublicKey {
    /// The key in the PEM file at `path` (`-----BEGIN PUBLIC KEY-----`).
    pub fn read(path: &Path) -> Result<PublicKey, TrustError> {
        let text = std::fs::read(path).map_err(|err| TrustError::Key {
            key: path.display().to_string(),
            reason: format!("cannot read it: {err}"),
        })?;
        PublicKey::from_pem(&text).map_err(|err| match err {
            TrustError::Key { reason, .. } => TrustError::Key {
                key: path.display().to_string(),
                reason,
            },
            other => other,
        })
    }

    /// The key in PEM text.
    pub fn from_pem(text: &[u8]) -> Result<PublicKey, TrustError> {
        let bad = |reason: String| TrustError::Key {
            key: "<PEM text>".into(),
            reason,
        };
        if contains(text, b"PRIVATE KEY-----") && !contains(text, b"BEGIN PUBLIC KEY") {
            return Err(bad(
                "this is a private key: a config trusts public keys (the .pub file)".into(),
            ));
        }
        let der = SubjectPublicKeyInfoDer::from_pem_slice(text)
            .map_err(|err| bad(format!("no PEM public key in it ({err:?})")))?;
        PublicKey::from_spki_der(der.as_ref()).map_err(bad)
    }

    /// The key in a DER SubjectPublicKeyInfo.
    pub fn from_spki_der(der: &[u8]) -> Result<PublicKey, String> {
        let (algorithm, key) = if let Some(point) = der.strip_prefix(&P256_SPKI_PREFIX[..]) {
            if point.len() != 65 || point[0] != 0x04 {
                return Err("a P-256 key whose point is not 65 uncompressed bytes".into());
            }
            (KeyAlgorithm::EcdsaP256, point)
        } else if let Some(key) = der.strip_prefix(&ED25519_SPKI_PREFIX[..]) {
            if key.len() != 32 {
                return Err("an Ed25519 key that is not 32 bytes".into());
            }
            (KeyAlgorithm::Ed25519, key)
        } else {
            return Err(
                "not an ECDSA P-256 or Ed25519 public key (RSA keys and other curves are not \
                 supported)"
                    .into(),
            );
        };
        Ok(PublicKey {
            algorithm,
            key: key.to_vec(),
            spki: der.to_vec(),
            fingerprint: format!("sha256:{}", &crate::store::hex(&Sha256::digest(der))[..16]),
        })
    }

    /// The key of `algorithm` whose bytes are `key`: the 65-byte uncompressed P-256 point, or
    /// the 32 bytes of an Ed25519 key (what a key pair's public half gives).
    pub fn from_raw(algorithm: KeyAlgorithm, key: &[u8]) -> Result<PublicKey, String> {
        let prefix: &[u8] = match algorithm {
            KeyAlgorithm::EcdsaP256 => &P256_SPKI_PREFIX,
            KeyAlgorithm::Ed25519 => &ED25519_SPKI_PREFIX,
        };
        PublicKey::from_spki_der(&[prefix, key].concat())
    }

    /// The key's DER SubjectPublicKeyInfo.
    pub fn spki_der(&self) -> &[u8] {
        &self.spki
    }

    /// The key as the PEM file (`-----BEGIN PUBLIC KEY-----`) a config's `trust.keys` reads.
    pub fn to_pem(&self) -> String {
        use base64::Engine;
        let body = base64::engine::general_purpose::STANDARD.encode(&self.spki);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|line| std::str::from_utf8(line).expect("base64 is ASCII"))
            .collect();
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        )
    }

    /// The key's scheme.
    pub fn algorithm(&self) -> KeyAlgorithm {
        self.algorithm
    }

    /// The first 16 hex digits of the sha256 of the key's DER: what messages and
    /// `accelhost plugins` name it by besides its name in the config.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Whether `signature` is this key's signature over `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let scheme: &dyn ring::signature::VerificationAlgorithm = match self.algorithm {
            KeyAlgorithm::EcdsaP256 => &ECDSA_P256_SHA256_ASN1,
            KeyAlgorithm::Ed25519 => &ED25519,
        };
        UnparsedPublicKey::new(scheme, &self.key)
            .verify(message, signature)
            .is_ok()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};

    use super::*;

    fn pem(der: &[u8]) -> Vec<u8> {
        use base64::Engine;
        let body = base64::engine::general_purpose::STANDARD.encode(der);
        format!("-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n").into_bytes()
    }

    #[test]
    fn p256_and_ed25519_keys_verify_their_signatures_and_nothing_else() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let ecdsa = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let raw =
            PublicKey::from_raw(KeyAlgorithm::EcdsaP256, ecdsa.public_key().as_ref()).unwrap();
        let key = PublicKey::from_pem(raw.to_pem().as_bytes()).unwrap();
        assert_eq!(key, raw, "written as PEM and read back");
        assert_eq!(key.algorithm(), KeyAlgorithm::EcdsaP256);
        let sig = ecdsa.sign(&rng, b"component").unwrap();
        assert!(key.verify(b"component", sig.as_ref()));
        assert!(!key.verify(b"componenT", sig.as_ref()));

        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let ed = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let spki = [&ED25519_SPKI_PREFIX[..], ed.public_key().as_ref()].concat();
        let ed_key = PublicKey::from_pem(&pem(&spki)).unwrap();
        assert_eq!(ed_key.algorithm(), KeyAlgorithm::Ed25519);
        let sig = ed.sign(b"component");
        assert!(ed_key.verify(b"component", sig.as_ref()));
        assert!(!ed_key.verify(b"component!", sig.as_ref()));
        assert!(
            !key.verify(b"component", sig.as_ref()),
            "another key's signature"
        );
        assert_ne!(key.fingerprint(), ed_key.fingerprint());
        assert_eq!(key.fingerprint().len(), "sha256:".len() + 16);
    }

    #[test]
    fn what_is_not_a_supported_public_key_is_refused_by_what_it_is() {
        let reason = |text: &[u8]| match PublicKey::from_pem(text) {
            Err(TrustError::Key { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        assert!(reason(b"hello").contains("no PEM public key"));
        assert!(
            reason(b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
                .contains("this is a private key")
        );
        // An RSA SubjectPublicKeyInfo's start.
        let rsa = [
            0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01,
        ];
        assert!(reason(&pem(&rsa)).contains("not an ECDSA P-256 or Ed25519 public key"));
        let short = [&P256_SPKI_PREFIX[..], &[4u8; 10]].concat();
        assert!(reason(&pem(&short)).contains("not 65 uncompressed bytes"));
    }
}

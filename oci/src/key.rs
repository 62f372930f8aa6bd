//! The private keys authors sign plugins with: ECDSA P-256 or Ed25519, in the unencrypted
//! PKCS#8 PEM files that `openssl genpkey` and `accelhost-sdk keygen` write.

use std::fmt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair};

pub use accelhost_trust::{KeyAlgorithm, PublicKey};

/// The largest key file read: a PKCS#8 P-256 or Ed25519 key is a few hundred bytes.
const MAX_KEY_FILE: u64 = 64 * 1024;

/// Why a private key cannot be used to sign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("signing key {key}: {reason}")]
pub struct KeyError {
    /// The key's file, or `<PEM text>`.
    pub key: String,
    /// What is wrong with it.
    pub reason: String,
}

enum Pair {
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

/// A private key that signs plugin components and OCI artifacts as cosign does with a key
/// pair: DER ECDSA P-256 signatures of the SHA-256 of the message, or raw Ed25519 ones.
pub struct SigningKey {
    pair: Pair,
    rng: SystemRandom,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({})", self.algorithm())
    }
}

impl SigningKey {
    /// The key in the PKCS#8 PEM file at `path` (`-----BEGIN PRIVATE KEY-----`).
    pub fn read(path: &Path) -> Result<SigningKey, KeyError> {
        use std::io::Read;
        let name = path.display().to_string();
        let mut text = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_KEY_FILE).read_to_end(&mut text))
            .map_err(|err| KeyError {
                key: name.clone(),
                reason: format!("cannot read it: {err}"),
            })?;
        let text = String::from_utf8(text).map_err(|_| KeyError {
            key: name.clone(),
            reason: "not a PEM file (not text)".into(),
        })?;
        SigningKey::from_pem(&text).map_err(|err| KeyError {
            key: name,
            reason: err.reason,
        })
    }

    /// The key in PKCS#8 PEM text. Encrypted keys (cosign's own format, or encrypted PKCS#8)
    /// are refused with what to use instead.
    pub fn from_pem(text: &str) -> Result<SigningKey, KeyError> {
        let bad = |reason: String| KeyError {
            key: "<PEM text>".into(),
            reason,
        };
        let (label, der) = pem_decode(text).map_err(bad)?;
        match label.as_str() {
            "PRIVATE KEY" => SigningKey::from_pkcs8_der(&der).map_err(bad),
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => Err(bad(
                "an encrypted cosign private key, which accelhost cannot read: sign with cosign \
                 itself, or use an unencrypted PKCS#8 key (accelhost-sdk keygen, or openssl \
                 genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256)"
                    .into(),
            )),
            "ENCRYPTED PRIVATE KEY" => Err(bad(
                "an encrypted PKCS#8 key, which is not supported: decrypt it with \
                 `openssl pkcs8 -in KEY -out PLAIN.key` first"
                    .into(),
            )),
            "EC PRIVATE KEY" => Err(bad(
                "a SEC1 EC key: convert it to PKCS#8 with `openssl pkcs8 -topk8 -nocrypt -in KEY \
                 -out NEW.key`"
                    .into(),
            )),
            "PUBLIC KEY" => Err(bad(
                "this is a public key: signing needs the private key".into()
            )),
            other => Err(bad(format!(
                "a PEM `{other}`, not a `PRIVATE KEY` (PKCS#8)"
            ))),
        }
    }

    /// The key in a DER PKCS#8 document.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<SigningKey, String> {
        let rng = SystemRandom::new();
        if let Ok(pair) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, der, &rng) {
            return Ok(SigningKey {
                pair: Pair::Ecdsa(pair),
                rng,
            });
        }
        // `maybe_unchecked`: also PKCS#8 v1 without the public key, as openssl writes it.
        if let Ok(pair) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der) {
            return Ok(SigningKey {
                pair: Pair::Ed25519(pair),
                rng,
            });
        }
        Err(
            "not an ECDSA P-256 or Ed25519 PKCS#8 private key (RSA keys and other curves are not \
             supported)"
                .into(),
        )
    }

    /// A new key pair of `algorithm` from the system's random source: the private key as
    /// PKCS#8 PEM and the public key as SubjectPublicKeyInfo PEM.
    pub fn generate(algorithm: KeyAlgorithm) -> Result<(String, String), KeyError> {
        let rng = SystemRandom::new();
        let failed = |what: &str| KeyError {
            key: format!("new {algorithm} key"),
            reason: format!("{what} failed"),
        };
        let pkcs8 = match algorithm {
            KeyAlgorithm::EcdsaP256 => {
                EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            }
            KeyAlgorithm::Ed25519 => Ed25519KeyPair::generate_pkcs8(&rng),
        }
        .map_err(|_| failed("generating it"))?;
        let der = match algorithm {
            KeyAlgorithm::EcdsaP256 => pkcs8.as_ref().to_vec(),
            // ring writes PKCS#8 v2 (with the public key), which OpenSSL 3.0 cannot read; the
            // same seed in v1 is what `openssl genpkey` writes.
            KeyAlgorithm::Ed25519 => {
                ed25519_pkcs8_v1(pkcs8.as_ref()).ok_or_else(|| failed("re-encoding it"))?
            }
        };
        let key = SigningKey::from_pkcs8_der(&der).map_err(|_| failed("reading it"))?;
        Ok((pem_encode("PRIVATE KEY", &der), key.public_key().to_pem()))
    }

    /// The key's scheme.
    pub fn algorithm(&self) -> KeyAlgorithm {
        match self.pair {
            Pair::Ecdsa(_) => KeyAlgorithm::EcdsaP256,
            Pair::Ed25519(_) => KeyAlgorithm::Ed25519,
        }
    }

    /// The signature over `message`: ASN.1 DER for P-256 (of its SHA-256), 64 bytes for
    /// Ed25519, as `cosign sign-blob` and `openssl dgst -sha256 -sign` make them.
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match &self.pair {
            Pair::Ecdsa(pair) => pair
                .sign(&self.rng, message)
                .map(|signature| signature.as_ref().to_vec())
                // ring fails only if the system's random source does.
                .expect("the system's random source failed while signing"),
            Pair::Ed25519(pair) => pair.sign(message).as_ref().to_vec(),
        }
    }

    /// The base64 (standard, padded) signature over `message`: the text of a `.sig` file and
    /// of cosign's signature annotation.
    pub fn sign_base64(&self, message: &[u8]) -> String {
        STANDARD.encode(self.sign(message))
    }

    /// The key's public half: what a config's `trust.keys` and `accelhost pull --key` verify
    /// with (`public_key().to_pem()` is the `.pub` file).
    pub fn public_key(&self) -> PublicKey {
        let (algorithm, raw) = match &self.pair {
            Pair::Ecdsa(pair) => (KeyAlgorithm::EcdsaP256, pair.public_key().as_ref()),
            Pair::Ed25519(pair) => (KeyAlgorithm::Ed25519, pair.public_key().as_ref()),
        };
        PublicKey::from_raw(algorithm, raw).expect("a key pair's public half is a public key")
    }
}

/// The DER of an Ed25519 PKCS#8 v1 document (RFC 8410) before its 32-byte seed: version 0,
/// `id-Ed25519`, and the seed as an OCTET STRING in an OCTET STRING.
const ED25519_PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The PKCS#8 v1 form of ring's v2 Ed25519 document `v2`: the same algorithm and seed, the
/// public key left out (it follows from the seed). `None` if `v2` is not laid out as expected.
fn ed25519_pkcs8_v1(v2: &[u8]) -> Option<Vec<u8>> {
    // v2: SEQUENCE { INTEGER 1, AlgorithmIdentifier, OCTET STRING { OCTET STRING seed },
    // [1] public key }: the same bytes as v1 from the AlgorithmIdentifier to the seed.
    const V2_HEAD: [u8; 5] = [0x30, 0x51, 0x02, 0x01, 0x01];
    let rest = v2.strip_prefix(&V2_HEAD[..])?;
    let tail = rest.strip_prefix(&ED25519_PKCS8_V1_PREFIX[5..])?;
    let seed = tail.get(..32)?;
    Some([&ED25519_PKCS8_V1_PREFIX[..], seed].concat())
}

/// The label and bytes of the first PEM block in `text`.
fn pem_decode(text: &str) -> Result<(String, Vec<u8>), String> {
    let mut lines = text.lines().map(str::trim);
    let label = lines
        .by_ref()
        .find_map(|line| {
            line.strip_prefix("-----BEGIN ")
                .and_then(|rest| rest.strip_suffix("-----"))
        })
        .ok_or("no PEM block in it (no `-----BEGIN ...-----` line)")?
        .to_string();
    let end = format!("-----END {label}-----");
    let mut body = String::new();
    let mut ended = false;
    for line in lines {
        if line == end {
            ended = true;
            break;
        }
        // Encapsulated headers (`Proc-Type: ...`) are of encrypted legacy keys.
        if line.contains(':') {
            return Err(format!(
                "a PEM `{label}` with headers ({line}): an encrypted key, which is not supported"
            ));
        }
        body.push_str(line);
    }
    if !ended {
        return Err(format!("the PEM `{label}` has no `{end}` line"));
    }
    let der = STANDARD
        .decode(body.as_bytes())
        .map_err(|err| format!("the PEM `{label}` is not base64: {err}"))?;
    Ok((label, der))
}

/// `der` as a PEM block labelled `label`, in 64-character lines.
fn pem_encode(label: &str, der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        // base64 text is ASCII.
        text.push_str(std::str::from_utf8(line).unwrap_or_default());
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn generated_keys_sign_what_their_public_keys_verify() {
        for algorithm in [KeyAlgorithm::EcdsaP256, KeyAlgorithm::Ed25519] {
            let (private, public) = SigningKey::generate(algorithm).unwrap();
            assert!(
                private.starts_with("-----BEGIN PRIVATE KEY-----\n"),
                "{private}"
            );
            assert!(
                public.starts_with("-----BEGIN PUBLIC KEY-----\n"),
                "{public}"
            );
            let key = SigningKey::from_pem(&private).unwrap();
            assert_eq!(key.algorithm(), algorithm);
            assert_eq!(key.public_key().to_pem(), public);
            let verifier = PublicKey::from_pem(public.as_bytes()).unwrap();
            assert_eq!(verifier.algorithm(), algorithm);
            let signature = key.sign(b"plugin bytes");
            assert!(verifier.verify(b"plugin bytes", &signature), "{algorithm}");
            assert!(!verifier.verify(b"plugin bytez", &signature), "{algorithm}");
            if algorithm == KeyAlgorithm::Ed25519 {
                assert_eq!(signature.len(), 64);
            } else {
                assert_eq!(signature[0], 0x30, "a DER SEQUENCE");
            }
            let text = key.sign_base64(b"x");
            assert!(STANDARD.decode(&text).is_ok(), "{text}");
        }
    }

    #[test]
    fn generated_ed25519_keys_are_pkcs8_v1_as_openssl_writes_them() {
        let (private, _) = SigningKey::generate(KeyAlgorithm::Ed25519).unwrap();
        let (label, der) = pem_decode(&private).unwrap();
        assert_eq!(label, "PRIVATE KEY");
        assert_eq!(der.len(), 48);
        assert_eq!(der[..16], ED25519_PKCS8_V1_PREFIX);
        assert_eq!(ed25519_pkcs8_v1(b"\x30\x2e"), None);
    }

    /// Keys as `openssl genpkey` writes them (PKCS#8 v1; the Ed25519 one without its public
    /// key), made once with openssl 3.0 for this test.
    #[test]
    fn openssl_pkcs8_keys_are_read() {
        const P256: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg6KUT54DFeRddfD4g
56/FJqqtYoypbQ5U8BkXG9MTqbChRANCAAS9O1OKCeVbnSXnQHEiDMAV/ORGo2cK
dpCxO9XyxXEkn8hSPUMUoOYYLt2+nmF5XL6eqkZNaXk1Iksg3i+KumAI
-----END PRIVATE KEY-----
";
        const ED25519: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIFMvCG1NLGXt1TPToeKXDZsv7oMP6bC2fszbDbEiWpAK
-----END PRIVATE KEY-----
";
        let p256 = SigningKey::from_pem(P256).unwrap();
        assert_eq!(p256.algorithm(), KeyAlgorithm::EcdsaP256);
        // What `openssl pkey -pubout` writes for it.
        assert_eq!(
            p256.public_key().to_pem(),
            "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEvTtTignlW50l50BxIgzAFfzkRqNn
CnaQsTvV8sVxJJ/IUj1DFKDmGC7dvp5heVy+nqpGTWl5NSJLIN4virpgCA==
-----END PUBLIC KEY-----
"
        );
        let ed = SigningKey::from_pem(ED25519).unwrap();
        assert_eq!(ed.algorithm(), KeyAlgorithm::Ed25519);
        assert_eq!(
            ed.public_key().to_pem(),
            "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAXM6eOVEzj7uMDPx3HybX4VwgM/bU5ZqKXuFFcR5pkBg=
-----END PUBLIC KEY-----
"
        );
        for key in [p256, ed] {
            let public = PublicKey::from_pem(key.public_key().to_pem().as_bytes()).unwrap();
            assert!(public.verify(b"m", &key.sign(b"m")));
        }
    }

    #[test]
    fn keys_that_cannot_sign_are_refused_by_what_they_are() {
        let reason = |text: &str| SigningKey::from_pem(text).unwrap_err().reason;
        let block = |label: &str| format!("-----BEGIN {label}-----\nAAAA\n-----END {label}-----\n");
        assert!(reason("hello").contains("no PEM block"));
        for cosign in [
            "ENCRYPTED SIGSTORE PRIVATE KEY",
            "ENCRYPTED COSIGN PRIVATE KEY",
        ] {
            let why = reason(&block(cosign));
            assert!(why.contains("encrypted cosign private key"), "{why}");
        }
        assert!(reason(&block("ENCRYPTED PRIVATE KEY")).contains("encrypted PKCS#8"));
        assert!(reason(&block("EC PRIVATE KEY")).contains("openssl pkcs8 -topk8"));
        assert!(reason(&block("PUBLIC KEY")).contains("this is a public key"));
        assert!(reason(&block("CERTIFICATE")).contains("not a `PRIVATE KEY`"));
        assert!(reason(&block("PRIVATE KEY")).contains("not an ECDSA P-256 or Ed25519"));
        assert!(
            reason("-----BEGIN PRIVATE KEY-----\nAAAA\n")
                .contains("no `-----END PRIVATE KEY-----`")
        );
        assert!(
            reason("-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n")
                .contains("not base64")
        );
        let err = SigningKey::read(Path::new("/nonexistent/key.pem")).unwrap_err();
        assert_eq!(err.key, "/nonexistent/key.pem");
        assert!(err.reason.contains("cannot read it"), "{err}");
    }
}

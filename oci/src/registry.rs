//! One repository of one registry, as pulls and pushes talk to it through oci-client: the
//! client (HTTPS, or HTTP for loopback test registries), the credentials, and what the
//! registry's answers turn into.

use std::time::Duration;

use accelhost_trust::store::OciReference;
use futures_util::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use sha2::{Digest, Sha256};

use crate::OciError;
use crate::artifact::ACCEPTED_MANIFEST_TYPES;

/// The user name for registries that ask for basic auth (with [`PASSWORD_ENV`]); without
/// both, requests are anonymous.
pub const USER_ENV: &str = "ACCELHOST_REGISTRY_USER";
/// The password (or token) for [`USER_ENV`].
pub const PASSWORD_ENV: &str = "ACCELHOST_REGISTRY_PASSWORD";

/// How long a connection to the registry may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the registry may stay silent in the middle of an answer.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Installs ring as rustls' process-wide crypto provider (as the node uses), once; another
/// provider installed first is kept.
fn install_crypto_provider() {
    // An error means a provider is installed already, which serves as well.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The credentials from the environment: basic auth where both variables are set.
fn auth_from_env() -> RegistryAuth {
    match (std::env::var(USER_ENV), std::env::var(PASSWORD_ENV)) {
        (Ok(user), Ok(password)) if !user.is_empty() => RegistryAuth::Basic(user, password),
        _ => RegistryAuth::Anonymous,
    }
}

/// One repository, reached for one reference.
pub(crate) struct Repository {
    client: Client,
    auth: RegistryAuth,
    /// The reference as the user gave it, for messages (`oci://...`).
    pub shown: String,
    registry: String,
    repository: String,
    plain_http: bool,
}

impl Repository {
    /// A client for `reference`'s repository.
    pub fn new(reference: &OciReference, plain_http: bool) -> Result<Repository, OciError> {
        install_crypto_provider();
        let config = ClientConfig {
            protocol: if plain_http {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(READ_TIMEOUT),
            // Layouts are resolved by this crate, never by the client's platform choice.
            platform_resolver: None,
            ..ClientConfig::default()
        };
        let client = Client::try_from(config).map_err(|err| OciError::Registry {
            reference: reference.to_string(),
            call: "client".into(),
            message: describe(&err),
        })?;
        Ok(Repository {
            client,
            auth: auth_from_env(),
            shown: reference.to_string(),
            registry: reference.registry.clone(),
            repository: reference.repository.clone(),
            plain_http,
        })
    }

    /// The repository's reference to `tag`.
    pub fn tagged(&self, tag: &str) -> Reference {
        Reference::with_tag(
            self.registry.clone(),
            self.repository.clone(),
            tag.to_string(),
        )
    }

    /// The repository's reference to `digest`.
    pub fn by_digest(&self, digest: &str) -> Reference {
        Reference::with_digest(
            self.registry.clone(),
            self.repository.clone(),
            digest.to_string(),
        )
    }

    fn error(&self, call: &str, err: &OciDistributionError) -> OciError {
        let mut message = describe(err);
        // What rustls says when the other end answers a TLS hello in plain HTTP.
        if !self.plain_http && message.contains("InvalidContentType") {
            message.push_str(" (does the registry speak plain HTTP? then give --plain-http)");
        }
        OciError::Registry {
            reference: self.shown.clone(),
            call: call.into(),
            message,
        }
    }

    /// The manifest at `reference`: its bytes as served and the sha256 digest computed from
    /// them; `None` when the registry has no such manifest. A digest the registry or the
    /// reference states that the bytes do not have is an error naming both digests.
    pub async fn manifest(
        &self,
        reference: &Reference,
        call: &str,
    ) -> Result<Option<(Vec<u8>, String)>, OciError> {
        let pulled = self
            .client
            .pull_manifest_raw(reference, &self.auth, ACCEPTED_MANIFEST_TYPES)
            .await;
        let (bytes, stated) = match pulled {
            Ok(found) => found,
            Err(err) if is_not_found(&err) => return Ok(None),
            Err(OciDistributionError::DigestError(
                oci_client::errors::DigestError::VerificationError { expected, actual },
            )) => {
                return Err(OciError::DigestMismatch {
                    what: call.into(),
                    reference: self.shown.clone(),
                    expected,
                    actual,
                });
            }
            Err(err) => return Err(self.error(call, &err)),
        };
        let computed = crate::artifact::sha256_digest(&bytes);
        for expected in reference.digest().into_iter().chain(Some(stated.as_str())) {
            if expected.starts_with("sha256:") && expected != computed {
                return Err(OciError::DigestMismatch {
                    what: call.into(),
                    reference: self.shown.clone(),
                    expected: expected.to_string(),
                    actual: computed,
                });
            }
        }
        Ok(Some((bytes.to_vec(), computed)))
    }

    /// The blob `descriptor` names (`what` it is, for messages), read up to `limit` bytes and
    /// checked against the descriptor's size and sha256 digest.
    pub async fn blob(
        &self,
        descriptor: &OciDescriptor,
        what: &str,
        limit: u64,
    ) -> Result<Vec<u8>, OciError> {
        let size = u64::try_from(descriptor.size).unwrap_or(u64::MAX);
        if size > limit {
            return Err(OciError::TooLarge {
                what: format!("{what} {}", descriptor.digest),
                reference: self.shown.clone(),
                size,
                limit,
            });
        }
        let reference = self.by_digest(&descriptor.digest);
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
        let mut stream = self
            .client
            .pull_blob_stream(&reference, descriptor)
            .await
            .map_err(|err| self.error(&format!("blob ({what} {})", descriptor.digest), &err))?;
        if let Some(length) = stream.content_length
            && length != size
        {
            return Err(self.size_mismatch(descriptor, what, length));
        }
        // Reserve no more than the descriptor states (already bounded by `limit`).
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut hash = Sha256::new();
        let mut failure = None;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => {
                    if (bytes.len() + chunk.len()) as u64 > size {
                        return Err(self.size_mismatch(
                            descriptor,
                            what,
                            (bytes.len() + chunk.len()) as u64,
                        ));
                    }
                    hash.update(&chunk);
                    bytes.extend_from_slice(&chunk);
                }
                Err(err) => {
                    failure = Some(err);
                    break;
                }
            }
        }
        let actual = format!("sha256:{}", hex(&hash.finalize()));
        // The client checks the digest too, and fails the stream's end when it differs: the
        // bytes' own digest says it better.
        if bytes.len() as u64 == size && actual != descriptor.digest {
            return Err(OciError::DigestMismatch {
                what: what.to_string(),
                reference: self.shown.clone(),
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        if let Some(err) = failure {
            return Err(OciError::Registry {
                reference: self.shown.clone(),
                call: format!("blob ({what} {})", descriptor.digest),
                message: chain(&err),
            });
        }
        if bytes.len() as u64 != size {
            return Err(self.size_mismatch(descriptor, what, bytes.len() as u64));
        }
        Ok(bytes)
    }

    fn size_mismatch(&self, descriptor: &OciDescriptor, what: &str, served: u64) -> OciError {
        OciError::Registry {
            reference: self.shown.clone(),
            call: format!("blob ({what} {})", descriptor.digest),
            message: format!(
                "the registry served {served} bytes where the manifest says {}",
                descriptor.size
            ),
        }
    }

    /// Uploads `bytes` as a blob of the repository, unless the registry has it already.
    pub async fn push_blob(&self, bytes: &[u8], digest: &str, what: &str) -> Result<(), OciError> {
        let reference = self.by_digest(digest);
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
        let call = format!("push blob ({what} {digest})");
        let exists = self
            .client
            .blob_exists(&reference, digest)
            .await
            .map_err(|err| self.error(&call, &err))?;
        if !exists {
            self.client
                .push_blob(&reference, bytes.to_vec(), digest)
                .await
                .map_err(|err| self.error(&call, &err))?;
        }
        Ok(())
    }

    /// Uploads the manifest `bytes` at `tag`.
    pub async fn push_manifest(
        &self,
        bytes: Vec<u8>,
        tag: &str,
        what: &str,
    ) -> Result<(), OciError> {
        let reference = self.tagged(tag);
        self.client
            .store_auth_if_needed(reference.resolve_registry(), &self.auth)
            .await;
        let content_type = http::HeaderValue::from_static(crate::artifact::OCI_MANIFEST_MEDIA_TYPE);
        self.client
            .push_manifest_raw(&reference, bytes, content_type)
            .await
            .map_err(|err| self.error(&format!("push manifest ({what} at :{tag})"), &err))?;
        Ok(())
    }
}

/// Whether the registry answered that there is no such manifest (or repository).
fn is_not_found(err: &OciDistributionError) -> bool {
    match err {
        OciDistributionError::RegistryError { envelope, .. } => {
            envelope.errors.iter().all(|error| {
                matches!(
                    error.code,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::NameUnknown
                        | OciErrorCode::NotFound
                )
            }) && !envelope.errors.is_empty()
        }
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        _ => false,
    }
}

/// What the registry (or the connection to it) said, with every cause.
fn describe(err: &OciDistributionError) -> String {
    match err {
        OciDistributionError::RegistryError { envelope, url } => {
            let said: Vec<String> = envelope
                .errors
                .iter()
                .map(|error| format!("{:?}: {}", error.code, error.message))
                .collect();
            format!("{} (at {url})", said.join("; "))
        }
        OciDistributionError::ServerError { code, url, message } => {
            format!("HTTP {code} from {url}: {}", message.trim())
        }
        other => chain(other),
    }
}

/// `err` and its sources, joined by `: `.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

//! One repository of one registry, as pulls and pushes talk to it over the OCI distribution
//! API (on reqwest): the transport's rules (HTTPS; plain HTTP to the loopback only unless it
//! is asked for as insecure), the credentials and bearer tokens, and every answer read under a
//! bound: a size cap checked while the body streams, a silence limit per read, a floor on the
//! rate once a body has had its grace period, and the whole call's deadline.
//!
//! Invariants: no answer's body is read past its cap or buffered before its status is looked
//! at; credentials go only to the registry's own origin (and a token realm it names over
//! HTTPS or on the loopback); a redirect obeys the same transport rules as the first request.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use accelhost_trust::store::OciReference;
use bytes::Bytes;
use reqwest::header::{self, HeaderMap, HeaderValue};
use reqwest::{Method, Response, StatusCode, Url};
use sha2::{Digest, Sha256};

use crate::OciError;
use crate::artifact::{ACCEPTED_MANIFEST_TYPES, Descriptor};

/// The user name for registries that ask for credentials (with [`PASSWORD_ENV`]); without
/// both, requests are anonymous.
pub const USER_ENV: &str = "ACCELHOST_REGISTRY_USER";
/// The password (or token) for [`USER_ENV`].
pub const PASSWORD_ENV: &str = "ACCELHOST_REGISTRY_PASSWORD";

/// How long a connection to the registry may take to open.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the registry may stay silent: before the head of an answer, or between two reads
/// of its body.
const SILENCE: Duration = Duration::from_secs(30);
/// How long a body may take before [`Bounds::min_bytes_per_sec`] applies to it.
const RATE_GRACE: Duration = Duration::from_secs(10);
/// The largest manifest read (an image manifest, a signature manifest, an index): real ones
/// are a few KiB, and the distribution registry itself refuses over 4 MiB.
pub(crate) const MAX_MANIFEST: u64 = 4 * 1024 * 1024;
/// The most of an error answer read, for its message.
const MAX_ERROR_BODY: u64 = 64 * 1024;
/// The largest token answer read.
const MAX_TOKEN_ANSWER: u64 = 64 * 1024;
/// The most redirects one request follows.
const MAX_REDIRECTS: usize = 5;
/// The most characters of what a registry says that a message repeats.
const MAX_SAID: usize = 300;

/// How the registry is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// HTTPS, the registry's certificate checked against the system's roots.
    #[default]
    Https,
    /// Plain HTTP to a registry on the loopback (127.0.0.0/8, `localhost`): a test registry.
    PlainHttpLoopback,
    /// Plain HTTP to any registry: anyone on the path reads and changes what is sent and
    /// received (digests and signatures are still checked).
    PlainHttpInsecure,
}

impl Transport {
    fn scheme(self) -> &'static str {
        match self {
            Transport::Https => "https",
            Transport::PlainHttpLoopback | Transport::PlainHttpInsecure => "http",
        }
    }

    /// Why `url` may not be requested over this transport, if it may not: HTTPS is always
    /// allowed, plain HTTP only when asked for, and off the loopback only when insecure.
    fn refuses(self, url: &Url) -> Option<String> {
        match url.scheme() {
            "https" => None,
            "http" if self == Transport::PlainHttpInsecure => None,
            "http" if self == Transport::PlainHttpLoopback && is_loopback(url) => None,
            "http" if self == Transport::PlainHttpLoopback => Some(format!(
                "{url} is plain HTTP off the loopback: plain HTTP goes to 127.0.0.0/8 and \
                 localhost only, unless it is asked for as insecure"
            )),
            "http" => Some(format!(
                "{url} is plain HTTP, and the registry is reached over HTTPS"
            )),
            other => Some(format!("{url}: the scheme `{other}` is not HTTP(S)")),
        }
    }
}

/// Whether `url`'s host is a loopback address or `localhost`.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// What bounds a whole pull or push, and each body read in it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    /// When the whole call must be done.
    pub deadline: Instant,
    /// The whole call's time, for messages.
    pub timeout: Duration,
    /// The slowest a body may arrive once it has had [`RATE_GRACE`].
    pub min_bytes_per_sec: u64,
}

impl Bounds {
    /// Bounds for a call of at most `timeout` starting now.
    pub fn starting_now(timeout: Duration, min_bytes_per_sec: u64) -> Bounds {
        Bounds {
            deadline: Instant::now() + timeout,
            timeout,
            min_bytes_per_sec,
        }
    }
}

/// Installs ring as rustls' process-wide crypto provider (as the node uses), once; another
/// provider installed first is kept.
fn install_crypto_provider() {
    // An error means a provider is installed already, which serves as well.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The credentials from the environment, where both variables are set.
fn credentials_from_env() -> Option<(String, String)> {
    match (std::env::var(USER_ENV), std::env::var(PASSWORD_ENV)) {
        (Ok(user), Ok(password)) if !user.is_empty() => Some((user, password)),
        _ => None,
    }
}

/// What a request may carry for the registry to answer it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reading: `repository:<name>:pull`.
    Pull,
    /// Reading and writing: `repository:<name>:pull,push`.
    Push,
}

/// One repository, reached for one reference.
pub(crate) struct Repository {
    http: reqwest::Client,
    /// `<scheme>://<registry>/v2/<repository>/`.
    base: Url,
    /// The reference as the user gave it, for messages (`oci://...`).
    pub shown: String,
    repository: String,
    transport: Transport,
    access: Access,
    credentials: Option<(String, String)>,
    /// The `Authorization` the registry last accepted or asked for (a bearer token, or basic).
    authorization: Mutex<Option<HeaderValue>>,
    bounds: Bounds,
}

impl Repository {
    /// A client for `reference`'s repository; refuses a transport the registry's address does
    /// not allow before anything is sent.
    pub fn new(
        reference: &OciReference,
        transport: Transport,
        access: Access,
        bounds: Bounds,
    ) -> Result<Repository, OciError> {
        install_crypto_provider();
        let shown = reference.to_string();
        let host = match reference.registry.as_str() {
            // Docker Hub's API is not at the name its references use.
            "docker.io" | "index.docker.io" => "registry-1.docker.io",
            other => other,
        };
        let base = Url::parse(&format!(
            "{}://{host}/v2/{}/",
            transport.scheme(),
            reference.repository
        ))
        .map_err(|err| OciError::Input {
            reference: shown.clone(),
            reason: format!("not a registry address: {err}"),
        })?;
        if let Some(reason) = transport.refuses(&base) {
            return Err(OciError::Input {
                reference: shown,
                reason,
            });
        }
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            // `previous` holds every URL requested so far: the first and each redirect's.
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            match transport.refuses(attempt.url()) {
                Some(reason) => attempt.error(format!("a redirect to {reason}")),
                None => attempt.follow(),
            }
        });
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(policy)
            .user_agent(concat!("accelhost/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| OciError::Registry {
                reference: shown.clone(),
                call: "client".into(),
                message: chain(&err),
            })?;
        Ok(Repository {
            http,
            base,
            shown,
            repository: reference.repository.clone(),
            transport,
            access,
            credentials: credentials_from_env(),
            authorization: Mutex::new(None),
            bounds,
        })
    }

    fn url(&self, path: &str) -> Url {
        self.base
            .join(path)
            .expect("paths of digests and tags join")
    }

    /// The manifest at `reference` (a tag or a digest): its bytes, at most [`MAX_MANIFEST`],
    /// and the sha256 digest computed from them; `None` when the registry has no such
    /// manifest. A digest the registry or `reference` states that the bytes do not have is an
    /// error naming both digests.
    pub async fn manifest(
        &self,
        reference: &str,
        call: &str,
    ) -> Result<Option<(Vec<u8>, String)>, OciError> {
        let mut headers = HeaderMap::new();
        let accept = ACCEPTED_MANIFEST_TYPES.join(", ");
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_str(&accept).expect("media types are header text"),
        );
        let url = self.url(&format!("manifests/{reference}"));
        let response = self.send(Method::GET, url, headers, None, call).await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let response = self.expect(response, &[StatusCode::OK], call).await?;
        let stated = response
            .headers()
            .get("docker-content-digest")
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        let bytes = self
            .read_capped(response, MAX_MANIFEST, call, "a manifest")
            .await?;
        let computed = crate::artifact::sha256_digest(&bytes);
        let pinned = reference.starts_with("sha256:").then_some(reference);
        for expected in pinned.into_iter().chain(stated.as_deref()) {
            if expected.starts_with("sha256:") && expected != computed {
                return Err(OciError::DigestMismatch {
                    what: call.into(),
                    reference: self.shown.clone(),
                    expected: printable(expected),
                    actual: computed,
                });
            }
        }
        Ok(Some((bytes, computed)))
    }

    /// The blob `descriptor` names (`what` it is, for messages), read up to `limit` bytes and
    /// checked against the descriptor's size, while it streams, and its sha256 digest.
    pub async fn blob(
        &self,
        descriptor: &Descriptor,
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
        let call = format!("blob ({what} {})", descriptor.digest);
        let url = self.url(&format!("blobs/{}", descriptor.digest));
        let response = self
            .send(Method::GET, url, HeaderMap::new(), None, &call)
            .await?;
        let mut response = self.expect(response, &[StatusCode::OK], &call).await?;
        let served = |count: u64| OciError::Registry {
            reference: self.shown.clone(),
            call: call.clone(),
            message: format!(
                "the registry served {count} bytes where the manifest says {}",
                descriptor.size
            ),
        };
        if let Some(length) = response.content_length()
            && length != size
        {
            return Err(served(length));
        }
        // Reserve no more than the descriptor states (already bounded by `limit`).
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut hash = Sha256::new();
        let started = Instant::now();
        while let Some(chunk) = self
            .next_chunk(&mut response, started, bytes.len() as u64, &call)
            .await?
        {
            let count = (bytes.len() + chunk.len()) as u64;
            if count > size {
                return Err(served(count));
            }
            hash.update(&chunk);
            bytes.extend_from_slice(&chunk);
        }
        if bytes.len() as u64 != size {
            return Err(served(bytes.len() as u64));
        }
        let actual = format!("sha256:{}", hex(&hash.finalize()));
        if actual != descriptor.digest {
            return Err(OciError::DigestMismatch {
                what: what.to_string(),
                reference: self.shown.clone(),
                expected: descriptor.digest.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Uploads `bytes` as a blob of the repository, unless the registry has it already: one
    /// monolithic upload (`POST` then `PUT ?digest=`).
    pub async fn push_blob(&self, bytes: &[u8], digest: &str, what: &str) -> Result<(), OciError> {
        let call = format!("push blob ({what} {digest})");
        let url = self.url(&format!("blobs/{digest}"));
        let found = self
            .send(Method::HEAD, url, HeaderMap::new(), None, &call)
            .await?;
        if found.status() == StatusCode::OK {
            return Ok(());
        }
        let started = self
            .send(
                Method::POST,
                self.url("blobs/uploads/"),
                HeaderMap::new(),
                Some(Bytes::new()),
                &call,
            )
            .await?;
        let started = self.expect(started, &[StatusCode::ACCEPTED], &call).await?;
        let mut location = self.location(&started, &call)?;
        location.query_pairs_mut().append_pair("digest", digest);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        let put = self
            .send(
                Method::PUT,
                location,
                headers,
                Some(Bytes::copy_from_slice(bytes)),
                &call,
            )
            .await?;
        self.expect(put, &[StatusCode::CREATED], &call).await?;
        Ok(())
    }

    /// Uploads the manifest `bytes` at `tag`.
    pub async fn push_manifest(
        &self,
        bytes: Vec<u8>,
        tag: &str,
        what: &str,
    ) -> Result<(), OciError> {
        let call = format!("push manifest ({what} at :{tag})");
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::artifact::OCI_MANIFEST_MEDIA_TYPE),
        );
        let url = self.url(&format!("manifests/{tag}"));
        let put = self
            .send(Method::PUT, url, headers, Some(Bytes::from(bytes)), &call)
            .await?;
        self.expect(put, &[StatusCode::CREATED], &call).await?;
        Ok(())
    }

    /// Where an upload goes on: the answer's `Location`, relative to the request, under the
    /// transport's rules.
    fn location(&self, response: &Response, call: &str) -> Result<Url, OciError> {
        let refused = |message: String| OciError::Registry {
            reference: self.shown.clone(),
            call: call.to_string(),
            message,
        };
        let text = response
            .headers()
            .get(header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| refused("the registry started an upload without a Location".into()))?;
        let url = response
            .url()
            .join(text)
            .map_err(|err| refused(format!("the upload's Location is not a URL: {err}")))?;
        if let Some(reason) = self.transport.refuses(&url) {
            return Err(refused(format!("the upload's Location: {reason}")));
        }
        Ok(url)
    }

    /// Sends one request under the call's deadline, with the credentials the registry asks
    /// for: on a 401 it authenticates as the challenge says and sends once more.
    async fn send(
        &self,
        method: Method,
        url: Url,
        headers: HeaderMap,
        body: Option<Bytes>,
        call: &str,
    ) -> Result<Response, OciError> {
        let mut challenged = false;
        loop {
            let mut request = self
                .http
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if same_origin(&url, &self.base)
                && let Some(authorization) = self.authorization.lock().unwrap().clone()
            {
                request = request.header(header::AUTHORIZATION, authorization);
            }
            // An upload may take the call's whole time; a question only its silence limit.
            let wait = match &body {
                Some(body) => {
                    request = request.body(body.clone());
                    self.time_left(call)?
                }
                None => self.time_left(call)?.min(SILENCE),
            };
            let response = match tokio::time::timeout(wait, request.send()).await {
                Ok(Ok(response)) => response,
                Ok(Err(err)) => return Err(self.transport_error(call, &err)),
                Err(_) => return Err(self.silent(call, "before answering")),
            };
            if response.status() != StatusCode::UNAUTHORIZED || challenged {
                return Ok(response);
            }
            challenged = true;
            let challenge = response
                .headers()
                .get(header::WWW_AUTHENTICATE)
                .and_then(|value| value.to_str().ok())
                .map(str::to_string);
            let Some(challenge) = challenge else {
                return Ok(response);
            };
            let authorization = self.authenticate(&challenge, call).await?;
            *self.authorization.lock().unwrap() = Some(authorization);
        }
    }

    /// The `Authorization` a `WWW-Authenticate` challenge asks for: basic with the
    /// environment's credentials, or a bearer token from the realm it names.
    async fn authenticate(&self, challenge: &str, call: &str) -> Result<HeaderValue, OciError> {
        let refused = |message: String| OciError::Registry {
            reference: self.shown.clone(),
            call: call.to_string(),
            message,
        };
        let challenge = Challenge::parse(challenge).ok_or_else(|| {
            refused(format!(
                "the registry asks for credentials in a form not understood: {}",
                printable(challenge)
            ))
        })?;
        if challenge.scheme.eq_ignore_ascii_case("basic") {
            let (user, password) = self.credentials.as_ref().ok_or_else(|| {
                refused(format!(
                    "the registry asks for credentials: set {USER_ENV} and {PASSWORD_ENV}"
                ))
            })?;
            return Ok(basic(user, password));
        }
        if !challenge.scheme.eq_ignore_ascii_case("bearer") {
            return Err(refused(format!(
                "the registry asks for `{}` credentials; only Basic and Bearer are spoken",
                printable(&challenge.scheme)
            )));
        }
        let realm = challenge
            .get("realm")
            .ok_or_else(|| refused("the registry's Bearer challenge names no realm".into()))?;
        let mut token_url = Url::parse(realm).map_err(|err| {
            refused(format!(
                "the token realm {} is not a URL: {err}",
                printable(realm)
            ))
        })?;
        if let Some(reason) = self.transport.refuses(&token_url) {
            return Err(refused(format!("the token realm: {reason}")));
        }
        let own_scope = format!(
            "repository:{}:{}",
            self.repository,
            match self.access {
                Access::Pull => "pull",
                Access::Push => "pull,push",
            }
        );
        {
            let mut query = token_url.query_pairs_mut();
            if let Some(service) = challenge.get("service") {
                query.append_pair("service", service);
            }
            query.append_pair("scope", challenge.get("scope").unwrap_or(&own_scope));
        }
        let mut request = self.http.get(token_url.clone());
        if let Some((user, password)) = &self.credentials {
            request = request.header(header::AUTHORIZATION, basic(user, password));
        }
        let token_call = format!("{call}: token from {}", printable(realm));
        let wait = self.time_left(&token_call)?.min(SILENCE);
        let response = match tokio::time::timeout(wait, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(err)) => return Err(self.transport_error(&token_call, &err)),
            Err(_) => return Err(self.silent(&token_call, "before answering")),
        };
        let response = self
            .expect(response, &[StatusCode::OK], &token_call)
            .await?;
        let answer = self
            .read_capped(response, MAX_TOKEN_ANSWER, &token_call, "a token answer")
            .await?;
        let answer: serde_json::Value = serde_json::from_slice(&answer)
            .map_err(|err| refused(format!("the token answer is not JSON: {err}")))?;
        let token = ["token", "access_token"]
            .iter()
            .find_map(|key| answer.get(key).and_then(|value| value.as_str()))
            .filter(|token| !token.is_empty())
            .ok_or_else(|| refused("the token answer holds no token".into()))?;
        HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| refused("the token answer's token is not header text".into()))
    }

    /// `response` when its status is one of `expected`; otherwise an error with the status
    /// and what the registry said (at most [`MAX_ERROR_BODY`] of it read).
    async fn expect(
        &self,
        response: Response,
        expected: &[StatusCode],
        call: &str,
    ) -> Result<Response, OciError> {
        let status = response.status();
        if expected.contains(&status) {
            return Ok(response);
        }
        let url = response.url().clone();
        let said = self.error_text(response, call).await;
        let hint = if status == StatusCode::UNAUTHORIZED && self.credentials.is_none() {
            format!(" (set {USER_ENV} and {PASSWORD_ENV} for a registry that needs credentials)")
        } else {
            String::new()
        };
        Err(OciError::Registry {
            reference: self.shown.clone(),
            call: call.to_string(),
            message: format!("HTTP {status} from {url}{said}{hint}"),
        })
    }

    /// What an error answer says, as `: <text>`: the OCI error envelope's codes and messages,
    /// else its first characters; empty when it says nothing readable in time.
    async fn error_text(&self, mut response: Response, call: &str) -> String {
        let mut body = Vec::new();
        let started = Instant::now();
        while (body.len() as u64) < MAX_ERROR_BODY {
            match self
                .next_chunk(&mut response, started, body.len() as u64, call)
                .await
            {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        body.truncate(MAX_ERROR_BODY as usize);
        let said = match serde_json::from_slice::<ErrorEnvelope>(&body) {
            Ok(envelope) if !envelope.errors.is_empty() => envelope
                .errors
                .iter()
                .map(|error| format!("{}: {}", error.code, error.message))
                .collect::<Vec<_>>()
                .join("; "),
            _ => String::from_utf8_lossy(&body).trim().to_string(),
        };
        if said.is_empty() {
            String::new()
        } else {
            format!(": {}", printable(&said))
        }
    }

    /// The whole body of `response`, refused as soon as it passes `cap` bytes (`what` it is,
    /// for the message).
    async fn read_capped(
        &self,
        mut response: Response,
        cap: u64,
        call: &str,
        what: &str,
    ) -> Result<Vec<u8>, OciError> {
        let too_large = |count: u64| OciError::Registry {
            reference: self.shown.clone(),
            call: call.to_string(),
            message: format!(
                "the registry sent {count} bytes or more, more than {what} may be ({} KiB at \
                 most)",
                cap / 1024
            ),
        };
        if let Some(length) = response.content_length()
            && length > cap
        {
            return Err(too_large(length));
        }
        let mut bytes = Vec::new();
        let started = Instant::now();
        while let Some(chunk) = self
            .next_chunk(&mut response, started, bytes.len() as u64, call)
            .await?
        {
            let count = (bytes.len() + chunk.len()) as u64;
            if count > cap {
                return Err(too_large(count));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    /// The next piece of a body that started arriving at `started` and has brought
    /// `received` bytes so far, under the silence limit, the deadline and, after its grace,
    /// the rate floor.
    async fn next_chunk(
        &self,
        response: &mut Response,
        started: Instant,
        received: u64,
        call: &str,
    ) -> Result<Option<Bytes>, OciError> {
        let elapsed = started.elapsed();
        if elapsed > RATE_GRACE {
            let floor = self.bounds.min_bytes_per_sec as f64 * elapsed.as_secs_f64();
            if (received as f64) < floor {
                return Err(OciError::Stalled {
                    reference: self.shown.clone(),
                    call: call.to_string(),
                    reason: format!(
                        "the registry sent {received} bytes in {:.0} s, slower than the floor of \
                         {} bytes a second",
                        elapsed.as_secs_f64(),
                        self.bounds.min_bytes_per_sec
                    ),
                });
            }
        }
        let wait = self.time_left(call)?.min(SILENCE);
        match tokio::time::timeout(wait, response.chunk()).await {
            Ok(Ok(chunk)) => Ok(chunk),
            Ok(Err(err)) => Err(self.transport_error(call, &err)),
            Err(_) => Err(self.silent(call, &format!("after {received} bytes"))),
        }
    }

    /// The time left before the deadline; an error once it has passed.
    fn time_left(&self, call: &str) -> Result<Duration, OciError> {
        let left = self
            .bounds
            .deadline
            .saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(OciError::TimedOut {
                reference: self.shown.clone(),
                call: call.to_string(),
                timeout: self.bounds.timeout,
            });
        }
        Ok(left)
    }

    /// The error of a wait that ran out: the deadline's, or the silence limit's.
    fn silent(&self, call: &str, when: &str) -> OciError {
        if let Err(timed_out) = self.time_left(call) {
            return timed_out;
        }
        OciError::Stalled {
            reference: self.shown.clone(),
            call: call.to_string(),
            reason: format!(
                "the registry said nothing for {} s {when}",
                SILENCE.as_secs()
            ),
        }
    }

    fn transport_error(&self, call: &str, err: &reqwest::Error) -> OciError {
        let mut message = chain(err);
        // What rustls says when the other end answers a TLS hello in plain HTTP.
        if self.transport == Transport::Https && message.contains("InvalidContentType") {
            message.push_str(" (does the registry speak plain HTTP? then give --plain-http)");
        }
        OciError::Registry {
            reference: self.shown.clone(),
            call: call.into(),
            message,
        }
    }
}

/// Whether `a` and `b` have the same scheme, host and port.
fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// `Authorization: Basic` of `user` and `password`.
fn basic(user: &str, password: &str) -> HeaderValue {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    let mut value =
        HeaderValue::from_str(&format!("Basic {encoded}")).expect("base64 is header text");
    value.set_sensitive(true);
    value
}

/// The OCI distribution API's error answer.
#[derive(serde::Deserialize)]
struct ErrorEnvelope {
    #[serde(default)]
    errors: Vec<ErrorItem>,
}

#[derive(serde::Deserialize)]
struct ErrorItem {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// A `WWW-Authenticate` challenge: its scheme and its parameters.
#[derive(Debug, PartialEq, Eq)]
struct Challenge {
    scheme: String,
    parameters: Vec<(String, String)>,
}

impl Challenge {
    /// Reads `Scheme key="value", key=token, ...` (RFC 9110's auth-param list; quoted values
    /// take `\` escapes). `None` when it is not of that form.
    fn parse(text: &str) -> Option<Challenge> {
        let text = text.trim();
        let (scheme, mut rest) = match text.split_once(' ') {
            Some((scheme, rest)) => (scheme, rest.trim_start()),
            None => (text, ""),
        };
        if scheme.is_empty()
            || !scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return None;
        }
        let mut parameters = Vec::new();
        while !rest.is_empty() {
            let (key, after) = rest.split_once('=')?;
            let key = key.trim().to_ascii_lowercase();
            if key.is_empty() || key.contains([' ', ',', '"']) {
                return None;
            }
            let after = after.trim_start();
            let (value, remainder) = if let Some(quoted) = after.strip_prefix('"') {
                let mut value = String::new();
                let mut chars = quoted.char_indices();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => value.push(chars.next()?.1),
                        '"' => {
                            end = Some(i + 1);
                            break;
                        }
                        c => value.push(c),
                    }
                }
                (value, &quoted[end?..])
            } else {
                let end = after.find(',').unwrap_or(after.len());
                (after[..end].trim().to_string(), &after[end..])
            };
            parameters.push((key, value));
            let remainder = remainder.trim_start();
            if remainder.is_empty() {
                break;
            }
            rest = remainder.strip_prefix(',')?.trim_start();
        }
        Some(Challenge {
            scheme: scheme.to_string(),
            parameters,
        })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.parameters
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// What a registry said, fit for a terminal: control characters escaped, at most
/// [`MAX_SAID`] characters.
fn printable(text: &str) -> String {
    let mut shown = String::new();
    for (count, c) in text.chars().enumerate() {
        if count == MAX_SAID {
            shown.push('…');
            break;
        }
        if c.is_control() {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_with_quoted_and_bare_values() {
        let challenge = Challenge::parse(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        )
        .unwrap();
        assert_eq!(challenge.scheme, "Bearer");
        assert_eq!(challenge.get("realm"), Some("https://auth.example/token"));
        assert_eq!(challenge.get("service"), Some("registry.example"));
        assert_eq!(challenge.get("scope"), Some("repository:a/b:pull,push"));

        let challenge =
            Challenge::parse(r#"Basic realm="a \"quoted\" realm", charset=UTF-8"#).unwrap();
        assert_eq!(challenge.get("realm"), Some(r#"a "quoted" realm"#));
        assert_eq!(challenge.get("charset"), Some("UTF-8"));
        assert_eq!(Challenge::parse("Basic").unwrap().parameters, vec![]);

        for malformed in [
            "",
            r#"Bearer realm="unterminated"#,
            "Bearer realm",
            r#"Bearer realm="a" junk"#,
            "Be@rer realm=x",
        ] {
            assert_eq!(Challenge::parse(malformed), None, "{malformed:?}");
        }
    }

    #[test]
    fn plain_http_goes_to_the_loopback_only_unless_insecure() {
        let url = |text: &str| Url::parse(text).unwrap();
        for loopback in [
            "http://127.0.0.1:5000/v2/",
            "http://127.8.9.10/v2/",
            "http://localhost:5000/v2/",
            "http://[::1]:5000/v2/",
        ] {
            assert_eq!(Transport::PlainHttpLoopback.refuses(&url(loopback)), None);
        }
        let why = Transport::PlainHttpLoopback
            .refuses(&url("http://10.0.0.1:5000/v2/"))
            .unwrap();
        assert!(why.contains("plain HTTP off the loopback"), "{why}");
        assert!(
            Transport::PlainHttpLoopback
                .refuses(&url("http://localhost.example/v2/"))
                .is_some()
        );
        assert_eq!(
            Transport::PlainHttpInsecure.refuses(&url("http://10.0.0.1:5000/v2/")),
            None
        );
        assert!(
            Transport::Https
                .refuses(&url("http://127.0.0.1/v2/"))
                .unwrap()
                .contains("reached over HTTPS"),
            "a redirect never downgrades HTTPS"
        );
        assert_eq!(Transport::Https.refuses(&url("https://10.0.0.1/")), None);
        assert!(
            Transport::PlainHttpInsecure
                .refuses(&url("file:///etc/passwd"))
                .is_some()
        );
    }

    #[test]
    fn what_a_registry_says_is_shown_escaped_and_short() {
        assert_eq!(printable("denied\x1b[2J\n"), "denied\\u{1b}[2J\\n");
        let long = "x".repeat(1000);
        assert_eq!(printable(&long).chars().count(), MAX_SAID + 1);
    }
}

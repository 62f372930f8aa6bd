//! `accelhost pull` against a hostile registry of the test's own, on 127.0.0.1: answers
//! without end (manifests, error bodies, signature manifests, layers, token answers), a
//! registry that trickles or goes silent, sizes and digests that lie, redirect loops and
//! redirects off the loopback. Each pull must end within its bound with an error that names
//! what happened, stay under [`PEAK_RSS_KIB`], and leave nothing pinned or half-written in the
//! store. Also: the store refused when another user owns it or others can write it (before
//! the registry is asked anything), a planted symlink replaced rather than followed, a bearer
//! token service spoken, and `pull --config` checking signatures with the config's own keys.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use accelhost::store::{OciReference, Store, StoreError};
use accelhost_oci::{
    KeyAlgorithm, OCI_CONFIG_MEDIA_TYPE, OCI_MANIFEST_MEDIA_TYPE, SIGNATURE_ANNOTATION,
    SIMPLE_SIGNING_MEDIA_TYPE, SigningKey, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
    sha256_digest, signature_tag,
};

use crate::peak_rss::{self, Measured};
use crate::support::harness::{Outcome, Trial};
use crate::support::scratch_dir;

const ACCELHOST: &str = env!("CARGO_BIN_EXE_accelhost");

/// The most a pull's process may hold at its peak, whatever the registry sends, in KiB: the
/// CLI itself and the largest answer a pull keeps (a 4 MiB manifest, as it grows), with room
/// to spare. Measured here: 24 MiB for an honest pull, 29 MiB for an endless manifest cut at
/// its cap; without the caps, an endless manifest passes 1 GiB.
const PEAK_RSS_KIB: u64 = 64 * 1024;
/// The longest any of these pulls may take: the slowest ends at the rate floor's 10 s grace.
const PULL_WITHIN: Duration = Duration::from_secs(25);
/// When the watchdog kills a pull that did not end (the test then fails on its time).
const KILL_AFTER: Duration = Duration::from_secs(90);
/// The repository the registry serves.
const REPOSITORY: &str = "plugins/hostile";

/// This file's trials, run by tests/suite_cli_trials.rs.
pub fn trials() -> Vec<Trial> {
    vec![
        Trial {
            name: "registry_a_manifest_or_error_answer_without_end_is_cut_at_its_cap",
            run: a_manifest_or_error_answer_without_end_is_cut_at_its_cap,
        },
        Trial {
            name: "registry_a_signature_manifest_without_end_is_cut_and_pins_nothing",
            run: a_signature_manifest_without_end_is_cut_and_pins_nothing,
        },
        Trial {
            name: "registry_a_registry_that_trickles_is_dropped_at_the_rate_floor",
            run: a_registry_that_trickles_is_dropped_at_the_rate_floor,
        },
        Trial {
            name: "registry_a_registry_that_goes_silent_is_dropped_at_the_pull_timeout",
            run: a_registry_that_goes_silent_is_dropped_at_the_pull_timeout,
        },
        Trial {
            name: "registry_a_layer_that_lies_about_its_size_is_refused_while_it_streams",
            run: a_layer_that_lies_about_its_size_is_refused_while_it_streams,
        },
        Trial {
            name: "registry_wrong_digests_are_refused",
            run: wrong_digests_are_refused,
        },
        Trial {
            name: "registry_redirects_that_loop_or_leave_the_loopback_are_refused",
            run: redirects_that_loop_or_leave_the_loopback_are_refused,
        },
        Trial {
            name: "registry_a_token_service_is_spoken_and_its_answer_bounded",
            run: a_token_service_is_spoken_and_its_answer_bounded,
        },
        Trial {
            name: "registry_plain_http_goes_off_the_loopback_only_when_asked_as_insecure",
            run: plain_http_goes_off_the_loopback_only_when_asked_as_insecure,
        },
        Trial {
            name: "registry_a_store_others_can_write_is_refused_and_a_planted_link_replaced",
            run: a_store_others_can_write_is_refused_and_a_planted_link_replaced,
        },
        Trial {
            name: "registry_a_store_another_user_owns_is_refused_before_the_registry_is_asked",
            run: a_store_another_user_owns_is_refused_before_the_registry_is_asked,
        },
        Trial {
            name: "registry_pull_with_a_config_checks_signatures_with_the_configs_own_keys",
            run: pull_with_a_config_checks_signatures_with_the_configs_own_keys,
        },
        Trial {
            name: "registry_an_honest_registry_is_pulled_well_under_the_bounds",
            run: an_honest_registry_is_pulled_well_under_the_bounds,
        },
    ]
}

/// How the registry answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attack {
    /// The artifact as it is, and its signature when it has one.
    Honest,
    /// The manifest as a chunked body that never ends.
    EndlessManifest,
    /// A 500 whose body never ends.
    EndlessErrorBody,
    /// An honest artifact whose signature manifest never ends.
    EndlessSignatureManifest,
    /// The manifest's true length announced, then a byte every 300 ms.
    TrickledManifest,
    /// The manifest's head, then silence.
    SilentAfterHead,
    /// The layer as a chunked body that never ends (its descriptor says a few bytes).
    EndlessLayer,
    /// The layer with a Content-Length other than its descriptor's size.
    LyingContentLength,
    /// A manifest whose layer descriptor claims a terabyte.
    HugeLayerDescriptor,
    /// The layer's bytes changed, its size kept.
    WrongLayerBytes,
    /// The manifest served under a Docker-Content-Digest it does not have.
    WrongManifestDigest,
    /// The manifest redirects to itself.
    RedirectLoop,
    /// The manifest redirects to plain HTTP off the loopback.
    RedirectOffLoopback,
    /// Every request needs a bearer token from the registry's token service, which answers.
    TokenService,
    /// The token service's answer never ends.
    EndlessToken,
}

/// A wasm OCI artifact, as the registry serves it.
struct Artifact {
    manifest: Vec<u8>,
    digest: String,
    layer: Vec<u8>,
    layer_digest: String,
    /// Every blob by digest: config, layer, and the signature's payload and config.
    blobs: BTreeMap<String, Vec<u8>>,
    /// cosign's signature manifest, when the artifact is signed.
    signature_manifest: Option<Vec<u8>>,
}

impl Artifact {
    /// An artifact of a small component whose layer descriptor states `layer_size`, signed
    /// by `key` (for `address`'s repository) when one is given.
    fn new(address: &str, layer_size: Option<u64>, key: Option<&SigningKey>) -> Artifact {
        let layer = b"\0asm\x0d\x00\x01\x00 a component, as far as a pull looks".to_vec();
        let layer_digest = sha256_digest(&layer);
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "wasm", "os": "wasip2", "layerDigests": [layer_digest],
        }))
        .unwrap();
        let manifest = image_manifest(
            descriptor(WASM_CONFIG_MEDIA_TYPE, &config),
            descriptor_sized(
                WASM_LAYER_MEDIA_TYPE,
                &layer_digest,
                layer_size.unwrap_or(layer.len() as u64),
            ),
        );
        let digest = sha256_digest(&manifest);
        let mut blobs = BTreeMap::from([
            (sha256_digest(&config), config),
            (layer_digest.clone(), layer.clone()),
        ]);
        let signature_manifest = key.map(|key| {
            let payload = accelhost::trust::simple_signing_payload(
                &format!("{address}/{REPOSITORY}"),
                &digest,
            );
            let mut layer = descriptor(SIMPLE_SIGNING_MEDIA_TYPE, &payload);
            layer["annotations"] =
                serde_json::json!({ SIGNATURE_ANNOTATION: key.sign_base64(&payload) });
            let config = b"{}".to_vec();
            let signature = image_manifest(descriptor(OCI_CONFIG_MEDIA_TYPE, &config), layer);
            blobs.insert(sha256_digest(&payload), payload);
            blobs.insert(sha256_digest(&config), config);
            signature
        });
        Artifact {
            manifest,
            digest,
            layer,
            layer_digest,
            blobs,
            signature_manifest,
        }
    }
}

fn descriptor(media_type: &str, bytes: &[u8]) -> serde_json::Value {
    descriptor_sized(media_type, &sha256_digest(bytes), bytes.len() as u64)
}

fn descriptor_sized(media_type: &str, digest: &str, size: u64) -> serde_json::Value {
    serde_json::json!({"mediaType": media_type, "digest": digest, "size": size})
}

fn image_manifest(config: serde_json::Value, layer: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2, "mediaType": OCI_MANIFEST_MEDIA_TYPE,
        "config": config, "layers": [layer],
    }))
    .unwrap()
}

/// The hostile registry: a thread accepting on 127.0.0.1, a thread per connection, each
/// answer ended by a closed connection. Stopped (and its endless answers cut) when dropped.
struct HostileRegistry {
    address: String,
    requests: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

/// One request's head.
struct Request {
    path: String,
    headers: Vec<(String, String)>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl HostileRegistry {
    fn start(attack: Attack, key: Option<&SigningKey>) -> HostileRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let layer_size = (attack == Attack::HugeLayerDescriptor).then_some(1 << 40);
        let artifact = Arc::new(Artifact::new(&address, layer_size, key));
        let requests = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (counted, stopped, at) = (requests.clone(), stop.clone(), address.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (artifact, counted, stopped, at) = (
                    artifact.clone(),
                    counted.clone(),
                    stopped.clone(),
                    at.clone(),
                );
                std::thread::spawn(move || {
                    let _ = serve(stream, attack, &artifact, &counted, &stopped, &at);
                });
            }
        });
        HostileRegistry {
            address,
            requests,
            stop,
        }
    }

    fn reference(&self, tag: &str) -> String {
        format!("oci://{}/{REPOSITORY}:{tag}", self.address)
    }
}

impl Drop for HostileRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.address);
    }
}

/// Answers one connection's request as `attack` says.
fn serve(
    stream: TcpStream,
    attack: Attack,
    artifact: &Artifact,
    requests: &AtomicUsize,
    stop: &AtomicBool,
    address: &str,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    requests.fetch_add(1, Ordering::SeqCst);
    let request = Request { path, headers };
    let mut out = stream;
    let manifests = format!("/v2/{REPOSITORY}/manifests/");
    let blobs = format!("/v2/{REPOSITORY}/blobs/");

    if request.path.starts_with("/token") {
        if attack == Attack::EndlessToken {
            return endless(&mut out, "200 OK", "application/json", stop);
        }
        return answer(
            &mut out,
            "200 OK",
            &[("Content-Type", "application/json")],
            br#"{"token": "a-token-the-registry-made"}"#,
        );
    }
    if matches!(attack, Attack::TokenService | Attack::EndlessToken)
        && request.header("authorization") != Some("Bearer a-token-the-registry-made")
    {
        let challenge = format!(
            r#"Bearer realm="http://{address}/token",service="hostile",scope="repository:{REPOSITORY}:pull""#
        );
        return answer(
            &mut out,
            "401 Unauthorized",
            &[("WWW-Authenticate", &challenge)],
            br#"{"errors": [{"code": "UNAUTHORIZED", "message": "a token, please"}]}"#,
        );
    }
    if let Some(reference) = request.path.strip_prefix(&manifests) {
        let signature = signature_tag(&artifact.digest);
        if reference == signature {
            if attack == Attack::EndlessSignatureManifest {
                return endless(&mut out, "200 OK", OCI_MANIFEST_MEDIA_TYPE, stop);
            }
            return match &artifact.signature_manifest {
                Some(bytes) => manifest_answer(&mut out, bytes, &sha256_digest(bytes)),
                None => answer(
                    &mut out,
                    "404 Not Found",
                    &[("Content-Type", "application/json")],
                    br#"{"errors": [{"code": "MANIFEST_UNKNOWN", "message": "no"}]}"#,
                ),
            };
        }
        return match attack {
            Attack::EndlessManifest => endless(&mut out, "200 OK", OCI_MANIFEST_MEDIA_TYPE, stop),
            Attack::EndlessErrorBody => {
                endless(&mut out, "500 Internal Server Error", "text/plain", stop)
            }
            Attack::TrickledManifest => {
                write!(
                    out,
                    "HTTP/1.1 200 OK\r\nContent-Type: {OCI_MANIFEST_MEDIA_TYPE}\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    artifact.manifest.len()
                )?;
                for byte in &artifact.manifest {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    out.write_all(&[*byte])?;
                    std::thread::sleep(Duration::from_millis(300));
                }
                Ok(())
            }
            Attack::SilentAfterHead => {
                write!(
                    out,
                    "HTTP/1.1 200 OK\r\nContent-Type: {OCI_MANIFEST_MEDIA_TYPE}\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    artifact.manifest.len()
                )?;
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(100));
                    // Ends when the client has gone: a read sees its close.
                    out.set_nonblocking(true)?;
                    let mut byte = [0u8];
                    if matches!(out.peek(&mut byte), Ok(0)) {
                        break;
                    }
                }
                Ok(())
            }
            Attack::WrongManifestDigest => {
                manifest_answer(&mut out, &artifact.manifest, &sha256_digest(b"another"))
            }
            Attack::RedirectLoop => {
                let location = request.path.clone();
                answer(&mut out, "302 Found", &[("Location", &location)], b"")
            }
            Attack::RedirectOffLoopback => answer(
                &mut out,
                "307 Temporary Redirect",
                &[("Location", "http://10.20.30.40:5000/v2/elsewhere")],
                b"",
            ),
            _ => manifest_answer(&mut out, &artifact.manifest, &artifact.digest),
        };
    }
    if let Some(digest) = request.path.strip_prefix(&blobs) {
        if digest == artifact.layer_digest {
            match attack {
                Attack::EndlessLayer => {
                    return endless(&mut out, "200 OK", "application/octet-stream", stop);
                }
                Attack::LyingContentLength => {
                    let mut longer = artifact.layer.clone();
                    longer.extend_from_slice(b"and more");
                    return answer(&mut out, "200 OK", &[], &longer);
                }
                Attack::WrongLayerBytes => {
                    let mut changed = artifact.layer.clone();
                    *changed.last_mut().unwrap() ^= 1;
                    return answer(&mut out, "200 OK", &[], &changed);
                }
                _ => {}
            }
        }
        return match artifact.blobs.get(digest) {
            Some(bytes) => answer(&mut out, "200 OK", &[], bytes),
            None => answer(&mut out, "404 Not Found", &[], b""),
        };
    }
    answer(&mut out, "404 Not Found", &[], b"")
}

fn manifest_answer(out: &mut TcpStream, bytes: &[u8], digest: &str) -> std::io::Result<()> {
    answer(
        out,
        "200 OK",
        &[
            ("Content-Type", OCI_MANIFEST_MEDIA_TYPE),
            ("Docker-Content-Digest", digest),
        ],
        bytes,
    )
}

fn answer(
    out: &mut TcpStream,
    status: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<()> {
    write!(out, "HTTP/1.1 {status}\r\n")?;
    for (name, value) in headers {
        write!(out, "{name}: {value}\r\n")?;
    }
    write!(
        out,
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    out.write_all(body)?;
    out.flush()
}

/// A chunked body of JSON-looking text that ends only when the client goes (or the
/// registry stops, or after 4 GiB).
fn endless(
    out: &mut TcpStream,
    status: &str,
    content_type: &str,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    )?;
    let chunk = [b' '; 64 * 1024];
    out.write_all(b"1\r\n{\r\n")?;
    for _ in 0..65_536 {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        write!(out, "{:x}\r\n", chunk.len())?;
        out.write_all(&chunk)?;
        out.write_all(b"\r\n")?;
    }
    Ok(())
}

/// Checks on how a pull ended.
trait PullEnded {
    /// Asserts that the pull failed within [`PULL_WITHIN`], under [`PEAK_RSS_KIB`], saying
    /// each of `said`.
    fn refused(&self, said: &[&str]);
    /// Asserts that it ended within [`PULL_WITHIN`], under [`PEAK_RSS_KIB`].
    fn bounded(&self);
}

impl PullEnded for Measured {
    fn refused(&self, said: &[&str]) {
        assert_eq!(self.code, Some(1), "{}", self.report());
        for words in said {
            assert!(
                self.stderr.contains(words),
                "no `{words}` in:\n{}",
                self.report()
            );
        }
        self.bounded();
    }

    fn bounded(&self) {
        assert!(self.took < PULL_WITHIN, "{}", self.report());
        assert!(
            self.peak_rss_kib < PEAK_RSS_KIB,
            "peak RSS over {PEAK_RSS_KIB} KiB: {}",
            self.report()
        );
    }
}

/// Runs `accelhost <args>` in `dir` (its HOME) with no credentials or store of the user's,
/// and measures its time and peak RSS; a pull that does not end is killed after
/// [`KILL_AFTER`].
fn accelhost(dir: &Path, args: &[&str]) -> Measured {
    peak_rss::measure(Path::new(ACCELHOST), args, KILL_AFTER, |command| {
        crate::registry::away_from_the_user(command, dir);
    })
}

/// `pull REFERENCE --plain-http --store STORE` and `extra`, in a fresh folder.
fn pull(registry: &HostileRegistry, extra: &[&str]) -> (Measured, PathBuf) {
    let dir = scratch_dir("hostile-registry");
    let store = dir.join("store");
    let reference = registry.reference("1.0");
    let mut args = vec![
        "pull",
        reference.as_str(),
        "--plain-http",
        "--store",
        store.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    (accelhost(&dir, &args), store)
}

/// Asserts that `store` pins nothing and holds no temporary file: nothing a load would
/// take for pulled.
fn nothing_pinned(store: &Path, reference: &str) {
    let reference: OciReference = reference.parse().unwrap();
    let err = Store::at(store).resolve(&reference).unwrap_err();
    assert!(matches!(err, StoreError::NotPulled { .. }), "{err}");
    let tags = store.join("tags");
    let mut pinned = Vec::new();
    let mut stray = Vec::new();
    walk(store, &mut |path| {
        if path.starts_with(&tags) {
            pinned.push(path.to_path_buf());
        }
        if path.file_name().unwrap().to_string_lossy().starts_with('.') {
            stray.push(path.to_path_buf());
        }
    });
    assert!(pinned.is_empty(), "pinned: {pinned:?}");
    assert!(stray.is_empty(), "left half-written: {stray:?}");
}

fn walk(dir: &Path, each: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, each);
        } else {
            each(&path);
        }
    }
}

fn a_manifest_or_error_answer_without_end_is_cut_at_its_cap() -> Outcome {
    let registry = HostileRegistry::start(Attack::EndlessManifest, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&[
        "manifest: the registry sent",
        "more than a manifest may be (4096 KiB at most)",
    ]);
    nothing_pinned(&store, &registry.reference("1.0"));

    let registry = HostileRegistry::start(Attack::EndlessErrorBody, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&["manifest: HTTP 500 Internal Server Error from http://127.0.0.1:"]);
    assert!(
        ended.stderr.len() < 2048,
        "what the registry said is cut short: {} bytes",
        ended.stderr.len()
    );
    nothing_pinned(&store, &registry.reference("1.0"));
    Outcome::Passed
}

fn a_signature_manifest_without_end_is_cut_and_pins_nothing() -> Outcome {
    let registry = HostileRegistry::start(Attack::EndlessSignatureManifest, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&[
        "signature: the registry sent",
        "more than a manifest may be",
    ]);
    nothing_pinned(&store, &registry.reference("1.0"));
    Outcome::Passed
}

fn a_registry_that_trickles_is_dropped_at_the_rate_floor() -> Outcome {
    let registry = HostileRegistry::start(Attack::TrickledManifest, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&[
        "manifest: the registry sent",
        "slower than the floor of 4096 bytes a second",
        "(--min-bytes-per-sec lowers the floor)",
    ]);
    assert!(
        ended.took >= Duration::from_secs(10),
        "the floor applies after its grace: {:?}",
        ended.took
    );
    nothing_pinned(&store, &registry.reference("1.0"));
    Outcome::Passed
}

fn a_registry_that_goes_silent_is_dropped_at_the_pull_timeout() -> Outcome {
    let registry = HostileRegistry::start(Attack::SilentAfterHead, None);
    let (ended, store) = pull(&registry, &["--timeout", "3"]);
    ended.refused(&[
        "manifest: not done within the 3 s a pull or push may take (--timeout raises it)",
    ]);
    assert!(ended.took < Duration::from_secs(8), "{}", ended.report());
    nothing_pinned(&store, &registry.reference("1.0"));
    Outcome::Passed
}

fn a_layer_that_lies_about_its_size_is_refused_while_it_streams() -> Outcome {
    let registry = HostileRegistry::start(Attack::EndlessLayer, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&["blob (layer sha256:", "where the manifest says 44"]);
    nothing_pinned(&store, &registry.reference("1.0"));

    let registry = HostileRegistry::start(Attack::LyingContentLength, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&["the registry served 52 bytes where the manifest says 44"]);
    nothing_pinned(&store, &registry.reference("1.0"));

    let registry = HostileRegistry::start(Attack::HugeLayerDescriptor, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&[
        "is 1099511627776 bytes, more than the 128 MiB allowed",
        "(--max-module-mib raises the limit)",
    ]);
    assert_eq!(
        registry.requests.load(Ordering::SeqCst),
        2,
        "the manifest and the config asked for; the layer refused before it is"
    );
    nothing_pinned(&store, &registry.reference("1.0"));
    Outcome::Passed
}

fn wrong_digests_are_refused() -> Outcome {
    let registry = HostileRegistry::start(Attack::WrongLayerBytes, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&["layer sha256:", "has digest sha256:"]);
    nothing_pinned(&store, &registry.reference("1.0"));

    let registry = HostileRegistry::start(Attack::WrongManifestDigest, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&[&format!("manifest {}", sha256_digest(b"another"))]);
    nothing_pinned(&store, &registry.reference("1.0"));
    Outcome::Passed
}

fn redirects_that_loop_or_leave_the_loopback_are_refused() -> Outcome {
    let registry = HostileRegistry::start(Attack::RedirectLoop, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&["more than 5 redirects"]);
    assert_eq!(registry.requests.load(Ordering::SeqCst), 6);
    nothing_pinned(&store, &registry.reference("1.0"));

    let registry = HostileRegistry::start(Attack::RedirectOffLoopback, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&[
        "a redirect to http://10.20.30.40:5000/v2/elsewhere is plain HTTP off the loopback",
    ]);
    assert!(ended.took < Duration::from_secs(5), "{}", ended.report());
    nothing_pinned(&store, &registry.reference("1.0"));
    Outcome::Passed
}

fn a_token_service_is_spoken_and_its_answer_bounded() -> Outcome {
    let registry = HostileRegistry::start(Attack::TokenService, None);
    let (ended, store) = pull(&registry, &[]);
    assert_eq!(ended.code, Some(0), "{}", ended.report());
    assert!(ended.stdout.contains("unsigned"), "{}", ended.report());
    let reference: OciReference = registry.reference("1.0").parse().unwrap();
    let pinned = Store::at(&store).resolve(&reference).unwrap();
    assert!(pinned.starts_with("sha256:"));

    let registry = HostileRegistry::start(Attack::EndlessToken, None);
    let (ended, store) = pull(&registry, &[]);
    ended.refused(&[
        "manifest: token from http://127.0.0.1:",
        "more than a token answer may be (64 KiB at most)",
    ]);
    nothing_pinned(&store, &registry.reference("1.0"));
    Outcome::Passed
}

fn plain_http_goes_off_the_loopback_only_when_asked_as_insecure() -> Outcome {
    let dir = scratch_dir("plain-http");
    let store = dir.join("store");
    let far = "oci://10.20.30.40:5000/plugins/p:1";
    let ended = accelhost(
        &dir,
        &[
            "pull",
            far,
            "--plain-http",
            "--store",
            store.to_str().unwrap(),
        ],
    );
    ended.refused(&["http://10.20.30.40:5000/v2/plugins/p/ is plain HTTP off the loopback"]);
    assert!(ended.took < Duration::from_secs(5), "{}", ended.report());

    let ended = accelhost(&dir, &["pull", far, "--insecure-http"]);
    assert_eq!(ended.code, Some(2), "{}", ended.report());
    assert!(
        ended.stderr.contains("--plain-http"),
        "--insecure-http goes with --plain-http: {}",
        ended.report()
    );
    Outcome::Passed
}

fn a_store_others_can_write_is_refused_and_a_planted_link_replaced() -> Outcome {
    use std::os::unix::fs::PermissionsExt;
    let registry = HostileRegistry::start(Attack::Honest, None);
    let dir = scratch_dir("store-owner");
    let pull_into = |store: &Path| pull_into(&dir, &registry, store);

    let open = dir.join("open-store");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    pull_into(&open).refused(&["open-store is open to others (mode 777)"]);

    assert_eq!(
        registry.requests.load(Ordering::SeqCst),
        0,
        "the registry is not asked anything for a store that is refused"
    );

    // A symlink planted where the tag will be written is replaced, and what it pointed at
    // is left as it was.
    let store = dir.join("store");
    let tag = store.join(format!("tags/{}/{REPOSITORY}/_tags/1.0", registry.address));
    std::fs::create_dir_all(tag.parent().unwrap()).unwrap();
    for folder in [
        store.clone(),
        store.join("tags"),
        store.join(format!("tags/{}", registry.address)),
        store.join(format!("tags/{}/plugins", registry.address)),
        store.join(format!("tags/{}/{REPOSITORY}", registry.address)),
        tag.parent().unwrap().to_path_buf(),
    ] {
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let victim = dir.join("victim");
    std::fs::write(&victim, "left alone").unwrap();
    std::os::unix::fs::symlink(&victim, &tag).unwrap();
    let ended = pull_into(&store);
    assert_eq!(ended.code, Some(0), "{}", ended.report());
    assert!(registry.requests.load(Ordering::SeqCst) > 0);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "left alone");
    assert!(std::fs::symlink_metadata(&tag).unwrap().is_file());
    let mode = std::fs::metadata(&store).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    Outcome::Passed
}

/// `pull` of the registry's `:1.0` into `store`, in `dir`.
fn pull_into(dir: &Path, registry: &HostileRegistry, store: &Path) -> Measured {
    let reference = registry.reference("1.0");
    accelhost(
        dir,
        &[
            "pull",
            &reference,
            "--plain-http",
            "--store",
            store.to_str().unwrap(),
        ],
    )
}

fn a_store_another_user_owns_is_refused_before_the_registry_is_asked() -> Outcome {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Outcome::Skipped("a folder of a second uid can be made only by root".into());
    }
    let registry = HostileRegistry::start(Attack::Honest, None);
    let dir = scratch_dir("store-uid");
    let theirs = dir.join("their-store");
    std::fs::create_dir(&theirs).unwrap();
    std::os::unix::fs::chown(&theirs, Some(54321), Some(54321)).unwrap();
    pull_into(&dir, &registry, &theirs)
        .refused(&["their-store is owned by uid 54321, not by this user"]);
    assert_eq!(
        registry.requests.load(Ordering::SeqCst),
        0,
        "the registry is not asked anything for a store that is refused"
    );
    // Their store's folder below a folder of this user's: each folder on the way is checked.
    let mine = dir.join("store");
    std::fs::create_dir(&mine).unwrap();
    let blobs = mine.join("blobs");
    std::fs::create_dir(&blobs).unwrap();
    std::os::unix::fs::chown(&blobs, Some(54321), Some(54321)).unwrap();
    pull_into(&dir, &registry, &mine).refused(&["store/blobs is owned by uid 54321"]);
    assert_eq!(std::fs::read_dir(&blobs).unwrap().count(), 0);
    nothing_pinned(&mine, &registry.reference("1.0"));
    Outcome::Passed
}

fn pull_with_a_config_checks_signatures_with_the_configs_own_keys() -> Outcome {
    let (vendor_private, vendor_public) = SigningKey::generate(KeyAlgorithm::Ed25519).unwrap();
    let (_, other_public) = SigningKey::generate(KeyAlgorithm::Ed25519).unwrap();
    let vendor = SigningKey::from_pem(&vendor_private).unwrap();
    let signed = HostileRegistry::start(Attack::Honest, Some(&vendor));
    let unsigned = HostileRegistry::start(Attack::Honest, None);
    let dir = scratch_dir("pull-config");
    std::fs::write(dir.join("vendor.pub"), &vendor_public).unwrap();
    std::fs::write(dir.join("other.pub"), &other_public).unwrap();
    let pull_config = |name: &str, trust: &str, plugin: &str| {
        let config = dir.join(format!("{name}.json"));
        std::fs::write(
            &config,
            format!(
                r#"{{"store": "{name}-store", "trust": {trust},
                    "plugins": [{{"name": "p", {plugin}}}]}}"#
            ),
        )
        .unwrap();
        let ended = accelhost(
            &dir,
            &["--config", config.to_str().unwrap(), "pull", "--plain-http"],
        );
        (ended, dir.join(format!("{name}-store")))
    };
    let module =
        |registry: &HostileRegistry| format!(r#""module": "{}""#, registry.reference("1.0"));

    let (ended, store) = pull_config(
        "wrong-key",
        r#"{"keys": {"other": "other.pub"}}"#,
        &module(&signed),
    );
    ended.refused(&["refused, the tag was not pinned"]);
    nothing_pinned(&store, &signed.reference("1.0"));

    let (ended, _) = pull_config(
        "right-key",
        r#"{"keys": {"other": "other.pub", "vendor": "vendor.pub"}}"#,
        &module(&signed),
    );
    assert_eq!(ended.code, Some(0), "{}", ended.report());
    assert!(
        ended.stdout.contains("signed by vendor (sha256:"),
        "{}",
        ended.report()
    );

    let (ended, store) = pull_config(
        "signed-by",
        r#"{"keys": {"other": "other.pub", "vendor": "vendor.pub"}}"#,
        &format!(r#"{}, "signed_by": ["other"]"#, module(&signed)),
    );
    ended.refused(&["refused, the tag was not pinned"]);
    nothing_pinned(&store, &signed.reference("1.0"));

    let (ended, _) = pull_config(
        "unsigned-allowed",
        r#"{"keys": {"vendor": "vendor.pub"}}"#,
        &module(&unsigned),
    );
    assert_eq!(ended.code, Some(0), "{}", ended.report());
    assert!(ended.stdout.contains("unsigned"), "{}", ended.report());

    let (ended, store) = pull_config(
        "unsigned-refused",
        r#"{"keys": {"vendor": "vendor.pub"}, "require_signatures": true}"#,
        &module(&unsigned),
    );
    ended.refused(&["it is not signed"]);
    nothing_pinned(&store, &unsigned.reference("1.0"));
    Outcome::Passed
}

fn an_honest_registry_is_pulled_well_under_the_bounds() -> Outcome {
    let registry = HostileRegistry::start(Attack::Honest, None);
    let (ended, store) = pull(&registry, &[]);
    assert_eq!(ended.code, Some(0), "{}", ended.report());
    ended.bounded();
    let reference: OciReference = registry.reference("1.0").parse().unwrap();
    assert!(Store::at(&store).resolve(&reference).is_ok());
    Outcome::Passed
}

//! Plugins through a real OCI registry (Debian's `docker-registry`, on 127.0.0.1) with the
//! built commands, as an author and an operator use them: `accelhost-sdk keygen` and `push`
//! (signed), `accelhost pull` by tag and by digest, verified with the right key, refused with a
//! wrong key, unsigned, or a tampered layer, and a tag pinned until it is pulled again; and
//! `accelhost-sdk sign` checked by openssl, and openssl's keys and signatures (P-256 and
//! Ed25519) trusted by accelhost. Without `docker-registry` (or `openssl`) a trial
//! is reported ignored with the reason, or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1`.

use crate::registry::{self, Registry};
use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use accelhost::store::{OciReference, Store};
use accelhost::trust::{PublicKey, TrustedKeys};
use support::harness::{Outcome, Trial};
use support::scratch_dir;

const ACCELHOST: &str = env!("CARGO_BIN_EXE_accelhost");

/// This file's trials, run by tests/suite_cli_trials.rs.
pub fn trials() -> Vec<Trial> {
    vec![
        Trial {
            name: "oci_a_signed_push_pulls_verified_by_tag_and_digest_and_a_wrong_key_or_tampered_layer_is_refused",
            run: signed_push_and_pulls,
        },
        Trial {
            name: "oci_a_pull_refuses_what_is_not_a_wasm_artifact_or_too_large",
            run: not_a_wasm_artifact,
        },
        Trial {
            name: "oci_publish_helper_leaves_a_pinned_verified_artifact_in_the_store",
            run: publish_helper,
        },
        Trial {
            name: "sdk_sign_writes_what_openssl_verifies_and_reads_what_openssl_signs",
            run: openssl_interop,
        },
    ]
}

/// Runs `program` with `args` in `dir`, with no registry credentials, store or config of the
/// user's (HOME is `dir`).
fn run(program: &Path, dir: &Path, args: &[&str]) -> Output {
    registry::away_from_the_user(Command::new(program).args(args), dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|err| panic!("running {}: {err}", program.display()))
}

/// Runs and expects success; its stdout.
fn ok(program: &Path, dir: &Path, args: &[&str]) -> String {
    let out = run(program, dir, args);
    assert!(out.status.success(), "{args:?}: {}", support::report(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs and expects failure (exit 1); its stderr.
fn refused(program: &Path, dir: &Path, args: &[&str]) -> String {
    let out = run(program, dir, args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{args:?}: {}",
        support::report(&out)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The value after `label ` on a line of `output` (`  manifest sha256:...`).
fn field(output: &str, label: &str) -> String {
    output
        .split([' ', '\n', '(', ')', ','])
        .skip_while(|word| *word != label)
        .nth(1)
        .unwrap_or_else(|| panic!("no `{label}` in:\n{output}"))
        .to_string()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// What `push` printed: the manifest's and the layer's digests.
fn pushed(output: &str) -> (String, String) {
    (field(output, "manifest"), field(output, "layer"))
}

fn signed_push_and_pulls() -> Outcome {
    if let Some(why) = registry::missing() {
        return Outcome::Skipped(why);
    }
    let dir = scratch_dir("oci-e2e");
    let registry = Registry::start(&dir);
    let sdk = crate::sdk_quickstart::sdk_tool();
    let accelhost = Path::new(ACCELHOST);
    let dfl = support::guest("accelhost_plugin_dfl");
    let dfl_bytes = std::fs::read(&dfl).unwrap();

    // The author: a key pair, and the plugin pushed signed.
    let author = dir.join("author");
    let other = dir.join("other");
    ok(&sdk, &dir, &["keygen", "--out", path(&author)]);
    ok(
        &sdk,
        &dir,
        &["keygen", "--out", path(&other), "--algorithm", "ed25519"],
    );
    let (author_key, author_pub) = (dir.join("author.key"), dir.join("author.pub"));
    let other_pub = dir.join("other.pub");
    let tagged = registry.reference("plugins/dfl:1.0");
    let shown = tagged.to_string();
    let out = ok(
        &sdk,
        &dir,
        &[
            "push",
            path(&dfl),
            &shown,
            "--key",
            path(&author_key),
            "--plain-http",
        ],
    );
    let (manifest, layer) = pushed(&out);
    assert!(
        out.contains(&format!("signed: :sha256-{}.sig", &manifest[7..])),
        "{out}"
    );
    let fingerprint = PublicKey::read(&author_pub)
        .unwrap()
        .fingerprint()
        .to_string();

    // The operator: pulled by tag, verified with the author's key.
    let by_tag = dir.join("store-tag");
    let pull = |store: &Path, reference: &str, keys: &[&Path]| {
        let mut args = vec!["pull", reference, "--plain-http", "--store", path(store)];
        for key in keys {
            args.extend(["--key", path(key)]);
        }
        run(accelhost, &dir, &args)
    };
    let out = pull(&by_tag, &shown, &[&author_pub]);
    assert!(out.status.success(), "{}", support::report(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "{shown}  {manifest}  {} bytes  signed by {} ({fingerprint})\n",
            dfl_bytes.len(),
            path(&author_pub)
        )
    );
    let progress = String::from_utf8_lossy(&out.stderr);
    assert!(
        progress.contains(&format!(
            "pulling layer {layer} ({} bytes)",
            dfl_bytes.len()
        )),
        "{progress}"
    );
    let store = Store::at(&by_tag);
    assert_eq!(store.resolve(&tagged).unwrap(), manifest);
    let artifact = store.artifact(&manifest).unwrap();
    assert_eq!(artifact.layer_digest, layer);
    assert_eq!(std::fs::read(&artifact.layer_path).unwrap(), dfl_bytes);
    assert_eq!(artifact.signatures.len(), 1);

    // By digest, into another store; and with two keys, any one of which verifies.
    let by_digest = registry.reference(&format!("plugins/dfl@{manifest}"));
    let store_digest = dir.join("store-digest");
    let out = pull(
        &store_digest,
        &by_digest.to_string(),
        &[&other_pub, &author_pub],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.starts_with(&format!("{by_digest}  {manifest}  ")),
        "{line}"
    );
    assert!(
        line.contains(&format!("signed by {}", path(&author_pub))),
        "{line}"
    );
    assert_eq!(
        Store::at(&store_digest).resolve(&by_digest).unwrap(),
        manifest
    );

    // A wrong key: refused, naming the reference and the key, and the tag is not pinned.
    let wrong = dir.join("store-wrong");
    let out = pull(&wrong, &shown, &[&other_pub]);
    assert_eq!(out.status.code(), Some(1), "{}", support::report(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "error: {shown}: refused, the tag was not pinned: "
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "does not verify with the key {}",
            path(&other_pub)
        )),
        "{err}"
    );
    assert!(Store::at(&wrong).resolve(&tagged).is_err(), "pinned anyway");

    // Unsigned: refused when a key is asked for, pulled as unsigned when none is.
    let cxl = support::guest("accelhost_plugin_cxl");
    let unsigned = registry.reference("plugins/cxl:1.0");
    let out = ok(
        &sdk,
        &dir,
        &["push", path(&cxl), &unsigned.to_string(), "--plain-http"],
    );
    assert!(out.contains("unsigned (--key KEY signs it)"), "{out}");
    let err = refused(
        accelhost,
        &dir,
        &[
            "pull",
            &unsigned.to_string(),
            "--plain-http",
            "--store",
            path(&wrong),
            "--key",
            path(&author_pub),
        ],
    );
    assert!(
        err.contains("refused, the tag was not pinned: it is not signed"),
        "{err}"
    );
    assert!(Store::at(&wrong).resolve(&unsigned).is_err());
    let out = pull(&wrong, &unsigned.to_string(), &[]);
    assert!(out.status.success(), "{}", support::report(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with(" bytes  unsigned\n"),
        "{}",
        support::report(&out)
    );

    // The tag moves on the registry: the pinned store does not follow until pulled again.
    let xocl = support::guest("accelhost_plugin_xocl");
    let out = ok(
        &sdk,
        &dir,
        &[
            "push",
            path(&xocl),
            &shown,
            "--key",
            path(&author_key),
            "--plain-http",
        ],
    );
    let (moved, moved_layer) = pushed(&out);
    assert_ne!(moved, manifest);
    assert_eq!(store.resolve(&tagged).unwrap(), manifest, "the pin held");

    // Every oci:// module of a config, pulled again into the config's own store.
    let config = dir.join("host.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"store": "store-tag",
                "plugins": [{{"name": "dfl", "module": "{shown}"}},
                            {{"name": "cxl", "module": "{unsigned}"}},
                            {{"name": "xocl", "module": "builtin:xocl"}}]}}"#
        ),
    )
    .unwrap();
    let out = ok(
        accelhost,
        &dir,
        &["--config", path(&config), "pull", "--plain-http"],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with(&format!("{shown}  {moved}  ")),
        "{out}"
    );
    assert!(
        lines[0].ends_with("not verified (1 signature(s) stored; --key checks them)"),
        "{out}"
    );
    assert!(lines[1].starts_with(&format!("{unsigned}  ")), "{out}");
    assert_eq!(
        store.resolve(&tagged).unwrap(),
        moved,
        "pulled again: moved"
    );
    assert_eq!(
        store.resolve(&by_digest).unwrap(),
        manifest,
        "a digest stays"
    );

    // A tampered layer on the registry's disk: refused, naming both digests; not pinned.
    registry.tamper_blob(&moved_layer);
    let fresh = dir.join("store-tampered");
    let err = refused(
        accelhost,
        &dir,
        &["pull", &shown, "--plain-http", "--store", path(&fresh)],
    );
    assert!(
        err.contains(&format!(
            "error: layer {moved_layer} of {shown} has digest sha256:"
        )),
        "{err}"
    );
    assert!(Store::at(&fresh).resolve(&tagged).is_err(), "pinned anyway");

    // Offline: with the registry gone, a config whose module is the pulled tag starts from the
    // store, its signature checked against the config's trust policy.
    drop(registry);
    let offline = |signer: &Path| {
        let config = dir.join("offline.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"store": "store-tag",
                    "trust": {{"keys": {{"vendor": "{}"}}, "require_signatures": true}},
                    "devices": [{{"id": "xocl0", "family": "xocl"}}],
                    "plugins": [{{"name": "xocl", "module": "{shown}",
                                  "grants": {{"devices": ["emu:xocl0"]}}}}]}}"#,
                signer.display()
            ),
        )
        .unwrap();
        run(accelhost, &dir, &["--config", path(&config), "plugins"])
    };
    let out = offline(&author_pub);
    assert!(out.status.success(), "{}", support::report(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("signed by vendor (sha256:") && stdout.contains("running"),
        "{}",
        support::report(&out)
    );
    let out = offline(&other_pub);
    assert_eq!(out.status.code(), Some(3), "{}", support::report(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("does not verify with the key vendor"),
        "{}",
        support::report(&out)
    );
    Outcome::Passed
}

/// A plain HTTP/1.1 request to the registry: the status code, the headers and the body.
fn http(
    address: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP response");
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, head, response[split + 4..].to_vec())
}

/// Uploads `bytes` as a blob of `repository` (a monolithic upload); returns its descriptor.
fn upload(address: &str, repository: &str, media_type: &str, bytes: &[u8]) -> serde_json::Value {
    let digest = accelhost_oci::sha256_digest(bytes);
    let (status, head, _) = http(
        address,
        "POST",
        &format!("/v2/{repository}/blobs/uploads/"),
        &[],
        b"",
    );
    assert_eq!(status, 202, "{head}");
    let location = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(": ")?;
            name.eq_ignore_ascii_case("location").then(|| value.trim())
        })
        .expect("a Location");
    let location = location
        .strip_prefix(&format!("http://{address}"))
        .unwrap_or(location);
    let separator = if location.contains('?') { '&' } else { '?' };
    let (status, head, _) = http(
        address,
        "PUT",
        &format!("{location}{separator}digest={digest}"),
        &[("Content-Type", "application/octet-stream")],
        bytes,
    );
    assert_eq!(status, 201, "{head}");
    serde_json::json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
}

/// Pushes an OCI manifest of `config` and `layers` at `repository:tag`.
fn put_manifest(
    address: &str,
    repository: &str,
    tag: &str,
    config: serde_json::Value,
    layers: Vec<serde_json::Value>,
) {
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": accelhost_oci::OCI_MANIFEST_MEDIA_TYPE,
        "config": config,
        "layers": layers,
    }))
    .unwrap();
    let (status, head, body) = http(
        address,
        "PUT",
        &format!("/v2/{repository}/manifests/{tag}"),
        &[("Content-Type", accelhost_oci::OCI_MANIFEST_MEDIA_TYPE)],
        &manifest,
    );
    assert_eq!(status, 201, "{head}\n{}", String::from_utf8_lossy(&body));
}

fn not_a_wasm_artifact() -> Outcome {
    if let Some(why) = registry::missing() {
        return Outcome::Skipped(why);
    }
    let dir = scratch_dir("oci-layout");
    let registry = Registry::start(&dir);
    let address = registry.address.as_str();
    let wasm = std::fs::read(support::guest("accelhost_plugin_dfl")).unwrap();
    let repository = "plugins/odd";
    let wasm_config = upload(
        address,
        repository,
        accelhost_oci::WASM_CONFIG_MEDIA_TYPE,
        br#"{"architecture": "wasm", "os": "wasip2"}"#,
    );
    let image_config = upload(
        address,
        repository,
        accelhost_oci::OCI_CONFIG_MEDIA_TYPE,
        br#"{"architecture": "amd64", "os": "linux"}"#,
    );
    let layer = upload(
        address,
        repository,
        accelhost_oci::WASM_LAYER_MEDIA_TYPE,
        &wasm,
    );
    let other = upload(
        address,
        repository,
        "application/wasm",
        b"\0asm\x0d\0\x01\0",
    );
    put_manifest(
        address,
        repository,
        "two-layers",
        wasm_config.clone(),
        vec![layer.clone(), other],
    );
    put_manifest(
        address,
        repository,
        "image",
        image_config,
        vec![layer.clone()],
    );
    put_manifest(address, repository, "fine", wasm_config, vec![layer]);

    let accelhost = Path::new(ACCELHOST);
    let store = dir.join("store");
    let pull = |tag: &str, extra: &[&str]| {
        let reference = format!("oci://{address}/{repository}:{tag}");
        let mut args = vec!["pull", &reference, "--plain-http", "--store", path(&store)];
        args.extend(extra);
        (refused(accelhost, &dir, &args), reference)
    };
    let (err, reference) = pull("two-layers", &[]);
    assert!(
        err.contains(&format!(
            "error: {reference}: a wasm OCI artifact has exactly one layer, a `application/wasm`; \
             this one has 2 (application/wasm, application/wasm)"
        )),
        "{err}"
    );
    let (err, reference) = pull("image", &[]);
    assert!(
        err.contains(&format!(
            "error: {reference}: not a wasm OCI artifact: its config is a \
             `application/vnd.oci.image.config.v1+json`"
        )),
        "{err}"
    );
    let (err, reference) = pull("fine", &["--max-module-mib", "0"]);
    assert!(
        err.contains("layer sha256:")
            && err.contains(&format!(
                "of {reference} is {} bytes, more than the 0 MiB allowed (--max-module-mib raises the limit)",
                wasm.len()
            )),
        "{err}"
    );
    let (err, reference) = pull("absent", &[]);
    assert!(
        err.contains(&format!(
            "error: {reference}: manifest: the registry has no such manifest"
        )),
        "{err}"
    );
    let store = Store::at(&store);
    for tag in ["two-layers", "image", "fine", "absent"] {
        let reference: OciReference = format!("oci://{address}/{repository}:{tag}")
            .parse()
            .unwrap();
        assert!(store.resolve(&reference).is_err(), "{tag} pinned");
    }
    Outcome::Passed
}

/// The helper other tests start hosts from: an artifact pushed, pulled, verified and pinned.
fn publish_helper() -> Outcome {
    if let Some(why) = registry::missing() {
        return Outcome::Skipped(why);
    }
    let dir = scratch_dir("oci-publish");
    let registry = Registry::start(&dir);
    let (private, _) =
        accelhost_oci::SigningKey::generate(accelhost_oci::KeyAlgorithm::Ed25519).unwrap();
    let key = dir.join("signer.key");
    std::fs::write(&key, private).unwrap();
    let dfl = support::guest("accelhost_plugin_dfl");
    let store = dir.join("store");
    let (reference, pulled) =
        registry::publish(&registry, &dfl, "plugins/dfl:2", Some(&key), &store);
    assert_eq!(pulled.signer.as_ref().unwrap().key, "publisher");
    let store = Store::at(&store);
    assert_eq!(store.resolve(&reference).unwrap(), pulled.manifest_digest);
    let artifact = store.artifact(&pulled.manifest_digest).unwrap();
    assert_eq!(
        std::fs::read(&artifact.layer_path).unwrap(),
        std::fs::read(&dfl).unwrap()
    );
    // The stored signature verifies offline, from the store alone.
    let public = accelhost_oci::SigningKey::read(&key).unwrap().public_key();
    let keys = TrustedKeys::new(vec![("signer".into(), public)]);
    drop(registry);
    assert_eq!(keys.verify_artifact(&artifact).unwrap().key, "signer");
    Outcome::Passed
}

/// Why openssl cannot run here, or `None`.
fn openssl_missing() -> Option<String> {
    support::tool_missing(
        "openssl",
        "version",
        "openssl is not installed (apt-get install openssl)".into(),
    )
}

fn openssl(dir: &Path, args: &[&str]) -> Output {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("running openssl")
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unbase64(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .unwrap()
}

fn openssl_interop() -> Outcome {
    if let Some(why) = openssl_missing() {
        return Outcome::Skipped(why);
    }
    let dir = scratch_dir("oci-openssl");
    let sdk = crate::sdk_quickstart::sdk_tool();
    let plugin: PathBuf = dir.join("plugin.wasm");
    std::fs::copy(support::guest("accelhost_plugin_dfl"), &plugin).unwrap();
    let bytes = std::fs::read(&plugin).unwrap();

    // P-256: `accelhost-sdk sign` is what `openssl dgst -sha256 -verify` accepts.
    ok(&sdk, &dir, &["keygen", "--out", "p256"]);
    ok(&sdk, &dir, &["sign", "--key", "p256.key", "plugin.wasm"]);
    let sig = std::fs::read_to_string(dir.join("plugin.wasm.sig")).unwrap();
    assert!(
        sig.ends_with('\n') && sig.trim_end().lines().count() == 1,
        "{sig:?}"
    );
    std::fs::write(dir.join("plugin.wasm.sig.bin"), unbase64(&sig)).unwrap();
    let out = openssl(
        &dir,
        &[
            "dgst",
            "-sha256",
            "-verify",
            "p256.pub",
            "-signature",
            "plugin.wasm.sig.bin",
            "plugin.wasm",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Verified OK\n",
        "{}",
        support::report(&out)
    );
    // ... and the reverse: openssl's signature with the same key verifies in accelhost.
    let out = openssl(
        &dir,
        &["dgst", "-sha256", "-sign", "p256.key", "plugin.wasm"],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    let keys = |public: &str| {
        TrustedKeys::new(vec![(
            public.into(),
            PublicKey::read(&dir.join(public)).unwrap(),
        )])
    };
    keys("p256.pub")
        .verify_blob(&bytes, base64(&out.stdout).as_bytes(), "openssl")
        .unwrap();

    // A key openssl made signs with `accelhost-sdk sign`, and openssl's public key checks it.
    let out = openssl(
        &dir,
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            "openssl.key",
        ],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    let out = openssl(
        &dir,
        &[
            "pkey",
            "-in",
            "openssl.key",
            "-pubout",
            "-out",
            "openssl.pub",
        ],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    ok(&sdk, &dir, &["sign", "--key", "openssl.key", "plugin.wasm"]);
    let sig = std::fs::read_to_string(dir.join("plugin.wasm.sig")).unwrap();
    keys("openssl.pub")
        .verify_blob(&bytes, sig.as_bytes(), "plugin.wasm.sig")
        .unwrap();

    // Ed25519 both ways (openssl signs the whole message: pkeyutl -rawin).
    ok(
        &sdk,
        &dir,
        &["keygen", "--out", "ed", "--algorithm", "ed25519"],
    );
    ok(&sdk, &dir, &["sign", "--key", "ed.key", "plugin.wasm"]);
    let sig = std::fs::read_to_string(dir.join("plugin.wasm.sig")).unwrap();
    std::fs::write(dir.join("ed.sig.bin"), unbase64(&sig)).unwrap();
    let out = openssl(
        &dir,
        &[
            "pkeyutl",
            "-verify",
            "-pubin",
            "-inkey",
            "ed.pub",
            "-rawin",
            "-in",
            "plugin.wasm",
            "-sigfile",
            "ed.sig.bin",
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("Signature Verified Successfully"),
        "{}",
        support::report(&out)
    );
    let out = openssl(
        &dir,
        &[
            "pkeyutl",
            "-sign",
            "-inkey",
            "ed.key",
            "-rawin",
            "-in",
            "plugin.wasm",
        ],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    keys("ed.pub")
        .verify_blob(&bytes, base64(&out.stdout).as_bytes(), "openssl")
        .unwrap();
    // An Ed25519 key openssl made: its public key file is read as a trusted key.
    for args in [
        &["genpkey", "-algorithm", "ed25519", "-out", "openssl-ed.key"][..],
        &[
            "pkey",
            "-in",
            "openssl-ed.key",
            "-pubout",
            "-out",
            "openssl-ed.pub",
        ],
    ] {
        let out = openssl(&dir, args);
        assert!(out.status.success(), "{}", support::report(&out));
    }
    let out = openssl(
        &dir,
        &[
            "pkeyutl",
            "-sign",
            "-inkey",
            "openssl-ed.key",
            "-rawin",
            "-in",
            "plugin.wasm",
        ],
    );
    assert!(out.status.success(), "{}", support::report(&out));
    keys("openssl-ed.pub")
        .verify_blob(&bytes, base64(&out.stdout).as_bytes(), "openssl")
        .unwrap();
    Outcome::Passed
}

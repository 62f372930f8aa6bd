//! Signed plugins, end to end on the real compiled dfl plugin: a config's trust policy refuses
//! an unsigned, tampered or wrongly signed component before compiling it and runs a signed
//! one; a component pulled into the store starts offline from it, its cosign signature
//! checked. Keys and signatures made by openssl (what cosign writes with a key pair) are
//! checked in tests/oci_registry.rs, whose runner reports a missing openssl as skipped.

use std::path::{Path, PathBuf};

use accelhost::store::{Store, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, digest_of};
use accelhost::trust::{KeyAlgorithm, Provenance, PublicKey, simple_signing_payload};
use accelhost::{Filter, PluginInfo, PluginStatus};
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};

use crate::support;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A P-256 key pair made for the test; its public key is written as PEM into `dir`.
struct Key {
    pair: EcdsaKeyPair,
}

impl Key {
    fn new(dir: &Path, name: &str) -> Key {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let public = PublicKey::from_raw(KeyAlgorithm::EcdsaP256, pair.public_key().as_ref());
        std::fs::write(dir.join(format!("{name}.pub")), public.unwrap().to_pem()).unwrap();
        Key { pair }
    }

    /// The base64 signature over `message`, as `cosign sign-blob` prints it.
    fn sign(&self, message: &[u8]) -> String {
        let signature = self.pair.sign(&SystemRandom::new(), message).unwrap();
        format!("{}\n", b64(signature.as_ref()))
    }
}

/// A folder with the dfl plugin as `dfl.wasm`.
fn plugin_dir(label: &str) -> (PathBuf, Vec<u8>) {
    let dir = support::scratch_dir(label);
    let wasm = std::fs::read(support::guest("accelhost_plugin_dfl")).unwrap();
    std::fs::write(dir.join("dfl.wasm"), &wasm).unwrap();
    (dir, wasm)
}

/// A config in `dir` with one emulated DFL card, the dfl plugin from `module`, `trust` (JSON
/// members), the plugin's extra members `plugin`, and the store `dir/store`.
fn config(dir: &Path, module: &str, trust: &str, plugin: &str) -> PathBuf {
    let path = dir.join("accelhost.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"devices": [{{"id": "card0", "family": "dfl"}}],
                "store": "store",
                "trust": {{{trust}}},
                "plugins": [{{"name": "vendor-dfl", "module": "{module}",
                              "grants": {{"devices": ["emu:card0"]}}{plugin}}}]}}"#
        ),
    )
    .unwrap();
    path
}

fn start(config: &Path) -> accelhost::Host {
    accelhost::Host::builder()
        .config(accelhost::Config::load(config).unwrap())
        .cache_dir(support::cache_dir())
        .build()
        .unwrap()
}

fn only_plugin(host: &accelhost::Host) -> PluginInfo {
    let plugins = host.plugins();
    assert_eq!(plugins.len(), 1);
    plugins.into_iter().next().unwrap()
}

/// The reason the only plugin failed to load.
fn refusal(host: &accelhost::Host) -> String {
    match only_plugin(host).status {
        PluginStatus::LoadFailed { reason } => reason,
        other => panic!("the plugin was not refused: {other:?}"),
    }
}

fn runs_signed_by(host: &accelhost::Host, key: &str) {
    let plugin = only_plugin(host);
    assert_eq!(plugin.status, PluginStatus::Running, "{:?}", plugin.status);
    match &plugin.provenance {
        Provenance::Signed(signer) => assert_eq!(signer.key, key),
        other => panic!("not signed: {other:?}"),
    }
    assert_eq!(
        host.enumerate(&[Filter::new()]).tokens.len(),
        1,
        "the card is served"
    );
}

#[test]
fn a_config_requiring_signatures_refuses_unsigned_tampered_and_foreign_plugins_and_runs_signed_ones()
 {
    let (dir, wasm) = plugin_dir("signed-file");
    let vendor = Key::new(&dir, "vendor");
    let stranger = Key::new(&dir, "stranger");
    let trust = r#""keys": {"vendor": "vendor.pub"}, "require_signatures": true"#;
    let path = config(&dir, "dfl.wasm", trust, "");
    let sig = dir.join("dfl.wasm.sig");

    let host = start(&path);
    let reason = refusal(&host);
    assert!(
        reason.starts_with(&format!(
            "refused before compiling: it is not signed (no {}), and its config requires a \
             signature by the key vendor (sha256:",
            sig.display()
        )),
        "{reason}"
    );
    assert_eq!(only_plugin(&host).provenance, Provenance::Unknown);
    drop(host);

    std::fs::write(&sig, stranger.sign(&wasm)).unwrap();
    let reason = refusal(&start(&path));
    assert!(
        reason.contains(&format!(
            "its signature ({}) does not verify with the key vendor (sha256:",
            sig.display()
        )),
        "{reason}"
    );

    std::fs::write(&sig, vendor.sign(&wasm)).unwrap();
    runs_signed_by(&start(&path), "vendor");

    // One byte changed after signing (in the name of a custom section, so the component
    // itself would still load): refused.
    let mut tampered = wasm.clone();
    let at = tampered
        .windows(b"producers".len())
        .position(|w| w == b"producers")
        .expect("the component names its producers");
    tampered[at] = b'P';
    std::fs::write(dir.join("dfl.wasm"), &tampered).unwrap();
    let reason = refusal(&start(&path));
    assert!(
        reason.contains("does not verify with the key vendor"),
        "{reason}"
    );
    std::fs::write(dir.join("dfl.wasm"), &wasm).unwrap();

    // A FIFO where the signature would be: refused by what it is, without waiting for a
    // writer (the start would hang on a plain open).
    std::fs::remove_file(&sig).unwrap();
    let fifo = std::ffi::CString::new(sig.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let (done, waited) = std::sync::mpsc::channel();
    let fifo_config = path.clone();
    std::thread::spawn(move || done.send(refusal(&start(&fifo_config))));
    let reason = waited
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the start waited on the FIFO");
    assert!(reason.contains("is a FIFO (named pipe)"), "{reason}");
    std::fs::remove_file(&sig).unwrap();

    std::fs::write(&sig, "this is not base64!").unwrap();
    let reason = refusal(&start(&path));
    assert!(reason.contains("cannot be read: not base64"), "{reason}");

    // Without a policy the same file runs, shown as unsigned; with keys but no requirement a
    // valid signature is still shown.
    std::fs::remove_file(&sig).unwrap();
    let open = config(&dir, "dfl.wasm", "", "");
    let host = start(&open);
    assert_eq!(only_plugin(&host).status, PluginStatus::Running);
    assert_eq!(only_plugin(&host).provenance, Provenance::Unsigned);
    drop(host);
    std::fs::write(&sig, vendor.sign(&wasm)).unwrap();
    let listed = config(&dir, "dfl.wasm", r#""keys": {"vendor": "vendor.pub"}"#, "");
    runs_signed_by(&start(&listed), "vendor");

    // `signed_by` narrows the keys to the plugin's own: the vendor's signature is not the
    // stranger's.
    let narrowed = config(
        &dir,
        "dfl.wasm",
        r#""keys": {"vendor": "vendor.pub", "stranger": "stranger.pub"}"#,
        r#", "signed_by": ["stranger"]"#,
    );
    let reason = refusal(&start(&narrowed));
    assert!(
        reason.contains("does not verify with the key stranger"),
        "{reason}"
    );
}

/// Keeps `wasm` in `store` as a wasm artifact of `reference`, signed by `key` (if any).
fn put_artifact(store: &Store, reference: &str, wasm: &[u8], key: Option<&Key>) -> String {
    let reference: accelhost::store::OciReference = reference.parse().unwrap();
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#;
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "digest": digest_of(config), "size": config.len()},
        "layers": [{"mediaType": WASM_LAYER_MEDIA_TYPE, "digest": digest_of(wasm), "size": wasm.len()}],
    }))
    .unwrap();
    let manifest_digest = digest_of(&manifest);
    store.put_blob(&digest_of(config), config).unwrap();
    store.put_blob(&digest_of(wasm), wasm).unwrap();
    store.put_blob(&manifest_digest, &manifest).unwrap();
    let signatures: Vec<(Vec<u8>, String)> = key
        .map(|key| {
            let payload = simple_signing_payload(&reference.docker_reference(), &manifest_digest);
            let signature = key.sign(&payload);
            (payload, signature)
        })
        .into_iter()
        .collect();
    store.put_signatures(&manifest_digest, &signatures).unwrap();
    store.pin(&reference, &manifest_digest).unwrap();
    manifest_digest
}

#[test]
fn a_pulled_plugin_starts_offline_from_the_store_with_its_cosign_signature_checked() {
    let (dir, wasm) = plugin_dir("store");
    let store = Store::at(dir.join("store"));
    let vendor = Key::new(&dir, "vendor");
    let stranger = Key::new(&dir, "stranger");
    let reference = "oci://127.0.0.1:1/vendor/dfl:1.0";
    let signed = put_artifact(&store, reference, &wasm, Some(&vendor));
    let trust = r#""keys": {"vendor": "vendor.pub"}, "require_signatures": true"#;
    let path = config(&dir, reference, trust, "");
    runs_signed_by(&start(&path), "vendor");

    // Pinned by digest as well.
    let by_digest = format!("oci://127.0.0.1:1/vendor/dfl@{signed}");
    runs_signed_by(&start(&config(&dir, &by_digest, trust, "")), "vendor");

    // Signed by a key the config does not trust: refused.
    put_artifact(&store, reference, &wasm, Some(&stranger));
    let reason = refusal(&start(&path));
    assert!(
        reason.contains("does not verify with the key vendor"),
        "{reason}"
    );

    // Unsigned: refused, with where the signature was looked for.
    let unsigned = put_artifact(&store, reference, &wasm, None);
    let reason = refusal(&start(&path));
    assert!(
        reason.contains(&format!("no cosign signature of {unsigned} in the store")),
        "{reason}"
    );

    // The component's blob changed in the store after the pull: refused by its digest, even
    // though the signature over the manifest verifies.
    put_artifact(&store, reference, &wasm, Some(&vendor));
    let blob = store.blob_path(&digest_of(&wasm)).unwrap();
    let mut changed = wasm.clone();
    let at = changed.len() - 1;
    changed[at] ^= 1;
    std::fs::write(&blob, &changed).unwrap();
    let reason = refusal(&start(&path));
    assert!(
        reason.contains(&format!(
            "has the digest {}, not the {} its manifest lists: the store was changed after the pull",
            digest_of(&changed),
            digest_of(&wasm)
        )),
        "{reason}"
    );
    std::fs::write(&blob, &wasm).unwrap();

    // A reference never pulled: the config names the field and the command that pulls it.
    let missing = config(&dir, "oci://127.0.0.1:1/vendor/other:1", "", "");
    let err = accelhost::Config::load(&missing).unwrap_err().to_string();
    assert!(
        err.contains("plugins[0].module: oci://127.0.0.1:1/vendor/other:1 is not in the store")
            && err.contains(&format!(
                "run `accelhost pull --store {} oci://127.0.0.1:1/vendor/other:1`",
                dir.join("store").display()
            )),
        "{err}"
    );
}

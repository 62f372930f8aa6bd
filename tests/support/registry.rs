//! A real OCI registry for the tests: Debian's `docker-registry` (the CNCF distribution
//! registry, 2.8) serving plain HTTP on 127.0.0.1, storing into a scratch folder, killed when
//! dropped; and [`publish`], which pushes a plugin to it and pulls it into a store, for tests
//! that start hosts on pulled plugins.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use accelhost::store::{OciReference, Store};
use accelhost::trust::{SignaturePolicy, TrustedKeys};
use accelhost_oci::{PullOptions, Pulled, PushOptions, SigningKey, Transport};

/// Makes `command` run in `dir`, its HOME, with no registry credentials, store, config or log
/// setting of the user's: what a pull or push finds is the test's alone.
pub fn away_from_the_user<'a>(command: &'a mut Command, dir: &Path) -> &'a mut Command {
    command
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("XDG_DATA_HOME")
        .env_remove("ACCELHOST_STORE")
        .env_remove("ACCELHOST_CONFIG")
        .env_remove("ACCELHOST_REGISTRY_USER")
        .env_remove("ACCELHOST_REGISTRY_PASSWORD")
        .env_remove("ACCELHOST_LOG")
}

/// How long the registry may take to answer `GET /v2/` after it starts.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// Why the registry cannot run here, or `None` when it can; a missing registry fails the test
/// under `ACCELHOST_REQUIRE_TOOLCHAINS=1`, as every missing tool of the trials does.
pub fn missing() -> Option<String> {
    crate::support::tool_missing(
        "docker-registry",
        "--version",
        "docker-registry is not installed (apt-get install docker-registry)".into(),
    )
}

/// A running registry.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
    /// Its storage root (`storage.filesystem.rootdirectory`).
    pub storage: PathBuf,
    /// Its log (stdout and stderr), shown when it fails to start.
    log: PathBuf,
}

impl Registry {
    /// Starts a registry whose config, storage and log are in `dir`, on a free loopback port
    /// (tried again on another port if the first is taken meanwhile); panics if it does not
    /// answer within [`READY_WITHIN`]. Call [`missing`] first.
    pub fn start(dir: &Path) -> Registry {
        let storage = dir.join("registry-storage");
        std::fs::create_dir_all(&storage).unwrap();
        let mut last = String::new();
        for attempt in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let address = format!("127.0.0.1:{port}");
            let config = dir.join("registry.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\n\
                     storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                     http:\n  addr: {address}\n",
                    storage.display()
                ),
            )
            .unwrap();
            let log = dir.join(format!("registry-{attempt}.log"));
            let out = std::fs::File::create(&log).unwrap();
            let child = Command::new("docker-registry")
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .expect("starting docker-registry");
            let mut registry = Registry {
                child,
                address,
                storage: storage.clone(),
                log,
            };
            match registry.wait_ready() {
                Ok(()) => return registry,
                Err(why) => last = why,
            }
        }
        panic!("docker-registry did not start: {last}");
    }

    /// Waits until `GET /v2/` answers 200, or the registry exits.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_WITHIN;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "it exited ({status}): {}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                ));
            }
            if self
                .get_v2()
                .is_ok_and(|head| head.starts_with("HTTP/1.1 200"))
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        Err(format!(
            "no answer on http://{}/v2/ within {READY_WITHIN:?}: {}",
            self.address,
            std::fs::read_to_string(&self.log).unwrap_or_default()
        ))
    }

    fn get_v2(&self) -> std::io::Result<String> {
        let mut stream = TcpStream::connect(&self.address)?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        write!(
            stream,
            "GET /v2/ HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.address
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        Ok(response)
    }

    /// `oci://127.0.0.1:PORT/<path>` (`path` is `repository:tag` or `repository@digest`).
    pub fn reference(&self, path: &str) -> OciReference {
        format!("oci://{}/{path}", self.address).parse().unwrap()
    }

    /// The file the registry keeps the blob `digest` in.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Changes one byte of the stored blob `digest` (its size stays), as a disk or an attacker
    /// with the registry's storage could: the registry goes on serving it under its digest.
    pub fn tamper_blob(&self, digest: &str) {
        let path = self.blob_file(digest);
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Pushes the component at `wasm` to `registry` as `repository_tag` (`plugins/dfl:1.0`),
/// signed with the private key file `key` if one is given, and pulls it into the store at
/// `store` (verified with `key`'s public half); returns the reference and what was pulled.
/// A host whose config names the reference then starts from the store, offline.
pub fn publish(
    registry: &Registry,
    wasm: &Path,
    repository_tag: &str,
    key: Option<&Path>,
    store: &Path,
) -> (OciReference, Pulled) {
    let reference = registry.reference(repository_tag);
    let signing_key = key.map(|key| SigningKey::read(key).unwrap());
    let signature = SignaturePolicy {
        keys: match &signing_key {
            Some(key) => TrustedKeys::new(vec![("publisher".into(), key.public_key())]),
            None => TrustedKeys::default(),
        },
        required: signing_key.is_some(),
    };
    let bytes = std::fs::read(wasm).unwrap();
    let pushed = accelhost_oci::push_blocking(
        &bytes,
        &reference,
        &PushOptions {
            signing_key,
            transport: Transport::PlainHttpLoopback,
            ..PushOptions::default()
        },
    )
    .unwrap_or_else(|err| panic!("push: {err}"));
    let pulled = accelhost_oci::pull_blocking(
        &reference,
        &Store::at(store),
        &PullOptions {
            signature,
            transport: Transport::PlainHttpLoopback,
            ..PullOptions::default()
        },
    )
    .unwrap_or_else(|err| panic!("pull: {err}"));
    assert_eq!(pulled.manifest_digest, pushed.manifest_digest);
    (reference, pulled)
}

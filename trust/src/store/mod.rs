//! The local store of plugins pulled from OCI registries: content-addressed blobs, the tags
//! they were pulled by (pinned to a manifest digest until pulled again), and the cosign
//! signatures that came with them. Starting a host reads the store only; `accelhost pull`
//! (through `accelhost-oci`) writes it.
//!
//! Layout under the store's root:
//! - `blobs/sha256/<hex>`: manifests, configs, components and signature payloads;
//! - `tags/<registry>/<repository>/_tags/<tag>`: the digest of the manifest the tag named when it
//!   was pulled;
//! - `signatures/sha256-<hex>.json`: the signatures of a manifest, each a payload's digest
//!   and the base64 signature over it.
//!
//! Everything read back is checked against its digest, so a changed blob is refused rather
//! than loaded. The store is kept like the compile cache ([`crate::private`]): its folders are
//! made with mode 0700 and used only when they are this user's (root's too, for reading) and
//! nobody else can write them; every file is written under an unguessable name, created
//! exclusively without following links, and renamed over its name, so a tag is replaced at
//! once and a link planted at any name is replaced, never followed.

mod reference;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::private::{self, Privacy};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use reference::{OCI_SCHEME, OciReference, check_digest};

/// Environment variable that moves the store.
pub const STORE_ENV: &str = "ACCELHOST_STORE";
/// The media type of a wasm component layer (the CNCF wasm OCI artifact layout).
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The media type of a wasm artifact's config.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The longest manifest or signature record read: real ones are a few KiB.
const MAX_METADATA: u64 = 1 << 20;

/// What went wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the store could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The reference was never pulled into this store.
    #[error(
        "{reference} is not in the store {}: run `accelhost pull --store {} {reference}`",
        .store.display(),
        .store.display()
    )]
    NotPulled {
        /// The reference as given.
        reference: String,
        /// The store's root.
        store: PathBuf,
    },
    /// A stored blob whose bytes no longer have its digest, or bytes given under another digest.
    #[error(
        "blob {digest} in the store has the digest {actual}: it was changed after it was written"
    )]
    Tampered {
        /// The digest it is stored under.
        digest: String,
        /// The digest of its bytes.
        actual: String,
    },
    /// A manifest that is not a wasm component artifact, or a record that cannot be read.
    #[error("{what}: {reason}")]
    Invalid {
        /// The manifest or record.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No store directory could be chosen.
    #[error("no store: set {STORE_ENV}, XDG_DATA_HOME or HOME")]
    NoRoot,
    /// A folder of the store is not one to trust: another user's, writable by others, or a
    /// link.
    #[error("the store {}: {} {why} (make it a folder of this user's, chmod 700, or choose another store)", .store.display(), .folder.display())]
    Untrusted {
        /// The store's root.
        store: PathBuf,
        /// The folder refused.
        folder: PathBuf,
        /// What is wrong with it.
        why: String,
    },
}

/// A signature kept with an artifact: the payload and the base64 signature over it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSignature {
    /// The signed payload's bytes (cosign's simple-signing JSON).
    pub payload: Vec<u8>,
    /// The base64 signature over `payload`.
    pub signature: String,
}

/// A pulled wasm component artifact: its manifest, its component's blob and its signatures.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// The manifest's digest (`sha256:<hex>`).
    pub manifest_digest: String,
    /// The component layer's digest, as the manifest lists it.
    pub layer_digest: String,
    /// The component layer's size, as the manifest lists it.
    pub layer_size: u64,
    /// Where the component's bytes are (to be checked against `layer_digest` when read).
    pub layer_path: PathBuf,
    /// The signatures pulled with it.
    pub signatures: Vec<StoredSignature>,
}

#[derive(Serialize, Deserialize)]
struct SignatureRecord {
    payload: String,
    signature: String,
}

/// A store of pulled plugins, at a root directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// The store at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    /// The store `ACCELHOST_STORE` names, else `$XDG_DATA_HOME/accelhost/store`, else
    /// `~/.local/share/accelhost/store`.
    pub fn open_default() -> Result<Store, StoreError> {
        let var = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(root) = var(STORE_ENV) {
            return Ok(Store::at(root));
        }
        let data = var("XDG_DATA_HOME")
            .or_else(|| var("HOME").map(|home| home.join(".local/share")))
            .ok_or(StoreError::NoRoot)?;
        Ok(Store::at(data.join("accelhost/store")))
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob of `digest` is kept.
    pub fn blob_path(&self, digest: &str) -> Result<PathBuf, StoreError> {
        reference::check_digest(digest).map_err(|reason| StoreError::Invalid {
            what: "blob".into(),
            reason,
        })?;
        Ok(self
            .root
            .join("blobs/sha256")
            .join(&digest["sha256:".len()..]))
    }

    /// Keeps `bytes` as the blob of `digest`, refusing bytes of another digest.
    pub fn put_blob(&self, digest: &str, bytes: &[u8]) -> Result<PathBuf, StoreError> {
        let path = self.blob_path(digest)?;
        let actual = digest_of(bytes);
        if actual != digest {
            return Err(StoreError::Tampered {
                digest: digest.to_string(),
                actual,
            });
        }
        self.write(&path, bytes)?;
        Ok(path)
    }

    /// Records that `reference`'s tag names the manifest `manifest_digest`, whose blob must be
    /// in the store.
    pub fn pin(&self, reference: &OciReference, manifest_digest: &str) -> Result<(), StoreError> {
        let manifest = self.blob_path(manifest_digest)?;
        if !manifest.is_file() {
            return Err(StoreError::Invalid {
                what: reference.to_string(),
                reason: format!("its manifest {manifest_digest} is not in the store"),
            });
        }
        if let Some(path) = self.tag_path(reference) {
            self.write(&path, format!("{manifest_digest}\n").as_bytes())?;
        }
        Ok(())
    }

    /// The digest of the manifest `reference` names: the digest it pins, or the one its tag
    /// named when it was last pulled. The manifest must be in the store.
    pub fn resolve(&self, reference: &OciReference) -> Result<String, StoreError> {
        let not_pulled = || StoreError::NotPulled {
            reference: reference.to_string(),
            store: self.root.clone(),
        };
        let digest = match (&reference.digest, self.tag_path(reference)) {
            (Some(digest), _) => digest.clone(),
            (None, Some(path)) => {
                self.check_reading(&path)?;
                let text = match read_bounded(&path) {
                    Ok(text) => String::from_utf8_lossy(&text).into_owned(),
                    Err(StoreError::Io { source, .. })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        return Err(not_pulled());
                    }
                    Err(err) => return Err(err),
                };
                let digest = text.trim().to_string();
                reference::check_digest(&digest).map_err(|reason| StoreError::Invalid {
                    what: path.display().to_string(),
                    reason,
                })?;
                digest
            }
            (None, None) => return Err(not_pulled()),
        };
        if !self.blob_path(&digest)?.is_file() {
            return Err(not_pulled());
        }
        Ok(digest)
    }

    /// Keeps `signatures` (payload, base64 signature) as the signatures of the manifest
    /// `manifest_digest`, replacing those kept before.
    pub fn put_signatures(
        &self,
        manifest_digest: &str,
        signatures: &[(Vec<u8>, String)],
    ) -> Result<(), StoreError> {
        let mut records = Vec::with_capacity(signatures.len());
        for (payload, signature) in signatures {
            let digest = digest_of(payload);
            self.put_blob(&digest, payload)?;
            records.push(SignatureRecord {
                payload: digest,
                signature: signature.trim().to_string(),
            });
        }
        let path = self.signatures_path(manifest_digest)?;
        let text = serde_json::to_vec_pretty(&records).expect("records serialize");
        self.write(&path, &text)
    }

    /// The artifact of the manifest `manifest_digest`: the manifest read back and checked
    /// against its digest, its one `application/wasm` layer, and its signatures.
    pub fn artifact(&self, manifest_digest: &str) -> Result<Artifact, StoreError> {
        let manifest = self.read_blob(manifest_digest)?;
        let what = || format!("manifest {manifest_digest}");
        let (layer_digest, layer_size) =
            wasm_layer(&manifest).map_err(|reason| StoreError::Invalid {
                what: what(),
                reason,
            })?;
        let layer_path = self.blob_path(&layer_digest)?;
        let mut signatures = Vec::new();
        let records_path = self.signatures_path(manifest_digest)?;
        self.check_reading(&records_path)?;
        match read_bounded(&records_path) {
            Ok(text) => {
                let records: Vec<SignatureRecord> =
                    serde_json::from_slice(&text).map_err(|err| StoreError::Invalid {
                        what: records_path.display().to_string(),
                        reason: err.to_string(),
                    })?;
                for record in records {
                    signatures.push(StoredSignature {
                        payload: self.read_blob(&record.payload)?,
                        signature: record.signature,
                    });
                }
            }
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            }
            Err(err) => return Err(err),
        }
        Ok(Artifact {
            manifest_digest: manifest_digest.to_string(),
            layer_digest,
            layer_size,
            layer_path,
            signatures,
        })
    }

    /// A small blob (a manifest, a payload), checked against its digest.
    fn read_blob(&self, digest: &str) -> Result<Vec<u8>, StoreError> {
        let path = self.blob_path(digest)?;
        self.check_reading(&path)?;
        let bytes = read_bounded(&path)?;
        let actual = digest_of(&bytes);
        if actual != digest {
            return Err(StoreError::Tampered {
                digest: digest.to_string(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Makes the store's root (mode 0700), or checks that it is this user's and closed to
    /// writers: a pull calls it before it asks anything of a registry.
    pub fn prepare(&self) -> Result<(), StoreError> {
        self.make_folders(&self.root)
    }

    /// Writes `bytes` as the store's file `path`: every folder from the root down to it made
    /// or checked ([`Store::prepare`]), then the file replaced under an unguessable temporary
    /// name ([`private::replace_file`]).
    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        self.make_folders(path.parent().expect("store paths have a parent"))?;
        private::replace_file(path, bytes).map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Makes or checks every folder from the root down to `dir`.
    fn make_folders(&self, dir: &Path) -> Result<(), StoreError> {
        let mut folder = self.root.clone();
        let below = dir.strip_prefix(&self.root).unwrap_or(Path::new(""));
        let steps = std::iter::once(folder.clone()).chain(below.components().map(|part| {
            folder.push(part);
            folder.clone()
        }));
        for step in steps.collect::<Vec<_>>() {
            private::folder(&step, Privacy::OwnerWrites, "the store").map_err(
                |source| match source.kind() {
                    std::io::ErrorKind::PermissionDenied => StoreError::Untrusted {
                        store: self.root.clone(),
                        folder: step.clone(),
                        why: distrust_reason(&step),
                    },
                    _ => StoreError::Io {
                        path: step.clone(),
                        source,
                    },
                },
            )?;
        }
        Ok(())
    }

    /// Refuses to read the store's file `path` unless every folder from the root down to it
    /// is one to read from (this user's or root's, closed to writers); missing folders are
    /// no reason.
    fn check_reading(&self, path: &Path) -> Result<(), StoreError> {
        let dir = path.parent().expect("store paths have a parent");
        let mut folder = self.root.clone();
        let below = dir.strip_prefix(&self.root).unwrap_or(Path::new(""));
        let mut steps = vec![folder.clone()];
        for part in below.components() {
            folder.push(part);
            steps.push(folder.clone());
        }
        for step in steps {
            if let Some(why) = private::distrust_reading(&step, Privacy::OwnerWrites) {
                return Err(StoreError::Untrusted {
                    store: self.root.clone(),
                    folder: step,
                    why,
                });
            }
        }
        Ok(())
    }

    fn tag_path(&self, reference: &OciReference) -> Option<PathBuf> {
        let tag = reference.tag.as_ref()?;
        Some(
            self.root
                .join("tags")
                .join(&reference.registry)
                .join(&reference.repository)
                .join("_tags")
                .join(tag),
        )
    }

    fn signatures_path(&self, manifest_digest: &str) -> Result<PathBuf, StoreError> {
        self.blob_path(manifest_digest)?;
        Ok(self
            .root
            .join("signatures")
            .join(format!("{}.json", manifest_digest.replace(':', "-"))))
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest and size of the one `application/wasm` layer of the OCI image manifest
/// `manifest`, whose config must be a wasm artifact's.
pub fn wasm_layer(manifest: &[u8]) -> Result<(String, u64), String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Descriptor {
        media_type: String,
        digest: String,
        size: u64,
    }
    #[derive(Deserialize)]
    struct Manifest {
        config: Descriptor,
        layers: Vec<Descriptor>,
    }
    let manifest: Manifest = serde_json::from_slice(manifest)
        .map_err(|err| format!("not an OCI image manifest: {err}"))?;
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "its config is '{}', not a wasm component's ('{WASM_CONFIG_MEDIA_TYPE}')",
            manifest.config.media_type
        ));
    }
    let types: Vec<&str> = manifest
        .layers
        .iter()
        .map(|l| l.media_type.as_str())
        .collect();
    match manifest.layers.as_slice() {
        [layer] if layer.media_type == WASM_LAYER_MEDIA_TYPE => {
            reference::check_digest(&layer.digest)?;
            Ok((layer.digest.clone(), layer.size))
        }
        _ => Err(format!(
            "a wasm component artifact has one layer of type '{WASM_LAYER_MEDIA_TYPE}'; this one \
             has [{}]",
            types.join(", ")
        )),
    }
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, StoreError> {
    use std::io::Read;
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Opened without waiting (a FIFO opened for reading waits for a writer), and read only if
    // what was opened is a regular file.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(StoreError::Invalid {
            what: path.display().to_string(),
            reason: "not a regular file".into(),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_METADATA + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_METADATA {
        return Err(StoreError::Invalid {
            what: path.display().to_string(),
            reason: format!("larger than {MAX_METADATA} bytes: not a manifest or record"),
        });
    }
    Ok(bytes)
}

/// Why the folder `path` was refused, as [`private::distrust`] says.
fn distrust_reason(path: &Path) -> String {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => private::distrust(&meta, true, Privacy::OwnerWrites)
            .unwrap_or_else(|| "changed while it was checked".into()),
        Err(err) => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("accelhost-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn manifest(layers: &[(&str, &str, u64)]) -> Vec<u8> {
        let layers: Vec<_> = layers
            .iter()
            .map(|(media_type, digest, size)| {
                serde_json::json!({"mediaType": media_type, "digest": digest, "size": size})
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": WASM_CONFIG_MEDIA_TYPE, "digest": digest_of(b"{}"), "size": 2},
            "layers": layers,
        }))
        .unwrap()
    }

    #[test]
    fn a_pulled_artifact_resolves_by_tag_and_by_digest_and_keeps_its_signatures() {
        let root = scratch("roundtrip");
        let store = Store::at(&root);
        let component = b"\0asm component bytes";
        let layer = digest_of(component);
        let manifest = manifest(&[(WASM_LAYER_MEDIA_TYPE, &layer, component.len() as u64)]);
        let manifest_digest = digest_of(&manifest);
        let reference: OciReference = "oci://127.0.0.1:5000/vendor/p:1".parse().unwrap();
        assert!(matches!(
            store.resolve(&reference),
            Err(StoreError::NotPulled { .. })
        ));
        assert!(
            store.pin(&reference, &manifest_digest).is_err(),
            "a tag is pinned to a manifest the store has"
        );
        store.put_blob(&layer, component).unwrap();
        store.put_blob(&manifest_digest, &manifest).unwrap();
        store
            .put_signatures(&manifest_digest, &[(b"payload".to_vec(), "c2ln\n".into())])
            .unwrap();
        store.pin(&reference, &manifest_digest).unwrap();
        assert_eq!(store.resolve(&reference).unwrap(), manifest_digest);
        let pinned = OciReference {
            tag: None,
            digest: Some(manifest_digest.clone()),
            ..reference.clone()
        };
        assert_eq!(store.resolve(&pinned).unwrap(), manifest_digest);
        let artifact = store.artifact(&manifest_digest).unwrap();
        assert_eq!(artifact.layer_digest, layer);
        assert_eq!(std::fs::read(&artifact.layer_path).unwrap(), component);
        assert_eq!(
            artifact.signatures,
            vec![StoredSignature {
                payload: b"payload".to_vec(),
                signature: "c2ln".into()
            }]
        );
        let message = store
            .resolve(&reference.with_tag("2"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            format!(
                "oci://127.0.0.1:5000/vendor/p:2 is not in the store {0}: run `accelhost pull \
                 --store {0} oci://127.0.0.1:5000/vendor/p:2`",
                root.display()
            )
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn changed_blobs_and_bytes_under_another_digest_are_refused() {
        let root = scratch("tamper");
        let store = Store::at(&root);
        let err = store.put_blob(&digest_of(b"a"), b"b").unwrap_err();
        assert!(matches!(err, StoreError::Tampered { .. }), "{err}");
        let component = b"component";
        let layer = digest_of(component);
        let manifest = manifest(&[(WASM_LAYER_MEDIA_TYPE, &layer, 9)]);
        let manifest_digest = digest_of(&manifest);
        let path = store.put_blob(&manifest_digest, &manifest).unwrap();
        std::fs::write(&path, manifest.to_ascii_uppercase()).unwrap();
        let err = store.artifact(&manifest_digest).unwrap_err().to_string();
        assert!(err.contains("it was changed after it was written"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_fifo_in_the_store_is_refused_without_waiting_for_a_writer() {
        let root = scratch("fifo");
        let store = Store::at(&root);
        let manifest = manifest(&[(WASM_LAYER_MEDIA_TYPE, &digest_of(b"x"), 1)]);
        let manifest_digest = digest_of(&manifest);
        let path = store.blob_path(&manifest_digest).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let (done, waited) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(store.artifact(&manifest_digest).map(|_| ())));
        let err = waited
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("reading the store waited on the FIFO")
            .unwrap_err();
        assert!(err.to_string().ends_with(": not a regular file"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_manifest_that_is_not_one_wasm_layer_is_refused_with_what_it_has() {
        let digest = digest_of(b"x");
        let two = manifest(&[
            (WASM_LAYER_MEDIA_TYPE, &digest, 1),
            (WASM_LAYER_MEDIA_TYPE, &digest, 1),
        ]);
        let err = wasm_layer(&two).unwrap_err();
        assert!(
            err.contains("this one has [application/wasm, application/wasm]"),
            "{err}"
        );
        let tar = manifest(&[("application/vnd.oci.image.layer.v1.tar+gzip", &digest, 1)]);
        assert!(
            wasm_layer(&tar)
                .unwrap_err()
                .contains("has [application/vnd.oci.image.layer.v1.tar+gzip]")
        );
        let image = String::from_utf8(manifest(&[(WASM_LAYER_MEDIA_TYPE, &digest, 1)]))
            .unwrap()
            .replace(
                WASM_CONFIG_MEDIA_TYPE,
                "application/vnd.oci.image.config.v1+json",
            );
        assert!(
            wasm_layer(image.as_bytes())
                .unwrap_err()
                .contains("not a wasm component's")
        );
        assert!(
            wasm_layer(b"[]")
                .unwrap_err()
                .contains("not an OCI image manifest")
        );
    }

    /// The store of `scratch(name)` holding one pulled, pinned artifact; its reference and
    /// manifest digest.
    fn pulled(name: &str) -> (PathBuf, Store, OciReference, String) {
        let root = scratch(name);
        let store = Store::at(&root);
        let component = b"\0asm component bytes";
        let layer = digest_of(component);
        store.put_blob(&layer, component).unwrap();
        let manifest = manifest(&[(WASM_LAYER_MEDIA_TYPE, &layer, component.len() as u64)]);
        let manifest_digest = store
            .put_blob(&digest_of(&manifest), &manifest)
            .map(|_| digest_of(&manifest))
            .unwrap();
        store.put_blob(&digest_of(b"{}"), b"{}").unwrap();
        let reference: OciReference = "oci://127.0.0.1:5000/vendor/p:1".parse().unwrap();
        store.pin(&reference, &manifest_digest).unwrap();
        (root, store, reference, manifest_digest)
    }

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_store_is_made_private_and_refused_when_others_can_write_it() {
        use std::os::unix::fs::PermissionsExt;
        let (root, store, reference, digest) = pulled("private");
        for folder in [
            root.clone(),
            root.join("blobs"),
            root.join("blobs/sha256"),
            root.join("tags"),
        ] {
            assert_eq!(mode(&folder), 0o700, "{}", folder.display());
        }
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = store.resolve(&reference).unwrap_err();
        assert!(matches!(err, StoreError::Untrusted { .. }), "{err}");
        assert!(
            err.to_string().contains("is open to others (mode 777)"),
            "{err}"
        );
        let err = store.put_blob(&digest_of(b"x"), b"x").unwrap_err();
        assert!(matches!(err, StoreError::Untrusted { .. }), "{err}");
        let err = store.artifact(&digest).unwrap_err();
        assert!(matches!(err, StoreError::Untrusted { .. }), "{err}");
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            store.resolve(&reference).unwrap(),
            digest,
            "others may read it"
        );
        let tags = root.join("tags/127.0.0.1:5000");
        std::fs::set_permissions(&tags, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = store.resolve(&reference).unwrap_err();
        assert!(
            err.to_string().contains("127.0.0.1:5000"),
            "a folder below the root: {err}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_store_of_another_user_is_neither_written_nor_read() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: giving the store to another user needs root");
            return;
        }
        let (root, store, reference, _) = pulled("owner");
        let c_path = std::ffi::CString::new(root.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::chown(c_path.as_ptr(), 54321, 54321) }, 0);
        let err = store.resolve(&reference).unwrap_err();
        assert!(err.to_string().contains("owned by uid 54321"), "{err}");
        let err = store.put_blob(&digest_of(b"y"), b"y").unwrap_err();
        assert!(err.to_string().contains("owned by uid 54321"), "{err}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn links_planted_at_every_name_the_store_writes_are_replaced_never_followed() {
        let (root, store, reference, digest) = pulled("links");
        let victim = scratch("links-victim");
        std::fs::create_dir_all(&victim).unwrap();
        let target = victim.join("precious");
        std::fs::write(&target, b"keep me").unwrap();
        let blob = store.blob_path(&digest_of(b"z")).unwrap();
        let tag = store.tag_path(&reference).unwrap();
        let signatures = store.signatures_path(&digest).unwrap();
        std::fs::create_dir_all(signatures.parent().unwrap()).unwrap();
        for name in [&blob, &tag, &signatures] {
            let _ = std::fs::remove_file(name);
            std::os::unix::fs::symlink(&target, name).unwrap();
        }
        store.put_blob(&digest_of(b"z"), b"z").unwrap();
        store.pin(&reference, &digest).unwrap();
        store.put_signatures(&digest, &[]).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        for name in [&blob, &tag, &signatures] {
            assert!(
                !std::fs::symlink_metadata(name)
                    .unwrap()
                    .file_type()
                    .is_symlink(),
                "{}",
                name.display()
            );
        }
        let leftovers: Vec<_> = std::fs::read_dir(root.join("blobs/sha256"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(&victim).unwrap();
    }
}

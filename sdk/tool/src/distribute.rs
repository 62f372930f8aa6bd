//! `accelhost-sdk keygen`, `sign` and `push`: an author's key pair, a plugin file's detached
//! signature, and a plugin pushed (signed) to an OCI registry, in cosign's formats so that
//! cosign and openssl check what these write.

use std::io::Write;
use std::path::{Path, PathBuf};

use accelhost_oci::{KeyAlgorithm, PushOptions, SigningKey, Transport};
use accelhost_trust::PublicKey;
use accelhost_trust::store::OciReference;
use anyhow::Context;

/// After `keygen --help`'s options.
pub const KEYGEN_HELP: &str = "\
Example:
  accelhost-sdk keygen --out release      # release.key (private, 0600) and release.pub

Give release.pub to the operators (a config's trust.keys, `accelhost pull --key`); keep
release.key to yourself. The files are those of `openssl genpkey` and `openssl pkey -pubout`.";

/// After `sign --help`'s options.
pub const SIGN_HELP: &str = "\
Example:
  accelhost-sdk sign --key release.key my-plugin.wasm    # writes my-plugin.wasm.sig

The .sig file holds the base64 signature over the file's bytes, as `cosign sign-blob --key`
and `openssl dgst -sha256 -sign release.key my-plugin.wasm | base64 -w0` write it; a config
whose entry trusts release.pub loads my-plugin.wasm only with it beside it. Check it with:
  openssl dgst -sha256 -verify release.pub -signature <(base64 -d my-plugin.wasm.sig) my-plugin.wasm";

/// After `push --help`'s options.
pub const PUSH_HELP: &str = "\
Example:
  accelhost-sdk push my-plugin.wasm oci://registry.example/plugins/my-plugin:1.0 --key release.key
  accelhost pull oci://registry.example/plugins/my-plugin:1.0 --key release.pub

The component goes up as the CNCF wasm OCI artifact (config
application/vnd.wasm.config.v0+json, one application/wasm layer), as wkg and wasmCloud's tools
push it. With --key, its signature goes to the tag sha256-<manifest hex>.sig, as cosign
attaches a key pair's signatures to an image. ACCELHOST_REGISTRY_USER and ACCELHOST_REGISTRY_PASSWORD give basic auth (default anonymous).";

/// A key's scheme on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Algorithm {
    /// ECDSA on P-256 with SHA-256: cosign's default.
    P256,
    /// Ed25519.
    Ed25519,
}

#[derive(clap::Args)]
pub struct KeygenArgs {
    /// The files' name: NAME.key (the private key, PKCS#8 PEM, mode 0600) and NAME.pub.
    #[arg(long, value_name = "NAME")]
    out: PathBuf,
    /// The signature scheme.
    #[arg(long, value_enum, default_value = "p256")]
    algorithm: Algorithm,
    /// Replace NAME.key and NAME.pub if they exist.
    #[arg(long)]
    force: bool,
}

#[derive(clap::Args)]
pub struct SignArgs {
    /// The private key (PKCS#8 PEM, as `keygen` or `openssl genpkey` write it).
    #[arg(long, value_name = "KEY")]
    key: PathBuf,
    /// The files to sign: each gets FILE.sig beside it.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(clap::Args)]
pub struct PushArgs {
    /// The component to push.
    component: PathBuf,
    /// Where: oci://REGISTRY/REPOSITORY:TAG.
    reference: OciReference,
    /// Sign the pushed manifest with this private key (cosign's signature tag).
    #[arg(long, value_name = "KEY")]
    key: Option<PathBuf>,
    /// Talk plain HTTP to the registry instead of HTTPS: to a registry on the loopback
    /// (127.0.0.0/8, localhost) only, unless --insecure-http is given as well.
    #[arg(long)]
    plain_http: bool,
    /// With --plain-http, allow a registry off the loopback: anyone on the path can read and
    /// change what is sent.
    #[arg(long, requires = "plain_http")]
    insecure_http: bool,
    /// How long the whole push may take, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = accelhost_oci::DEFAULT_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
}

pub fn keygen(args: KeygenArgs) -> anyhow::Result<()> {
    let algorithm = match args.algorithm {
        Algorithm::P256 => KeyAlgorithm::EcdsaP256,
        Algorithm::Ed25519 => KeyAlgorithm::Ed25519,
    };
    let private_path = with_suffix(&args.out, "key");
    let public_path = with_suffix(&args.out, "pub");
    if !args.force {
        for path in [&private_path, &public_path] {
            if path.exists() {
                anyhow::bail!(
                    "{} exists: keygen does not replace a key without --force",
                    path.display()
                );
            }
        }
    }
    let (private, public) = SigningKey::generate(algorithm)?;
    write_private(&private_path, private.as_bytes())?;
    std::fs::write(&public_path, public.as_bytes())
        .with_context(|| format!("cannot write {}", public_path.display()))?;
    let fingerprint = PublicKey::from_pem(public.as_bytes())?
        .fingerprint()
        .to_string();
    println!("{}  (private: keep it to yourself)", private_path.display());
    println!(
        "{}  (public, {algorithm}, {fingerprint}: give it to whoever checks your plugins)",
        public_path.display()
    );
    Ok(())
}

pub fn sign(args: SignArgs) -> anyhow::Result<()> {
    let key = SigningKey::read(&args.key)?;
    for file in &args.files {
        let bytes =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let signature = with_suffix(file, "sig");
        std::fs::write(&signature, format!("{}\n", key.sign_base64(&bytes)))
            .with_context(|| format!("cannot write {}", signature.display()))?;
        println!("{}", signature.display());
    }
    Ok(())
}

pub fn push(args: PushArgs) -> anyhow::Result<()> {
    let wasm = std::fs::read(&args.component)
        .with_context(|| format!("cannot read {}", args.component.display()))?;
    let signing_key = args.key.as_deref().map(SigningKey::read).transpose()?;
    let options = PushOptions {
        signing_key,
        transport: match (args.plain_http, args.insecure_http) {
            (false, _) => Transport::Https,
            (true, false) => Transport::PlainHttpLoopback,
            (true, true) => Transport::PlainHttpInsecure,
        },
        timeout: std::time::Duration::from_secs(args.timeout),
    };
    let pushed = accelhost_oci::push_blocking(&wasm, &args.reference, &options)?;
    let mut pinned = args.reference.clone();
    pinned.tag = None;
    pinned.digest = Some(pushed.manifest_digest.clone());
    println!(
        "pushed {} ({} bytes, layer {})",
        args.reference, pushed.size, pushed.layer_digest
    );
    println!("  manifest {}", pushed.manifest_digest);
    match &pushed.signature_tag {
        Some(tag) => println!("  signed: :{tag}"),
        None => println!("  unsigned (--key KEY signs it)"),
    }
    println!("  exactly this one: {pinned}");
    Ok(())
}

/// `path` with `.suffix` appended to its file name (`plugin.wasm` → `plugin.wasm.sig`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes a private key readable by its owner only, from its creation on.
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    // A file that existed (--force) keeps its mode through open: set it.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_writes_a_private_key_for_its_owner_and_sign_a_signature_its_public_key_checks() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("accelhost-sdk-keygen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let name = dir.join("release");
        let args = |force| KeygenArgs {
            out: name.clone(),
            algorithm: Algorithm::P256,
            force,
        };
        keygen(args(false)).unwrap();
        let mode = std::fs::metadata(dir.join("release.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let err = keygen(args(false)).unwrap_err().to_string();
        assert!(err.contains("without --force"), "{err}");
        keygen(args(true)).unwrap();

        let plugin = dir.join("plugin.wasm");
        std::fs::write(&plugin, b"\0asm component bytes").unwrap();
        sign(SignArgs {
            key: dir.join("release.key"),
            files: vec![plugin.clone()],
        })
        .unwrap();
        let text = std::fs::read_to_string(dir.join("plugin.wasm.sig")).unwrap();
        assert!(
            text.ends_with('\n') && !text.trim_end().contains('\n'),
            "{text:?}"
        );
        let keys = accelhost_trust::TrustedKeys::new(vec![(
            "release".into(),
            PublicKey::read(&dir.join("release.pub")).unwrap(),
        )]);
        let signer = keys
            .verify_blob(b"\0asm component bytes", text.as_bytes(), "plugin.wasm.sig")
            .unwrap();
        assert_eq!(signer.key, "release");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

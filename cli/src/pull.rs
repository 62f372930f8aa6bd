//! `accelhost pull`: plugins from OCI registries into the local store, each pinned by digest
//! and, with `--key`, verified before it is pinned.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use accelhost::config::{Config, ModuleToPull, PullList};
use accelhost::store::{OCI_SCHEME, OciReference, Store};
use accelhost::trust::{PublicKey, SignaturePolicy, TrustedKeys};
use accelhost_oci::{OciError, Progress, PullOptions, Pulled, Transport};
use anyhow::Context;

/// The text after `accelhost pull --help`'s options.
pub const AFTER_HELP: &str = "\
Each artifact must be a WebAssembly component stored as the CNCF wasm OCI artifact (config
application/vnd.wasm.config.v0+json, one application/wasm layer), as `accelhost-sdk push`,
wkg and wasmCloud's tools push it. Every blob is checked against its digest. The cosign
signatures at the tag sha256-<manifest hex>.sig come along and are stored with it; with
--key, one of them must verify with one of the keys, or the tag is not pinned. Pulling a
config's modules, each is checked as the config will check it at load: with the keys of its
`signed_by`, else of `trust.keys`; a signature is required where `signed_by` names keys or
`trust.require_signatures` is set, and elsewhere a signature that does not verify refuses it.

The tag is pinned to the manifest's digest: a config's `module` of that tag loads the pinned
component, offline, until the tag is pulled again.

The registry is not trusted: a manifest or error answer over its cap, a blob longer than its
descriptor, a registry silent for 30 s, sending under --min-bytes-per-sec once an answer has
had 10 s, or a pull over --timeout ends the pull with an error that says which, and pins
nothing. The store must be the user's own and closed to other writers (made with mode 0700).

Examples:
  accelhost pull oci://registry.example/plugins/nlb:1.2 --key vendor.pub
  accelhost pull oci://registry.example/plugins/nlb@sha256:3f1c...   # exactly that manifest
  accelhost --config host.json pull                                  # every oci:// module of it
  accelhost pull oci://127.0.0.1:5000/plugins/nlb:1.2 --plain-http  # a registry on the loopback

Environment:
  ACCELHOST_STORE              the store (default $XDG_DATA_HOME/accelhost/store, else
                               ~/.local/share/accelhost/store)
  ACCELHOST_REGISTRY_USER      with ACCELHOST_REGISTRY_PASSWORD: the credentials a registry
                               that asks for them gets (basic, or for a bearer token from the
                               registry's token service; default: anonymous)";

#[derive(clap::Args)]
pub struct Args {
    /// What to pull: oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:HEX.
    /// Without any, every `oci://` module of the config (--config, else $ACCELHOST_CONFIG,
    /// else ./accelhost.json), each verified with the config's own trust keys.
    #[arg(value_name = "REFERENCE")]
    references: Vec<OciReference>,
    /// A public key (PEM) that a cosign signature must verify with before the tag is pinned;
    /// repeat it for several (any one suffices). It replaces a config's keys. Without it (and
    /// without a config's), the signatures are stored but not checked.
    #[arg(long = "key", value_name = "PEM")]
    keys: Vec<PathBuf>,
    /// Talk plain HTTP to the registry instead of HTTPS: to a registry on the loopback
    /// (127.0.0.0/8, localhost) only, unless --insecure-http is given as well.
    #[arg(long)]
    plain_http: bool,
    /// With --plain-http, allow a registry off the loopback: anyone on the path can read and
    /// change what is sent (digests and signatures are still checked).
    #[arg(long, requires = "plain_http")]
    insecure_http: bool,
    /// The store to pull into (default: the config's `store` when pulling a config's modules,
    /// else $ACCELHOST_STORE, else the per-user store).
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// The largest component accepted, in MiB: a larger layer is refused before it is fetched.
    #[arg(long, value_name = "MIB", default_value_t = 128)]
    max_module_mib: u64,
    /// How long each reference's pull may take in all, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = accelhost_oci::DEFAULT_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// The slowest a registry may send, in bytes a second, once an answer has had 10 s.
    #[arg(long, value_name = "BYTES", default_value_t = accelhost_oci::DEFAULT_MIN_BYTES_PER_SEC)]
    min_bytes_per_sec: u64,
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let explicit_keys = if args.keys.is_empty() {
        None
    } else {
        let mut keys = Vec::new();
        for path in &args.keys {
            let key = PublicKey::read(path)?;
            keys.push((path.display().to_string(), key));
        }
        Some(SignaturePolicy {
            keys: TrustedKeys::new(keys),
            required: true,
        })
    };
    let (modules, config_store) = if args.references.is_empty() {
        let list = config_modules(config)?;
        (list.modules, list.store)
    } else {
        let modules = args
            .references
            .into_iter()
            .map(|reference| ModuleToPull {
                reference,
                signature: SignaturePolicy::default(),
            })
            .collect();
        (modules, None)
    };
    let store = match (args.store, config_store) {
        (Some(root), _) => Store::at(root),
        (None, Some(store)) => store,
        (None, None) => Store::open_default()?,
    };
    let transport = match (args.plain_http, args.insecure_http) {
        (false, _) => Transport::Https,
        (true, false) => Transport::PlainHttpLoopback,
        (true, true) => Transport::PlainHttpInsecure,
    };
    let mut failed = false;
    for module in &modules {
        let options = PullOptions {
            signature: explicit_keys.clone().unwrap_or(module.signature.clone()),
            transport,
            max_module_mib: args.max_module_mib,
            timeout: Duration::from_secs(args.timeout),
            min_bytes_per_sec: args.min_bytes_per_sec,
            progress: Some(Arc::new(report_progress)),
        };
        match accelhost_oci::pull_blocking(&module.reference, &store, &options) {
            Ok(pulled) => {
                println!("{}", line(&pulled));
                let _ = std::io::stdout().flush();
            }
            Err(err) => {
                let hint = match &err {
                    OciError::TooLarge { what, .. } if what.starts_with("layer") => {
                        " (--max-module-mib raises the limit)"
                    }
                    OciError::TimedOut { .. } => " (--timeout raises it)",
                    OciError::Stalled { .. } => " (--min-bytes-per-sec lowers the floor)",
                    _ => "",
                };
                eprintln!("error: {err}{hint}");
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One artifact's line: reference, manifest digest, size, and who signed it.
fn line(pulled: &Pulled) -> String {
    let signer = match (&pulled.signer, pulled.signatures) {
        (Some(signer), _) => format!("signed by {signer}"),
        (None, 0) => "unsigned".to_string(),
        (None, n) => format!("not verified ({n} signature(s) stored; --key checks them)"),
    };
    format!(
        "{}  {}  {} bytes  {signer}",
        pulled.reference, pulled.manifest_digest, pulled.layer_size
    )
}

/// A line on stderr as each blob starts.
fn report_progress(progress: &Progress<'_>) {
    if progress.received == 0 {
        eprintln!(
            "pulling {} {} ({} bytes)",
            progress.what, progress.digest, progress.size
        );
    }
}

/// The `oci://` modules of the config file the lookup order gives (an explicit one, else
/// $ACCELHOST_CONFIG, else ./accelhost.json), with the signature each must carry, and its
/// `store`: read against the schema, without looking for the modules in the store (they
/// are what is about to be pulled).
fn config_modules(config: Option<PathBuf>) -> anyhow::Result<PullList> {
    let path = config
        .or_else(|| {
            std::env::var_os("ACCELHOST_CONFIG")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        })
        .or_else(|| Some(PathBuf::from("accelhost.json")).filter(|p| p.is_file()))
        .context(
            "nothing to pull: give oci://REGISTRY/REPOSITORY:TAG references, or a config \
             (--config FILE) whose modules are oci:// references",
        )?;
    let list = Config::modules_to_pull(&path)?;
    if list.modules.is_empty() {
        anyhow::bail!(
            "{}: no plugin module is an {OCI_SCHEME} reference: nothing to pull",
            path.display()
        );
    }
    Ok(list)
}

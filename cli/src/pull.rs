//! `accelhost pull`: plugins from OCI registries into the local store, each pinned by digest
//! and, with `--key`, verified before it is pinned.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use accelhost::store::{OCI_SCHEME, OciReference, Store};
use accelhost::trust::{PublicKey, TrustedKeys};
use accelhost_oci::{OciError, Progress, PullOptions, Pulled};
use anyhow::Context;

/// The text after `accelhost pull --help`'s options.
pub const AFTER_HELP: &str = "\
Each artifact must be a WebAssembly component stored as the CNCF wasm OCI artifact (config
application/vnd.wasm.config.v0+json, one application/wasm layer), as `accelhost-sdk push`,
wkg and wasmCloud's tools push it. Every blob is checked against its digest. The cosign
signatures at the tag sha256-<manifest hex>.sig come along and are stored with it; with
--key, one of them must verify with one of the keys, or the tag is not pinned.

The tag is pinned to the manifest's digest: a config's `module` of that tag loads the pinned
component, offline, until the tag is pulled again.

Examples:
  accelhost pull oci://registry.example/plugins/nlb:1.2 --key vendor.pub
  accelhost pull oci://registry.example/plugins/nlb@sha256:3f1c...   # exactly that manifest
  accelhost --config host.json pull                                  # every oci:// module of it

Environment:
  ACCELHOST_STORE              the store (default $XDG_DATA_HOME/accelhost/store, else
                               ~/.local/share/accelhost/store)
  ACCELHOST_REGISTRY_USER      with ACCELHOST_REGISTRY_PASSWORD: basic auth for the
                               registry (default: anonymous)";

#[derive(clap::Args)]
pub struct Args {
    /// What to pull: oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:HEX.
    /// Without any, every `oci://` module of the config (--config, else $ACCELHOST_CONFIG,
    /// else ./accelhost.json).
    #[arg(value_name = "REFERENCE")]
    references: Vec<OciReference>,
    /// A public key (PEM) that a cosign signature must verify with before the tag is pinned;
    /// repeat it for several (any one suffices). Without it, the signatures are stored but
    /// not checked (a config's trust policy checks them when the plugin loads).
    #[arg(long = "key", value_name = "PEM")]
    keys: Vec<PathBuf>,
    /// Talk plain HTTP to the registry instead of HTTPS (for a registry on the loopback).
    #[arg(long)]
    plain_http: bool,
    /// The store to pull into (default: the config's `store` when pulling a config's modules,
    /// else $ACCELHOST_STORE, else the per-user store).
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// The largest component accepted, in MiB: a larger layer is refused before it is fetched.
    #[arg(long, value_name = "MIB", default_value_t = 128)]
    max_module_mib: u64,
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let (references, config_store) = if args.references.is_empty() {
        config_references(config)?
    } else {
        (args.references, None)
    };
    let store = match (args.store, config_store) {
        (Some(root), _) | (None, Some(root)) => Store::at(root),
        (None, None) => Store::open_default()?,
    };
    let mut keys = Vec::new();
    for path in &args.keys {
        let key = PublicKey::read(path)?;
        keys.push((path.display().to_string(), key));
    }
    let options = PullOptions {
        keys: TrustedKeys::new(keys),
        plain_http: args.plain_http,
        max_module_mib: args.max_module_mib,
        progress: Some(Arc::new(report_progress)),
    };
    let mut failed = false;
    for reference in &references {
        match accelhost_oci::pull_blocking(reference, &store, &options) {
            Ok(pulled) => {
                println!("{}", line(&pulled));
                let _ = std::io::stdout().flush();
            }
            Err(err) => {
                match &err {
                    OciError::TooLarge { what, .. } if what.starts_with("layer") => {
                        eprintln!("error: {err} (--max-module-mib raises the limit)")
                    }
                    _ => eprintln!("error: {err}"),
                }
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
/// $ACCELHOST_CONFIG, else ./accelhost.json), and its `store` if it names one, read as plain
/// JSON: loading it as a config would refuse the very modules that are not pulled yet.
fn config_references(
    config: Option<PathBuf>,
) -> anyhow::Result<(Vec<OciReference>, Option<PathBuf>)> {
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
    let (references, store) = modules_of(&path)?;
    if references.is_empty() {
        anyhow::bail!(
            "{}: no plugin module is an {OCI_SCHEME} reference: nothing to pull",
            path.display()
        );
    }
    Ok((references, store))
}

/// The distinct `oci://` values of `plugins[].module` in the JSON file at `path`, and its
/// `store` (relative to the file's folder, as the config loader reads it).
fn modules_of(path: &Path) -> anyhow::Result<(Vec<OciReference>, Option<PathBuf>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let mut references = Vec::new();
    let plugins = json
        .get("plugins")
        .and_then(|p| p.as_array())
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, plugin) in plugins.iter().enumerate() {
        let Some(module) = plugin.get("module").and_then(|m| m.as_str()) else {
            continue;
        };
        if !module.starts_with(OCI_SCHEME) {
            continue;
        }
        let reference: OciReference = module
            .parse()
            .map_err(|err| anyhow::anyhow!("{}: plugins[{i}].module: {err}", path.display()))?;
        if !references.contains(&reference) {
            references.push(reference);
        }
    }
    let store = match json.get("store") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(root)) => {
            let base = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            Some(base.join(root))
        }
        Some(other) => anyhow::bail!("{}: store: expected a path, found {other}", path.display()),
    };
    Ok((references, store))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oci_modules_of_a_config_are_read_once_each() {
        let dir = std::env::temp_dir().join(format!("accelhost-pull-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("host.json");
        std::fs::write(
            &config,
            r#"{"plugins": [
                {"name": "a", "module": "oci://127.0.0.1:5000/plugins/dfl:1.0"},
                {"name": "b", "module": "builtin:dfl"},
                {"name": "c", "module": "./local.wasm"},
                {"name": "d", "module": "oci://127.0.0.1:5000/plugins/dfl:1.0"},
                {"name": "e", "module": "oci://registry.example/x@sha256:0000000000000000000000000000000000000000000000000000000000000000"}
            ]}"#,
        )
        .unwrap();
        let (found, store) = modules_of(&config).unwrap();
        assert_eq!(store, None);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].to_string(), "oci://127.0.0.1:5000/plugins/dfl:1.0");
        assert_eq!(found[1].repository, "x");
        std::fs::write(
            &config,
            r#"{"store": "pulled", "plugins": [{"module": "oci://r.example/p:1"}]}"#,
        )
        .unwrap();
        let (_, store) = modules_of(&config).unwrap();
        assert_eq!(
            store,
            Some(dir.join("pulled")),
            "relative to the config's folder"
        );
        std::fs::write(
            &config,
            r#"{"plugins": [{"name": "a", "module": "oci://nothing"}]}"#,
        )
        .unwrap();
        let err = modules_of(&config).unwrap_err().to_string();
        assert!(err.contains("plugins[0].module"), "{err}");
        std::fs::write(&config, r#"{"plugins": [{"module": "builtin:dfl"}]}"#).unwrap();
        let err = config_references(Some(config.clone()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no plugin module is an oci:// reference"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

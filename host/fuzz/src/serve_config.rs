//! `serve_config`: [`ServeConfig::parse`] on arbitrary text, as `accelhost serve`,
//! `check-config` and a SIGHUP reload read it. Any input may be refused, but with an error that
//! names the file, never with a panic; what parses is used as the node uses it (its patterns
//! matched, its listeners and Kubernetes settings read).

use std::path::Path;

use accelhost_node::ServeConfig;

/// Where fuzzed serve configs claim to come from; relative paths resolve against its folder.
const FUZZ_SERVE_CONFIG_PATH: &str = "/nonexistent/accelhost-fuzz/serve.json";

/// Parses `data` (lossily decoded as UTF-8) as a serve config.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match ServeConfig::parse(&text, Path::new(FUZZ_SERVE_CONFIG_PATH)) {
        Ok(config) => {
            for id in ["dfl/emu:dfl0", "", "é", "xocl/é*"] {
                for client in &config.clients {
                    let _ = client.grants.allows_device(id);
                }
                if let Some(kubernetes) = &config.kubernetes {
                    let _ = kubernetes.offers(id);
                }
            }
            let _ = config.limits.max_message_bytes();
            let _ = format!("{config:?}");
        }
        Err(err) => {
            let said = err.to_string();
            assert!(
                said.starts_with(FUZZ_SERVE_CONFIG_PATH),
                "a refusal names the file: {said}"
            );
        }
    }
}

//! `config`: [`Config::parse`] on arbitrary text. Any input may be refused, but with a
//! [`ConfigError`](accelhost::ConfigError) that formats, never with a panic.

use accelhost::Config;
use accelhost::config::ConfigSource;

/// Where fuzzed configs claim to come from when not embedded; relative module paths resolve
/// against its directory, which does not exist.
const FUZZ_CONFIG_PATH: &str = "/nonexistent/accelhost-fuzz/accelhost.json";

/// Parses `data` (lossily decoded as UTF-8) as config text from a file and as the embedded
/// default.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for source in [
        ConfigSource::File(FUZZ_CONFIG_PATH.into()),
        ConfigSource::Embedded,
    ] {
        match Config::parse(&text, source) {
            Ok(config) => {
                let _ = config.base_dir();
                let _ = format!("{config:?}");
            }
            Err(err) => {
                let _ = err.to_string();
            }
        }
    }
}

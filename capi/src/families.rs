//! Which devices OPAE programs see. OPAE lists the FPGA cards of the dfl family (its FMEs and
//! ports), and its programs take every device object for one: OPAE's `object_api` sample
//! reads each one's FME `perf/` tree, `hello_events` injects errors into the first. So by
//! default the door shows the dfl family, and the devices of plugins that name no family
//! (an SDK plugin's NLB0, which OPAE's programs drive as OPAE's). The other families' cards
//! (the CAPI AFUs and adapters, the XRT cards) have doors of their own (libcxl, XRT, OpenCL);
//! `ACCELHOST_OPAE_FAMILIES` shows them to OPAE programs too.

use accelhost::Token;

use crate::result::{CapiResult, invalid};

/// The environment variable that names the families shown beyond the default: a
/// comma-separated list (`cxl,xocl`), or `all`. Read at each `fpgaEnumerate`.
pub const FAMILIES_ENV: &str = "ACCELHOST_OPAE_FAMILIES";

/// The family OPAE itself lists.
const OPAE_FAMILY: &str = "dfl";

/// The devices `fpgaEnumerate` hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// The dfl family, the devices that name no family, and these families.
    Families(Vec<String>),
    /// Every device of every plugin.
    All,
}

impl Shown {
    /// What `value` (the variable's, `None` when unset) asks for. An empty value is the
    /// default; a family name is lower-case letters, digits, `-` and `_`, so a typo such as
    /// a space, an empty entry or a path is refused with what was wrong, not read as a family
    /// that no device has.
    pub fn parse(value: Option<&str>) -> Result<Shown, String> {
        let value = value.unwrap_or("");
        if value == "all" {
            return Ok(Shown::All);
        }
        let mut families = Vec::new();
        if value.is_empty() {
            return Ok(Shown::Families(families));
        }
        for name in value.split(',') {
            if name == "all" {
                return Err(format!("{value:?}: `all` stands alone, not in a list"));
            }
            let valid = !name.is_empty()
                && name.len() <= 64
                && name.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_'
                });
            if !valid {
                return Err(format!(
                    "{value:?}: {name:?} is no family name (lower-case letters, digits, - and _, \
                     as in `cxl,xocl`; or `all`)"
                ));
            }
            if !families.iter().any(|f| f == name) {
                families.push(name.to_string());
            }
        }
        Ok(Shown::Families(families))
    }

    /// What the environment asks for, read now.
    pub fn from_env() -> CapiResult<Shown> {
        let value = std::env::var_os(FAMILIES_ENV);
        let value = match &value {
            None => None,
            Some(raw) => Some(
                raw.to_str()
                    .ok_or_else(|| invalid(format!("{FAMILIES_ENV} is not UTF-8: {raw:?}")))?,
            ),
        };
        Shown::parse(value).map_err(|why| invalid(format!("{FAMILIES_ENV}={why}")))
    }

    /// Whether a device of `family` (its `interface` property; `None` when its plugin names
    /// none) is shown.
    pub fn shows_family(&self, family: Option<&str>) -> bool {
        match (self, family) {
            (Shown::All, _) | (_, None) | (_, Some(OPAE_FAMILY)) => true,
            (Shown::Families(families), Some(family)) => families.iter().any(|f| f == family),
        }
    }

    /// Whether `token`'s device is shown.
    pub fn shows(&self, token: &Token) -> bool {
        self.shows_family(family(token))
    }
}

/// The family of `token`'s device: the `interface` its plugin reports (`dfl`, `cxl`, `xocl`).
fn family(token: &Token) -> Option<&str> {
    token
        .properties()
        .extras
        .iter()
        .find(|(key, _)| key.as_str() == "interface")
        .map(|(_, value)| value.as_str())
}

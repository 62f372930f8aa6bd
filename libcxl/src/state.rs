//! The AFUs this process's programs see: those of the config found by accelhost's lookup
//! order (ending in the embedded default), read once, with the names libcxl gives them:
//! adapters `cardC`, AFUs `afuC.S`, and the device nodes `/dev/cxl/afuC.S{m,s,d}` a
//! program opens. The emulated AFUs live in this process: another process has its own.

use std::ffi::CString;
use std::sync::OnceLock;

use accelhost::cxl::{self, Afu, AfuMode, ContextKind};

use crate::error::{CxlResult, refuse};

/// Where libcxl finds its device nodes.
const DEV_DIR: &str = "/dev/cxl/";

/// One AFU and its names (kept for the process's life, as `cxl_afu_dev_name` hands them
/// out).
pub struct Listed {
    pub afu: Afu,
    /// `afuC.S`.
    pub name: CString,
    /// `afuC.Sm`, `afuC.Ss` and `afuC.Sd`, by [`node_index`].
    pub nodes: [CString; 3],
}

/// One adapter: its number and name.
pub struct Adapter {
    pub card: u32,
    /// `cardC`.
    pub name: CString,
}

/// The AFUs and adapters, or why there are none.
struct Found {
    afus: Vec<Listed>,
    adapters: Vec<Adapter>,
}

static FOUND: OnceLock<Result<Found, String>> = OnceLock::new();

fn found(call: &str) -> CxlResult<&'static Found> {
    FOUND
        .get_or_init(|| {
            let (config, origin) = accelhost::builtin::discover(None)
                .map_err(|err| format!("no CAPI AFUs: the config could not be read: {err}"))?;
            let afus: Vec<Listed> = cxl::afus(&config)
                .into_iter()
                .map(|afu| {
                    let desc = afu.desc();
                    let name = format!("afu{}.{}", desc.card, desc.slice);
                    let node = |suffix| CString::new(format!("{name}{suffix}")).unwrap();
                    Listed {
                        nodes: [node('m'), node('s'), node('d')],
                        name: CString::new(name).unwrap(),
                        afu,
                    }
                })
                .collect();
            if afus.is_empty() {
                return Err(format!("the config ({origin}) has no CAPI AFUs"));
            }
            let mut cards: Vec<u32> = afus.iter().map(|listed| listed.afu.desc().card).collect();
            cards.dedup();
            let adapters = cards
                .into_iter()
                .map(|card| Adapter {
                    card,
                    name: CString::new(format!("card{card}")).unwrap(),
                })
                .collect();
            Ok(Found { afus, adapters })
        })
        .as_ref()
        .map_err(|why| refuse(call, libc::ENODEV, why))
}

/// Every AFU, by card then slice.
pub fn afus(call: &str) -> CxlResult<&'static [Listed]> {
    Ok(&found(call)?.afus)
}

/// Every adapter, by number.
pub fn adapters(call: &str) -> CxlResult<&'static [Adapter]> {
    Ok(&found(call)?.adapters)
}

/// The slot of `kind`'s name in [`Listed::nodes`].
pub fn node_index(kind: ContextKind) -> usize {
    match kind {
        ContextKind::Master => 0,
        ContextKind::Slave => 1,
        ContextKind::Dedicated => 2,
    }
}

/// Whether an AFU in `mode` has a `kind` node: master and slave for AFU-directed, dedicated
/// for dedicated-process.
pub fn has_node(mode: Option<AfuMode>, kind: ContextKind) -> bool {
    matches!(
        (mode, kind),
        (
            Some(AfuMode::Directed),
            ContextKind::Master | ContextKind::Slave
        ) | (Some(AfuMode::Dedicated), ContextKind::Dedicated)
    )
}

/// The AFU and context kind a device node path names (`/dev/cxl/afu0.0s`), if any.
pub fn find_node(call: &str, path: &str) -> CxlResult<(usize, ContextKind)> {
    let afus = afus(call)?;
    let no_such = || {
        let names: Vec<String> = afus
            .iter()
            .flat_map(|listed| {
                [
                    ContextKind::Master,
                    ContextKind::Slave,
                    ContextKind::Dedicated,
                ]
                .into_iter()
                .filter(|kind| has_node(listed.afu.desc().mode, *kind))
                .map(|kind| {
                    format!(
                        "{DEV_DIR}{}",
                        listed.nodes[node_index(kind)].to_string_lossy()
                    )
                })
            })
            .collect();
        refuse(
            call,
            libc::ENODEV,
            format!(
                "'{path}' is no AFU device node (there are {})",
                names.join(", ")
            ),
        )
    };
    let name = path.strip_prefix(DEV_DIR).ok_or_else(no_such)?;
    for (index, listed) in afus.iter().enumerate() {
        for kind in [
            ContextKind::Master,
            ContextKind::Slave,
            ContextKind::Dedicated,
        ] {
            if listed.nodes[node_index(kind)].as_bytes() == name.as_bytes()
                && has_node(listed.afu.desc().mode, kind)
            {
                return Ok((index, kind));
            }
        }
    }
    Err(no_such())
}

//! What the host knows about a device, and how applications select devices: the vocabulary
//! of discovery, shared by the embedding API and the calls into plugins.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::types::{BusAddress, Guid};

/// OPAE's two object kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectType {
    /// A whole card.
    Device,
    /// An accelerator function that applications open and drive.
    Accelerator,
}

/// Whether an accelerator was free when it was enumerated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcceleratorState {
    /// Nobody held it open.
    Unassigned,
    /// Someone held it open (OPAE's `FPGA_ACCELERATOR_ASSIGNED`).
    Assigned,
}

/// How an accelerator is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OpenMode {
    /// Other openers may hold it at the same time.
    Shared,
    /// No other opener may hold it at the same time (OPAE's default).
    #[default]
    Exclusive,
}

/// A device's properties, as its plugin reported them at enumeration. They are kept by the
/// host, so reading them never calls into the plugin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Properties {
    /// A whole card or an accelerator.
    pub object_type: ObjectType,
    /// Unique within the plugin, such as `emu:dfl0` or `dfl-port.0`.
    pub name: SharedText,
    /// The AFU id for accelerators.
    pub guid: Guid,
    /// PCI vendor id.
    pub vendor_id: u16,
    /// PCI device id.
    pub device_id: u16,
    /// PCI address, if the device has one.
    pub bus_address: Option<BusAddress>,
    /// CPU socket the device is attached to, if known.
    pub socket_id: Option<u32>,
    /// Such as `fpga`.
    pub device_type: SharedText,
    /// `localhost` for this machine.
    pub host: SharedText,
    /// Number of MMIO regions: the valid indexes of `Handle::map_mmio` are `0..num_mmio`.
    pub num_mmio: u32,
    /// Number of interrupt vectors the device can raise.
    pub num_interrupts: u32,
    /// For accelerators: whether someone held it open at enumeration; `None` for cards.
    pub accelerator_state: Option<AcceleratorState>,
    /// The plugin's token for the parent device, if it has one.
    pub parent: Option<u64>,
    /// Plugin-defined facts, in the plugin's order (a JSON object when serialized).
    #[serde(serialize_with = "extras_as_object")]
    pub extras: Vec<(SharedText, SharedText)>,
}

fn extras_as_object<S: serde::Serializer>(
    extras: &[(SharedText, SharedText)],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_map(extras.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// An immutable text that copies share: the texts of [`Properties`]. The texts of one
/// `inventory` answer (its names, device types, hosts and facts) are written once into one
/// allocation, and each is a range of it, so that ten thousand devices cost one allocation
/// and not ten thousand; a copy of a device's properties keeps its answer's texts alive. A
/// plugin of the `discovery`-only contract answers with owned strings, one text each.
#[derive(Clone)]
pub struct SharedText {
    whole: Arc<str>,
    /// The range of `whole` this text is, always on character boundaries.
    start: usize,
    end: usize,
}

impl SharedText {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.whole[self.start..self.end]
    }

    /// `range` of `whole`, or `None` when it is not a range of `whole` on its character
    /// boundaries.
    pub(crate) fn slice(whole: &Arc<str>, range: std::ops::Range<usize>) -> Option<Self> {
        whole.get(range.clone())?;
        Some(SharedText {
            whole: whole.clone(),
            start: range.start,
            end: range.end,
        })
    }
}

#[cfg(test)]
impl SharedText {
    /// Whether both are ranges of one allocation.
    pub(crate) fn shares_allocation_with(&self, other: &SharedText) -> bool {
        Arc::ptr_eq(&self.whole, &other.whole)
    }
}

impl Default for SharedText {
    fn default() -> Self {
        SharedText::from("")
    }
}

impl PartialEq for SharedText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SharedText {}

impl PartialOrd for SharedText {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SharedText {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for SharedText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl Serialize for SharedText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl AsRef<str> for SharedText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for SharedText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Deref for SharedText {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Debug for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<&str> for SharedText {
    fn from(text: &str) -> Self {
        SharedText {
            whole: text.into(),
            start: 0,
            end: text.len(),
        }
    }
}

impl From<String> for SharedText {
    fn from(text: String) -> Self {
        SharedText::from(text.as_str())
    }
}

impl From<SharedText> for String {
    fn from(text: SharedText) -> Self {
        text.as_str().to_string()
    }
}

impl PartialEq<str> for SharedText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SharedText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for SharedText {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<SharedText> for str {
    fn eq(&self, other: &SharedText) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<SharedText> for &str {
    fn eq(&self, other: &SharedText) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<SharedText> for String {
    fn eq(&self, other: &SharedText) -> bool {
        self == other.as_str()
    }
}

/// Selects devices: every field that is set must match. A device matches a list of filters
/// when it matches any of them; an empty list matches every device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only cards, or only accelerators.
    pub object_type: Option<ObjectType>,
    /// The GUID to match: the AFU id for accelerators.
    pub guid: Option<Guid>,
    /// PCI vendor id.
    pub vendor_id: Option<u16>,
    /// PCI device id.
    pub device_id: Option<u16>,
    /// PCI address; a device without one does not match.
    pub bus_address: Option<BusAddress>,
    /// The kind of device, such as `fpga`.
    pub device_type: Option<String>,
    /// A host name, or `localhost` (this machine), `^localhost` (any other) or `*`.
    pub host: Option<String>,
}

impl Filter {
    /// A filter with no field set, which matches every device.
    pub fn new() -> Self {
        Self::default()
    }

    /// Matches only devices of this object type.
    pub fn object_type(mut self, object_type: ObjectType) -> Self {
        self.object_type = Some(object_type);
        self
    }

    /// Matches only devices with this GUID (the AFU id for accelerators).
    pub fn guid(mut self, guid: Guid) -> Self {
        self.guid = Some(guid);
        self
    }

    /// Matches only devices with this PCI vendor id.
    pub fn vendor_id(mut self, id: u16) -> Self {
        self.vendor_id = Some(id);
        self
    }

    /// Matches only devices with this PCI device id.
    pub fn device_id(mut self, id: u16) -> Self {
        self.device_id = Some(id);
        self
    }

    /// Matches only the device at this PCI address.
    pub fn bus_address(mut self, address: BusAddress) -> Self {
        self.bus_address = Some(address);
        self
    }

    /// Matches only devices of this kind, such as `fpga`.
    pub fn device_type(mut self, device_type: impl Into<String>) -> Self {
        self.device_type = Some(device_type.into());
        self
    }

    /// Matches only devices on `host`: a host name, `localhost`, `^localhost` or `*`.
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// Does a device with `properties` match?
    pub fn matches(&self, p: &Properties) -> bool {
        self.object_type.is_none_or(|t| t == p.object_type)
            && self.guid.is_none_or(|g| g == p.guid)
            && self.vendor_id.is_none_or(|v| v == p.vendor_id)
            && self.device_id.is_none_or(|d| d == p.device_id)
            && self.bus_address.is_none_or(|b| Some(b) == p.bus_address)
            && self
                .device_type
                .as_deref()
                .is_none_or(|t| t == p.device_type.as_str())
            && self
                .host
                .as_deref()
                .is_none_or(|h| host_matches(h, &p.host))
    }

    /// The filter as a plugin sees it: plugins cannot see the machine's name, they know this
    /// machine as `localhost`.
    pub(crate) fn for_plugin(&self) -> Filter {
        let mut filter = self.clone();
        if let Some(host) = &filter.host
            && local_hostname() == Some(host.as_str())
        {
            filter.host = Some("localhost".to_string());
        }
        filter
    }
}

/// The OPAE host filter: `*` matches every host, `localhost` this machine (by that name or
/// its host name), `^localhost` every other machine, anything else that host by name.
pub fn host_matches(filter: &str, device_host: &str) -> bool {
    match filter {
        "*" => true,
        "localhost" => is_local(device_host),
        "^localhost" => !is_local(device_host),
        name => name == device_host || (is_local(name) && is_local(device_host)),
    }
}

fn is_local(host: &str) -> bool {
    host == "localhost" || local_hostname().is_some_and(|h| h == host)
}

/// This machine's host name.
pub fn local_hostname() -> Option<&'static str> {
    static NAME: OnceLock<Option<String>> = OnceLock::new();
    NAME.get_or_init(|| {
        let mut buf = [0u8; 256];
        // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        if rc != 0 {
            return None;
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8(buf[..end].to_vec())
            .ok()
            .filter(|s| !s.is_empty())
    })
    .as_deref()
}

/// The most devices one `enumerate` answer may list.
pub(crate) const MAX_DEVICES: usize = 4096;
/// The longest name, device type, host or extra key a plugin may report, in bytes.
const MAX_NAME: usize = 256;
/// The longest extra value, in bytes.
const MAX_VALUE: usize = 4096;
/// The most extras one device may carry.
const MAX_EXTRAS: usize = 64;

impl Properties {
    /// Checks properties as a plugin reported them: a string or list longer than the host
    /// keeps is refused, which ends the plugin's instance like a fault.
    pub(crate) fn check_bounds(&self) -> Result<(), String> {
        let fields = [
            ("name", &self.name, MAX_NAME),
            ("device-type", &self.device_type, MAX_NAME),
            ("host", &self.host, MAX_NAME),
        ];
        for (field, value, max) in fields {
            if value.len() > max {
                return Err(format!(
                    "the property {field} is {} bytes long (at most {max})",
                    value.len()
                ));
            }
        }
        if self.extras.len() > MAX_EXTRAS {
            return Err(format!(
                "{} extra properties (at most {MAX_EXTRAS})",
                self.extras.len()
            ));
        }
        if let Some((key, value)) = self
            .extras
            .iter()
            .find(|(k, v)| k.len() > MAX_NAME || v.len() > MAX_VALUE)
        {
            return Err(format!(
                "the extra property {:?} is {} + {} bytes long (at most {MAX_NAME} + {MAX_VALUE})",
                key.chars().take(32).collect::<String>(),
                key.len(),
                value.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props() -> Properties {
        Properties {
            object_type: ObjectType::Accelerator,
            name: "emu:dfl0".into(),
            guid: Guid::new(1, 2),
            vendor_id: 0x8086,
            device_id: 0x0A5E,
            bus_address: Some("0000:5e:00.0".parse().unwrap()),
            socket_id: None,
            device_type: "fpga".into(),
            host: "localhost".into(),
            num_mmio: 1,
            num_interrupts: 0,
            accelerator_state: Some(AcceleratorState::Unassigned),
            parent: None,
            extras: vec![],
        }
    }

    #[test]
    fn filters_match_every_set_field() {
        let p = props();
        assert!(Filter::new().matches(&p));
        assert!(
            Filter::new()
                .guid(Guid::new(1, 2))
                .device_type("fpga")
                .matches(&p)
        );
        assert!(!Filter::new().guid(Guid::new(1, 3)).matches(&p));
        assert!(!Filter::new().object_type(ObjectType::Device).matches(&p));
        assert!(!Filter::new().vendor_id(0x10ee).matches(&p));
        assert!(
            Filter::new()
                .bus_address("5e:00.0".parse().unwrap())
                .matches(&p)
        );
        assert!(
            !Filter::new()
                .bus_address("5e:00.1".parse().unwrap())
                .matches(&p)
        );
    }

    #[test]
    fn host_keywords() {
        assert!(host_matches("*", "localhost"));
        assert!(host_matches("*", "far.example"));
        assert!(host_matches("localhost", "localhost"));
        assert!(!host_matches("localhost", "far.example"));
        assert!(host_matches("^localhost", "far.example"));
        assert!(!host_matches("^localhost", "localhost"));
        assert!(host_matches("far.example", "far.example"));
        assert!(!host_matches("near.example", "far.example"));
        if let Some(me) = local_hostname() {
            assert!(host_matches(me, "localhost"));
            assert!(host_matches("localhost", me));
        }
    }
}

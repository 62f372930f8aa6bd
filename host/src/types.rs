//! Plain values shared by the embedding API, the config and the device backends.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How many launches go to a plugin in one `enqueue-launches` call at most: a queue hands on
/// what it holds back once this many wait, and a node takes batches of at most this many
/// (`Queue::enqueue_launches` through it).
pub const LAUNCHES_PER_BATCH: usize = 256;

/// A 128-bit identifier such as an AFU id, written in the usual 8-4-4-4-12 hex form
/// (`D8424DC4-A4A3-C413-F89E-433683F9040B`: `high` is the first 16 digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid {
    /// The first 16 hex digits (`GUID_H` of a DFL AFU header).
    pub high: u64,
    /// The last 16 hex digits (`GUID_L` of a DFL AFU header).
    pub low: u64,
}

impl Guid {
    /// The GUID with these two halves.
    pub const fn new(high: u64, low: u64) -> Self {
        Guid { high, low }
    }

    /// The GUID whose 16 bytes, in the order it is written, are these (RFC 4122's byte order,
    /// which xclbin images and the xocl driver use).
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        let value = u128::from_be_bytes(bytes);
        Guid::new((value >> 64) as u64, value as u64)
    }

    /// The 16 bytes in the order the GUID is written; the inverse of [`Guid::from_bytes`].
    pub const fn to_bytes(self) -> [u8; 16] {
        ((self.high as u128) << 64 | self.low as u128).to_be_bytes()
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (h, l) = (self.high, self.low);
        write!(
            f,
            "{:08X}-{:04X}-{:04X}-{:04X}-{:012X}",
            h >> 32,
            (h >> 16) & 0xFFFF,
            h & 0xFFFF,
            l >> 48,
            l & 0xFFFF_FFFF_FFFF
        )
    }
}

/// A GUID that is not 32 hex digits (dashes optional).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a GUID: expected 32 hex digits such as D8424DC4-A4A3-C413-F89E-433683F9040B")]
pub struct ParseGuidError(String);

impl FromStr for Guid {
    type Err = ParseGuidError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits: String = s.chars().filter(|&c| c != '-').collect();
        let dashes_ok = s.len() == 32 || (s.len() == 36 && dash_positions_ok(s));
        if digits.len() != 32 || !dashes_ok || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(ParseGuidError(s.to_string()));
        }
        let high = u64::from_str_radix(&digits[..16], 16).map_err(|_| ParseGuidError(s.into()))?;
        let low = u64::from_str_radix(&digits[16..], 16).map_err(|_| ParseGuidError(s.into()))?;
        Ok(Guid { high, low })
    }
}

fn dash_positions_ok(s: &str) -> bool {
    s.char_indices()
        .all(|(i, c)| (c == '-') == matches!(i, 8 | 13 | 18 | 23))
}

/// A PCI address, written `ssss:bb:dd.f` in hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BusAddress {
    /// PCI segment (domain), `ssss`.
    pub segment: u16,
    /// Bus number, `bb`.
    pub bus: u8,
    /// Device number, `dd` (0 to 31).
    pub device: u8,
    /// Function number, `f` (0 to 7).
    pub function: u8,
}

impl fmt::Display for BusAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04x}:{:02x}:{:02x}.{:x}",
            self.segment, self.bus, self.device, self.function
        )
    }
}

/// The name of the vendor a PCI vendor id stands for, for the vendors whose cards the
/// families drive; `PCI vendor 0x....` for any other. The doors report it where their API
/// asks for a vendor's name.
pub fn pci_vendor_name(vendor_id: u16) -> String {
    match vendor_id {
        0x10ee => "Xilinx".into(),
        0x1014 => "IBM".into(),
        0x8086 => "Intel".into(),
        other => format!("PCI vendor {other:#06x}"),
    }
}

/// A PCI address that is not `ssss:bb:dd.f` (the segment may be left out).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a PCI address: expected ssss:bb:dd.f in hex, such as 0000:5e:00.0")]
pub struct ParseBusAddressError(String);

impl FromStr for BusAddress {
    type Err = ParseBusAddressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseBusAddressError(s.to_string());
        let (rest, function) = s.rsplit_once('.').ok_or_else(err)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let (segment, bus, device) = match parts.as_slice() {
            [seg, bus, dev] => (*seg, *bus, *dev),
            [bus, dev] => ("0", *bus, *dev),
            _ => return Err(err()),
        };
        let hex = |t: &str, max_digits: usize| -> Result<u32, ParseBusAddressError> {
            if t.is_empty() || t.len() > max_digits {
                return Err(err());
            }
            u32::from_str_radix(t, 16).map_err(|_| err())
        };
        let device = hex(device, 2)?;
        let function = hex(function, 1)?;
        if device > 0x1f || function > 7 {
            return Err(err());
        }
        Ok(BusAddress {
            segment: hex(segment, 4)? as u16,
            bus: hex(bus, 2)? as u8,
            device: device as u8,
            function: function as u8,
        })
    }
}

macro_rules! serde_as_string {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

serde_as_string!(Guid);
serde_as_string!(BusAddress);

/// What an FPGA-style event waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A device interrupt.
    Interrupt,
    /// A device error.
    Error,
    /// A power or thermal alarm.
    PowerThermal,
}

/// The kinds of memory an allocation can be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Host memory the device reaches directly; the application reads and writes it.
    Host,
    /// Device memory; it moves to and from the host with
    /// [`Queue::enqueue_memcpy`](crate::Queue::enqueue_memcpy).
    Device,
    /// Memory both sides reach at the same address.
    Shared,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guid_round_trips_in_canonical_form() {
        let g: Guid = "D8424DC4-A4A3-C413-F89E-433683F9040B".parse().unwrap();
        assert_eq!(g, Guid::new(0xD8424DC4A4A3C413, 0xF89E433683F9040B));
        assert_eq!(g.to_string(), "D8424DC4-A4A3-C413-F89E-433683F9040B");
        assert_eq!(
            "d8424dc4a4a3c413f89e433683f9040b".parse::<Guid>().unwrap(),
            g
        );
    }

    #[test]
    fn guid_bytes_are_in_written_order() {
        let g: Guid = "D8424DC4-A4A3-C413-F89E-433683F9040B".parse().unwrap();
        let bytes = g.to_bytes();
        assert_eq!(bytes[..4], [0xD8, 0x42, 0x4D, 0xC4]);
        assert_eq!(bytes[12..], [0x83, 0xF9, 0x04, 0x0B]);
        assert_eq!(Guid::from_bytes(bytes), g);
    }

    #[test]
    fn bad_guids_are_refused() {
        for bad in [
            "",
            "xyz",
            "D8424DC4-A4A3-C413-F89E-433683F9040",
            "D8424DC4A4A3-C413-F89E-433683F9040B0",
        ] {
            assert!(bad.parse::<Guid>().is_err(), "{bad}");
        }
    }

    #[test]
    fn bus_address_round_trips() {
        let b: BusAddress = "0000:5e:00.1".parse().unwrap();
        assert_eq!((b.segment, b.bus, b.device, b.function), (0, 0x5e, 0, 1));
        assert_eq!(b.to_string(), "0000:5e:00.1");
        assert_eq!("5e:00.1".parse::<BusAddress>().unwrap(), b);
        for bad in [
            "",
            "5e:00",
            "0000:5e:20.0",
            "0000:5e:00.8",
            "1:2:3:4.0",
            "zz:00.0",
        ] {
            assert!(bad.parse::<BusAddress>().is_err(), "{bad}");
        }
    }

    #[test]
    fn serde_uses_the_text_forms() {
        let g = Guid::new(1, 2);
        let json = serde_json::to_string(&g).unwrap();
        assert_eq!(json, "\"00000000-0000-0001-0000-000000000002\"");
        assert_eq!(serde_json::from_str::<Guid>(&json).unwrap(), g);
    }
}

/// What one device grant names: a device by its full name, or every device whose name starts
/// with a prefix (a grant ending in `*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevicePattern<'a> {
    /// Exactly this name.
    Exact(&'a str),
    /// Every name starting with this.
    Prefix(&'a str),
}

impl<'a> DevicePattern<'a> {
    /// The pattern of the grant `grant`.
    pub fn of(grant: &'a str) -> Self {
        match grant.strip_suffix('*') {
            Some(prefix) => DevicePattern::Prefix(prefix),
            None => DevicePattern::Exact(grant),
        }
    }

    /// Whether the device `name` is granted.
    pub fn matches(self, name: &str) -> bool {
        match self {
            DevicePattern::Exact(exact) => exact == name,
            DevicePattern::Prefix(prefix) => name.starts_with(prefix),
        }
    }
}

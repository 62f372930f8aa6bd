//! The sysfs attributes of an emulated port and of its card's FME (named `fme/...`), answered
//! as the kernel's DFL driver answers them: the same names, formats and clearing rules. Error
//! registers hold what the emulated card raised (an NLB0 test that reaches an unmapped address
//! sets a port error); the FME's sensors are emulated, and their labels say so. The FME's
//! `perf/` counters are those of the intel-fpga driver that OPAE's samples read (the upstream
//! DFL driver moved them to a perf-events PMU): the card's clock, and the MMIO accesses and
//! cache lines the emulated card served.

use std::io;

use super::super::abi::nlb0;
use crate::attributes::{AttributeInfo, parse_number};
use crate::devices::errno;
use crate::types::Guid;

/// Port error bit: the AFU read or wrote an IO virtual address that is not mapped. (Bit
/// numbers are the emulator's; a real card's FIM documents its own.)
pub const PORT_ERROR_UNMAPPED_ADDRESS: u64 = 1 << 0;
/// Port error bit: the AFU was started in a mode it does not implement.
pub const PORT_ERROR_UNSUPPORTED_MODE: u64 = 1 << 1;

/// The interface id (`pr/interface_id`) of the emulated FIM: what a green bitstream must
/// have been built against.
pub const FME_INTERFACE_ID: Guid = Guid::new(0x5A5E_0000_0000_4EAB, 0x8E5F_0000_0000_0001);
/// `bitstream_id`: BBS version 1.2.3 in bits 59:48, as OPAE decodes it.
pub const FME_BITSTREAM_ID: u64 = 0x0123_0000_0000_A5E0;
/// `bitstream_metadata`.
pub const FME_BITSTREAM_METADATA: u64 = 0x0000_0000_2026_1123;
/// The PCI subsystem ids of the emulated card (`subsystem_vendor`, `subsystem_device` of its
/// PCI function; the emulator shows them under the FME).
pub const SUBSYSTEM_VENDOR_ID: u16 = 0x8086;
/// See [`SUBSYSTEM_VENDOR_ID`].
pub const SUBSYSTEM_DEVICE_ID: u16 = 0x1771;
/// The user clock's high frequency at power-on, in kHz (the low clock is half of it): the
/// AFU's nominal 400 MHz.
pub const USER_CLOCK_DEFAULT_KHZ: u64 = 400_000;
/// The range `userclk/frequency` accepts, in kHz.
pub const USER_CLOCK_RANGE_KHZ: std::ops::RangeInclusive<u64> = 10_000..=800_000;
/// `fme/errors/inject_errors` bits and the error each raises: catastrophic, fatal (both in
/// `catfatal_errors`) and non-fatal (in `nonfatal_errors`).
pub const INJECT_CATASTROPHIC: u64 = 1 << 0;
/// See [`INJECT_CATASTROPHIC`].
pub const INJECT_FATAL: u64 = 1 << 1;
/// See [`INJECT_CATASTROPHIC`].
pub const INJECT_NONFATAL: u64 = 1 << 2;
/// Emulated sensor readings, idle and while a test runs: FPGA temperature (millidegrees C)
/// and board power (microwatts), as hwmon reports them.
pub const TEMP_IDLE_MILLI_C: u64 = 45_000;
/// See [`TEMP_IDLE_MILLI_C`].
pub const TEMP_BUSY_MILLI_C: u64 = 61_000;
/// See [`TEMP_IDLE_MILLI_C`].
pub const POWER_IDLE_MICRO_W: u64 = 21_000_000;
/// See [`TEMP_IDLE_MILLI_C`].
pub const POWER_BUSY_MICRO_W: u64 = 34_500_000;

/// Every attribute, with whether it is writable, in listing order.
const ATTRIBUTES: &[(&str, bool)] = &[
    ("id", false),
    ("afu_id", false),
    ("power_state", false),
    ("ltr", true),
    ("ap1_event", true),
    ("ap2_event", true),
    ("errors/errors", true),
    ("errors/first_error", false),
    ("errors/first_malformed_req", false),
    ("userclk/frequency", true),
    ("fme/ports_num", false),
    ("fme/socket_id", false),
    ("fme/bitstream_id", false),
    ("fme/bitstream_metadata", false),
    ("fme/cache_size", false),
    ("fme/fabric_version", false),
    ("fme/pr/interface_id", false),
    ("fme/subsystem_vendor", false),
    ("fme/subsystem_device", false),
    ("fme/errors/fme_errors", true),
    ("fme/errors/pcie0_errors", true),
    ("fme/errors/pcie1_errors", true),
    ("fme/errors/nonfatal_errors", false),
    ("fme/errors/catfatal_errors", false),
    ("fme/errors/inject_errors", true),
    ("fme/errors/first_error", false),
    ("fme/errors/next_error", false),
    ("fme/hwmon/hwmon0/name", false),
    ("fme/hwmon/hwmon0/temp1_label", false),
    ("fme/hwmon/hwmon0/temp1_input", false),
    ("fme/hwmon/hwmon0/temp1_max", false),
    ("fme/hwmon/hwmon0/temp1_crit", false),
    ("fme/hwmon/hwmon1/name", false),
    ("fme/hwmon/hwmon1/power1_label", false),
    ("fme/hwmon/hwmon1/power1_input", false),
    ("fme/perf/clock", false),
    ("fme/perf/fabric/mmio_read", false),
    ("fme/perf/fabric/mmio_write", false),
    ("fme/perf/fabric/pcie0_read", false),
    ("fme/perf/fabric/pcie0_write", false),
];

/// The attribute list.
pub fn list() -> Vec<AttributeInfo> {
    ATTRIBUTES
        .iter()
        .map(|&(name, writable)| AttributeInfo {
            name: name.to_string(),
            writable,
        })
        .collect()
}

/// What the attributes read that is not a fixed fact of the card.
#[derive(Debug)]
pub struct AttributeState {
    port_errors: u64,
    first_error: u64,
    first_malformed_req: u64,
    ltr: bool,
    ap1_event: bool,
    ap2_event: bool,
    user_clock_khz: u64,
    fme_errors: u64,
    pcie0_errors: u64,
    pcie1_errors: u64,
    inject_errors: u64,
}

impl Default for AttributeState {
    fn default() -> Self {
        AttributeState {
            port_errors: 0,
            first_error: 0,
            first_malformed_req: 0,
            ltr: false,
            ap1_event: false,
            ap2_event: false,
            user_clock_khz: USER_CLOCK_DEFAULT_KHZ,
            fme_errors: 0,
            pcie0_errors: 0,
            pcie1_errors: 0,
            inject_errors: 0,
        }
    }
}

/// The card's facts and counters the attributes show.
pub struct CardFacts {
    pub port_id: u32,
    pub afu_id: Guid,
    pub socket_id: u32,
    /// Whether an NLB0 test is running (the sensors read higher).
    pub busy: bool,
    /// The card's clock ticks since it was built.
    pub clock: u64,
    /// What the card served so far.
    pub traffic: TrafficCounts,
}

/// The FME's fabric counters: MMIO accesses to the port, and cache lines the AFU read from
/// and wrote to host memory (over the emulated card's one PCIe link).
#[derive(Debug, Default, Clone, Copy)]
pub struct TrafficCounts {
    pub mmio_reads: u64,
    pub mmio_writes: u64,
    pub lines_read: u64,
    pub lines_written: u64,
}

impl AttributeState {
    /// Raises port error `bit`; the first error since the last clear is kept with the
    /// request (the cache line address) that caused it.
    pub fn raise_port_error(&mut self, bit: u64, address: u64) {
        if self.port_errors == 0 {
            self.first_error = bit;
            self.first_malformed_req = address / nlb0::CACHE_LINE;
        }
        self.port_errors |= bit;
    }

    fn catfatal_errors(&self) -> u64 {
        self.inject_errors & (INJECT_CATASTROPHIC | INJECT_FATAL)
    }

    fn nonfatal_errors(&self) -> u64 {
        u64::from(self.inject_errors & INJECT_NONFATAL != 0)
    }

    fn fme_first_error(&self) -> u64 {
        [self.fme_errors, self.pcie0_errors, self.pcie1_errors]
            .into_iter()
            .find(|&e| e != 0)
            .unwrap_or(0)
    }

    /// Reads attribute `name`, formatted as the kernel formats it (without the newline).
    pub fn read(&self, name: &str, card: &CardFacts) -> io::Result<String> {
        let hex = |v: u64| format!("0x{v:x}");
        let (temp, power) = if card.busy {
            (TEMP_BUSY_MILLI_C, POWER_BUSY_MICRO_W)
        } else {
            (TEMP_IDLE_MILLI_C, POWER_IDLE_MICRO_W)
        };
        Ok(match name {
            "id" => card.port_id.to_string(),
            "afu_id" => format!("{:016x}{:016x}", card.afu_id.high, card.afu_id.low),
            "power_state" => hex(0),
            "ltr" => u8::from(self.ltr).to_string(),
            "ap1_event" => u8::from(self.ap1_event).to_string(),
            "ap2_event" => u8::from(self.ap2_event).to_string(),
            "errors/errors" => hex(self.port_errors),
            "errors/first_error" => hex(self.first_error),
            "errors/first_malformed_req" => format!("0x{:016x}", self.first_malformed_req),
            "userclk/frequency" => self.user_clock_khz.to_string(),
            "fme/ports_num" => "1".into(),
            "fme/socket_id" => card.socket_id.to_string(),
            "fme/bitstream_id" => hex(FME_BITSTREAM_ID),
            "fme/bitstream_metadata" => hex(FME_BITSTREAM_METADATA),
            "fme/cache_size" => "0".into(),
            "fme/fabric_version" => "0".into(),
            "fme/pr/interface_id" => format!(
                "{:016x}{:016x}",
                FME_INTERFACE_ID.high, FME_INTERFACE_ID.low
            ),
            "fme/subsystem_vendor" => format!("0x{SUBSYSTEM_VENDOR_ID:04x}"),
            "fme/subsystem_device" => format!("0x{SUBSYSTEM_DEVICE_ID:04x}"),
            "fme/errors/fme_errors" => hex(self.fme_errors),
            "fme/errors/pcie0_errors" => hex(self.pcie0_errors),
            "fme/errors/pcie1_errors" => hex(self.pcie1_errors),
            "fme/errors/nonfatal_errors" => hex(self.nonfatal_errors()),
            "fme/errors/catfatal_errors" => hex(self.catfatal_errors()),
            "fme/errors/inject_errors" => hex(self.inject_errors),
            "fme/errors/first_error" => hex(self.fme_first_error()),
            "fme/errors/next_error" => hex(0),
            "fme/hwmon/hwmon0/name" => "dfl_fme_thermal".into(),
            "fme/hwmon/hwmon0/temp1_label" => "FPGA temperature (emulated)".into(),
            "fme/hwmon/hwmon0/temp1_input" => temp.to_string(),
            "fme/hwmon/hwmon0/temp1_max" => "90000".into(),
            "fme/hwmon/hwmon0/temp1_crit" => "100000".into(),
            "fme/hwmon/hwmon1/name" => "dfl_fme_power".into(),
            "fme/hwmon/hwmon1/power1_label" => "Board power (emulated)".into(),
            "fme/hwmon/hwmon1/power1_input" => power.to_string(),
            "fme/perf/clock" => card.clock.to_string(),
            "fme/perf/fabric/mmio_read" => card.traffic.mmio_reads.to_string(),
            "fme/perf/fabric/mmio_write" => card.traffic.mmio_writes.to_string(),
            "fme/perf/fabric/pcie0_read" => card.traffic.lines_read.to_string(),
            "fme/perf/fabric/pcie0_write" => card.traffic.lines_written.to_string(),
            _ => return Err(errno(libc::ENOENT)),
        })
    }

    /// Writes attribute `name` with the kernel's rules: an error register is cleared by
    /// writing back the value it shows (another value is `EINVAL`), event bits by writing 1.
    pub fn write(&mut self, name: &str, value: &str) -> io::Result<()> {
        let Some(&(_, writable)) = ATTRIBUTES.iter().find(|(n, _)| *n == name) else {
            return Err(errno(libc::ENOENT));
        };
        if !writable {
            return Err(errno(libc::EACCES));
        }
        let number = parse_number(value).ok_or_else(|| errno(libc::EINVAL))?;
        let clear = |register: &mut u64| {
            if number == *register {
                *register = 0;
                Ok(())
            } else {
                Err(errno(libc::EINVAL))
            }
        };
        match name {
            "ltr" => self.ltr = flag(number)?,
            "ap1_event" => {
                if flag(number)? {
                    self.ap1_event = false;
                }
            }
            "ap2_event" => {
                if flag(number)? {
                    self.ap2_event = false;
                }
            }
            "errors/errors" => {
                clear(&mut self.port_errors)?;
                self.first_error = 0;
                self.first_malformed_req = 0;
            }
            "userclk/frequency" => {
                if !USER_CLOCK_RANGE_KHZ.contains(&number) {
                    return Err(errno(libc::EINVAL));
                }
                self.user_clock_khz = number;
            }
            "fme/errors/fme_errors" => clear(&mut self.fme_errors)?,
            "fme/errors/pcie0_errors" => clear(&mut self.pcie0_errors)?,
            "fme/errors/pcie1_errors" => clear(&mut self.pcie1_errors)?,
            "fme/errors/inject_errors" => {
                if number & !(INJECT_CATASTROPHIC | INJECT_FATAL | INJECT_NONFATAL) != 0 {
                    return Err(errno(libc::EINVAL));
                }
                self.inject_errors = number;
            }
            _ => return Err(errno(libc::EACCES)),
        }
        Ok(())
    }
}

fn flag(number: u64) -> io::Result<bool> {
    match number {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(errno(libc::EINVAL)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card() -> CardFacts {
        CardFacts {
            port_id: 0,
            afu_id: nlb0::AFU_ID,
            socket_id: 0,
            busy: false,
            clock: 0,
            traffic: TrafficCounts::default(),
        }
    }

    #[test]
    fn every_listed_attribute_reads() {
        let state = AttributeState::default();
        for attribute in list() {
            let value = state.read(&attribute.name, &card());
            assert!(value.is_ok(), "{}: {value:?}", attribute.name);
        }
        assert_eq!(
            state.read("nope", &card()).unwrap_err().raw_os_error(),
            Some(libc::ENOENT)
        );
    }

    #[test]
    fn port_errors_clear_by_writing_back_their_value() {
        let mut state = AttributeState::default();
        state.raise_port_error(PORT_ERROR_UNMAPPED_ADDRESS, 0x4000);
        state.raise_port_error(PORT_ERROR_UNSUPPORTED_MODE, 0x8000);
        assert_eq!(state.read("errors/errors", &card()).unwrap(), "0x3");
        assert_eq!(state.read("errors/first_error", &card()).unwrap(), "0x1");
        assert_eq!(
            state.read("errors/first_malformed_req", &card()).unwrap(),
            "0x0000000000000100"
        );
        let wrong = state.write("errors/errors", "0x1").unwrap_err();
        assert_eq!(wrong.raw_os_error(), Some(libc::EINVAL));
        state.write("errors/errors", "3\n").unwrap();
        assert_eq!(state.read("errors/errors", &card()).unwrap(), "0x0");
        assert_eq!(state.read("errors/first_error", &card()).unwrap(), "0x0");
    }

    #[test]
    fn read_only_and_bad_values_are_refused() {
        let mut state = AttributeState::default();
        let ro = state.write("afu_id", "0").unwrap_err();
        assert_eq!(ro.raw_os_error(), Some(libc::EACCES));
        for (name, value) in [
            ("ltr", "2"),
            ("userclk/frequency", "5"),
            ("userclk/frequency", "fast"),
            ("fme/errors/inject_errors", "0x8"),
        ] {
            let err = state.write(name, value).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{name}={value}");
        }
        state.write("userclk/frequency", "312500").unwrap();
        assert_eq!(state.read("userclk/frequency", &card()).unwrap(), "312500");
    }

    #[test]
    fn injected_errors_show_in_the_fme_registers() {
        let mut state = AttributeState::default();
        state
            .write("fme/errors/inject_errors", "0x5")
            .expect("inject");
        assert_eq!(
            state.read("fme/errors/catfatal_errors", &card()).unwrap(),
            "0x1"
        );
        assert_eq!(
            state.read("fme/errors/nonfatal_errors", &card()).unwrap(),
            "0x1"
        );
        state.write("fme/errors/inject_errors", "0").unwrap();
        assert_eq!(
            state.read("fme/errors/catfatal_errors", &card()).unwrap(),
            "0x0"
        );
    }
}

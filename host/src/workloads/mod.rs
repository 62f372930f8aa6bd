//! Canonical workloads run through the public API, one per device family, shared by `accelhost demo`, the end-to-end tests and the benchmarks, so
//! that all three measure the same thing.

mod canonical;
pub mod capi;
pub mod nlb0;
pub mod vadd;

use crate::Token;

pub use canonical::{Canonical, DemoSettings, Outcome, Progress, count, size};

/// Every family's canonical workload, as `accelhost demo` runs them. They drive the public
/// API, which sits above the device families, so they live here and not in the families'
/// folders.
pub const CANONICAL: &[Canonical] = &[nlb0::CANONICAL, capi::CANONICAL, vadd::CANONICAL];

/// The canonical workload made for `token`'s device, or why there is none.
pub fn recognize(token: &Token) -> Result<&'static Canonical, String> {
    if let Some(workload) = CANONICAL.iter().find(|w| (w.recognizes)(token)) {
        return Ok(workload);
    }
    if let Some(why) = CANONICAL.iter().find_map(|w| (w.declines)(token)) {
        return Err(why);
    }
    let p = token.properties();
    Err(format!(
        "no canonical workload for GUID {} (type {}): demo knows NLB0 ports, CAPI AFUs and XRT \
         cards",
        p.guid, p.device_type
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts_read_as_people_write_them() {
        assert_eq!(size(64 << 20), "64 MiB");
        assert_eq!(size(4096), "4 KiB");
        assert_eq!(size(100), "100 B");
        assert_eq!(count(16 << 20), "16 Mi");
        assert_eq!(count(1000), "1000");
    }

    #[test]
    fn each_family_has_one_canonical_workload() {
        for family in crate::builtin::FAMILIES {
            let n = CANONICAL.iter().filter(|w| w.family == family.name).count();
            assert_eq!(n, 1, "{} has {n} canonical workloads", family.name);
        }
    }
}

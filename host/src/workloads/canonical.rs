//! What a family's canonical workload is, and what it reports.

use crate::{Host, Token};

/// A device family's canonical workload: run on each device it recognizes, verified and
/// measured.
pub struct Canonical {
    /// The family whose devices it is made for. Any plugin can report a device that looks
    /// like another family's, so it runs only on plugins trusted for this family.
    pub family: &'static str,
    /// Whether `token` looks like a device it is made for, by what its plugin reported.
    pub recognizes: fn(&Token) -> bool,
    /// Why a device of its family that it does not recognize gets no run (such as a CAPI
    /// master node), or `None` for a device it knows nothing of.
    pub declines: fn(&Token) -> Option<String>,
    /// Runs it on the device behind `token`: one outcome per measurement. `progress` hears
    /// what starts, for people waiting on a long run.
    pub run: fn(&Host, &Token, &DemoSettings, &mut Progress) -> Vec<Outcome>,
}

/// Hears what a workload starts, for people waiting on a long run.
pub type Progress<'a> = dyn FnMut(&str) + 'a;

/// What `accelhost demo` asks of the workloads.
#[derive(Clone, Debug)]
pub struct DemoSettings {
    /// Copy sizes for loopbacks (NLB0), in bytes, each a multiple of 64.
    pub sizes: Vec<u64>,
    /// Vector lengths for vadd (XRT cards).
    pub elements: Vec<u32>,
    /// How many tiny launches to time (XRT cards); 0 skips them.
    pub launches: u32,
}

/// One measurement of a canonical workload.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// What ran, such as `nlb0 loopback (hello_fpga)`.
    pub workload: String,
    /// The bytes it moved, when that means something.
    pub bytes: Option<u64>,
    /// Its throughput, when it was measured.
    pub gigabytes_per_second: Option<f64>,
    /// What was verified, or why it failed.
    pub result: Result<String, String>,
}

impl Outcome {
    /// An outcome of `workload` moving `bytes`, not yet decided.
    pub(crate) fn of(workload: impl Into<String>, bytes: Option<u64>) -> Self {
        Outcome {
            workload: workload.into(),
            bytes,
            gigabytes_per_second: None,
            result: Err("not run".into()),
        }
    }

    pub(crate) fn verified(self, what: impl Into<String>) -> Self {
        Outcome {
            result: Ok(what.into()),
            ..self
        }
    }

    pub(crate) fn failed(self, why: impl std::fmt::Display) -> Self {
        Outcome {
            result: Err(why.to_string()),
            ..self
        }
    }

    pub(crate) fn rate(self, gigabytes_per_second: f64) -> Self {
        Outcome {
            gigabytes_per_second: Some(gigabytes_per_second),
            ..self
        }
    }
}

/// A byte count as people read it: `64 MiB`, `4 KiB`, `100 B` (the largest unit it is a
/// whole number of).
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// An element count as people read it: `16 Mi`, `1 Ki`, `1000`.
pub fn count(n: u32) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} Mi", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} Ki", n >> 10),
        n => n.to_string(),
    }
}

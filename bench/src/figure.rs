//! A figure measured apart from the main table of `accelhost bench` (the ledger, the node's
//! metrics, the node service, the pod path), and the side of its bound a ratio must be on:
//! what every bench module shares, below all of them.

/// Which side of its bound a row's ratio must be on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// The ratio is a cost: at most this.
    AtMost(f64),
    /// The ratio is a rate or a share: at least this.
    AtLeast(f64),
}

impl Target {
    pub fn met(self, ratio: f64) -> bool {
        match self {
            Target::AtMost(bound) => ratio <= bound,
            Target::AtLeast(bound) => ratio >= bound,
        }
    }

    /// How far `ratio` is on the wrong side of the bound, as a share of the bound (0 when met).
    pub fn miss(self, ratio: f64) -> f64 {
        match self {
            Target::AtMost(bound) => ((ratio - bound) / bound).max(0.0),
            Target::AtLeast(bound) => ((bound - ratio) / bound).max(0.0),
        }
    }
}

/// One figure against its baseline.
pub struct Figure {
    /// What was measured.
    pub what: &'static str,
    /// The node's figure, for people.
    pub measured: String,
    /// The baseline's figure, for people.
    pub baseline: String,
    /// The node's figure as a multiple of the baseline's.
    pub ratio: f64,
    /// The target, for people.
    pub target: &'static str,
    /// The side of its bound `ratio` must be on to meet the target; `None` for a row that
    /// only shows a cost.
    pub bound: Option<Target>,
}

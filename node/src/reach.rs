//! What a [`NodeConnector`](crate::NodeConnector) saw of each node it reached: whether its
//! last call got an answer, and how long the last quick call took there and back. The
//! metrics report them per node.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// One node as last seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeReach {
    /// Whether the node answered the last call (an error it sent counts as an answer).
    pub reachable: bool,
    /// The last quick call's round trip (open, close, register access, enumerate...).
    pub round_trip: Option<Duration>,
    /// Calls made to it.
    pub calls: u64,
    /// Calls it did not answer (transport failures, no answer in time).
    pub unanswered: u64,
}

/// Every node reached, by its endpoint (`unix:///...`, `host:port`).
#[derive(Debug, Default)]
pub struct Reach {
    nodes: Mutex<BTreeMap<String, NodeReach>>,
}

impl Reach {
    /// A call to `node` ended: answered or not, after `took` (kept as the round trip when
    /// the call is `quick`).
    pub fn record(&self, node: &str, answered: bool, quick: bool, took: Duration) {
        let mut nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner());
        let seen = match nodes.get_mut(node) {
            Some(seen) => seen,
            None => nodes.entry(node.to_owned()).or_default(),
        };
        seen.calls += 1;
        seen.reachable = answered;
        if answered && quick {
            seen.round_trip = Some(took);
        }
        if !answered {
            seen.unanswered += 1;
        }
    }

    /// Every node as last seen.
    pub fn nodes(&self) -> BTreeMap<String, NodeReach> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_reachable_while_it_answers_and_keeps_its_last_quick_round_trip() {
        let reach = Reach::default();
        reach.record("unix:///n.sock", true, true, Duration::from_micros(90));
        reach.record("unix:///n.sock", true, false, Duration::from_secs(3));
        let n = &reach.nodes()["unix:///n.sock"];
        assert!(n.reachable);
        assert_eq!(n.round_trip, Some(Duration::from_micros(90)));
        reach.record("unix:///n.sock", false, true, Duration::from_secs(1));
        let n = &reach.nodes()["unix:///n.sock"];
        assert!(!n.reachable);
        assert_eq!((n.calls, n.unanswered), (3, 1));
        assert_eq!(n.round_trip, Some(Duration::from_micros(90)));
    }
}

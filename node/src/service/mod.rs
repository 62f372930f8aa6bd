//! The `Node` gRPC service over one `Host`. Every call passes the authorization layer first
//! (`crate::authorize`: who the caller is, and whether its grants allow the call), then its
//! handler finds the caller's session and makes the host call. The handlers are grouped by
//! concept, one file each; the state they share is below them (`state.rs`), and the table
//! the build makes from `node.proto` routes each call to the handler of its name.

mod buffers;
mod devices;
mod events;
mod mmio;
mod offload;
mod sessions;
mod state;

use crate::proto;
pub use devices::device_of;
pub use sessions::SessionStream;
pub use state::{NodeService, Reloaded};

/// What a call needs of the caller's grants, beyond being a client of the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Being a client is enough (what the call touches was reached through a device grant).
    Client,
    /// `grants.reconfigure`: the call loads an image onto a card, changing it for every
    /// other client of the card.
    Reconfigure,
}

/// One call's row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// The RPC's name in `node.proto`.
    pub method: &'static str,
    /// What the caller's grants must allow.
    pub needs: Needs,
    /// What the call charges, and to which grant or limit (for people: `accelhost serve
    /// --help` and the README print this table).
    pub charges: &'static str,
}

// The rows of `RULES` and the service's impl of the generated `Node` trait, made by the
// build from the `rule` option of each call of `node.proto`: a call goes to the handler of
// its name below, which hears the call's name for its errors.
include!(concat!(env!("OUT_DIR"), "/node_routes.rs"));

/// Every call's handler, `snake_name(node, request, "Name")`, and the stream type of each
/// streamed answer (`NameStream`), wherever its concept's module defines it.
mod handlers {
    pub(super) use super::buffers::*;
    pub(super) use super::devices::*;
    pub(super) use super::events::*;
    pub(super) use super::mmio::*;
    pub(super) use super::offload::*;
    pub(super) use super::sessions::*;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RPC names of `node.proto`, read from its text.
    fn proto_methods() -> Vec<String> {
        let proto = include_str!("../../proto/accelhost/node/v1/node.proto");
        proto
            .lines()
            .filter_map(|line| line.trim().strip_prefix("rpc "))
            .map(|rest| rest.split('(').next().unwrap().trim().to_owned())
            .collect()
    }

    #[test]
    fn every_call_of_the_proto_has_one_row_in_its_order() {
        let methods = proto_methods();
        assert!(methods.len() > 20, "{methods:?}");
        let rows: Vec<&str> = RULES.iter().map(|r| r.method).collect();
        assert_eq!(rows, methods);
    }

    #[test]
    fn loading_an_image_needs_the_reconfigure_grant() {
        for method in ["Reconfigure", "CreateProgram"] {
            assert_eq!(
                crate::authorize::rule_of(method).unwrap().needs,
                Needs::Reconfigure
            );
        }
        assert!(crate::authorize::rule_of("Nonexistent").is_none());
    }
}

//! A plugin's part of its host's sessions on a node. Every plugin whose `remote` import
//! reaches a node is, there, its host's client identity (the socket's uid, or the certificate
//! its grant names), and the node counts the sessions of that identity together, the user's
//! other programs included, against one cap (`limits.max_sessions_per_client`). So a plugin
//! instance holds at most its grant's `sessions` with each node at once: however it loops on
//! `connect`, it cannot take the sessions that its host's other plugins and the user's other
//! programs need there.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use crate::devices::OwnerId;

/// The sessions each plugin instance (by its owner id) holds with each endpoint (as its
/// grant names it). Entries go when their count does.
static HELD: LazyLock<Mutex<HashMap<(OwnerId, String), u32>>> = LazyLock::new(Mutex::default);

/// One session of a plugin instance with a node, counted while it lives.
#[derive(Debug)]
pub(crate) struct SessionSlot {
    key: (OwnerId, String),
}

/// A slot for one more session of `owner` with `endpoint`, unless it holds `most` already:
/// then how many it holds.
pub(crate) fn take(owner: OwnerId, endpoint: &str, most: u32) -> Result<SessionSlot, u32> {
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    let key = (owner, endpoint.to_owned());
    let count = held.entry(key.clone()).or_insert(0);
    if *count >= most {
        return Err(*count);
    }
    *count += 1;
    Ok(SessionSlot { key })
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::policy::{DEFAULT_REMOTE_SESSIONS, RemoteGrant};

    #[test]
    fn an_instance_holds_at_most_its_share_per_endpoint_and_gets_it_back() {
        let (one, two) = (OwnerId::fresh(), OwnerId::fresh());
        let first = take(one, "unix:///n.sock", 2).unwrap();
        let second = take(one, "unix:///n.sock", 2).unwrap();
        assert_eq!(take(one, "unix:///n.sock", 2).unwrap_err(), 2);
        let _elsewhere = take(one, "node2:7700", 2).unwrap();
        let _other_plugin = take(two, "unix:///n.sock", 2).unwrap();
        drop(first);
        let _again = take(one, "unix:///n.sock", 2).unwrap();
        drop(second);
        assert_eq!(
            HELD.lock().unwrap().get(&(one, "unix:///n.sock".into())),
            Some(&1)
        );
    }

    #[test]
    fn a_grant_says_how_many_sessions_within_bounds() {
        let grant = |text: &str| serde_json::from_str::<RemoteGrant>(text);
        let plain = grant(r#"{"endpoint": "unix:///n.sock"}"#).unwrap();
        assert_eq!(plain.sessions, DEFAULT_REMOTE_SESSIONS);
        let more = grant(r#"{"endpoint": "unix:///n.sock", "sessions": 16}"#).unwrap();
        assert_eq!(more.sessions, 16);
        for bad in ["0", "65"] {
            let err = grant(&format!(
                r#"{{"endpoint": "unix:///n.sock", "sessions": {bad}}}"#
            ))
            .unwrap_err()
            .to_string();
            assert!(err.contains(&format!("{bad} is outside 1..=64")), "{err}");
        }
    }
}

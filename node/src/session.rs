//! Client sessions: what each session opened, numbered per session, and released in the
//! host's usual order (buffers, then regions, then handles) when the client goes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use accelhost::{DmaBuffer, Handle, MmioRegion, Token};
use tokio::sync::mpsc;
use tonic::Status;

use crate::proto::SessionEvent;

use crate::config::ClientEntry;

/// One client's session: created by `Attach`, ended when its stream goes.
pub struct Session {
    /// The id clients name it by: 128 random bits, as hex.
    pub id: String,
    /// The client entry the caller was identified as, when it attached.
    pub client: Arc<ClientEntry>,
    objects: Mutex<Objects>,
    /// The session's `Attach` stream: dropping the sender (when the session ends) ends it.
    events: Mutex<Option<mpsc::Sender<Result<SessionEvent, Status>>>>,
}

/// What a session holds. Object numbers start at 1 and are never reused, so a stale number
/// names nothing.
#[derive(Default)]
pub struct Objects {
    next: u64,
    /// The devices of the session's last enumeration, by id.
    pub devices: HashMap<String, Token>,
    /// Open accelerators.
    pub handles: HashMap<u64, Handle>,
    /// Mapped MMIO regions, with the handle each came from.
    pub regions: HashMap<u64, (u64, MmioRegion)>,
    /// Prepared DMA buffers, with the handle each came from. Shared so that a call in flight
    /// keeps its buffer while another call releases it.
    pub buffers: HashMap<u64, (u64, Arc<DmaBuffer>)>,
}

impl Objects {
    /// The next object number.
    pub fn number(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Handles, regions and buffers held.
    pub fn count(&self) -> usize {
        self.handles.len() + self.regions.len() + self.buffers.len()
    }

    /// Bytes of DMA buffers held.
    pub fn dma_bytes(&self) -> u64 {
        self.buffers.values().map(|(_, b)| b.size()).sum()
    }

    /// Takes handle `number` out, with the regions and buffers that came from it.
    pub fn take_handle(&mut self, number: u64) -> Option<(Handle, Vec<Arc<DmaBuffer>>)> {
        let handle = self.handles.remove(&number)?;
        self.regions.retain(|_, (owner, _)| *owner != number);
        let buffers = self
            .buffers
            .extract_if(|_, (owner, _)| *owner == number)
            .map(|(_, (_, buffer))| buffer)
            .collect();
        Some((handle, buffers))
    }
}

/// Releases `buffer` now if nothing else holds it (else when the last holder drops it).
pub fn release_buffer(buffer: Arc<DmaBuffer>) -> accelhost::Result<()> {
    match Arc::try_unwrap(buffer) {
        Ok(buffer) => buffer.release(),
        Err(_) => Ok(()),
    }
}

impl Session {
    /// A session for `client`.
    pub fn new(
        client: Arc<ClientEntry>,
        events: mpsc::Sender<Result<SessionEvent, Status>>,
    ) -> Session {
        Session {
            id: random_id(),
            client,
            objects: Mutex::new(Objects::default()),
            events: Mutex::new(Some(events)),
        }
    }

    /// The session's objects.
    pub fn objects(&self) -> MutexGuard<'_, Objects> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Releases everything the session holds: buffers first, then regions, then handles
    /// (closing each), as the host itself tears down.
    pub fn release_all(&self) {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).take();
        let held = std::mem::take(&mut *self.objects());
        let Objects {
            buffers,
            regions,
            handles,
            devices,
            ..
        } = held;
        for (_, (_, buffer)) in buffers {
            if let Err(err) = release_buffer(buffer) {
                tracing::debug!(session = %self.id, "releasing a buffer: {err}");
            }
        }
        drop(regions);
        for (_, handle) in handles {
            if let Err(err) = handle.close() {
                tracing::debug!(session = %self.id, "closing a handle: {err}");
            }
        }
        drop(devices);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.release_all();
    }
}

fn random_id() -> String {
    let mut bytes = [0u8; 16];
    let mut filled = 0;
    while filled < bytes.len() {
        // SAFETY: the pointer and length describe the unfilled tail of `bytes`.
        let n = unsafe {
            libc::getrandom(bytes[filled..].as_mut_ptr().cast(), bytes.len() - filled, 0)
        };
        if n > 0 {
            filled += n as usize;
        } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            panic!(
                "getrandom failed: {}; a session id cannot be made without it",
                std::io::Error::last_os_error()
            );
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every open session, bounded by the serve config's `max_sessions`.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    /// Adds `session` unless `max` are open already.
    pub fn insert(&self, session: Arc<Session>, max: usize) -> Result<(), usize> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= max {
            return Err(map.len());
        }
        map.insert(session.id.clone(), session);
        Ok(())
    }

    /// The session `id`, if open.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Ends session `id` and releases what it held.
    pub fn end(&self, id: &str) {
        let session = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        if let Some(session) = session {
            tracing::info!(session = %session.id, client = %session.client.name, "session ended");
            session.release_all();
        }
    }

    /// Ends every session (at shutdown).
    pub fn end_all(&self) {
        let all: Vec<_> = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for (_, session) in all {
            session.release_all();
        }
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ClientGrants, ClientIdentity};

    fn client() -> Arc<ClientEntry> {
        Arc::new(ClientEntry {
            name: "t".into(),
            identity: ClientIdentity::UnixUid(0),
            grants: ClientGrants {
                devices: vec![],
                dma_memory_mib: 1,
                reconfigure: false,
            },
        })
    }

    #[test]
    fn ids_are_distinct_and_numbers_never_repeat() {
        let a = Session::new(client(), mpsc::channel(1).0);
        let b = Session::new(client(), mpsc::channel(1).0);
        assert_ne!(a.id, b.id);
        assert_eq!(a.id.len(), 32);
        let mut objects = a.objects();
        let first = objects.number();
        let second = objects.number();
        assert!(second > first && first > 0);
    }

    #[test]
    fn the_session_cap_holds() {
        let sessions = Sessions::default();
        sessions
            .insert(Arc::new(Session::new(client(), mpsc::channel(1).0)), 1)
            .unwrap();
        assert_eq!(
            sessions.insert(Arc::new(Session::new(client(), mpsc::channel(1).0)), 1),
            Err(1)
        );
        assert_eq!(sessions.len(), 1);
        sessions.end_all();
        assert!(sessions.is_empty());
    }
}

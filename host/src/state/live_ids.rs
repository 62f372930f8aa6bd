//! The ids an instance gave for objects the host still keeps. The host calls a plugin back by
//! these ids (release this buffer, free that allocation), so an id given twice while its first
//! object lives would let one caller's release end another caller's object: the second answer
//! is a lie, refused before anyone sees it.

use std::collections::HashSet;

/// What kind of object an id names; ids of different kinds (and of different handles, for the
/// per-handle kinds) never collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum IdKind {
    /// An open handle (`fpga.open`).
    Handle,
    /// A prepared buffer of one handle (`fpga.prepare-buffer`, OPAE's workspace id).
    Buffer,
    /// An allocation of one handle (`offload.mem-alloc`).
    Allocation,
    /// A program (`offload.program-create`).
    Program,
    /// A queue (`offload.queue-create`).
    Queue,
}

impl IdKind {
    /// The kind's name in messages.
    pub(crate) fn what(self) -> &'static str {
        match self {
            IdKind::Handle => "handle",
            IdKind::Buffer => "buffer",
            IdKind::Allocation => "allocation",
            IdKind::Program => "program",
            IdKind::Queue => "queue",
        }
    }

    /// Whether ids of this kind are numbered per handle.
    fn per_handle(self) -> bool {
        matches!(self, IdKind::Buffer | IdKind::Allocation)
    }
}

/// The live ids of one instance, by kind and, for per-handle kinds, by handle.
#[derive(Debug, Default)]
pub(crate) struct LiveIds {
    live: HashSet<(IdKind, u64, u64)>,
}

impl LiveIds {
    fn key(kind: IdKind, handle: u64, id: u64) -> (IdKind, u64, u64) {
        (kind, if kind.per_handle() { handle } else { 0 }, id)
    }

    /// Records `id` of `kind` (on `handle`, for per-handle kinds); false if it is already
    /// live.
    pub(crate) fn claim(&mut self, kind: IdKind, handle: u64, id: u64) -> bool {
        self.live.insert(Self::key(kind, handle, id))
    }

    /// Forgets `id`: the host will not name it again.
    pub(crate) fn release(&mut self, kind: IdKind, handle: u64, id: u64) {
        self.live.remove(&Self::key(kind, handle, id));
    }

    /// Forgets handle `handle` and every id numbered on it.
    pub(crate) fn release_handle(&mut self, handle: u64) {
        self.live.remove(&(IdKind::Handle, 0, handle));
        self.live
            .retain(|&(kind, on, _)| !(kind.per_handle() && on == handle));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_refused_while_live_and_taken_again_once_released() {
        let mut ids = LiveIds::default();
        assert!(ids.claim(IdKind::Buffer, 1, 7));
        assert!(!ids.claim(IdKind::Buffer, 1, 7), "repeated on one handle");
        assert!(
            ids.claim(IdKind::Buffer, 2, 7),
            "another handle numbers its own"
        );
        assert!(ids.claim(IdKind::Allocation, 1, 7), "another kind");
        assert!(ids.claim(IdKind::Program, 1, 7));
        assert!(
            !ids.claim(IdKind::Program, 2, 7),
            "programs are numbered per plugin"
        );
        ids.release(IdKind::Buffer, 1, 7);
        assert!(ids.claim(IdKind::Buffer, 1, 7));
        assert!(ids.claim(IdKind::Handle, 0, 1));
        ids.release_handle(1);
        assert!(ids.claim(IdKind::Handle, 0, 1), "the handle went");
        assert!(ids.claim(IdKind::Buffer, 1, 7), "with its buffers");
        assert!(ids.claim(IdKind::Allocation, 1, 7), "and its allocations");
        assert!(
            !ids.claim(IdKind::Buffer, 2, 7),
            "other handles keep theirs"
        );
        assert!(
            !ids.claim(IdKind::Program, 0, 7),
            "programs outlive a handle's close"
        );
    }
}

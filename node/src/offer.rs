//! An object's memory on offer to its client: the sealed memfd, the one-time secret that
//! redeems it, the process it is for, and the ticket the client is given
//! ([`crate::shared_memory`] carries it over the socket). Offers live with their objects in
//! the session, so an offer never outlives the memory's charge.
//!
//! A ticket is no bearer token: it is redeemed only over a connection whose peer credentials
//! are those of the process that attached the session (its uid and its pid), once, within
//! [`OFFER_LIFETIME`].

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use crate::identity::Process;

/// How long an offer waits to be redeemed.
pub const OFFER_LIFETIME: Duration = Duration::from_secs(10);

/// Offers a session may have pending at once; past it, objects are mirrored instead.
pub const MAX_OFFERS: usize = 16;

/// Why a ticket was not redeemed: what the redeeming connection is answered with.
#[derive(Debug, thiserror::Error)]
pub enum RedeemError {
    /// The request was not a ticket request.
    #[error("a malformed request: {0}")]
    Malformed(std::io::Error),
    /// No ticket came in time.
    #[error("no ticket within {} s", .0.as_secs())]
    Silent(Duration),
    /// The ticket is too short to hold a secret, an object and a session.
    #[error("a ticket too short or not UTF-8")]
    Unreadable,
    /// The kernel gave no credentials for the redeeming connection.
    #[error("the connection's peer credentials (SO_PEERCRED) cannot be read: {0}")]
    NoCredentials(std::io::Error),
    /// The node is shutting down.
    #[error("the node is stopping")]
    Stopping,
    /// The session the ticket names is not open.
    #[error("the ticket's session ended")]
    SessionEnded,
    /// The object has no memory waiting.
    #[error("object {0} has no memory on offer (redeemed, released or never offered)")]
    NotOffered(u64),
    /// Another process than the one that attached the session presented the ticket.
    #[error(
        "this connection comes from {0}, not from the process that attached the ticket's \
         session: a ticket is redeemed only by that process"
    )]
    WrongProcess(Process),
    /// The secret is wrong (the offer is spent).
    #[error("the ticket is not the one the node gave")]
    WrongSecret,
    /// The offer expired.
    #[error(
        "the ticket expired (redeem it within {} s of the reply)",
        OFFER_LIFETIME.as_secs()
    )]
    Expired,
}

/// An object's memory, waiting for its client.
pub struct Offer {
    secret: [u8; 16],
    memory: OwnedFd,
    until: Instant,
    /// The process the memory is for: the one that attached the session.
    holder: Process,
}

impl Offer {
    /// Offers `memory` to `holder` for `OFFER_LIFETIME`, under a fresh secret.
    pub fn new(memory: OwnedFd, holder: Process) -> Offer {
        let mut secret = [0u8; 16];
        if let Err(err) = getrandom::fill(&mut secret) {
            panic!("getrandom failed: {err}; tickets cannot be made without it");
        }
        Offer {
            secret,
            memory,
            until: Instant::now() + OFFER_LIFETIME,
            holder,
        }
    }

    /// Whether `redeemer` is the process the offer is for: the same uid and the same pid
    /// (an offer is only made to a process whose pid the node sees).
    pub fn is_for(&self, redeemer: &Process) -> bool {
        self.holder.uid == redeemer.uid
            && self.holder.pid.is_some()
            && self.holder.pid == redeemer.pid
    }

    /// Whether it can no longer be redeemed.
    pub fn expired(&self, now: Instant) -> bool {
        now >= self.until
    }

    /// The ticket a client redeems it with: the secret, the object and the session.
    pub fn ticket(&self, session: &str, object: u64) -> Vec<u8> {
        let mut ticket = Vec::with_capacity(24 + session.len());
        ticket.extend_from_slice(&self.secret);
        ticket.extend_from_slice(&object.to_le_bytes());
        ticket.extend_from_slice(session.as_bytes());
        ticket
    }

    /// The memory, if `secret` is this offer's and it has not expired.
    pub fn redeem(self, secret: &[u8], now: Instant) -> Result<OwnedFd, RedeemError> {
        // Every byte compared, whatever the first mismatch.
        let differs = self
            .secret
            .iter()
            .zip(secret)
            .fold(secret.len() ^ 16, |acc, (a, b)| acc | usize::from(a ^ b));
        if differs != 0 {
            Err(RedeemError::WrongSecret)
        } else if self.expired(now) {
            Err(RedeemError::Expired)
        } else {
            Ok(self.memory)
        }
    }
}

/// A ticket's parts: the secret, the object and the session id.
pub fn parse_ticket(ticket: &[u8]) -> Option<(&[u8], u64, &str)> {
    if ticket.len() < 24 {
        return None;
    }
    let (secret, rest) = ticket.split_at(16);
    let (object, session) = rest.split_at(8);
    Some((
        secret,
        u64::from_le_bytes(object.try_into().ok()?),
        std::str::from_utf8(session).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use std::os::fd::FromRawFd;

    use super::*;

    #[test]
    fn a_ticket_is_good_once_with_its_secret_before_it_expires() {
        let memfd = || {
            // SAFETY: creates a descriptor this test owns.
            unsafe { OwnedFd::from_raw_fd(libc::memfd_create(c"t".as_ptr(), libc::MFD_CLOEXEC)) }
        };
        let me = Process {
            uid: 1000,
            pid: Some(42),
        };
        let offer = Offer::new(memfd(), me);
        let ticket = offer.ticket("abc", 7);
        let (secret, object, session) = parse_ticket(&ticket).unwrap();
        assert_eq!((object, session), (7, "abc"));
        let mut wrong = secret.to_vec();
        wrong[15] ^= 1;
        assert!(
            Offer::new(memfd(), me)
                .redeem(secret, Instant::now())
                .is_err()
        );
        let offer_again = Offer {
            secret: offer.secret,
            memory: memfd(),
            until: offer.until,
            holder: me,
        };
        assert!(offer_again.redeem(&wrong, Instant::now()).is_err());
        assert!(offer.redeem(&secret[..15], Instant::now()).is_err());
        let late = Offer::new(memfd(), me);
        let secret = late.secret;
        let err = late
            .redeem(&secret, Instant::now() + OFFER_LIFETIME)
            .unwrap_err();
        assert!(matches!(err, RedeemError::Expired), "{err}");
        let fresh = Offer::new(memfd(), me);
        let secret = fresh.secret;
        assert!(fresh.redeem(&secret, Instant::now()).is_ok());
        assert!(parse_ticket(b"short").is_none());
    }

    #[test]
    fn an_offer_is_for_its_process_alone() {
        // SAFETY: creates a descriptor this test owns.
        let memfd = unsafe { OwnedFd::from_raw_fd(libc::memfd_create(c"t".as_ptr(), 0)) };
        let holder = Process {
            uid: 1000,
            pid: Some(42),
        };
        let offer = Offer::new(memfd, holder);
        assert!(offer.is_for(&holder));
        for other in [
            Process {
                uid: 1001,
                pid: Some(42),
            },
            Process {
                uid: 1000,
                pid: Some(43),
            },
            Process {
                uid: 1000,
                pid: None,
            },
        ] {
            assert!(!offer.is_for(&other), "{other}");
        }
        let unseen = Offer {
            holder: Process {
                uid: 1000,
                pid: None,
            },
            ..offer
        };
        assert!(!unseen.is_for(&unseen.holder.clone()));
    }
}

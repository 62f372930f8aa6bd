//! An object's memory on offer to its client: the sealed memfd, the one-time secret that
//! redeems it, and the ticket the client is given ([`crate::shared_memory`] carries it over
//! the socket). Offers live with their objects in the session, so an offer never outlives
//! the memory's charge.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

/// How long an offer waits to be redeemed.
pub const OFFER_LIFETIME: Duration = Duration::from_secs(10);

/// Offers a session may have pending at once; past it, objects are mirrored instead.
pub const MAX_OFFERS: usize = 16;

/// An object's memory, waiting for its client.
pub struct Offer {
    secret: [u8; 16],
    memory: OwnedFd,
    until: Instant,
}

impl Offer {
    /// Offers `memory` for `OFFER_LIFETIME`, under a fresh secret.
    pub fn new(memory: OwnedFd) -> Offer {
        let mut secret = [0u8; 16];
        if let Err(err) = getrandom::fill(&mut secret) {
            panic!("getrandom failed: {err}; tickets cannot be made without it");
        }
        Offer {
            secret,
            memory,
            until: Instant::now() + OFFER_LIFETIME,
        }
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
    pub fn redeem(self, secret: &[u8], now: Instant) -> Result<OwnedFd, &'static str> {
        // Every byte compared, whatever the first mismatch.
        let differs = self
            .secret
            .iter()
            .zip(secret)
            .fold(secret.len() ^ 16, |acc, (a, b)| acc | usize::from(a ^ b));
        if differs != 0 {
            Err("the ticket is not the one the node gave")
        } else if self.expired(now) {
            Err("the ticket expired (redeem it within 10 s of the reply)")
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
        let offer = Offer::new(memfd());
        let ticket = offer.ticket("abc", 7);
        let (secret, object, session) = parse_ticket(&ticket).unwrap();
        assert_eq!((object, session), (7, "abc"));
        let mut wrong = secret.to_vec();
        wrong[15] ^= 1;
        assert!(Offer::new(memfd()).redeem(secret, Instant::now()).is_err());
        let offer_again = Offer {
            secret: offer.secret,
            memory: memfd(),
            until: offer.until,
        };
        assert!(offer_again.redeem(&wrong, Instant::now()).is_err());
        assert!(offer.redeem(&secret[..15], Instant::now()).is_err());
        let late = Offer::new(memfd());
        let secret = late.secret;
        let err = late
            .redeem(&secret, Instant::now() + OFFER_LIFETIME)
            .unwrap_err();
        assert!(err.contains("expired"), "{err}");
        let fresh = Offer::new(memfd());
        let secret = fresh.secret;
        assert!(fresh.redeem(&secret, Instant::now()).is_ok());
        assert!(parse_ticket(b"short").is_none());
    }
}

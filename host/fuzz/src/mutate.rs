//! Deterministic input mutation for the stable smoke test: a xorshift generator and a few
//! libFuzzer-style byte mutations. No coverage feedback; the point is to push every target
//! a little past its seeds on every `cargo test`, the same way on every run.

/// xorshift64* (Vigna): small, fast and good enough to pick mutations.
#[derive(Clone, Debug)]
pub struct Xorshift(u64);

impl Xorshift {
    /// A generator from `seed` (any value; 0 is replaced by a fixed non-zero state).
    pub fn new(seed: u64) -> Self {
        Xorshift(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }
}

/// Values that often sit on a boundary of a length, count or offset check.
const INTERESTING: [u64; 12] = [
    0,
    1,
    4,
    8,
    0x7F,
    0x80,
    0xFF,
    0x1000,
    0x7FFF_FFFF,
    0xFFFF_FFFF,
    0x8000_0000_0000_0000,
    u64::MAX,
];

/// Applies one to four random mutations to `data`, never growing it past `max_len`.
pub fn mutate(data: &mut Vec<u8>, rng: &mut Xorshift, max_len: usize) {
    for _ in 0..=rng.below(4) {
        mutate_once(data, rng, max_len);
    }
    data.truncate(max_len);
}

fn mutate_once(data: &mut Vec<u8>, rng: &mut Xorshift, max_len: usize) {
    if data.is_empty() {
        data.push(rng.next_u64() as u8);
        return;
    }
    let at = rng.below(data.len());
    match rng.below(8) {
        0 => data[at] ^= 1 << rng.below(8),
        1 => data[at] = rng.next_u64() as u8,
        2 => {
            // An interesting value, little- or big-endian, 1 to 8 bytes wide.
            let value = INTERESTING[rng.below(INTERESTING.len())];
            let width = 1 << rng.below(4);
            let bytes = if rng.below(2) == 0 {
                value.to_le_bytes()
            } else {
                value.to_be_bytes()
            };
            let end = (at + width).min(data.len());
            data[at..end].copy_from_slice(&bytes[..end - at]);
        }
        3 => {
            let len = 1 + rng.below(data.len() - at);
            data.drain(at..at + len);
        }
        4 if data.len() < max_len => {
            let count = 1 + rng.below(16);
            let byte = rng.next_u64() as u8;
            data.splice(at..at, std::iter::repeat_n(byte, count));
        }
        5 if data.len() < max_len => {
            // Duplicate a slice elsewhere: repeats records, sections, script ops.
            let from = rng.below(data.len());
            let len = 1 + rng.below((data.len() - from).min(256));
            let copy = data[from..from + len].to_vec();
            data.splice(at..at, copy);
        }
        6 => {
            let len = rng.below(data.len()) + 1;
            data.truncate(len);
        }
        _ => {
            // Add or subtract a little at a byte: off-by-one lengths and counts.
            let delta = rng.below(35) as u8;
            data[at] = if rng.below(2) == 0 {
                data[at].wrapping_add(delta)
            } else {
                data[at].wrapping_sub(delta)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutations() {
        let run = || {
            let mut rng = Xorshift::new(42);
            let mut data = b"some seed bytes".to_vec();
            for _ in 0..100 {
                mutate(&mut data, &mut rng, 64);
            }
            data
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn mutations_respect_the_length_cap() {
        let mut rng = Xorshift::new(7);
        let mut data = vec![0; 10];
        for _ in 0..1000 {
            mutate(&mut data, &mut rng, 32);
            assert!(data.len() <= 32);
        }
    }
}

//! The one source of randomness a candidate must not predict (docs/design.md §4.5).

use std::fs::File;
use std::io::Read;

/// Fresh seeds no candidate can predict, through one door with one failure policy: the
/// kernel's random source keys a ChaCha20 stream once per source, and a random source that
/// cannot be read is an error, never a fallback to the clock (which a candidate could guess).
/// Every `{seed}` of a confirmation, a screening or a bench, every pair order and every count's
/// seed comes from one of these.
pub struct Seeds(rand_chacha::ChaCha20Rng);

impl Seeds {
    /// A source keyed from `/dev/urandom`.
    pub fn fresh() -> std::io::Result<Seeds> {
        use rand::SeedableRng;
        let mut key = [0u8; 32];
        File::open("/dev/urandom")?.read_exact(&mut key)?;
        Ok(Seeds(rand_chacha::ChaCha20Rng::from_seed(key)))
    }

    /// The next seed of the stream.
    pub fn next_seed(&mut self) -> u64 {
        use rand::RngCore;
        self.0.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_gives_different_seeds_and_two_streams_differ() {
        let (mut a, mut b) = (Seeds::fresh().unwrap(), Seeds::fresh().unwrap());
        let first = a.next_seed();
        assert_ne!(first, a.next_seed());
        assert_ne!(
            first,
            b.next_seed(),
            "two streams keyed from /dev/urandom agreed"
        );
    }
}

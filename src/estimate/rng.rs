//! Counter-based random streams: every sample's noise is a pure function of
//! `(seed, iteration, purpose, sample index)`.
//!
//! So a batch gives the same numbers however it is split between threads, and a run is
//! reproducible bit for bit from its seed. ChaCha8 is keyed by the first three, and the
//! sample index selects its stream (an O(1) jump). Bulk draws ([`SampleRng::fill_normals`])
//! give the same numbers as one [`SampleRng::normal`] after another, through the exact fast
//! path of [`super::normal`].

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

use super::chacha;
use super::normal;

/// What the random numbers are for; each purpose has its own streams.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// The gradient samples of an optimisation step.
    Step,
    /// The fresh samples that measure the objective and the estimator's variance.
    Measure,
    /// Points at which `diagnose` checks gradients.
    Diagnose,
    /// Anything else a caller needs (tests, benchmarks), with its own tag.
    Other(u32),
}

impl Purpose {
    fn tag(self) -> u64 {
        match self {
            Purpose::Step => 0,
            Purpose::Measure => 1,
            Purpose::Diagnose => 2,
            Purpose::Other(t) => 16 + u64::from(t),
        }
    }
}

/// The key of one batch of samples.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StreamKey {
    pub seed: u64,
    pub iteration: u64,
    pub purpose: Purpose,
}

/// Which of a sample's independent sequences: the Gaussian noise `s`, or the extra discrete
/// choices an estimator makes (LYY18's if-statement and coordinate).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Channel {
    Noise,
    Choice,
}

impl StreamKey {
    pub fn new(seed: u64, iteration: u64, purpose: Purpose) -> StreamKey {
        StreamKey {
            seed,
            iteration,
            purpose,
        }
    }

    /// A generator for `channel`; position it on a sample with [`SampleRng::lane`].
    pub fn rng(self, channel: Channel) -> SampleRng {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&self.seed.to_le_bytes());
        key[8..16].copy_from_slice(&self.iteration.to_le_bytes());
        key[16..24].copy_from_slice(&self.purpose.tag().to_le_bytes());
        let ch: u64 = match channel {
            Channel::Noise => 0,
            Channel::Choice => 1,
        };
        key[24..].copy_from_slice(&ch.to_le_bytes());
        SampleRng {
            rng: ChaCha8Rng::from_seed(key),
            key: chacha::key_words(&key),
        }
    }
}

/// A keyed generator whose stream is chosen per sample.
#[derive(Debug)]
pub struct SampleRng {
    rng: ChaCha8Rng,
    /// The same key as ChaCha words, for the bulk path.
    key: [u32; 8],
}

impl SampleRng {
    /// Moves to the start of sample `lane`'s stream.
    pub fn lane(&mut self, lane: usize) -> &mut Self {
        self.rng.set_stream(lane as u64);
        self
    }

    /// A standard normal draw.
    pub fn normal(&mut self) -> f64 {
        self.rng.sample(StandardNormal)
    }

    /// What `out.len()` calls of [`SampleRng::normal`] give after [`SampleRng::lane`]`(lane)`,
    /// bit for bit, drawn in bulk. Afterwards the position `normal()` reads from is
    /// unspecified: call `lane` before drawing one at a time again. The gain is for many
    /// draws, or many lanes at once ([`SampleRng::fill_lanes`]); for a handful of draws of
    /// one lane, `normal()` is as fast.
    pub fn fill_normals(&mut self, lane: usize, out: &mut [f64]) {
        let n = out.len();
        self.fill_lanes(lane, 1, n, out);
    }

    /// `n` normals for each of the samples `first..first + w`, latent-major: `s[k * w + l]`
    /// is what the `k`-th `normal()` of lane `first + l` gives. Same position caveat as
    /// [`SampleRng::fill_normals`]. Panics if `s` is shorter than `n * w`, like a slice copy.
    pub fn fill_lanes(&mut self, first: usize, w: usize, n: usize, s: &mut [f64]) {
        let s = &mut s[..n * w];
        match normal::table() {
            Some(z) => z.fill_streams(&self.key, first as u64, w, n, s),
            None => self.fill_plain(first, w, n, s),
        }
    }

    /// [`SampleRng::fill_lanes`] one `normal()` at a time: the fallback when the fast
    /// path failed its self-check.
    fn fill_plain(&mut self, first: usize, w: usize, n: usize, s: &mut [f64]) {
        for l in 0..w {
            self.lane(first + l);
            for k in 0..n {
                s[k * w + l] = self.normal();
            }
        }
    }

    /// A uniform index in `0..n` (`n >= 1`).
    pub fn index(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(key: StreamKey, channel: Channel, lane: usize) -> [f64; 4] {
        let mut rng = key.rng(channel);
        let r = rng.lane(lane);
        [r.normal(), r.normal(), r.normal(), r.normal()]
    }

    #[test]
    fn a_lane_stream_depends_only_on_its_key_and_index() {
        let key = StreamKey::new(3, 17, Purpose::Step);
        // Visiting other lanes first does not change lane 5's numbers.
        let mut rng = key.rng(Channel::Noise);
        rng.lane(9).normal();
        rng.lane(2).normal();
        let r = rng.lane(5);
        let again = [r.normal(), r.normal(), r.normal(), r.normal()];
        assert_eq!(again, draws(key, Channel::Noise, 5));
        // Every other coordinate of the key changes them.
        let base = draws(key, Channel::Noise, 5);
        assert_ne!(base, draws(key, Channel::Noise, 6));
        assert_ne!(base, draws(key, Channel::Choice, 5));
        assert_ne!(
            base,
            draws(StreamKey::new(4, 17, Purpose::Step), Channel::Noise, 5)
        );
        assert_ne!(
            base,
            draws(StreamKey::new(3, 18, Purpose::Step), Channel::Noise, 5)
        );
        assert_ne!(
            base,
            draws(StreamKey::new(3, 17, Purpose::Measure), Channel::Noise, 5)
        );
    }

    #[test]
    fn the_fallback_gives_what_the_bulk_path_gives() {
        let key = StreamKey::new(8, 3, Purpose::Measure);
        let (first, w, n) = (40, 16, 37);
        let mut bulk = vec![0.0; w * n];
        let mut plain = vec![0.0; w * n];
        key.rng(Channel::Noise).fill_lanes(first, w, n, &mut bulk);
        key.rng(Channel::Noise).fill_plain(first, w, n, &mut plain);
        assert_eq!(bulk, plain);
        assert!(
            normal::table().is_some(),
            "the bulk path should be in use here"
        );
    }
}

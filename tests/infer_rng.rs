//! The bulk normals (`SampleRng::fill_lanes`, `SampleRng::fill_normals`) against one
//! `StandardNormal` draw after another on `ChaCha8Rng`, bit for bit: many keys, lanes
//! (small and huge), counts and group widths, and millions of draws so that the crate's
//! slow test and its tail (box 0) occur many times, counted here.
//!
//! The reference is built from the documented key layout (seed, iteration, purpose tag,
//! channel as little-endian `u64`s), so the test also pins `SampleRng::normal` to it.

use dsgd::estimate::{Channel, Purpose, SampleRng, StreamKey};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng, TryRng};
use rand_distr::{Distribution, StandardNormal};

/// Doornik's R for 256 boxes: only the tail returns values this large.
const TAIL: f64 = 3.654_152_885_361_009;

fn tag(p: Purpose) -> u64 {
    match p {
        Purpose::Step => 0,
        Purpose::Measure => 1,
        Purpose::Diagnose => 2,
        Purpose::Other(t) => 16 + u64::from(t),
    }
}

/// `ChaCha8Rng` that counts the 64-bit words drawn from it.
struct Counting {
    rng: ChaCha8Rng,
    words: u64,
}

impl TryRng for Counting {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        // StandardNormal never draws 32 bits; count it so a change would show.
        self.words += 1_000_000;
        Ok(self.rng.next_u32())
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        self.words += 1;
        Ok(self.rng.next_u64())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.words += 1_000_000;
        self.rng.fill_bytes(dst);
        Ok(())
    }
}

#[derive(Default, Debug)]
struct Tally {
    draws: u64,
    /// Draws that read more than one word: the slow test or the tail.
    slow: u64,
    tail: u64,
}

/// The reference: draw `n` normals of `lane` one at a time, counting the rare cases.
fn reference(key: StreamKey, channel: Channel, lane: u64, n: usize, t: &mut Tally) -> Vec<f64> {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&key.seed.to_le_bytes());
    seed[8..16].copy_from_slice(&key.iteration.to_le_bytes());
    seed[16..24].copy_from_slice(&tag(key.purpose).to_le_bytes());
    let ch: u64 = match channel {
        Channel::Noise => 0,
        Channel::Choice => 1,
    };
    seed[24..].copy_from_slice(&ch.to_le_bytes());
    let mut rng = Counting {
        rng: ChaCha8Rng::from_seed(seed),
        words: 0,
    };
    rng.rng.set_stream(lane);
    (0..n)
        .map(|_| {
            let before = rng.words;
            let v: f64 = StandardNormal.sample(&mut rng);
            let used = rng.words - before;
            assert!(
                used < 1_000_000,
                "StandardNormal drew 32-bit words or bytes"
            );
            t.draws += 1;
            t.slow += u64::from(used > 1);
            t.tail += u64::from(v.abs() >= TAIL);
            v
        })
        .collect()
}

/// `fill_lanes` over `first..first + w` against the reference, and (for a few lanes)
/// against `SampleRng::normal` and `fill_normals`.
fn check(key: StreamKey, channel: Channel, first: usize, w: usize, n: usize, t: &mut Tally) {
    let mut rng: SampleRng = key.rng(channel);
    let mut s = vec![f64::NAN; w * n + 3];
    rng.fill_lanes(first, w, n, &mut s);
    assert!(s[w * n..].iter().all(|v| v.is_nan()), "wrote past w * n");
    for l in 0..w {
        let want = reference(key, channel, (first + l) as u64, n, t);
        for (k, v) in want.iter().enumerate() {
            assert_eq!(
                v.to_bits(),
                s[k * w + l].to_bits(),
                "{key:?} {channel:?} lane {} draw {k} of {n} (group of {w})",
                first + l
            );
        }
        if l < 2 {
            let mut one = vec![0.0; n];
            rng.fill_normals(first + l, &mut one);
            assert_eq!(one, want);
            let r = rng.lane(first + l);
            let plain: Vec<f64> = (0..n).map(|_| r.normal()).collect();
            assert_eq!(plain, want);
        }
    }
}

const COUNTS: [usize; 14] = [1, 2, 3, 7, 8, 9, 31, 32, 33, 63, 65, 129, 301, 1000];

#[test]
fn bulk_normals_equal_one_at_a_time_for_many_keys_lanes_and_counts() {
    let mut t = Tally::default();
    let purposes = [
        Purpose::Step,
        Purpose::Measure,
        Purpose::Diagnose,
        Purpose::Other(0),
        Purpose::Other(7),
    ];
    let mut case = 0usize;
    for seed in [0u64, 1, 12_345, u64::MAX] {
        for iteration in [0u64, 1, 9_999, 1 << 40] {
            for (p, purpose) in purposes.iter().enumerate() {
                for channel in [Channel::Noise, Channel::Choice] {
                    // Cycle through counts, widths and first lanes so every combination
                    // of each pair occurs without the full product.
                    case += 1;
                    let n = COUNTS[(case * 5 + p) % COUNTS.len()];
                    let w = [1, 3, 8, 9, 16][case % 5];
                    let first = [0, 5, 1 << 40, (1 << 63) + 11][(case / 5) % 4];
                    let key = StreamKey::new(seed, iteration, *purpose);
                    check(key, channel, first, w, n, &mut t);
                }
            }
        }
    }
    assert_eq!(case, 160);
    assert!(t.draws > 100_000, "{t:?}");
}

#[test]
fn millions_of_draws_agree_including_the_slow_test_and_the_tail() {
    // The first 2048 lanes and 2048 huge ones, in chunks of 16 as the engine draws them,
    // with the paper models' latent counts and more.
    let mut t = Tally::default();
    let key = StreamKey::new(2024, 17, Purpose::Step);
    let mut chunk = 0;
    for base in [0usize, 1 << 40] {
        for first in (base..base + 2048).step_by(16) {
            let n = [1000, 301, 1000, 41, 1000, 3, 1000, 37][chunk % 8];
            chunk += 1;
            check(key, Channel::Noise, first, 16, n, &mut t);
        }
    }
    // ZIGNOR leaves the quick test in about 1.2 % of draws and reaches the tail in
    // about 2.6e-4 of them: thousands and hundreds here.
    assert!(t.draws > 2_000_000, "{t:?}");
    assert!(t.slow > 10_000, "{t:?}");
    assert!(t.tail > 200, "{t:?}");
}

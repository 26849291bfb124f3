//! Counter-based random streams: every sample's noise is a pure function of
//! `(seed, iteration, purpose, channel, sample index, draw index)`.
//!
//! So a batch gives the same numbers however it is split between threads, and a run is
//! reproducible bit for bit from its seed (and the dsgd version). Each draw is one ARS-7
//! block ([`super::ars`]) whose 128-bit key is a hash of the seed, purpose and channel
//! (injective for a fixed seed: different purposes never share a stream) and whose 128-bit
//! counter holds the draw's block index, the sample index and the iteration:
//! `[kind | index, lane, iteration, iteration >> 32 ^ (lane >> 32) rotated 16]`, distinct for
//! iterations and lanes below 2^48. `kind` (the top bits of the first word) separates three
//! spaces: `1` the raw words of [`SampleRng::index`] (31 bits of index, two words per block:
//! the first 2^32 words of a lane), `00` the normals' blocks (index `k / 2`: the first 2^31
//! normals) and `01` the extra words of the normals the ziggurat's fast path rejects (index
//! `k << 5 | j`: the first 2^25 normals). Beyond those counts the indices wrap around.
//!
//! Normals come two per block by a ziggurat ([`super::normal`]): the `k`-th normal of a lane
//! is the first (even `k`) or second 64-bit word of block `k / 2` through the fast path.
//! About 0.43 % of the words fall outside it; such a normal takes the further words it needs
//! from blocks `j = 0, 1, ...` of its own (`k`) in the third space, never from another
//! normal's words, so each normal stays a pure function of (key, lane, k). Bulk draws
//! ([`SampleRng::fill_lanes`]) run many lanes side by side in vector code, redraw only the
//! normals the fast path rejected through the slow path (in batches, after the fast path
//! has run over many blocks), and give exactly what one [`SampleRng::normal`] after another
//! gives, in every kernel set.

use super::ars;
use super::normal::{self, Ziggurat};

mod bulk;
#[cfg(target_arch = "x86_64")]
mod group16;

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
    /// The run's seed.
    pub seed: u64,
    /// The iteration (0 when the purpose has none).
    pub iteration: u64,
    /// What the samples are for.
    pub purpose: Purpose,
}

/// Which of a sample's independent sequences: the Gaussian noise `s`, or the extra discrete
/// choices an estimator makes (LYY18's if-statement and coordinate).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Channel {
    /// The standard normal noise of the samples.
    Noise,
    /// The estimator's random choices.
    Choice,
    /// The rows a subsampled plate reads in one iteration (the same for every sample).
    Rows,
}

/// SplitMix64's finaliser: a bijection of `u64` that mixes every bit into every other.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl StreamKey {
    /// The key of `seed`'s batch at `iteration` for `purpose`.
    pub fn new(seed: u64, iteration: u64, purpose: Purpose) -> StreamKey {
        StreamKey {
            seed,
            iteration,
            purpose,
        }
    }

    /// A generator for `channel`; position it on a sample with [`SampleRng::lane`].
    pub fn rng(self, channel: Channel) -> SampleRng {
        // For a fixed seed, `seed ^ h` is injective in `h`, so is the key's low half. The
        // rows' channel came later: its `h` has every high bit set, which no small tag's
        // `tag << 1 | ch` has.
        let h = match channel {
            Channel::Noise => self.purpose.tag() << 1,
            Channel::Choice => self.purpose.tag() << 1 | 1,
            Channel::Rows => !(self.purpose.tag() << 1),
        };
        let key = mix(self.seed ^ mix(h));
        SampleRng {
            keys: ars::Keys::new([key, mix(key)]),
            iteration: self.iteration,
            lane: 0,
            normals: 0,
            words: 0,
        }
    }
}

/// Which numbers a block serves (the top bits of the counter's first word), and the bits
/// of that word left for the block's index in each.
const NORMALS: u32 = 0;
const SLOW: u32 = 1 << 30;
const WORDS: u32 = 1 << 31;
const NORMAL_INDEX: u32 = (1 << 30) - 1;
const WORD_INDEX: u32 = (1 << 31) - 1;
/// The slow path's blocks per normal: `2 * 2^SLOW_SHIFT` words are [`normal::SLOW_WORDS`].
const SLOW_SHIFT: u32 = 5;
const SLOW_NORMALS: u64 = (1 << (30 - SLOW_SHIFT)) - 1;
const _: () = assert!(2 << SLOW_SHIFT == normal::SLOW_WORDS);

/// A keyed generator whose stream is chosen per sample.
#[derive(Clone, Debug)]
pub struct SampleRng {
    keys: ars::Keys,
    iteration: u64,
    lane: u64,
    /// Normals and words drawn from the current lane.
    normals: u64,
    words: u64,
}

/// Lanes drawn side by side in bulk.
const GROUP: usize = 16;

impl SampleRng {
    /// Moves to the start of sample `lane`'s stream.
    pub fn lane(&mut self, lane: usize) -> &mut Self {
        self.lane = lane as u64;
        self.normals = 0;
        self.words = 0;
        self
    }

    /// The counter of lane `lane`'s block whose first word (kind and index) is `head`.
    #[inline(always)]
    fn counter(&self, head: u32, lane: u64) -> [u32; 4] {
        [
            head,
            lane as u32,
            self.iteration as u32,
            (self.iteration >> 32) as u32 ^ ((lane >> 32) as u32).rotate_left(16),
        ]
    }

    /// A standard normal draw: the next of the current lane's stream.
    pub fn normal(&mut self) -> f64 {
        let k = self.normals;
        self.normals += 1;
        let t = normal::tables();
        let block = ars::block(self.counter(normal_head(k / 2), self.lane), &self.keys);
        let (w0, w1) = ars::words64(block);
        let w = if k.is_multiple_of(2) { w0 } else { w1 };
        match normal::fast(t, w) {
            (z, true) => z,
            _ if crate::cpu::avx2_fma() => self.slow_normal_in::<true>(t, self.lane, k, w),
            _ => self.slow_normal_in::<false>(t, self.lane, k, w),
        }
    }

    /// The `k`-th normal of lane `lane`, whose word `w` the fast path rejected, in the FMA
    /// build where `AVX2` or the CPU has FMA (the caller has checked the CPU has AVX2 and FMA
    /// if `AVX2`; the elementary functions' `mul_add`s are then instructions instead of calls
    /// to the runtime's `fma`, with the same bits).
    #[inline(always)]
    fn slow_normal_in<const AVX2: bool>(&self, t: &Ziggurat, lane: u64, k: u64, w: u64) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if AVX2 || crate::cpu::fma() {
            // SAFETY: `AVX2` is set only by callers that checked the CPU has AVX2 and FMA,
            // and `cpu::fma` says the CPU has FMA.
            return unsafe { self.slow_normal_fma(t, lane, k, w, None) };
        }
        self.slow_normal(t, lane, k, w)
    }

    /// [`SampleRng::slow_normal_body`] in the FMA build, out of line: its callers' loops
    /// need it rarely. (Scalar code: FMA is all it gains from the vector builds' features.)
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "fma")]
    #[cold]
    #[inline(never)]
    fn slow_normal_fma(
        &self,
        t: &Ziggurat,
        lane: u64,
        k: u64,
        w: u64,
        first: Option<[u64; 2]>,
    ) -> f64 {
        self.slow_normal_body(t, lane, k, w, first)
    }

    #[cold]
    fn slow_normal(&self, t: &Ziggurat, lane: u64, k: u64, w: u64) -> f64 {
        self.slow_normal_body(t, lane, k, w, None)
    }

    /// [`normal::slow`] with the further words from the normal's own blocks
    /// (`SLOW | k << 5 | j`, two words each), the first of them `first` where the caller has
    /// computed it.
    #[inline(always)]
    fn slow_normal_body(
        &self,
        t: &Ziggurat,
        lane: u64,
        k: u64,
        w: u64,
        first: Option<[u64; 2]>,
    ) -> f64 {
        let base = slow_head(k);
        let mut j = 0u32;
        let mut spare = None;
        let mut first = first;
        normal::slow(t, w, || {
            if let Some(w) = spare.take() {
                return w;
            }
            let [a, b] = first.take().unwrap_or_else(|| {
                let block = ars::block(self.counter(base | j, lane), &self.keys);
                let (a, b) = ars::words64(block);
                [a, b]
            });
            j = (j + 1) & ((1 << SLOW_SHIFT) - 1);
            spare = Some(b);
            a
        })
    }

    /// The next uniform 64-bit word of the current lane's word stream.
    fn word(&mut self) -> u64 {
        let i = self.words;
        self.words += 1;
        let head = WORDS | ((i / 2) as u32 & WORD_INDEX);
        let w = ars::block(self.counter(head, self.lane), &self.keys);
        let (lo, hi) = if i.is_multiple_of(2) {
            (w[0], w[1])
        } else {
            (w[2], w[3])
        };
        u64::from(lo) | u64::from(hi) << 32
    }

    /// A uniform index in `0..n` (0 for `n <= 1`), without bias: Lemire's multiply-shift with
    /// rejection of the `2^64 mod n` low products that would over-represent some indices.
    pub fn index(&mut self, n: usize) -> usize {
        if n <= 1 {
            return 0;
        }
        let n = n as u64;
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.word()) * u128::from(n);
            if m as u64 >= threshold {
                return (m >> 64) as usize;
            }
        }
    }
}

/// The first counter word of the `k`-th normal's first slow block (`j = 0`; add `j` for
/// block `j`).
#[inline(always)]
fn slow_head(k: u64) -> u32 {
    SLOW | ((k & SLOW_NORMALS) as u32) << SLOW_SHIFT
}

/// The first counter word of the normals' block `block` of a lane.
#[inline(always)]
fn normal_head(block: u64) -> u32 {
    NORMALS | (block as u32 & NORMAL_INDEX)
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
        assert_ne!(base, draws(key, Channel::Noise, 5 + (1 << 32)));
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
    fn indices_are_in_range_and_cover_it() {
        let mut rng = StreamKey::new(1, 2, Purpose::Step).rng(Channel::Choice);
        let mut seen = [0usize; 7];
        for lane in 0..700 {
            let i = rng.lane(lane).index(7);
            seen[i] += 1;
        }
        // 100 expected per index, sd about 9.3: 50 is more than 5 sd away.
        assert!(seen.iter().all(|&c| c > 50), "{seen:?}");
        assert_eq!(rng.index(1), 0);
        assert_eq!(rng.index(0), 0);
    }
}

//! Counter-based random streams: every sample's noise is a pure function of
//! `(seed, iteration, purpose, channel, sample index, draw index)`.
//!
//! So a batch gives the same numbers however it is split between threads, and a run is
//! reproducible bit for bit from its seed (and the dsgd version). Each draw is one
//! Philox4x32-10 block ([`super::philox`]) whose 64-bit key is a hash of the seed, purpose
//! and channel (injective for a fixed seed: different purposes never share a stream) and
//! whose 128-bit counter holds the draw's block index, the sample index and the iteration:
//! `[block | kind << 31, lane, iteration, iteration >> 32 ^ (lane >> 32) rotated 16]`,
//! distinct for iterations and lanes below 2^48 and 2^31 blocks per lane. `kind` separates
//! the normals from the raw words of [`SampleRng::index`].
//!
//! Normals come in pairs, one block each, by Box-Muller ([`super::normal`]): the `k`-th normal
//! of a lane is the first (even `k`) or second of block `k / 2`'s pair. Bulk draws
//! ([`SampleRng::fill_lanes`]) run many lanes side by side in vector code and give exactly
//! what one [`SampleRng::normal`] after another gives, in every kernel set.

use crate::eval::vmath::KernelSet;

use super::normal::box_muller;
use super::philox;

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

/// SplitMix64's finaliser: a bijection of `u64` that mixes every bit into every other.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
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
        let ch = match channel {
            Channel::Noise => 0,
            Channel::Choice => 1,
        };
        // For a fixed seed, `seed ^ h` is injective in `h`, so is the key.
        let key = mix(self.seed ^ mix(self.purpose.tag() << 1 | ch));
        SampleRng {
            key: [key as u32, (key >> 32) as u32],
            iteration: self.iteration,
            lane: 0,
            normals: 0,
            words: 0,
        }
    }
}

/// Which numbers a block serves (the counter's top bit).
const NORMALS: u32 = 0;
const WORDS: u32 = 1 << 31;

/// A keyed generator whose stream is chosen per sample.
#[derive(Clone, Debug)]
pub struct SampleRng {
    key: [u32; 2],
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

    /// The counter of block `block` (of the kind `kind`) of lane `lane`.
    #[inline(always)]
    fn counter(&self, kind: u32, block: u64, lane: u64) -> [u32; 4] {
        [
            (block as u32 & !WORDS) | kind,
            lane as u32,
            self.iteration as u32,
            (self.iteration >> 32) as u32 ^ ((lane >> 32) as u32).rotate_left(16),
        ]
    }

    /// A standard normal draw: the next of the current lane's stream.
    pub fn normal(&mut self) -> f64 {
        let k = self.normals;
        self.normals += 1;
        let w = philox::block(self.counter(NORMALS, k / 2, self.lane), self.key);
        let (z0, z1) = pair(w);
        if k.is_multiple_of(2) { z0 } else { z1 }
    }

    /// What `out.len()` calls of [`SampleRng::normal`] give after [`SampleRng::lane`]`(lane)`,
    /// drawn in bulk. Afterwards the position `normal()` reads from is unspecified: call
    /// `lane` before drawing one at a time again.
    pub fn fill_normals(&mut self, lane: usize, out: &mut [f64]) {
        let n = out.len();
        self.fill_lanes(lane, 1, n, out);
    }

    /// `n` normals for each of the samples `first..first + w`, latent-major: `s[k * w + l]`
    /// is what the `k`-th `normal()` of lane `first + l` gives. Same position caveat as
    /// [`SampleRng::fill_normals`]. Panics if `s` is shorter than `n * w`, like a slice copy.
    pub fn fill_lanes(&mut self, first: usize, w: usize, n: usize, s: &mut [f64]) {
        self.fill_lanes_on(KernelSet::best(), first, w, n, s);
    }

    /// [`SampleRng::fill_lanes`] in the kernel set `set` (the same numbers in each; for tests
    /// and benches). A set the CPU lacks runs the portable build.
    pub fn fill_lanes_on(
        &mut self,
        set: KernelSet,
        first: usize,
        w: usize,
        n: usize,
        s: &mut [f64],
    ) {
        let s = &mut s[..n * w];
        #[cfg(target_arch = "x86_64")]
        if set == KernelSet::Avx2 && crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { self.fill_avx2(first as u64, w, n, s) };
            return;
        }
        let _ = set;
        self.fill_any::<false>(first as u64, w, n, s);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn fill_avx2(&self, first: u64, w: usize, n: usize, s: &mut [f64]) {
        self.fill_any::<true>(first, w, n, s);
    }

    /// Few lanes go four at a time, so that one lane does not cost sixteen. `AVX2`: the
    /// caller has checked that the CPU has AVX2, so Philox may run in its AVX2 build.
    #[inline(always)]
    fn fill_any<const AVX2: bool>(&self, first: u64, w: usize, n: usize, s: &mut [f64]) {
        if w <= 4 {
            self.fill_body::<4, AVX2>(first, w, n, s);
        } else {
            self.fill_body::<GROUP, AVX2>(first, w, n, s);
        }
    }

    /// Groups of `G` lanes side by side, one block (two normals) per lane at a time.
    // Indexed lane loops over several arrays at once: the shape LLVM vectorises.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn fill_body<const G: usize, const AVX2: bool>(
        &self,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
    ) {
        for g0 in (0..w).step_by(G) {
            let gw = G.min(w - g0);
            for b in 0..n.div_ceil(2) {
                let mut c = [[0u32; G]; 4];
                for l in 0..G {
                    let ctr = self.counter(NORMALS, b as u64, first + (g0 + l) as u64);
                    for (word, v) in ctr.into_iter().enumerate() {
                        c[word][l] = v;
                    }
                }
                let (radius, angle) = self.block_words::<G, AVX2>(&c);
                let mut z0 = [0.0; G];
                let mut z1 = [0.0; G];
                for l in 0..G {
                    (z0[l], z1[l]) = box_muller(radius[l], angle[l]);
                }
                let k = 2 * b;
                s[k * w + g0..k * w + g0 + gw].copy_from_slice(&z0[..gw]);
                if k + 1 < n {
                    s[(k + 1) * w + g0..(k + 1) * w + g0 + gw].copy_from_slice(&z1[..gw]);
                }
            }
        }
    }

    /// Each lane's block under this generator's key, as the two words Box-Muller reads
    /// ([`philox::words64`]): eight lanes at a time in Philox's AVX2 build where the caller
    /// allows it (the same numbers), else the portable lane loop.
    #[inline(always)]
    fn block_words<const G: usize, const AVX2: bool>(
        &self,
        c: &[[u32; G]; 4],
    ) -> ([u64; G], [u64; G]) {
        let mut radius = [0u64; G];
        let mut angle = [0u64; G];
        #[cfg(target_arch = "x86_64")]
        if AVX2 && G.is_multiple_of(8) {
            for g in (0..G).step_by(8) {
                let eight: [[u32; 8]; 4] =
                    std::array::from_fn(|word| std::array::from_fn(|l| c[word][g + l]));
                // SAFETY: `AVX2` is set only by callers that checked the CPU has AVX2.
                let (r, a) = unsafe { philox::blocks8_avx2(&eight, self.key) };
                radius[g..g + 8].copy_from_slice(&r);
                angle[g..g + 8].copy_from_slice(&a);
            }
            return (radius, angle);
        }
        let mut c = *c;
        philox::blocks(&mut c, self.key);
        for l in 0..G {
            (radius[l], angle[l]) = philox::words64([c[0][l], c[1][l], c[2][l], c[3][l]]);
        }
        (radius, angle)
    }

    /// The next uniform 64-bit word of the current lane's word stream.
    fn word(&mut self) -> u64 {
        let i = self.words;
        self.words += 1;
        let w = philox::block(self.counter(WORDS, i / 2, self.lane), self.key);
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

/// A block's two normals: its first 64 bits set the radius, the other 64 the angle.
#[inline(always)]
fn pair(w: [u32; 4]) -> (f64, f64) {
    let (radius, angle) = philox::words64(w);
    box_muller(radius, angle)
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
    fn bulk_draws_give_one_normal_after_another_in_every_kernel_set() {
        let key = StreamKey::new(8, 3, Purpose::Measure);
        for (first, w, n) in [(40, 16, 37), (0, 1, 5), (7, 21, 4), (1000, 3, 1), (5, 0, 3)] {
            let mut plain = vec![0.0; w * n];
            let mut rng = key.rng(Channel::Noise);
            for l in 0..w {
                let r = rng.lane(first + l);
                for k in 0..n {
                    plain[k * w + l] = r.normal();
                }
            }
            for set in KernelSet::available() {
                let mut bulk = vec![f64::NAN; w * n];
                rng.fill_lanes_on(set, first, w, n, &mut bulk);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&bulk), bits(&plain), "{set:?} {first} {w} {n}");
            }
        }
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

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
//! ([`SampleRng::fill_lanes`]) run many lanes side by side in vector code, send only the
//! rejected lanes to the scalar slow path, and give exactly what one [`SampleRng::normal`]
//! after another gives, in every kernel set.

use crate::eval::vmath::KernelSet;

use super::ars;
use super::normal::{self, Ziggurat};

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
        // For a fixed seed, `seed ^ h` is injective in `h`, so is the key's low half.
        let key = mix(self.seed ^ mix(self.purpose.tag() << 1 | ch));
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
    /// build where `AVX2` (the caller has checked the CPU has AVX2 and FMA; the
    /// elementary functions' `mul_add`s are then instructions instead of calls to libm's
    /// `fma`, with the same bits).
    #[inline(always)]
    fn slow_normal_in<const AVX2: bool>(&self, t: &Ziggurat, lane: u64, k: u64, w: u64) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if AVX2 {
            // SAFETY: `AVX2` is set only by callers that checked the CPU has AVX2 and FMA.
            return unsafe { self.slow_normal_fma(t, lane, k, w) };
        }
        self.slow_normal(t, lane, k, w)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    #[cold]
    fn slow_normal_fma(&self, t: &Ziggurat, lane: u64, k: u64, w: u64) -> f64 {
        self.slow_normal_body(t, lane, k, w)
    }

    #[cold]
    fn slow_normal(&self, t: &Ziggurat, lane: u64, k: u64, w: u64) -> f64 {
        self.slow_normal_body(t, lane, k, w)
    }

    /// [`normal::slow`] with the further words from the normal's own blocks
    /// (`SLOW | k << 5 | j`, two words each).
    #[inline(always)]
    fn slow_normal_body(&self, t: &Ziggurat, lane: u64, k: u64, w: u64) -> f64 {
        let base = SLOW | ((k & SLOW_NORMALS) as u32) << SLOW_SHIFT;
        let mut j = 0u32;
        let mut spare = None;
        normal::slow(t, w, || {
            if let Some(w) = spare.take() {
                return w;
            }
            let block = ars::block(self.counter(base | j, lane), &self.keys);
            j = (j + 1) & ((1 << SLOW_SHIFT) - 1);
            let (a, b) = ars::words64(block);
            spare = Some(b);
            a
        })
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
        if w <= 4 {
            self.fill_body::<4, false>(first as u64, w, n, s);
        } else {
            self.fill_body::<GROUP, false>(first as u64, w, n, s);
        }
    }

    /// The AVX2 build: few lanes four at a time (so that one lane does not cost sixteen), else
    /// groups of sixteen lanes through [`SampleRng::fill_group16_avx2`] where the CPU has
    /// AES-NI (VAES if it has it).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn fill_avx2(&self, first: u64, w: usize, n: usize, s: &mut [f64]) {
        if w <= 4 {
            self.fill_body::<4, true>(first, w, n, s);
            return;
        }
        let t = normal::tables();
        let (aes, vaes) = (crate::cpu::aes(), crate::cpu::vaes());
        for g0 in (0..w).step_by(GROUP) {
            let lane0 = first + g0 as u64;
            if aes && lane0 >> 32 == (lane0 + GROUP as u64 - 1) >> 32 {
                // SAFETY: the CPU has AES-NI, and VAES where `vaes` (checked above).
                unsafe {
                    if vaes {
                        self.fill_group16_vaes(t, first, w, n, s, g0);
                    } else {
                        self.fill_group16_aesni(t, first, w, n, s, g0);
                    }
                }
            } else {
                self.fill_group::<GROUP, true>(t, first, w, n, s, g0);
            }
        }
    }

    /// The normals of lanes `first + g0..` (at most sixteen), whose numbers share their top
    /// 32 bits, so their counters differ only in the block index and the second word
    /// ([`ars::Group16`], which xors the shared words with the first round key once): each
    /// block's two words go from the AES registers straight into the fast path, eight lanes
    /// at a time, and its results straight into `s`, without the copies and re-packing of
    /// [`SampleRng::fill_group`]; then the slow path for the lanes it rejected. The same
    /// numbers, with VAES (`VAES`) or AES-NI.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI, and VAES if `VAES` (the caller's target
    /// features: [`SampleRng::fill_group16_vaes`] or [`SampleRng::fill_group16_aesni`]).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn fill_group16_avx2<const VAES: bool>(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
    ) {
        let lane0 = first + g0 as u64;
        let gw = GROUP.min(w - g0);
        let lanes: [u32; GROUP] = std::array::from_fn(|l| (lane0 + l as u64) as u32);
        let [_, _, a, b] = self.counter(0, lane0);
        // SAFETY (both blocks below): the CPU has AVX2 (this function's features), AES-NI and
        // VAES where `VAES` (the caller's promise).
        let group = unsafe { ars::Group16::new(&self.keys, lanes, a, b) };
        for block in 0..n.div_ceil(2) {
            let head = normal_head(block as u64);
            let k = 2 * block;
            let (a0, a1) = unsafe {
                if VAES {
                    group.words_vaes(head)
                } else {
                    group.words_aesni(head)
                }
            };
            for half in 0..gw.div_ceil(8) {
                let w0 = [a0[2 * half], a0[2 * half + 1]];
                let w1 = [a1[2 * half], a1[2 * half + 1]];
                let live = (gw - 8 * half).min(8);
                let lane = lane0 + 8 * half as u64;
                let at = k * w + g0 + 8 * half;
                // SAFETY: the CPU has AVX2 and FMA (the caller's promise).
                unsafe { self.store8_avx2(t, &w0, lane, k as u64, live, &mut s[at..]) };
                if k + 1 < n {
                    let out = &mut s[at + w..];
                    unsafe { self.store8_avx2(t, &w1, lane, k as u64 + 1, live, out) };
                }
            }
        }
    }

    /// [`SampleRng::fill_group16_avx2`] with VAES, in a build with its features (so the
    /// rounds and the fast path inline into one loop).
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA, AES-NI and VAES.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,aes,vaes")]
    unsafe fn fill_group16_vaes(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
    ) {
        // SAFETY: this function's features.
        unsafe { self.fill_group16_avx2::<true>(t, first, w, n, s, g0) }
    }

    /// [`SampleRng::fill_group16_avx2`] with AES-NI, one block per instruction.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,aes")]
    unsafe fn fill_group16_aesni(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
    ) {
        // SAFETY: this function's features.
        unsafe { self.fill_group16_avx2::<false>(t, first, w, n, s, g0) }
    }

    /// The `k`-th normals of the eight lanes from `lane` whose words are `words` (four per
    /// vector), into `out[..live]`: the fast path, then the slow path for the lanes it
    /// rejected.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn store8_avx2(
        &self,
        t: &Ziggurat,
        words: &[std::arch::x86_64::__m256i; 2],
        lane: u64,
        k: u64,
        live: usize,
        out: &mut [f64],
    ) {
        use std::arch::x86_64::*;
        // SAFETY (every block below): the CPU has AVX2 (this function's features); the
        // stores write four doubles into four checked by the slicing.
        let (z0, r0) = unsafe { normal::fast4v_avx2(t, words[0]) };
        let (z1, r1) = unsafe { normal::fast4v_avx2(t, words[1]) };
        let mut rejected = r0 | r1 << 4;
        if live == 8 {
            unsafe {
                _mm256_storeu_pd(out[..4].as_mut_ptr(), z0);
                _mm256_storeu_pd(out[4..8].as_mut_ptr(), z1);
            }
        } else {
            let mut z = [0.0; 8];
            unsafe {
                _mm256_storeu_pd(z.as_mut_ptr(), z0);
                _mm256_storeu_pd(z[4..].as_mut_ptr(), z1);
            }
            out[..live].copy_from_slice(&z[..live]);
            rejected &= lane_mask(live);
        }
        while rejected != 0 {
            let l = rejected.trailing_zeros() as usize;
            rejected &= rejected - 1;
            let mut four = [0u64; 4];
            unsafe { _mm256_storeu_si256(four.as_mut_ptr().cast(), words[l / 4]) };
            out[l] = self.slow_normal_in::<true>(t, lane + l as u64, k, four[l % 4]);
        }
    }

    /// Groups of `G` lanes side by side (`fill_group`).
    #[inline(always)]
    fn fill_body<const G: usize, const AVX2: bool>(
        &self,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
    ) {
        let t = normal::tables();
        for g0 in (0..w).step_by(G) {
            self.fill_group::<G, AVX2>(t, first, w, n, s, g0);
        }
    }

    /// The normals of lanes `first + g0..` (at most `G`), one block (two normals) per lane
    /// at a time: the fast path in a lane loop, then the slow path for the lanes it rejected.
    // Indexed lane loops over several arrays at once: the shape LLVM vectorises.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    fn fill_group<const G: usize, const AVX2: bool>(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
    ) {
        let gw = G.min(w - g0);
        for b in 0..n.div_ceil(2) {
            let mut c = [[0u32; G]; 4];
            for l in 0..G {
                let ctr = self.counter(normal_head(b as u64), first + (g0 + l) as u64);
                for (word, v) in ctr.into_iter().enumerate() {
                    c[word][l] = v;
                }
            }
            let words = self.block_words::<G, AVX2>(&c);
            let k = 2 * b;
            for h in 0..2.min(n - k) {
                let mut z = [0.0; G];
                let rejected = normal::fast_lanes::<G, AVX2>(t, &words[h], &mut z);
                let mut todo = rejected & lane_mask(gw);
                while todo != 0 {
                    let l = todo.trailing_zeros() as usize;
                    todo &= todo - 1;
                    let lane = first + (g0 + l) as u64;
                    z[l] = self.slow_normal_in::<AVX2>(t, lane, (k + h) as u64, words[h][l]);
                }
                let at = (k + h) * w + g0;
                s[at..at + gw].copy_from_slice(&z[..gw]);
            }
        }
    }

    /// Each lane's block under this generator's key, as the two words the normals read
    /// ([`ars::words64`]): all lanes' rounds side by side in AES-NI where the caller is an
    /// AVX2 build and the CPU has it (the same numbers), else one block at a time.
    #[inline(always)]
    fn block_words<const G: usize, const AVX2: bool>(&self, c: &[[u32; G]; 4]) -> [[u64; G]; 2] {
        #[cfg(target_arch = "x86_64")]
        if AVX2 && crate::cpu::aes() {
            // SAFETY: the CPU has AES-NI (checked just above).
            return unsafe { ars::blocks_aesni(c, &self.keys) };
        }
        let mut out = [[0u64; G]; 2];
        for l in 0..G {
            let block = ars::block([c[0][l], c[1][l], c[2][l], c[3][l]], &self.keys);
            (out[0][l], out[1][l]) = ars::words64(block);
        }
        out
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

/// The bits of lanes `0..gw` (`gw <= 32`).
#[inline(always)]
fn lane_mask(gw: usize) -> u32 {
    ((1u64 << gw) - 1) as u32
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
    fn bulk_draws_give_one_normal_after_another_in_every_kernel_set() {
        let key = StreamKey::new(8, 3, Purpose::Measure);
        for (first, w, n) in [
            (40, 16, 37),
            (0, 1, 5),
            (7, 21, 4),
            (1000, 3, 1),
            (5, 0, 3),
            (9, 12, 7),
            // Groups whose lanes straddle 2^32 and 2^33.
            ((1 << 32) - 20, 40, 5),
            ((1 << 33) - 7, 9, 3),
        ] {
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

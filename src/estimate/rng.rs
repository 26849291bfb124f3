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

/// Blocks of a group whose rejected normals wait for one pass of the slow path: few enough
/// for their masks to sit on the stack, many enough (64 words per lane) that the pass finds
/// several normals to redraw together.
#[cfg(target_arch = "x86_64")]
const REDO_BLOCKS: usize = 64;

/// Rejected normals redrawn together: their sixteen blocks (each's word and first slow
/// block) go through the AES rounds side by side, and their first steps through the slow
/// path in vector code.
#[cfg(target_arch = "x86_64")]
const REDO_BATCH: usize = 8;

/// Normals the fast path rejected, waiting for [`SampleRng::redo_batch_sized`]: `(lane, k, at)`,
/// the `k`-th normal of lane `lane`, for `s[at]`. The list outlives a pass and a group of
/// lanes, so that batches are full but for a bulk draw's last.
#[cfg(target_arch = "x86_64")]
#[derive(Default)]
struct Pending {
    todo: [(u64, u64, usize); REDO_BATCH],
    count: usize,
}

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
        if set != KernelSet::Portable && crate::cpu::avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above). (The AVX-512 set draws
            // normals with this build too.)
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
        let mut pending = Pending::default();
        for g0 in (0..w).step_by(GROUP) {
            let lane0 = first + g0 as u64;
            if aes && lane0 >> 32 == (lane0 + GROUP as u64 - 1) >> 32 {
                // SAFETY: the CPU has AES-NI, and VAES where `vaes` (checked above).
                unsafe {
                    if vaes {
                        self.fill_group16_vaes(t, first, w, n, s, g0, &mut pending);
                    } else {
                        self.fill_group16_aesni(t, first, w, n, s, g0, &mut pending);
                    }
                }
            } else {
                self.fill_group::<GROUP, true>(t, first, w, n, s, g0);
            }
        }
        // SAFETY: as above; the list is empty unless the CPU has AES-NI.
        unsafe {
            if vaes {
                self.redo_batch_vaes(t, &pending, s);
            } else if aes {
                self.redo_batch_aesni(t, &pending, s);
            }
        }
    }

    /// The normals of lanes `first + g0..` (at most sixteen), whose numbers share their top
    /// 32 bits, so their counters differ only in the block index and the second word
    /// ([`ars::Group16`], which xors the shared words with the first round key once): each
    /// block's 32 words go from the AES registers straight into the fast path
    /// ([`normal::fast32_avx2`]) and its results straight into `s`, and the block's mask of
    /// rejected words into a list; after every [`REDO_BLOCKS`] blocks,
    /// [`SampleRng::redo_rejected`] adds the rejected normals to `pending` and redraws them
    /// eight at a time (the caller redraws the last ones). The same numbers, with VAES
    /// (`VAES`) or AES-NI.
    ///
    /// Why the slow path waits: called where a word is rejected (in 13 % of the blocks), it
    /// costs a mispredicted branch, and the call's clobbered registers make the fast loop keep
    /// its constants and words on the stack.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI, and VAES if `VAES` (the caller's target
    /// features: [`SampleRng::fill_group16_vaes`] or [`SampleRng::fill_group16_aesni`]).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn fill_group16_avx2<const VAES: bool>(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
        pending: &mut Pending,
    ) {
        let lane0 = first + g0 as u64;
        let gw = GROUP.min(w - g0);
        let lanes: [u32; GROUP] = std::array::from_fn(|l| (lane0 + l as u64) as u32);
        let [_, _, a, b] = self.counter(0, lane0);
        // SAFETY: the CPU has AVX2 (this function's promise, from its callers' target
        // features).
        let group = unsafe { ars::Group16::new(&self.keys, lanes, a, b) };
        let blocks = n.div_ceil(2);
        // The blocks with rejected words, `block << 32 | mask`, written for every block and
        // kept for those with a rejection (no branch on the rare event).
        let mut rejected = [0u64; REDO_BLOCKS];
        // The words of the block the fast path works on and of the next, staged while it
        // does, so that the next block's AES rounds (two pipes) overlap the fast path's table
        // loads and arithmetic (the others) in the out-of-order window. Even blocks in `even`,
        // odd ones in `odd`: the loop is unrolled by two so that each buffer has a fixed
        // place on the stack.
        let (mut even, mut odd) = (normal::Staged32::default(), normal::Staged32::default());
        // SAFETY: the CPU has AVX2 and AES-NI, and VAES where `VAES` (this function's
        // promise), and this function inlines into its callers, which enable them.
        unsafe { stage::<VAES>(&group, 0, &mut even) };
        const { assert!(REDO_BLOCKS.is_multiple_of(2)) };
        for from in (0..blocks).step_by(REDO_BLOCKS) {
            let to = (from + REDO_BLOCKS).min(blocks);
            let mut count = 0;
            for block in (from..to).step_by(2) {
                if block + 1 < blocks {
                    // SAFETY: as for the first block's `stage`.
                    unsafe { stage::<VAES>(&group, block + 1, &mut odd) };
                }
                // SAFETY: the CPU has AVX2, which this function's callers enable.
                let mask = unsafe { fast_block(t, &even, block, w, n, g0, gw, s) };
                rejected[count] = (block as u64) << 32 | u64::from(mask);
                count += usize::from(mask != 0);
                if block + 1 < to {
                    if block + 2 < blocks {
                        // SAFETY: as for the first block's `stage`.
                        unsafe { stage::<VAES>(&group, block + 2, &mut even) };
                    }
                    // SAFETY: as for the even block's `fast_block`.
                    let mask = unsafe { fast_block(t, &odd, block + 1, w, n, g0, gw, s) };
                    rejected[count] = (block as u64 + 1) << 32 | u64::from(mask);
                    count += usize::from(mask != 0);
                }
            }
            if count != 0 {
                let (rejected, at) = (&rejected[..count], (first, g0, gw, w, n));
                // SAFETY: the CPU has AVX2, FMA and AES-NI, and VAES where `VAES` (this
                // function's promise).
                unsafe { self.redo_rejected::<VAES>(t, at, rejected, pending, s) };
            }
        }
    }

    /// The normals of lanes `first + g0..` (at most `gw`; at `s[k * w + g0 + l]`, `n` normals
    /// per lane; `at` is `(first, g0, gw, w, n)`) whose words the fast path rejected:
    /// `rejected` holds `block << 32 | mask` (the mask as [`normal::REJECTED_WORD`] reads it)
    /// for each block with any. They join `pending`, which [`SampleRng::redo_batch_vaes`]
    /// (`VAES`) or [`SampleRng::redo_batch_aesni`] redraws whenever it is full.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI, and VAES if `VAES`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,aes")]
    #[inline(never)]
    #[cold]
    unsafe fn redo_rejected<const VAES: bool>(
        &self,
        t: &Ziggurat,
        at: (u64, usize, usize, usize, usize),
        rejected: &[u64],
        pending: &mut Pending,
        s: &mut [f64],
    ) {
        let (first, g0, gw, w, n) = at;
        for &r in rejected {
            let (block, mut mask) = ((r >> 32) as usize, r as u32);
            while mask != 0 {
                let bit = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let (v, e) = normal::REJECTED_WORD[bit];
                let (half, l) = (
                    usize::from(v) / 4,
                    4 * (usize::from(v) % 4) + usize::from(e),
                );
                let k = 2 * block + half;
                if l >= gw || k >= n {
                    continue;
                }
                pending.todo[pending.count] = (first + (g0 + l) as u64, k as u64, k * w + g0 + l);
                pending.count += 1;
                if pending.count == REDO_BATCH {
                    // SAFETY: the caller's promise.
                    unsafe {
                        if VAES {
                            self.redo_batch_vaes(t, pending, s);
                        } else {
                            self.redo_batch_aesni(t, pending, s);
                        }
                    }
                    pending.count = 0;
                }
            }
        }
    }

    /// [`SampleRng::redo_batch_sized`] with VAES.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA, AES-NI and VAES.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,aes,vaes")]
    #[inline(never)]
    #[cold]
    unsafe fn redo_batch_vaes(&self, t: &Ziggurat, pending: &Pending, s: &mut [f64]) {
        // SAFETY: this function's features.
        unsafe { self.redo_batch_sized::<true>(t, pending, s) }
    }

    /// [`SampleRng::redo_batch_sized`] with AES-NI.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,aes")]
    #[inline(never)]
    #[cold]
    unsafe fn redo_batch_aesni(&self, t: &Ziggurat, pending: &Pending, s: &mut [f64]) {
        // SAFETY: this function's features.
        unsafe { self.redo_batch_sized::<false>(t, pending, s) }
    }

    /// [`normal::slow`] for each `(lane, k, at)` of `pending`, into `s[at]`: each normal's
    /// word block and first slow block are a pair of AES states ([`ars::pairs`], one
    /// vector each with VAES), then their first steps through the slow path run side by side
    /// in vector code ([`normal::wedge_lanes`]); the few normals those leave unsettled go
    /// through [`normal::slow`] one by one. In 2, 4 or 8 lanes, the fewest that hold them:
    /// a bulk draw's last batch is often short (a model of 41 latents rejects about three
    /// of a group's 656 words), and a lane costs about as much used as not.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI, and VAES if `VAES`; the caller must be
    /// compiled with them: it inlines there.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn redo_batch_sized<const VAES: bool>(
        &self,
        t: &Ziggurat,
        pending: &Pending,
        s: &mut [f64],
    ) {
        let todo = &pending.todo[..pending.count];
        // SAFETY: the caller's promise.
        unsafe {
            match todo.len() {
                0 => {}
                1..=2 => self.redo_batch::<2, VAES>(t, todo, s),
                3..=4 => self.redo_batch::<4, VAES>(t, todo, s),
                _ => self.redo_batch::<REDO_BATCH, VAES>(t, todo, s),
            }
        }
    }

    /// [`SampleRng::redo_batch_sized`] with `N` lanes (at least `todo.len()`).
    ///
    /// # Safety
    /// As [`SampleRng::redo_batch_sized`].
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn redo_batch<const N: usize, const VAES: bool>(
        &self,
        t: &Ziggurat,
        todo: &[(u64, u64, usize)],
        s: &mut [f64],
    ) {
        // Unused entries compute the blocks of zero counters, whose results are not read.
        let mut c = [[0u32; 8]; N];
        for (c, &(lane, k, _)) in c.iter_mut().zip(todo) {
            let [a0, a1, a2, a3] = self.counter(normal_head(k / 2), lane);
            let [b0, b1, b2, b3] = self.counter(slow_head(k), lane);
            *c = [a0, a1, a2, a3, b0, b1, b2, b3];
        }
        // SAFETY: the caller's promise.
        let words = unsafe { ars::pairs::<N, VAES>(&c, &self.keys) };
        // The rejected word and the first slow block's two words of each normal.
        let (mut w, mut a, mut b) = ([0; N], [0; N], [0; N]);
        for (i, &(_, k, _)) in todo.iter().enumerate() {
            w[i] = words[i][(k % 2) as usize];
            (a[i], b[i]) = (words[i][2], words[i][3]);
        }
        let (z, unsettled) = normal::wedge_lanes(t, &w, &a, &b);
        for (i, &(lane, k, at)) in todo.iter().enumerate() {
            s[at] = if unsettled >> i & 1 == 0 {
                z[i]
            } else {
                // SAFETY: the caller's promise.
                unsafe { self.slow_normal_fma(t, lane, k, w[i], Some([a[i], b[i]])) }
            };
        }
    }

    /// [`SampleRng::fill_group16_avx2`] with VAES, in a build with its features (so the
    /// rounds and the fast path inline into one loop).
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA, AES-NI and VAES.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,aes,vaes")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn fill_group16_vaes(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
        pending: &mut Pending,
    ) {
        // SAFETY: this function's features.
        unsafe { self.fill_group16_avx2::<true>(t, first, w, n, s, g0, pending) }
    }

    /// [`SampleRng::fill_group16_avx2`] with AES-NI, one block per instruction.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,aes")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn fill_group16_aesni(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
        pending: &mut Pending,
    ) {
        // SAFETY: this function's features.
        unsafe { self.fill_group16_avx2::<false>(t, first, w, n, s, g0, pending) }
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
    /// ([`ars::words64`]): all lanes' rounds side by side in AES-NI where the CPU has it (the
    /// same numbers), else one block at a time.
    #[inline(always)]
    fn block_words<const G: usize, const AVX2: bool>(&self, c: &[[u32; G]; 4]) -> [[u64; G]; 2] {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::aes() {
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

/// The words of the normals' block `block` of `group`'s sixteen lanes, staged into `out`
/// for [`normal::fast32_avx2`].
///
/// # Safety
/// The CPU must have AVX2 and AES-NI, and VAES if `VAES`; the caller must be compiled with
/// them (a function with the target features): it inlines there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn stage<const VAES: bool>(group: &ars::Group16, block: usize, out: &mut normal::Staged32) {
    // SAFETY: the caller's promise.
    unsafe {
        let (a0, a1) = if VAES {
            group.words_vaes(normal_head(block as u64))
        } else {
            group.words_aesni(normal_head(block as u64))
        };
        let words = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
        normal::stage32_avx2(&words, out);
    }
}

/// The fast path on the staged words of block `block` (normals `2 block` and `2 block + 1`)
/// of the sixteen lanes from column `g0` of `s` (`w` columns, `n` normals per lane), of
/// which the first `gw` are drawn: the normals into `s`, and the mask of rejected words.
///
/// # Safety
/// The CPU must have AVX2, and the caller must be compiled with it: it inlines there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fast_block(
    t: &Ziggurat,
    staged: &normal::Staged32,
    block: usize,
    w: usize,
    n: usize,
    g0: usize,
    gw: usize,
    s: &mut [f64],
) -> u32 {
    let at = 2 * block * w + g0;
    if gw == GROUP && 2 * block + 1 < n {
        let (r0, r1) = s[at..].split_at_mut(w);
        let rows = (
            first_16(r0).expect("a full group"),
            first_16(r1).expect("a full group"),
        );
        // SAFETY: the caller's promise.
        unsafe { normal::fast32_avx2(t, staged, rows) }
    } else {
        // The last lanes, or the last normal of an odd count.
        let mut z = [[0.0; GROUP]; 2];
        let [z0, z1] = &mut z;
        // SAFETY: the caller's promise.
        let r = unsafe { normal::fast32_avx2(t, staged, (z0, z1)) };
        s[at..at + gw].copy_from_slice(&z[0][..gw]);
        if 2 * block + 1 < n {
            s[at + w..at + w + gw].copy_from_slice(&z[1][..gw]);
        }
        r
    }
}

/// The first sixteen of `s`, if it has them.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first_16(s: &mut [f64]) -> Option<&mut [f64; GROUP]> {
    s.get_mut(..GROUP)?.try_into().ok()
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
            // Enough normals (about 40 rejected by the fast path) that the slow path redraws
            // several together, across more than one pass.
            (3, 32, 301),
            (11, 30, 290),
            // About 400 rejected normals, several of which need the slow path beyond its
            // first steps (the tail, or a second rejection).
            (0, 48, 2000),
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

    /// The AES-NI build of a group, which a CPU with VAES never picks by itself.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn groups_without_vaes_give_one_normal_after_another() {
        if !crate::cpu::avx2_fma() || !crate::cpu::aes() {
            return;
        }
        let key = StreamKey::new(5, 9, Purpose::Step);
        let t = normal::tables();
        for (first, w, n) in [(0, 16, 301), (21, 20, 37), (100, 32, 2)] {
            let mut rng = key.rng(Channel::Noise);
            let mut plain = vec![0.0; w * n];
            for l in 0..w {
                let r = rng.lane(first + l);
                for k in 0..n {
                    plain[k * w + l] = r.normal();
                }
            }
            let mut bulk = vec![f64::NAN; w * n];
            let mut pending = Pending::default();
            for g0 in (0..w).step_by(GROUP) {
                // SAFETY: the CPU has AVX2, FMA and AES-NI (checked above).
                unsafe {
                    rng.fill_group16_aesni(t, first as u64, w, n, &mut bulk, g0, &mut pending)
                };
            }
            // SAFETY: as above.
            unsafe { rng.redo_batch_aesni(t, &pending, &mut bulk) };
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&bulk), bits(&plain), "{first} {w} {n}");
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

//! The AVX2 and AES-NI (or VAES) build of bulk normals: sixteen lanes whose counters share
//! their top words go from the AES rounds straight into the vector fast path, and the
//! normals it rejects wait in a list to be redrawn sixteen at a time.

use super::super::ars;
use super::super::normal::{self, Ziggurat};
use super::{GROUP, SampleRng, normal_head, slow_head};
use crate::cpu::feature_builds;
#[cfg(target_arch = "x86_64")]
use rounds::{Rounds, Ymm, Zmm, fast_block};

#[cfg(target_arch = "x86_64")]
mod rounds;

/// Blocks of a group whose rejected normals wait for one pass of the slow path: few enough
/// for their masks to sit on the stack, many enough (64 words per lane) that the pass finds
/// several normals to redraw together.
#[cfg(target_arch = "x86_64")]
const REDO_BLOCKS: usize = 64;

/// Rejected normals redrawn together: their blocks (each's word and first slow block) go
/// through the AES rounds side by side, and their first steps through the slow path in
/// vector code. A batch is bound by the latency of its rounds and its `exp`, so sixteen
/// cost little more than eight (`cheating`, whose chunk rejects about 21 normals, ran
/// about 1 % faster with sixteen in both vector builds).
#[cfg(target_arch = "x86_64")]
const REDO_BATCH: usize = 16;

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
    /// The AVX2 build: few lanes four at a time (so that one lane does not cost sixteen), else
    /// groups of sixteen lanes through [`SampleRng::fill_group16_avx2`] where the CPU has
    /// AES-NI (VAES if it has it; in 512-bit vectors if `wide` and it has VAES).
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA, and AVX-512 (F, DQ, VL, BW) if `wide`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn fill_avx2(
        &self,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        wide: bool,
    ) {
        if w <= 4 {
            self.fill_body::<4, true, false>(first, w, n, s);
            return;
        }
        let t = normal::tables();
        let (aes, vaes) = (crate::cpu::aes(), crate::cpu::vaes());
        let zmm = vaes && wide;
        let mut pending = Pending::default();
        for g0 in (0..w).step_by(GROUP) {
            let lane0 = first + g0 as u64;
            if aes && lane0 >> 32 == (lane0 + GROUP as u64 - 1) >> 32 {
                // SAFETY: the CPU has AES-NI and VAES where `vaes` (checked above), and
                // AVX-512 where `wide` (this function's promise).
                unsafe {
                    if zmm {
                        self.fill_group16_zmm(t, first, w, n, s, g0, &mut pending);
                    } else if vaes {
                        self.fill_group16_vaes(t, first, w, n, s, g0, &mut pending);
                    } else {
                        self.fill_group16_aesni(t, first, w, n, s, g0, &mut pending);
                    }
                }
            } else {
                self.fill_group::<GROUP, true, false>(t, first, w, n, s, g0);
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
    /// sixteen at a time (the caller redraws the last ones). The same numbers, with VAES
    /// (`VAES`) or AES-NI.
    ///
    /// Why the slow path waits: called where a word is rejected (in 13 % of the blocks), it
    /// costs a mispredicted branch, and the call's clobbered registers make the fast loop keep
    /// its constants and words on the stack.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI, and VAES if `VAES` (the caller's target
    /// features: [`SampleRng::fill_group16_vaes`] or [`SampleRng::fill_group16_aesni`]).
    ///
    /// With `ZMM` (the CPU has AVX-512 and VAES: [`SampleRng::fill_group16_zmm`]) the rounds
    /// and the fast path run in 512-bit vectors ([`ars::Group16Zmm`],
    /// [`normal::fast32_avx512`]): the same numbers.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn fill_group16_avx2<const VAES: bool, const ZMM: bool>(
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
        let lanes: [u32; GROUP] = std::array::from_fn(|l| (lane0 + l as u64) as u32);
        let [_, _, a, b] = self.counter(0, lane0);
        // SAFETY: the CPU has AVX2, and AVX-512 and VAES where `ZMM` (this function's
        // promise, from its callers' target features).
        unsafe {
            if ZMM {
                let group = Zmm(ars::Group16Zmm::new(&self.keys, lanes, a, b));
                self.fill_group16_with(t, first, w, n, s, g0, pending, &group);
            } else {
                let group = Ymm::<VAES>(ars::Group16::new(&self.keys, lanes, a, b));
                self.fill_group16_with(t, first, w, n, s, g0, pending, &group);
            }
        }
    }

    /// [`SampleRng::fill_group16_avx2`]'s loop over the blocks of `group`.
    ///
    /// # Safety
    /// As [`SampleRng::fill_group16_avx2`], with the features `G` needs.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn fill_group16_with<G: Rounds>(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
        pending: &mut Pending,
        group: &G,
    ) {
        let gw = GROUP.min(w - g0);
        let blocks = n.div_ceil(2);
        // The blocks with rejected words, `block << 32 | mask`, written for every block and
        // kept for those with a rejection (no branch on the rare event).
        let mut rejected = [0u64; REDO_BLOCKS];
        // The words of the blocks the fast path works on and of the next ones, staged while
        // it does, so that the next blocks' AES rounds (two pipes) overlap the fast path's
        // table loads and arithmetic (the others) in the out-of-order window. A build stages
        // `G::UNIT` blocks at a time; even units in `even`, odd ones in `odd`: the loop is
        // unrolled by two so that each buffer has a fixed place on the stack.
        let unit = G::UNIT;
        let (mut even, mut odd) = (
            <[normal::Staged32; 2]>::default(),
            <[normal::Staged32; 2]>::default(),
        );
        // SAFETY: the CPU has the features of `G`'s build (this function's promise), and
        // this function inlines into its callers, which enable them.
        unsafe { group.stage(0, &mut even) };
        const { assert!(REDO_BLOCKS.is_multiple_of(4)) };
        for from in (0..blocks).step_by(REDO_BLOCKS) {
            let to = (from + REDO_BLOCKS).min(blocks);
            let mut count = 0;
            for start in (from..to).step_by(2 * unit) {
                if start + unit < blocks {
                    // SAFETY: as for the first blocks' `stage`.
                    unsafe { group.stage(start + unit, &mut odd) };
                }
                for (i, staged) in even[..unit].iter().enumerate() {
                    let block = start + i;
                    if block < to {
                        // SAFETY: as for the first blocks' `stage`.
                        let mask = unsafe { fast_block::<G>(t, staged, block, w, n, g0, gw, s) };
                        rejected[count] = (block as u64) << 32 | u64::from(mask);
                        count += usize::from(mask != 0);
                    }
                }
                if start + unit < to {
                    if start + 2 * unit < blocks {
                        // SAFETY: as for the first blocks' `stage`.
                        unsafe { group.stage(start + 2 * unit, &mut even) };
                    }
                    for (i, staged) in odd[..unit].iter().enumerate() {
                        let block = start + unit + i;
                        if block < to {
                            // SAFETY: as for the first blocks' `stage`.
                            let mask =
                                unsafe { fast_block::<G>(t, staged, block, w, n, g0, gw, s) };
                            rejected[count] = (block as u64) << 32 | u64::from(mask);
                            count += usize::from(mask != 0);
                        }
                    }
                }
            }
            if count != 0 {
                let (rejected, at) = (&rejected[..count], (first, g0, gw, w, n));
                // SAFETY: the CPU has the features of `G`'s build (this function's promise).
                unsafe { group.redo(self, t, at, rejected, pending, s) };
            }
        }
    }

    /// The normals of lanes `first + g0..` (at most `gw`; at `s[k * w + g0 + l]`, `n` normals
    /// per lane; `at` is `(first, g0, gw, w, n)`) whose words the fast path rejected:
    /// `rejected` holds `block << 32 | mask` (the mask as [`normal::REJECTED_WORD`] reads it)
    /// for each block with any (bit `16 r + l` for word `r` of lane `l` if `ZMM`). They join
    /// `pending`, which [`SampleRng::redo_batch_vaes`] (`VAES`) or
    /// [`SampleRng::redo_batch_aesni`] redraws whenever it is full.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and AES-NI, and VAES if `VAES`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,aes")]
    #[inline(never)]
    #[cold]
    unsafe fn redo_rejected<const VAES: bool, const ZMM: bool>(
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
                // Bit `16 r + l` for word `r` of lane `l` in the 512-bit build.
                let (v, e) = if ZMM {
                    ((bit / 4) as u8, (bit % 4) as u8)
                } else {
                    normal::REJECTED_WORD[bit]
                };
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

    feature_builds! {
        {
            #[cfg(target_arch = "x86_64")]
            #[inline(never)]
            #[cold]
            [unsafe fn] (&self, t: &Ziggurat, pending: &Pending, s: &mut [f64]) {
                // SAFETY: this function's features.
                unsafe { self.redo_batch_sized::<VAES>(t, pending, s) }
            }
        }
        /// [`SampleRng::redo_batch_sized`] with VAES.
        ///
        /// # Safety
        /// The CPU must have AVX2, FMA, AES-NI and VAES.
        redo_batch_vaes = "avx2,fma,aes,vaes", const VAES: bool = true;
        /// [`SampleRng::redo_batch_sized`] with AES-NI.
        ///
        /// # Safety
        /// The CPU must have AVX2, FMA and AES-NI.
        redo_batch_aesni = "avx2,fma,aes", const VAES: bool = false;
    }
    /// [`normal::slow`] for each `(lane, k, at)` of `pending`, into `s[at]`: each normal's
    /// word block and first slow block are a pair of AES states ([`ars::pairs`], one
    /// vector each with VAES), then their first steps through the slow path run side by side
    /// in vector code ([`normal::wedge_lanes`]); the few normals those leave unsettled go
    /// through [`normal::slow`] one by one. In 2, 4, 8 or 16 lanes, the fewest that hold them:
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
                5..=8 => self.redo_batch::<8, VAES>(t, todo, s),
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

    feature_builds! {
        {
            #[cfg(target_arch = "x86_64")]
            #[allow(clippy::too_many_arguments)]
            [unsafe fn] (
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
                unsafe { self.fill_group16_avx2::<VAES, ZMM>(t, first, w, n, s, g0, pending) }
            }
        }
        /// [`SampleRng::fill_group16_avx2`] with VAES, in a build with its features (so the
        /// rounds and the fast path inline into one loop).
        ///
        /// # Safety
        /// The CPU must have AVX2, FMA, AES-NI and VAES.
        fill_group16_vaes = "avx2,fma,aes,vaes", const VAES: bool = true, const ZMM: bool = false;
        /// [`SampleRng::fill_group16_avx2`] with AES-NI, one block per instruction.
        ///
        /// # Safety
        /// The CPU must have AVX2, FMA and AES-NI.
        fill_group16_aesni = "avx2,fma,aes", const VAES: bool = false, const ZMM: bool = false;
        /// [`SampleRng::fill_group16_avx2`] in 512-bit vectors: four AES states per VAES
        /// instruction, eight lanes per instruction of the fast path.
        ///
        /// # Safety
        /// The CPU must have AVX-512 (F, DQ, VL, BW), FMA, AES-NI and VAES.
        fill_group16_zmm = "avx512f,avx512dq,avx512vl,avx512bw,avx2,fma,aes,vaes",
            const VAES: bool = true, const ZMM: bool = true;
    }
}

#[cfg(test)]
mod tests;

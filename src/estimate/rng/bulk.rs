//! Bulk draws of normals: many lanes side by side, exactly what one
//! [`SampleRng::normal`](super::SampleRng::normal) after another gives. The portable build
//! runs groups of lanes through the scalar fast path; on x86-64 with AVX2 the sixteen-lane
//! groups of [`super::group16`] take over.

use super::super::ars;
use super::super::normal::{self, Ziggurat};
use super::{GROUP, SampleRng, normal_head};
use crate::eval::vmath::KernelSet;

impl SampleRng {
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
            // The AVX-512 sets draw with this build's loop too, in 512-bit vectors.
            let wide = matches!(set, KernelSet::Avx512 | KernelSet::Jit) && crate::cpu::avx512();
            // SAFETY: the CPU has AVX2 and FMA (checked just above), and AVX-512 if `wide`.
            unsafe { self.fill_avx2(first as u64, w, n, s, wide) };
            return;
        }
        let _ = set;
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::aes() && crate::cpu::fma() {
            // SAFETY: the CPU has AES-NI, SSE4.1 and FMA (checked just above).
            unsafe { self.fill_aesni_fma(first as u64, w, n, s) };
            return;
        }
        if w <= 4 {
            self.fill_body::<4, false, false>(first as u64, w, n, s);
        } else {
            self.fill_body::<GROUP, false, false>(first as u64, w, n, s);
        }
    }

    /// The portable build where the CPU has AES-NI and FMA: the rounds inline into the lane
    /// loop (a call per block and its counters passed through memory cost a quarter of a
    /// `cheating` Reparam sample), and the slow path's `mul_add`s are instructions.
    ///
    /// # Safety
    /// The CPU must have AES-NI, SSE4.1 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse4.1,aes,fma")]
    unsafe fn fill_aesni_fma(&self, first: u64, w: usize, n: usize, s: &mut [f64]) {
        if w <= 4 {
            self.fill_body::<4, false, true>(first, w, n, s);
        } else {
            self.fill_body::<GROUP, false, true>(first, w, n, s);
        }
    }

    /// Groups of `G` lanes side by side (`fill_group`). `AES`: the caller is compiled with
    /// AES-NI and SSE4.1, which the CPU has.
    #[inline(always)]
    pub(super) fn fill_body<const G: usize, const AVX2: bool, const AES: bool>(
        &self,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
    ) {
        let t = normal::tables();
        for g0 in (0..w).step_by(G) {
            self.fill_group::<G, AVX2, AES>(t, first, w, n, s, g0);
        }
    }

    /// The normals of lanes `first + g0..` (at most `G`), one block (two normals) per lane
    /// at a time: the fast path in a lane loop, then the slow path for the lanes it rejected.
    // Indexed lane loops over several arrays at once: the shape LLVM vectorises.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    pub(super) fn fill_group<const G: usize, const AVX2: bool, const AES: bool>(
        &self,
        t: &Ziggurat,
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
        g0: usize,
    ) {
        let gw = G.min(w - g0);
        // Each lane's counter but its first word (the block), which is zero here.
        let mut ctr = [[0u32; 4]; G];
        for (l, c) in ctr.iter_mut().enumerate() {
            *c = self.counter(0, first + (g0 + l) as u64);
        }
        for b in 0..n.div_ceil(2) {
            let words = self.block_words::<G, AES>(&ctr, normal_head(b as u64));
            let k = 2 * b;
            for h in 0..2.min(n - k) {
                let mut z = [0.0; G];
                let rejected = fast_lanes::<G, AVX2, AES>(t, &words[h], &mut z);
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

    /// Each lane's block under this generator's key, its counter `ctr[l]` with the first
    /// word `head`, as the two words the normals read ([`ars::words64`]): all lanes' rounds
    /// side by side in AES-NI where the CPU has it (the same numbers), else one block at a
    /// time.
    #[inline(always)]
    fn block_words<const G: usize, const AES: bool>(
        &self,
        ctr: &[[u32; 4]; G],
        head: u32,
    ) -> [[u64; G]; 2] {
        #[cfg(target_arch = "x86_64")]
        if AES {
            // SAFETY: the caller is compiled with AES-NI and SSE4.1, which the CPU has (the
            // promise of `AES`): the rounds inline there.
            return unsafe { ars::blocks_aesni_heads_inline(ctr, head, &self.keys) };
        }
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::aes() {
            // SAFETY: the CPU has AES-NI and SSE4.1 (checked just above).
            return unsafe { ars::blocks_aesni_heads(ctr, head, &self.keys) };
        }
        let mut out = [[0u64; G]; 2];
        for l in 0..G {
            let [_, c1, c2, c3] = ctr[l];
            let block = ars::block([head, c1, c2, c3], &self.keys);
            (out[0][l], out[1][l]) = ars::words64(block);
        }
        out
    }
}

/// [`normal::fast_lanes`], in 128-bit vectors where `AES` says the caller is compiled with
/// SSE4.1 (the same bits).
#[inline(always)]
fn fast_lanes<const G: usize, const AVX2: bool, const AES: bool>(
    t: &Ziggurat,
    w: &[u64; G],
    z: &mut [f64; G],
) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if AES && !AVX2 && G.is_multiple_of(2) {
        // SAFETY: the caller is compiled with SSE4.1, which the CPU has (the promise of
        // `AES`).
        return unsafe { normal::fast_lanes_sse(t, w, z) };
    }
    normal::fast_lanes::<G, AVX2>(t, w, z)
}

/// The bits of lanes `0..gw` (`gw <= 32`).
#[inline(always)]
fn lane_mask(gw: usize) -> u32 {
    ((1u64 << gw) - 1) as u32
}

#[cfg(test)]
mod tests {
    use super::super::{Channel, Purpose, StreamKey};
    use super::*;

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
}

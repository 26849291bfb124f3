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

    /// Groups of `G` lanes side by side (`fill_group`).
    #[inline(always)]
    pub(super) fn fill_body<const G: usize, const AVX2: bool>(
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
    pub(super) fn fill_group<const G: usize, const AVX2: bool>(
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

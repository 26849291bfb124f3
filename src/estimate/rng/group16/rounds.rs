//! A group's AES rounds at each vector width (`Rounds`: 256-bit AES-NI or VAES, 512-bit
//! VAES) and the fast path over a block of its staged words: the part of the 16-lane build
//! that differs by width, behind one trait, so the group's loop is written once.

use super::super::ars;
use super::super::normal::{self, Ziggurat};
use super::super::{GROUP, SampleRng, normal_head};
use super::Pending;

/// A group's AES rounds in one build: the words of its normals' blocks, staged for the fast
/// path, and the build's redraw of rejected normals.
pub(super) trait Rounds {
    /// The fast path runs in 512-bit vectors, and its mask of rejections has bit `16 r + l`
    /// for word `r` of lane `l` ([`normal::fast32_avx512`]).
    const ZMM: bool;

    /// The blocks staged at a time (at most 2): as many as keep eight AES states in flight,
    /// which the rounds' latency needs for the instructions to issue at their full rate.
    const UNIT: usize;

    /// The words of the normals' blocks `block..block + UNIT` of the group's sixteen lanes,
    /// staged into `out` (blocks past the lanes' last are computed and not read).
    ///
    /// # Safety
    /// The CPU must have the build's features, and the caller must be compiled with them
    /// (a function with the target features): it inlines there.
    unsafe fn stage(&self, block: usize, out: &mut [normal::Staged32; 2]);

    /// [`SampleRng::redo_rejected`] in this build.
    ///
    /// # Safety
    /// As [`Rounds::stage`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn redo(
        &self,
        rng: &SampleRng,
        t: &Ziggurat,
        at: (u64, usize, usize, usize, usize),
        rejected: &[u64],
        pending: &mut Pending,
        s: &mut [f64],
    );
}

/// A group's rounds in 256-bit vectors: VAES (`VAES`) or AES-NI.
pub(super) struct Ymm<const VAES: bool>(pub(super) ars::Group16);

impl<const VAES: bool> Rounds for Ymm<VAES> {
    const ZMM: bool = false;
    const UNIT: usize = 1;

    #[inline(always)]
    unsafe fn stage(&self, block: usize, out: &mut [normal::Staged32; 2]) {
        // SAFETY: the caller's promise: AVX2, AES-NI, and VAES if `VAES`.
        unsafe {
            let (a0, a1) = if VAES {
                self.0.words_vaes(normal_head(block as u64))
            } else {
                self.0.words_aesni(normal_head(block as u64))
            };
            let words = [a0[0], a0[1], a0[2], a0[3], a1[0], a1[1], a1[2], a1[3]];
            normal::stage32_avx2(&words, &mut out[0]);
        }
    }

    #[inline(always)]
    unsafe fn redo(
        &self,
        rng: &SampleRng,
        t: &Ziggurat,
        at: (u64, usize, usize, usize, usize),
        rejected: &[u64],
        pending: &mut Pending,
        s: &mut [f64],
    ) {
        // SAFETY: the caller's promise.
        unsafe { rng.redo_rejected::<VAES, false>(t, at, rejected, pending, s) }
    }
}

/// A group's rounds in 512-bit vectors (AVX-512 and VAES).
pub(super) struct Zmm(pub(super) ars::Group16Zmm);

impl Rounds for Zmm {
    const ZMM: bool = true;
    const UNIT: usize = 2;

    #[inline(always)]
    unsafe fn stage(&self, block: usize, out: &mut [normal::Staged32; 2]) {
        // SAFETY: the caller's promise: AVX-512 F and VAES.
        unsafe {
            let [a, b] = self
                .0
                .words2([normal_head(block as u64), normal_head(block as u64 + 1)]);
            normal::stage32_avx512(&a, &mut out[0]);
            normal::stage32_avx512(&b, &mut out[1]);
        }
    }

    #[inline(always)]
    unsafe fn redo(
        &self,
        rng: &SampleRng,
        t: &Ziggurat,
        at: (u64, usize, usize, usize, usize),
        rejected: &[u64],
        pending: &mut Pending,
        s: &mut [f64],
    ) {
        // SAFETY: the caller's promise.
        unsafe { rng.redo_rejected::<true, true>(t, at, rejected, pending, s) }
    }
}

/// The fast path on the staged words of block `block` (normals `2 block` and `2 block + 1`)
/// of the sixteen lanes from column `g0` of `s` (`w` columns, `n` normals per lane), of
/// which the first `gw` are drawn: the normals into `s`, and the mask of rejected words (in
/// the order of `G`'s build).
///
/// # Safety
/// The CPU must have AVX2, and AVX-512 if `G::ZMM`, and the caller must be compiled with
/// them: it inlines there.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn fast_block<G: Rounds>(
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
        unsafe { fast32::<G>(t, staged, rows) }
    } else {
        // The last lanes, or the last normal of an odd count.
        let mut z = [[0.0; GROUP]; 2];
        let [z0, z1] = &mut z;
        // SAFETY: the caller's promise.
        let r = unsafe { fast32::<G>(t, staged, (z0, z1)) };
        s[at..at + gw].copy_from_slice(&z[0][..gw]);
        if 2 * block + 1 < n {
            s[at + w..at + w + gw].copy_from_slice(&z[1][..gw]);
        }
        r
    }
}

/// The fast path of `G`'s build on 32 staged words.
///
/// # Safety
/// As [`fast_block`], with the features of `G`'s build.
#[inline(always)]
unsafe fn fast32<G: Rounds>(
    t: &Ziggurat,
    staged: &normal::Staged32,
    rows: (&mut [f64; 16], &mut [f64; 16]),
) -> u32 {
    // SAFETY: the caller's promise.
    unsafe {
        if G::ZMM {
            normal::fast32_avx512(t, staged, rows)
        } else {
            normal::fast32_avx2(t, staged, rows)
        }
    }
}

/// The first sixteen of `s`, if it has them.
#[inline(always)]
fn first_16(s: &mut [f64]) -> Option<&mut [f64; GROUP]> {
    s.get_mut(..GROUP)?.try_into().ok()
}

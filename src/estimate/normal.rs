//! Standard normals from uniform bits: a ziggurat (Marsaglia and Tsang, "The Ziggurat Method
//! for Generating Random Variables", 2000) of 1024 layers, with the layer index and the
//! uniform taken from independent bits of one 64-bit word (Doornik, "An Improved Ziggurat
//! Method to Generate Normal Random Samples", 2005) and the tail beyond the base layer drawn
//! exactly by Marsaglia's 1964 method.
//!
//! How it works: the area under `f(x) = exp(-x^2 / 2)`, `x >= 0`, is covered by layers of
//! equal area `v`: a base strip (the rectangle `[0, r] x [0, f(r)]` plus the tail beyond
//! `r`) and rectangles stacked on it, each as wide as the curve at its lower edge. A draw
//! picks a layer `i` and a point `x = u x[i]` along its width; if `x` lies left of the
//! layer above's edge `x[i + 1]`, the whole column under the point is inside the curve and
//! `x` is the answer. That fast path (one table load, a multiply and a compare, no
//! elementary function) takes 99.57 % of the draws; the rest go to [`slow`]: the wedge
//! between a rectangle and the curve (one more uniform and one `exp`), the tail (`ln`s),
//! or a fresh draw after a rejection. The result is exact in distribution, up to the grid of
//! the uniforms and the last bits of the tables.
//!
//! Why a ziggurat: its fast path costs a fraction of Box-Muller's `ln`, `sqrt`, `sin` and
//! `cos`. Why 1024 layers rather than the usual 128 or 256: the slow path costs about as much
//! as dozens of fast draws (a scalar ARS block, an `exp`, mispredicted branches), and with
//! 1024 layers it takes 0.43 % of the draws instead of 1.5 %; the fast path's table (8 KiB)
//! still sits in the level-1 cache. Measured faster than 256 and 2048 layers per sample.
//!
//! One word gives one normal: bits 0-9 the layer, bit 10 the sign, bits 12-63 the uniform
//! `(k + 1/2) 2^-52`, so the layer, the sign and the position are independent (the original
//! method took index and uniform from the same bits, which Doornik showed correlates them).
//! [`slow`] asks its caller for further words, which must be independent of every other
//! normal's words: `rng.rs` takes them from a counter space of their own.
//!
//! The tables are built once, the first time they are used, from the standard recursion with
//! our own `exp` and `ln` ([`crate::elementary`]) and `libm`'s `erfc`: the same bits on every
//! machine and in every build.

use std::f64::consts::{FRAC_PI_2, SQRT_2};
use std::sync::LazyLock;

use crate::elementary;

mod avx2;
mod avx512;

#[cfg(target_arch = "x86_64")]
use avx2::fast4_avx2;
pub use avx2::{REJECTED_WORD, Staged32};
#[cfg(target_arch = "x86_64")]
pub use avx2::{fast4v_avx2, fast32_avx2, stage32_avx2};
#[cfg(target_arch = "x86_64")]
pub use avx512::{fast32_avx512, stage32_avx512};

/// The bits of a word that pick its layer; the bit above them is the sign. The bits from 12
/// up are the uniform, so at most 11.
pub const LAYER_BITS: u32 = 10;
const _: () = assert!(LAYER_BITS < 12);

/// The number of layers.
pub const LAYERS: usize = 1 << LAYER_BITS;

/// The base edge `r` that [`solve`] finds for [`LAYERS`] layers (a test checks the bits):
/// a process builds its tables in one pass of the recursion instead of a bisection's fifty.
const R: f64 = f64::from_bits(0x4010_27c8_4109_fad6);

/// The largest number of words [`slow`] takes from its caller for one normal: then it
/// returns its current candidate. A wedge's attempt takes two words and a fresh draw
/// rejects with probability 0.2 %; a tail's attempt takes two words and rejects with
/// probability 8 %: running out has a chance below 10^-34 per normal.
pub const SLOW_WORDS: usize = 64;

/// The ziggurat's geometry, for `f(x) = exp(-x^2 / 2)`.
#[derive(Debug)]
pub struct Ziggurat {
    /// `x[i]` is the width of layer `i`: `x[0] = v / f(r)` (the base strip as one rectangle
    /// of area `v`), `x[1] = r`, then decreasing to `x[LAYERS] = 0`. The fast path reads
    /// `x[i]` and `x[i + 1]` with one 16-byte load.
    pub x: [f64; LAYERS + 1],
    /// `f[i] = f(x[i])`, the lower edge of layer `i`, except `f[0] = 0` (the base strip
    /// starts on the axis); `f[LAYERS] = 1`.
    pub f: [f64; LAYERS + 1],
    /// Where the base strip's tail starts.
    pub r: f64,
    /// The area of each layer.
    pub v: f64,
    /// The widths with a word's sign, indexed by its layer and sign bits: `x[0..LAYERS]`,
    /// then `-x[0..=LAYERS]`. Entry `j` and the next are a signed width and a next edge of
    /// the same sign, except at the top layer, where the fast path rejects anyway (see
    /// [`fast32_avx2`]).
    pub signed_x: [f64; 2 * LAYERS + 1],
}

/// The unnormalised density, with our own `exp`.
#[inline(always)]
fn density(x: f64) -> f64 {
    elementary::exp(-0.5 * x * x)
}

/// `integral_r^inf f(x) dx = sqrt(pi / 2) erfc(r / sqrt 2)`.
fn tail_area(r: f64) -> f64 {
    FRAC_PI_2.sqrt() * libm::erfc(r / SQRT_2)
}

/// The edges `x[0..=layers]` of `layers` layers from the base edge `r`, and their area `v`;
/// `None` if the layers reach the top before the last (`r` is too small).
///
/// Layer `i` has area `v = x[i] (f(x[i + 1]) - f(x[i]))`, so
/// `x[i + 1] = f^-1(f(x[i]) + v / x[i])`; the base strip is `x[0] = v / f(r)` wide.
fn stack(r: f64, layers: usize) -> Option<(Vec<f64>, f64)> {
    let v = r * density(r) + tail_area(r);
    let mut x = vec![0.0; layers + 1];
    x[0] = v / density(r);
    x[1] = r;
    for i in 1..layers - 1 {
        let y = density(x[i]) + v / x[i];
        if y >= 1.0 {
            return None;
        }
        x[i + 1] = (-2.0 * elementary::ln(y)).sqrt();
    }
    Some((x, v))
}

/// The base edge `r` of a ziggurat of `layers` layers (128 to 4096), by bisection: the stack
/// closes exactly at the top for one `r`; smaller ones run out of height, larger ones leave
/// a top layer (from `f(x[layers - 1])` to 1) larger than `v`. It keeps the smallest `r` on
/// the large side, whose top layer exceeds `v` by the least.
#[cfg(test)]
fn solve(layers: usize) -> f64 {
    let (mut lo, mut hi) = (3.0f64, 5.0f64);
    loop {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            return hi;
        }
        match stack(mid, layers) {
            Some((x, v)) if x[layers - 1] * (1.0 - density(x[layers - 1])) >= v => hi = mid,
            _ => lo = mid,
        }
    }
}

impl Ziggurat {
    fn build() -> Ziggurat {
        let Some((edges, v)) = stack(R, LAYERS) else {
            unreachable!("the tests check that R closes the stack")
        };
        let x: [f64; LAYERS + 1] = std::array::from_fn(|i| edges[i]);
        let signed_x = std::array::from_fn(|j| match j {
            _ if j < LAYERS => x[j],
            _ => -x[j - LAYERS],
        });
        let mut f = x.map(density);
        f[0] = 0.0;
        f[LAYERS] = 1.0;
        Ziggurat {
            x,
            f,
            r: R,
            v,
            signed_x,
        }
    }
}

/// The layer a word picks.
#[inline(always)]
fn layer(w: u64) -> usize {
    (w & (LAYERS as u64 - 1)) as usize
}

static TABLES: LazyLock<Ziggurat> = LazyLock::new(Ziggurat::build);

/// The ziggurat's tables, built on first use.
pub fn tables() -> &'static Ziggurat {
    &TABLES
}

/// A uniform on (0, 1) from the top 52 bits of `w`: `(k + 1/2) 2^-52`, exactly.
#[inline(always)]
pub fn open_unit(w: u64) -> f64 {
    f64::from_bits(0x3ff0_0000_0000_0000 | (w >> 12)) - (1.0 - f64::EPSILON / 2.0)
}

/// `x` with the sign that bit `LAYER_BITS` of `w` gives.
#[inline(always)]
fn signed(x: f64, w: u64) -> f64 {
    f64::from_bits(x.to_bits() | (w >> LAYER_BITS & 1) << 63)
}

/// The fast path: the normal of word `w` and whether it stands; if not, [`slow`] on the
/// same word gives it.
#[inline(always)]
pub fn fast(t: &Ziggurat, w: u64) -> (f64, bool) {
    let i = layer(w);
    let (width, next) = (t.x[i], t.x[i + 1]);
    let x = open_unit(w) * width;
    (signed(x, w), x < next)
}

/// [`fast`] on `G` words side by side (`G <= 32`): the normals into `z`, and a mask of the
/// lanes the fast path rejects (bit `l` for lane `l`), for [`slow`] to redo. With `AVX2` (the
/// caller has checked that the CPU has it) four lanes per instruction: the same operations,
/// so the same bits.
// An indexed lane loop over two arrays: the shape LLVM vectorises.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub fn fast_lanes<const G: usize, const AVX2: bool>(
    t: &Ziggurat,
    w: &[u64; G],
    z: &mut [f64; G],
) -> u32 {
    const { assert!(G <= 32) };
    let mut rejected = 0;
    #[cfg(target_arch = "x86_64")]
    if AVX2 && G.is_multiple_of(4) {
        for q in (0..G).step_by(4) {
            let four = |a: &[u64; G]| std::array::from_fn(|l| a[q + l]);
            // SAFETY: `AVX2` is set only by callers that checked the CPU has AVX2.
            let (v, r) = unsafe { fast4_avx2(t, four(w)) };
            z[q..q + 4].copy_from_slice(&v);
            rejected |= r << q;
        }
        return rejected;
    }
    for l in 0..G {
        let ok;
        (z[l], ok) = fast(t, w[l]);
        rejected |= u32::from(!ok) << l;
    }
    rejected
}

/// [`fast_lanes`] two lanes per instruction in 128-bit vectors (SSE4.1), the portable
/// build's width: the same operations as [`fast`], so the same bits. Each pair of lanes'
/// table entries is two 16-byte loads (`[x[i], x[i + 1]]`, side by side in
/// [`Ziggurat::x`]), rearranged into the widths and the next edges.
///
/// # Safety
/// The CPU must have SSE4.1, and the caller must be compiled with it: it inlines there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn fast_lanes_sse<const G: usize>(t: &Ziggurat, w: &[u64; G], z: &mut [f64; G]) -> u32 {
    use std::arch::x86_64::*;
    const { assert!(G <= 32 && G.is_multiple_of(2)) };
    let mut rejected = 0;
    // SAFETY: the caller's promise; each table load reads `x[i]` and `x[i + 1]`, inside `x`
    // for a layer `i`, and the other loads and stores 16 bytes of `w` and `z` at `l < G`.
    unsafe {
        let pair = |w: u64| _mm_loadu_pd(t.x.as_ptr().add(layer(w)));
        let one = _mm_set1_epi64x(0x3ff0_0000_0000_0000);
        let half_ulp_below_one = _mm_set1_pd(1.0 - f64::EPSILON / 2.0);
        for l in (0..G).step_by(2) {
            let v = _mm_loadu_si128(w.as_ptr().add(l).cast());
            let (p0, p1) = (pair(w[l]), pair(w[l + 1]));
            let width = _mm_unpacklo_pd(p0, p1);
            let next = _mm_unpackhi_pd(p0, p1);
            let u = _mm_sub_pd(
                _mm_castsi128_pd(_mm_or_si128(one, _mm_srli_epi64::<12>(v))),
                half_ulp_below_one,
            );
            let x = _mm_mul_pd(u, width);
            let ok = _mm_movemask_pd(_mm_cmplt_pd(x, next)) as u32;
            // Bit `LAYER_BITS` of each word to its sign bit.
            let sign = _mm_and_si128(
                _mm_slli_epi64::<{ 63 - LAYER_BITS as i32 }>(v),
                _mm_set1_epi64x(i64::MIN),
            );
            _mm_storeu_pd(z.as_mut_ptr().add(l), _mm_or_pd(x, _mm_castsi128_pd(sign)));
            rejected |= (!ok & 3) << l;
        }
    }
    rejected
}

/// The first steps of [`slow`] for `G` words the fast path rejected, side by side: the wedge
/// test with each word's first further word `a[l]`, and where it rejects, the fast path on
/// the second, `b[l]`. Returns the normals and a mask of the lanes (bit `l` for lane `l`)
/// these steps leave unsettled, for [`slow`] to redo from the start: the tail (1.3 % of
/// rejected words) and a wedge rejection followed by a second fast-path rejection (0.2 %).
/// Every other lane's normal is what [`slow`] returns, by the same operations (the density's
/// `exp` has the same bits in vector and scalar code).
///
/// Why: a rejected word settles here in 98.5 % of the cases, and this form has no branch
/// on the data, so the caller's lane loop runs in vector registers (the wedge's `exp` four
/// lanes per instruction in an AVX2 build) instead of a branchy scalar call per word.
// An indexed lane loop over several arrays: the shape LLVM vectorises.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
pub fn wedge_lanes<const G: usize>(
    t: &Ziggurat,
    w: &[u64; G],
    a: &[u64; G],
    b: &[u64; G],
) -> ([f64; G], u32) {
    const { assert!(G <= 32) };
    // Three loops: the table loads, the density alone (a loop of straight-line `f64`
    // arithmetic, which LLVM vectorises as it does the tape's), the choices.
    let (mut x, mut y) = ([0.0; G], [0.0; G]);
    for l in 0..G {
        let i = layer(w[l]);
        x[l] = open_unit(w[l]) * t.x[i];
        y[l] = t.f[i] + open_unit(a[l]) * (t.f[i + 1] - t.f[i]);
    }
    let mut d = [0.0; G];
    for l in 0..G {
        d[l] = density(x[l]);
    }
    // The fresh draws in a loop of their own, and the choice by bit masks: written as a
    // branch, LLVM made the fresh draw's loads and arithmetic conditional, a branch per
    // lane taken about half the time, on no pattern.
    let (mut fresh, mut ok) = ([0.0; G], [false; G]);
    for l in 0..G {
        (fresh[l], ok[l]) = fast(t, b[l]);
    }
    let mut z = [0.0; G];
    let mut unsettled = 0;
    for l in 0..G {
        let under = y[l] < d[l];
        let keep = u64::from(under).wrapping_neg();
        z[l] = f64::from_bits(signed(x[l], w[l]).to_bits() & keep | fresh[l].to_bits() & !keep);
        unsettled |= u32::from(layer(w[l]) == 0 || !(under || ok[l])) << l;
    }
    (z, unsettled)
}

/// The normal of word `w` however it falls, taking further words from `more` (at most
/// [`SLOW_WORDS`]): the wedge test, the tail, and fresh draws after rejections.
#[inline(always)]
pub fn slow(t: &Ziggurat, w: u64, mut more: impl FnMut() -> u64) -> f64 {
    let mut used = 0;
    let mut next = || {
        used += 1;
        (used <= SLOW_WORDS).then(&mut more)
    };
    let mut w = w;
    loop {
        let i = layer(w);
        let x = open_unit(w) * t.x[i];
        if x < t.x[i + 1] {
            return signed(x, w);
        }
        if i == 0 {
            return signed(tail(t.r, &mut next), w);
        }
        // A point of the rectangle above `x`: under the curve, or a fresh draw.
        let Some(y) = next() else {
            return signed(x, w);
        };
        let y = t.f[i] + open_unit(y) * (t.f[i + 1] - t.f[i]);
        if y < density(x) {
            return signed(x, w);
        }
        let Some(fresh) = next() else {
            return signed(x, w);
        };
        w = fresh;
    }
}

/// A draw of `|z|` given `|z| > r` (Marsaglia 1964): `x = -ln(a) / r` and `y = -ln(b)` are
/// exponentials, and `r + x` is kept when `2y > x^2`. Returns `r` if `next` runs out.
#[inline(always)]
fn tail(r: f64, next: &mut impl FnMut() -> Option<u64>) -> f64 {
    loop {
        let (Some(a), Some(b)) = (next(), next()) else {
            return r;
        };
        let x = -elementary::ln(open_unit(a)) / r;
        let y = -elementary::ln(open_unit(b));
        if y + y > x * x {
            return r + x;
        }
    }
}

/// What the vector fast paths' tests share: the words they try, and the run of one 32-word
/// block into two rows of sixteen lanes.
#[cfg(all(test, target_arch = "x86_64"))]
mod fast_path_cases {
    use super::LAYERS;

    /// Every layer with both signs, at the smallest, the largest and middling uniforms (the
    /// top layer and the base strip's widest points included).
    pub(super) fn words() -> Vec<u64> {
        let uniforms = [
            0,
            u64::MAX >> 12,
            1 << 51,
            0x000f_ffff_0000_0000,
            0x8_0000_0001,
        ];
        (0..2 * LAYERS as u64)
            .flat_map(|j| uniforms.map(|u| u << 12 | j))
            .collect()
    }

    /// The 32 normals and the rejection mask that `fast32` writes into two rows of sixteen.
    pub(super) fn joined(
        fast32: impl FnOnce((&mut [f64; 16], &mut [f64; 16])) -> u32,
    ) -> ([f64; 32], u32) {
        let (mut r0, mut r1) = ([0.0; 16], [0.0; 16]);
        let mask = fast32((&mut r0, &mut r1));
        let mut z = [0.0; 32];
        z[..16].copy_from_slice(&r0);
        z[16..].copy_from_slice(&r1);
        (z, mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniforms_are_open_and_exact() {
        assert_eq!(open_unit(0), f64::EPSILON / 2.0);
        assert_eq!(open_unit(u64::MAX), 1.0 - f64::EPSILON / 2.0);
        assert_eq!(open_unit(1 << 63), 0.5 + f64::EPSILON / 2.0);
    }

    #[test]
    fn the_solver_finds_the_published_ziggurats() {
        // Marsaglia and Tsang's r and v for 256 layers, Doornik's r for 128.
        let r = solve(256);
        let v = stack(r, 256).expect("closes").1;
        assert!((r - 3.654_152_885_361_009).abs() < 1e-12, "r = {r}");
        assert!((v - 4.928_673_233_99e-3).abs() < 1e-13, "v = {v}");
        let r = solve(128);
        assert!((r - 3.442_619_855_899).abs() < 1e-11, "r = {r}");
    }

    #[test]
    fn the_layers_have_equal_areas_and_close_at_the_top() {
        let t = tables();
        // The constant is the solver's, which the same recursion and bisection in Python's
        // double precision (`math.erfc`) confirm.
        assert_eq!(solve(LAYERS).to_bits(), R.to_bits());
        assert_eq!(LAYERS, 1024);
        assert!((t.r - 4.038_849_846_109_505).abs() < 1e-12, "r = {}", t.r);
        // The base strip: rectangle plus tail, and as one rectangle of width x[0].
        let base = t.r * density(t.r) + tail_area(t.r);
        assert!((base - t.v).abs() < 1e-15 * t.v);
        assert!((t.x[0] * density(t.r) - t.v).abs() < 1e-15);
        for i in 1..LAYERS {
            let area = t.x[i] * (t.f[i + 1] - t.f[i]);
            let rel = (area - t.v) / t.v;
            // The top layer's excess is the bisection's last step (3.5e-12 of `v`); the
            // others are the recursion's rounding.
            let tol = if i == LAYERS - 1 { 1e-11 } else { 1e-12 };
            assert!(rel.abs() < tol, "layer {i}: area {area}, {rel:e} off");
            assert!(
                t.x[i + 1] < t.x[i],
                "layer {i} is not narrower than the one below"
            );
            assert_eq!(t.f[i], density(t.x[i]));
        }
        assert_eq!((t.x[LAYERS], t.f[LAYERS], t.f[0]), (0.0, 1.0, 0.0));
        for i in 0..=LAYERS {
            assert_eq!(t.signed_x[LAYERS + i].to_bits(), (-t.x[i]).to_bits());
            if i < LAYERS {
                assert_eq!(t.signed_x[i], t.x[i]);
            }
        }
    }

    #[test]
    fn the_fast_path_takes_most_draws() {
        // A word's layer is uniform, and its point uniform along the layer's width.
        let t = tables();
        let rate = (0..LAYERS).map(|i| t.x[i + 1] / t.x[i]).sum::<f64>() / LAYERS as f64;
        assert!((0.995..0.996).contains(&rate), "fast path rate {rate}");
    }

    #[test]
    fn the_wedge_lanes_give_what_the_slow_path_gives() {
        let t = tables();
        let mut x = 0x0123_4567_89ab_cdefu64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut settled, mut unsettled) = (0, 0);
        let mut lanes = 0;
        while lanes < 50_000 {
            // Words the fast path rejects, one in four of them a tail's (layer 0 at its
            // widest), each with its first two further words.
            let mut w = [0u64; 8];
            for (l, w) in w.iter_mut().enumerate() {
                *w = loop {
                    let c = if l % 4 == 0 {
                        (next() | 0xfff << 52) & !1023
                    } else {
                        next()
                    };
                    if !fast(t, c).1 {
                        break c;
                    }
                };
            }
            let (a, b): ([u64; 8], [u64; 8]) = (
                std::array::from_fn(|_| next()),
                std::array::from_fn(|_| next()),
            );
            let (z, mask) = wedge_lanes(t, &w, &a, &b);
            for l in 0..8 {
                let mut more = [a[l], b[l]]
                    .into_iter()
                    .chain(std::iter::repeat_with(&mut next));
                let want = slow(t, w[l], || more.next().expect("endless"));
                if mask >> l & 1 == 0 {
                    assert_eq!(z[l].to_bits(), want.to_bits(), "{:x}", w[l]);
                    settled += 1;
                } else {
                    unsettled += 1;
                }
            }
            lanes += 8;
        }
        // A quarter of the lanes are tails, which the wedge lanes leave unsettled, as they
        // do a few percent of the rest.
        assert!(
            unsettled > lanes / 4 && unsettled < lanes / 4 + lanes / 20,
            "{unsettled}"
        );
        assert_eq!(settled + unsettled, lanes);
    }

    #[test]
    fn the_slow_path_ends_when_its_words_run_out() {
        let t = tables();
        // The top layer's widest point, with every wedge point at the top: each attempt
        // rejects, and after its last word the path keeps its candidate.
        let w = u64::MAX;
        let mut calls = 0;
        let z = slow(t, w, || {
            calls += 1;
            u64::MAX
        });
        assert_eq!(calls, SLOW_WORDS);
        assert_eq!(z, -(open_unit(w) * t.x[LAYERS - 1]));
        // The tail with far proposals and no room under the curve: it stops at `r`.
        let mut calls = 0;
        let z = slow(t, ((1 << 52) - 1) << 12, || {
            calls += 1;
            if calls % 2 == 1 { 0 } else { u64::MAX }
        });
        assert_eq!((calls, z), (SLOW_WORDS, t.r));
    }
}

//! The exact vector `exp` and `ln` (`dsgd::eval::vmath`) against `f64::exp` and `f64::ln`,
//! bit for bit, on millions of inputs: random bit patterns, the ranges the models live in,
//! the edges of the fast ranges and every special value; and the share of lanes sent back to
//! std, against the margins the kernels document.

use dsgd::eval::vmath::Isa;
use dsgd::eval::{CHUNK, simd_available, vmath};

/// SplitMix64: a fixed, reproducible stream of 64-bit words.
struct Stream(u64);

impl Stream {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

type Fast = fn(&[f64; CHUNK]) -> ([f64; CHUNK], u32);
type FastOn = fn(Isa, &[f64; CHUNK]) -> Option<([f64; CHUNK], u32)>;

/// Runs `fast` (the dispatched path) and `fast_on` for every kernel set this CPU has on `n`
/// inputs from `inputs` (in chunks) and compares every lane with `std`'s bits; returns the
/// number of lanes the dispatched path sent back to std.
fn compare(
    n: usize,
    (fast, fast_on): (Fast, FastOn),
    std: fn(f64) -> f64,
    mut inputs: impl FnMut() -> f64,
) -> usize {
    let mut fallbacks = 0;
    for _ in 0..n.div_ceil(CHUNK) {
        let x: [f64; CHUNK] = std::array::from_fn(|_| inputs());
        let (y, mask) = fast(&x);
        fallbacks += mask.count_ones() as usize;
        let others = [Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&isa| Some(isa) != vmath::isa())
            .filter_map(|isa| fast_on(isa, &x).map(|(y, _)| y));
        for y in std::iter::once(y).chain(others) {
            for l in 0..CHUNK {
                assert_eq!(
                    y[l].to_bits(),
                    std(x[l]).to_bits(),
                    "x = {:e} ({:#x}): {:e} against std's {:e}",
                    x[l],
                    x[l].to_bits(),
                    y[l],
                    std(x[l])
                );
            }
        }
    }
    fallbacks
}

fn exp_check(n: usize, inputs: impl FnMut() -> f64) -> usize {
    compare(
        n,
        (vmath::exp_lanes_fallbacks, vmath::exp_lanes_fallbacks_on),
        f64::exp,
        inputs,
    )
}

fn ln_check(n: usize, inputs: impl FnMut() -> f64) -> usize {
    compare(
        n,
        (vmath::ln_lanes_fallbacks, vmath::ln_lanes_fallbacks_on),
        f64::ln,
        inputs,
    )
}

#[test]
fn the_vector_path_is_on_wherever_avx2_is() {
    // With AVX2/FMA, the one-time self-check against this libm passed; without, every lane
    // goes to std (and the tests below still hold).
    assert_eq!(vmath::active(), simd_available());
    // The AVX-512 set where the CPU has it (it passes the self-check wherever AVX2 does),
    // and each set runs exactly where the CPU has it.
    let avx512 = cfg!(target_arch = "x86_64") && std::arch::is_x86_feature_detected!("avx512f");
    if vmath::active() {
        let want = if avx512 { Isa::Avx512 } else { Isa::Avx2 };
        assert_eq!(vmath::isa(), Some(want));
    }
    let x = [0.5; CHUNK];
    assert_eq!(
        vmath::exp_lanes_fallbacks_on(Isa::Avx512, &x).is_some(),
        vmath::active() && avx512
    );
    assert_eq!(
        vmath::ln_lanes_fallbacks_on(Isa::Avx2, &x).is_some(),
        vmath::active()
    );
}

#[test]
fn exp_equals_std_on_random_bit_patterns() {
    let mut s = Stream(1);
    exp_check(1 << 21, || f64::from_bits(s.next()));
    // Random bit patterns are mostly huge; these have exponents where exp is finite.
    let mut s = Stream(2);
    exp_check(1 << 21, || {
        let bits = s.next();
        f64::from_bits((bits & 0x800f_ffff_ffff_ffff) | ((0x3c0 + (bits >> 52) % 0x49) << 52))
    });
}

#[test]
fn exp_equals_std_where_the_models_live() {
    let mut s = Stream(3);
    exp_check(1 << 21, || s.uniform(-750.0, 710.0));
    exp_check(1 << 22, || s.uniform(-50.0, 50.0));
    exp_check(1 << 20, || s.uniform(-1.0, 1.0));
    // The smoothing weights' exp(-|g/eta|): very negative arguments, all the way down.
    exp_check(1 << 20, || -(10f64.powf(s.uniform(0.0, 300.0))));
    exp_check(1 << 20, || s.uniform(-760.0, -700.0));
    exp_check(1 << 20, || s.uniform(700.0, 710.0));
}

#[test]
fn exp_equals_std_at_the_edges() {
    let mut s = Stream(4);
    // Arguments near the reductions' interval boundaries (k ln2/N +- a few ulp, N = 256 for
    // AVX2, 16 for AVX-512) and tiny.
    for (n, ks) in [(256.0, 200_000), (16.0, 12_500)] {
        let step = std::f64::consts::LN_2 / n;
        exp_check(1 << 19, || {
            let k = (s.next() % ks) as f64 - (ks / 2) as f64;
            let x = (k + 0.5) * step;
            f64::from_bits(x.to_bits().wrapping_add(s.next() % 9).wrapping_sub(4))
        });
    }
    exp_check(1 << 20, || {
        let tiny = 2f64.powi(-((s.next() % 1080) as i32));
        if s.next() & 1 == 0 { tiny } else { -tiny }
    });
    let mut specials = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_dead_beef),
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        -708.0,
        -708.4,
        -708.3964185322641,
        -745.0,
        -745.1332191019411,
        -745.1332191019412,
        -745.2,
        -746.0,
        -746.0000000000001,
        709.0,
        709.78,
        709.782712893384,
        709.7827128933841,
        710.0,
    ];
    for x in specials.clone() {
        for d in [-2i64, -1, 1, 2] {
            specials.push(f64::from_bits(x.to_bits().wrapping_add(d as u64)));
        }
    }
    let mut it = specials.iter().cycle();
    exp_check(specials.len().div_ceil(CHUNK) * CHUNK, || {
        *it.next().unwrap()
    });
    // Every lane below -746 is exactly zero in vector code, not a fallback.
    if vmath::active() {
        let (y, mask) = vmath::exp_lanes_fallbacks(&[-1e10; CHUNK]);
        assert_eq!((y, mask), ([0.0; CHUNK], 0));
    }
}

#[test]
fn ln_equals_std_on_random_bit_patterns() {
    let mut s = Stream(5);
    // Half negative or NaN: those lanes go to std.
    ln_check(1 << 21, || f64::from_bits(s.next()));
    ln_check(1 << 21, || f64::from_bits(s.next() >> 1));
}

#[test]
fn ln_equals_std_where_the_models_live() {
    let mut s = Stream(6);
    ln_check(1 << 21, || 10f64.powf(s.uniform(-300.0, 300.0)));
    ln_check(1 << 21, || s.uniform(0.0, 100.0));
    ln_check(1 << 21, || s.uniform(0.5, 2.0));
    // Near 1, where ln x is tiny and cancellation would show.
    ln_check(1 << 21, || {
        1.0 + s.uniform(-1.0, 1.0) * 2f64.powi(-((s.next() % 53) as i32))
    });
    ln_check(1 << 20, || {
        f64::from_bits(
            1f64.to_bits()
                .wrapping_add(s.next() % 4096)
                .wrapping_sub(2048),
        )
    });
}

#[test]
fn ln_equals_std_at_the_edges() {
    let mut s = Stream(7);
    // Subnormals, powers of two and their neighbours, the table's interval boundaries.
    ln_check(1 << 20, || f64::from_bits(s.next() % (1u64 << 52)));
    ln_check(1 << 20, || {
        let p = 2f64.powi((s.next() % 2098) as i32 - 1074);
        f64::from_bits(p.to_bits().wrapping_add(s.next() % 5).wrapping_sub(2))
    });
    ln_check(1 << 20, || {
        // bits(0.6875) + j 2^44 (the start of interval j), with any exponent, +- 2 ulp.
        let j = s.next() % 256;
        let e = (s.next() % 2000) as i64 - 1000;
        let bits = (0.6875f64.to_bits() + (j << 44)) as i64 + (e << 52);
        f64::from_bits((bits + (s.next() % 5) as i64 - 2) as u64)
    });
    let mut specials = vec![
        1.0,
        2.0,
        0.5,
        0.6875,
        1.375,
        std::f64::consts::E,
        0.0,
        -0.0,
        -1.0,
        f64::NAN,
        f64::from_bits(0x7ff8_0000_0000_0abc),
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        1e-310,
    ];
    for x in specials.clone() {
        for d in [-2i64, -1, 1, 2] {
            specials.push(f64::from_bits(x.to_bits().wrapping_add(d as u64)));
        }
    }
    let mut it = specials.iter().cycle();
    ln_check(specials.len().div_ceil(CHUNK) * CHUNK, || {
        *it.next().unwrap()
    });
}

#[test]
fn the_share_of_lanes_sent_to_std_is_twice_the_margin() {
    if !vmath::active() {
        return;
    }
    // A lane falls back when its true value lies within M ulp of a rounding boundary: 2 M of
    // lanes if that position is spread evenly (M = 1/64 for exp, 1/32 for ln). The binomial
    // standard error at n = 2^22 is below 1e-4; the band allows for uneven spreading.
    let n = 1 << 22;
    let mut s = Stream(8);
    let exp_share = exp_check(n, || s.uniform(-50.0, 50.0)) as f64 / n as f64;
    assert!(
        (exp_share - 2.0 / 64.0).abs() < 0.1 * 2.0 / 64.0,
        "exp: {exp_share}"
    );
    let ln_share = ln_check(n, || 10f64.powf(s.uniform(-10.0, 10.0))) as f64 / n as f64;
    assert!(
        (ln_share - 2.0 / 32.0).abs() < 0.1 * 2.0 / 32.0,
        "ln: {ln_share}"
    );
}

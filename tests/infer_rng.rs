//! The noise generator (ARS-7 and a ziggurat, `dsgd::estimate::SampleRng`) draws
//! standard normals: a Kolmogorov-Smirnov test, the first four moments and the tail
//! frequencies, each against its standard error; the mass below each of several layer edges
//! of the ziggurat; the tail beyond 5 to 7 sigma by feeding the tail sampler's uniform inputs
//! directly; and no correlation across lanes, keys, channels and the two halves of a block.
//!
//! Thresholds: every statistic is held to 4.5 standard errors (or the KS statistic to its
//! 0.1 % critical value), so a correct generator fails one assertion with probability below
//! about 1e-4 overall. In-suite about 2 million draws; the `#[ignore]`d test draws 10^8
//! (`cargo test --release --test infer_rng -- --ignored --nocapture`).

use dsgd::estimate::normal;
use dsgd::estimate::{Channel, Purpose, SampleRng, StreamKey};
use dsgd::special::normal_cdf;

/// Lanes per call and latents per lane, as the engine draws them.
const LANES: usize = 16;
const LATENTS: usize = 1000;
/// Histogram bins of `Phi(z)` for the KS statistic.
const BINS: usize = 1 << 20;
/// The tail thresholds counted.
const TAILS: [f64; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];

struct Stats {
    n: f64,
    sums: [f64; 4],
    tails: [u64; 6],
    hist: Vec<u32>,
}

impl Stats {
    fn new() -> Stats {
        Stats {
            n: 0.0,
            sums: [0.0; 4],
            tails: [0; 6],
            hist: vec![0; BINS],
        }
    }

    fn add(&mut self, z: f64) {
        assert!(z.is_finite());
        self.n += 1.0;
        let mut p = 1.0;
        for s in &mut self.sums {
            p *= z;
            *s += p;
        }
        for (c, t) in self.tails.iter_mut().zip(TAILS) {
            *c += u64::from(z.abs() > t);
        }
        let u = normal_cdf(z);
        self.hist[((u * BINS as f64) as usize).min(BINS - 1)] += 1;
    }

    /// `count` normals from lanes `0..` of `key`'s noise stream, 16 lanes at a time.
    fn draw(key: StreamKey, count: usize) -> Stats {
        let mut st = Stats::new();
        let mut rng = key.rng(Channel::Noise);
        let mut buf = vec![0.0; LANES * LATENTS];
        for c in 0..count.div_ceil(LANES * LATENTS) {
            rng.fill_lanes(c * LANES, LANES, LATENTS, &mut buf);
            for &z in &buf {
                st.add(z);
            }
        }
        st
    }

    /// Asserts every statistic; prints them.
    fn check(&self, max_tail: f64) {
        let n = self.n;
        let m = self.sums.map(|s| s / n);
        let mean = m[0];
        let var = m[1] - mean * mean;
        let c3 = m[2] - 3.0 * mean * m[1] + 2.0 * mean.powi(3);
        let c4 = m[3] - 4.0 * mean * m[2] + 6.0 * mean * mean * m[1] - 3.0 * mean.powi(4);
        let skew = c3 / var.powf(1.5);
        let kurt = c4 / (var * var) - 3.0;
        // Standard errors of the sample moments of a standard normal.
        let checks = [
            ("mean", mean, 0.0, (1.0 / n).sqrt()),
            ("variance", var, 1.0, (2.0 / n).sqrt()),
            ("skewness", skew, 0.0, (6.0 / n).sqrt()),
            ("excess kurtosis", kurt, 0.0, (24.0 / n).sqrt()),
        ];
        for (name, got, want, se) in checks {
            let z = (got - want) / se;
            eprintln!("{name}: {got:.6} (want {want}, {z:+.2} se) over {n:e}");
            assert!(z.abs() < 4.5, "{name} {got} is {z:.2} standard errors off");
        }
        for (&c, t) in self.tails.iter().zip(TAILS) {
            let p = 2.0 * normal_cdf(-t);
            let (want, sd) = (n * p, (n * p * (1.0 - p)).sqrt());
            let z = (c as f64 - want) / sd;
            eprintln!("|z| > {t}: {c} (want {want:.1}, {z:+.2} sd)");
            if t <= max_tail {
                assert!(z.abs() < 4.5, "tail beyond {t}: {c} against {want}");
            }
        }
        // KS on the bin edges of Phi(z): a lower bound of the full statistic, so its 0.1 %
        // critical value keeps the false-alarm rate.
        let mut below = 0u64;
        let mut d: f64 = 0.0;
        for (i, &h) in self.hist.iter().enumerate() {
            below += u64::from(h);
            d = d.max((below as f64 / n - (i + 1) as f64 / BINS as f64).abs());
        }
        let ks = d * n.sqrt();
        eprintln!("Kolmogorov-Smirnov: sqrt(n) D = {ks:.3} (0.1 % critical value 1.949)");
        assert!(ks < 1.949, "KS statistic {ks}");
    }
}

#[test]
fn two_million_draws_are_standard_normal() {
    Stats::draw(StreamKey::new(11, 3, Purpose::Other(1)), 2_048_000).check(4.0);
}

#[test]
#[ignore = "10^8 draws: run with --release --ignored"]
fn a_hundred_million_draws_are_standard_normal() {
    Stats::draw(StreamKey::new(2026, 1, Purpose::Other(2)), 100_000_000).check(5.0);
}

/// A word whose uniform `open_unit` is `(k + 1/2) 2^-52`, in layer 0 with a positive sign.
fn word(k: u64) -> u64 {
    k << 12
}

/// A uniform 64-bit word from `g`.
fn any_word(g: &mut SampleRng) -> u64 {
    (g.index(1 << 32) as u64) << 32 | g.index(1 << 32) as u64
}

#[test]
fn the_tail_reaches_beyond_seven_sigma_with_the_right_shape() {
    // The tail of the base layer, entered with its largest uniform (beyond `r`), proposes
    // `r + x` with `x = -ln(a) / r`. Given `a` below `exp(-r (t - r))` every proposal lies
    // beyond `t`, and the accepted ones follow the normal's tail beyond `t`: so the chance
    // of passing `t + d` is `Phi(-t - d) / Phi(-t)`, far beyond what a sample of normals
    // reaches. The source alternates such `a` words with free `b` words, as the tail reads.
    // So far out most proposals are rejected (99 % at 7 sigma), and a draw may run out of
    // words (it then returns `r`): those are left out, which biases nothing, since the
    // attempts are independent and the accepted one's law does not depend on how many
    // came before.
    let t = normal::tables();
    let start = word((1 << 52) - 1);
    let (_, fast) = normal::fast(t, start);
    assert!(!fast, "the base layer's widest point is in the tail");
    let mut g = StreamKey::new(5, 0, Purpose::Other(4)).rng(Channel::Choice);
    let g = g.lane(0);
    let d = 0.2;
    for cut_at in [5.0f64, 6.0, 7.0] {
        let cut = (-t.r * (cut_at - t.r)).exp();
        let grid = (cut * (1u64 << 52) as f64) as usize;
        let mut hits = 0u64;
        let mut kept = 0u64;
        let mut min = f64::INFINITY;
        let mut calls = 0u64;
        for _ in 0..200_000 {
            let z = normal::slow(t, start, || {
                calls += 1;
                if calls % 2 == 1 {
                    word(g.index(grid) as u64)
                } else {
                    any_word(g)
                }
            });
            if z == t.r {
                continue;
            }
            kept += 1;
            hits += u64::from(z > cut_at + d);
            min = min.min(z);
        }
        assert!(kept > 20_000, "only {kept} draws accepted beyond {cut_at}");
        assert!(min >= cut_at * (1.0 - 1e-12), "{min} below {cut_at}");
        let p = normal_cdf(-cut_at - d) / normal_cdf(-cut_at);
        let (n, c) = (kept as f64, hits as f64);
        let z = (c - n * p) / (n * p * (1.0 - p)).sqrt();
        eprintln!(
            "beyond {} given beyond {cut_at}: {c} of {n} (want {:.1}, {z:+.2} sd)",
            cut_at + d,
            n * p
        );
        assert!(z.abs() < 4.5, "tail beyond {cut_at}: {c} against {}", n * p);
    }
}

#[test]
fn every_layer_gives_the_right_mass() {
    // The layers' edges `x[i]` are where the fast path hands over to the wedges and the
    // tail: a draw below an edge comes from several layers and both paths. So the
    // frequency of `|z| < x[i]` must be `2 Phi(x[i]) - 1` at every edge, from the tail's
    // start `r = x[1]` to the top layer's `x[LAYERS - 1]`.
    let t = normal::tables();
    let mut g = StreamKey::new(6, 0, Purpose::Other(5)).rng(Channel::Choice);
    let g = g.lane(0);
    let n = 1_000_000;
    let draws: Vec<f64> = (0..n)
        .map(|_| {
            let w = any_word(g);
            match normal::fast(t, w) {
                (z, true) => z,
                _ => normal::slow(t, w, || any_word(g)),
            }
        })
        .collect();
    for i in [
        1usize,
        2,
        8,
        64,
        256,
        512,
        800,
        1000,
        1020,
        normal::LAYERS - 1,
    ] {
        let edge = t.x[i];
        let p = 2.0 * normal_cdf(edge) - 1.0;
        let c = draws.iter().filter(|z| z.abs() < edge).count() as f64;
        let nf = n as f64;
        let z = (c - nf * p) / (nf * p * (1.0 - p)).sqrt();
        eprintln!(
            "|z| < x[{i}] = {edge:.4}: {c} (want {:.1}, {z:+.2} sd)",
            nf * p
        );
        assert!(z.abs() < 4.5, "below x[{i}]: {c} against {}", nf * p);
    }
}

/// The sample correlation of `x` and `y`.
fn correlation(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let mut sxy = 0.0;
    let mut sxx = 0.0;
    let mut syy = 0.0;
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    sxy / (sxx * syy).sqrt()
}

/// `n` normals of each of `lanes` lanes of `rng`, lane-major.
fn lanes(rng: &mut SampleRng, first: usize, lanes: usize, n: usize) -> Vec<f64> {
    let mut s = vec![0.0; lanes * n];
    rng.fill_lanes(first, lanes, n, &mut s);
    // Latent-major to lane-major.
    (0..lanes)
        .flat_map(|l| (0..n).map(move |k| (l, k)))
        .map(|(l, k)| s[k * lanes + l])
        .collect()
}

#[test]
fn lanes_keys_channels_and_block_halves_are_uncorrelated() {
    let n = 200_000;
    let bound = 4.5 / (n as f64).sqrt();
    let key = StreamKey::new(9, 40, Purpose::Step);
    let mut noise = key.rng(Channel::Noise);
    let base = lanes(&mut noise, 100, 1, n);
    let others: Vec<(&str, Vec<f64>)> = vec![
        ("next lane", lanes(&mut noise, 101, 1, n)),
        ("lane + 2^32", lanes(&mut noise, 100 + (1 << 32), 1, n)),
        (
            "choice channel",
            lanes(&mut key.rng(Channel::Choice), 100, 1, n),
        ),
        (
            "next iteration",
            lanes(
                &mut StreamKey::new(9, 41, Purpose::Step).rng(Channel::Noise),
                100,
                1,
                n,
            ),
        ),
        (
            "next seed",
            lanes(
                &mut StreamKey::new(10, 40, Purpose::Step).rng(Channel::Noise),
                100,
                1,
                n,
            ),
        ),
        (
            "other purpose",
            lanes(
                &mut StreamKey::new(9, 40, Purpose::Measure).rng(Channel::Noise),
                100,
                1,
                n,
            ),
        ),
        ("lag 1", base[1..].iter().copied().chain([0.0]).collect()),
    ];
    for (name, other) in &others {
        let r = correlation(&base, other);
        eprintln!("correlation with {name}: {r:+.5} (bound {bound:.5})");
        assert!(r.abs() < bound, "{name}: correlation {r}");
    }
    // The two words of each block (even and odd draws of a lane), and their squares.
    let even: Vec<f64> = base.iter().step_by(2).copied().collect();
    let odd: Vec<f64> = base.iter().skip(1).step_by(2).copied().collect();
    let bound2 = 4.5 / (even.len() as f64).sqrt();
    let r = correlation(&even, &odd);
    assert!(r.abs() < bound2, "block halves: correlation {r}");
    let sq = |v: &[f64]| v.iter().map(|x| x * x).collect::<Vec<_>>();
    let r2 = correlation(&sq(&even), &sq(&odd));
    eprintln!("block halves: {r:+.5}, squares {r2:+.5} (bound {bound2:.5})");
    assert!(r2.abs() < bound2, "block halves' squares: correlation {r2}");
}

#[test]
fn indices_are_uniform() {
    // Chi-square over 10 cells with 9 degrees of freedom: 0.1 % critical value 27.88.
    let mut rng = StreamKey::new(3, 7, Purpose::Step).rng(Channel::Choice);
    let n = 100_000;
    let mut cells = [0u64; 10];
    for lane in 0..n / 4 {
        let r = rng.lane(lane);
        for _ in 0..4 {
            cells[r.index(10)] += 1;
        }
    }
    let want = n as f64 / 10.0;
    let chi2: f64 = cells
        .iter()
        .map(|&c| (c as f64 - want).powi(2) / want)
        .sum();
    assert!(chi2 < 27.88, "chi-square {chi2}: {cells:?}");
}

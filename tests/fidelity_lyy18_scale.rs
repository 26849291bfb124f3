//! LYY18 in a scale parameter, against quadrature: the boundary term's Jacobian factor must
//! be taken at the boundary point `z*`, not at the sampled `z`.
//!
//! The model is one latent with a learnable guide `N(mu, softplus(rho))` and a jump at
//! `z = C`: `log p(z) = log N(z | 0, 1) + (if z < C then A(z) else B(z))`. The exact ELBO
//! gradient is a one-dimensional integral, computed here by Simpson's rule on each side of
//! the jump (`d/d sigma E_q[g] = int g q ((z - mu)^2 / sigma^3 - 1 / sigma) dz`, plus the
//! entropy's `1 / sigma`). LYY18's mean over many samples must match it within 4 standard
//! errors in `mu` and `rho`.
//!
//! The paper's public reference implementation computes the boundary term's Jacobian of the
//! inverse reparameterisation at the sampled `z`; for a scale parameter that factor is
//! `(z - mu) / sigma`, independent of the rest of the term and of mean zero, so its boundary
//! term averages to nothing in `rho` and the gradient is Reparam's, which is biased. The
//! test builds that variant from the same samples (Reparam's gradient plus our boundary term
//! with `s* = (z* - mu) / sigma` replaced by the sample's `s`) and asserts that it misses the
//! quadrature value by tens of standard errors, and that our per-sample boundary term
//! carries exactly the factor `s*`.

use std::path::Path;

use dsgd::estimate::{self, Channel, Engine, EstimatorKind, Problem, Purpose, StreamKey};
use dsgd::lang::{CompileOptions, compile_source};
use dsgd::special::{normal_pdf, sigmoid, softplus};

/// Where the jump is.
const C: f64 = 0.6;

const SOURCE: &str = "
let z = sample Normal(0, 1) init(mean = 0.1, std = 0.9);
if z < 0.6 { factor 0.5 * z; } else { factor 2 - 0.25 * z^2; }
";

/// `log p(z)`, written independently of the compiler.
fn log_p(z: f64) -> f64 {
    let prior = -0.5 * z * z - 0.5 * (2.0 * std::f64::consts::PI).ln();
    prior + if z < C { 0.5 * z } else { 2.0 - 0.25 * z * z }
}

/// Composite Simpson on `[a, b]` with `n` (even) intervals.
fn simpson(f: impl Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = f(a) + f(b);
    for i in 1..n {
        s += f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

/// `int g(z) q(z) w(z) dz` over the two smooth pieces of `g`.
fn integral(mu: f64, sd: f64, w: impl Fn(f64) -> f64) -> f64 {
    let q = |z: f64| normal_pdf((z - mu) / sd) / sd;
    let f = |z: f64| log_p(z) * q(z) * w(z);
    let (lo, hi) = (mu - 14.0 * sd, mu + 14.0 * sd);
    simpson(f, lo, C, 40_000) + simpson(f, C, hi, 40_000)
}

/// The exact ELBO gradient `(d/d mu, d/d rho)` at `(mu, rho)`.
fn exact_gradient(mu: f64, rho: f64) -> [f64; 2] {
    let sd = softplus(rho);
    let d_mu = integral(mu, sd, |z| (z - mu) / (sd * sd));
    let d_sd = integral(mu, sd, |z| (z - mu).powi(2) / sd.powi(3) - 1.0 / sd) + 1.0 / sd;
    [d_mu, d_sd * sigmoid(rho)]
}

fn engine(kind: EstimatorKind) -> Engine {
    let model = compile_source(
        "scale.dsgd",
        SOURCE,
        Path::new("."),
        &CompileOptions::default(),
    )
    .expect("the test model compiles");
    let problem = Problem::new(&model).unwrap();
    let est = estimate::build(kind, &problem, 0.1, None).unwrap();
    Engine::new(problem, est)
}

/// Per-sample `rho` gradients of LYY18, of Reparam and of the reference's variant, over
/// `batches` batches of `batch` samples at `theta`, with the checks on each sample's
/// boundary term. Returns (mean, standard error) of the three.
fn rho_gradients(theta: [f64; 2], batches: u64, batch: usize) -> [(f64, f64); 3] {
    let (mu, rho) = (theta[0], theta[1]);
    let sd = softplus(rho);
    let s_star = (C - mu) / sd;
    let (mut lyy, mut rep) = (engine(EstimatorKind::Lyy18), engine(EstimatorKind::Reparam));
    let mut sums = [[0.0; 2]; 3];
    let mut noise = vec![0.0; batch];
    for it in 0..batches {
        let key = StreamKey::new(3, it, Purpose::Other(16));
        lyy.evaluate(&theta, key, batch, false).unwrap();
        rep.evaluate(&theta, key, batch, false).unwrap();
        key.rng(Channel::Noise).fill_lanes(0, batch, 1, &mut noise);
        for (l, &s) in noise.iter().enumerate() {
            let (l_mu, l_rho) = (lyy.sample_gradient(l, 0), lyy.sample_gradient(l, 1));
            let (r_mu, r_rho) = (rep.sample_gradient(l, 0), rep.sample_gradient(l, 1));
            let (b_mu, b_rho) = (l_mu - r_mu, l_rho - r_rho);
            // The boundary term in rho is the one in mu times s* d sigma / d rho, where
            // s* = (z* - mu) / sigma at the boundary point z* = C, whatever z was drawn.
            let expected = b_mu * s_star * sigmoid(rho);
            assert!(
                (b_rho - expected).abs() <= 1e-9 * expected.abs().max(1.0),
                "sample {l}: boundary term in rho {b_rho}, expected {expected} (s = {s})"
            );
            // The reference's variant: the same term with the sample's s in place of s*.
            let variant = r_rho + b_mu * s * sigmoid(rho);
            for (acc, x) in sums.iter_mut().zip([l_rho, r_rho, variant]) {
                acc[0] += x;
                acc[1] += x * x;
            }
        }
    }
    let n = (batches as usize * batch) as f64;
    sums.map(|[s, sq]| {
        let mean = s / n;
        (mean, ((sq / n - mean * mean).max(0.0) / (n - 1.0)).sqrt())
    })
}

#[test]
fn quadrature_reproduces_a_closed_form() {
    // The rule and range of `integral`: int N(z | mu, sd) (z - mu)^2 dz = sd^2.
    let (mu, sd) = (0.1, 0.9);
    let q = |z: f64| normal_pdf((z - mu) / sd) / sd;
    let v = simpson(
        |z| q(z) * (z - mu).powi(2),
        mu - 14.0 * sd,
        mu + 14.0 * sd,
        40_000,
    );
    assert!((v - sd * sd).abs() < 1e-12, "{v}");
}

#[test]
fn lyy18_matches_quadrature_in_the_scale_and_the_reference_variant_does_not() {
    let inv_softplus = |sd: f64| sd + (-(-sd).exp_m1()).ln();
    // The jump above the guide's mean (s* > 0) and below it (s* < 0).
    for (mu, sd) in [(0.1, 0.9), (1.3, 0.5)] {
        let theta = [mu, inv_softplus(sd)];
        assert!((softplus(theta[1]) - sd).abs() < 1e-12);
        let truth = exact_gradient(theta[0], theta[1]);
        let [
            (ours, ours_se),
            (reparam, reparam_se),
            (variant, variant_se),
        ] = rho_gradients(theta, 20, 10_000);
        assert!(
            (ours - truth[1]).abs() <= 4.0 * ours_se,
            "mu {mu}, sd {sd}: LYY18 d/d rho {ours} ± {ours_se} vs quadrature {}",
            truth[1]
        );
        // The variant's boundary term averages to zero: it is Reparam's gradient...
        assert!(
            (variant - reparam).abs() <= 4.0 * (variant_se + reparam_se),
            "variant {variant} ± {variant_se} vs reparam {reparam} ± {reparam_se}"
        );
        // ...and misses the exact value by tens of standard errors (82 at the first point).
        let off = (variant - truth[1]).abs() / variant_se;
        assert!(
            off > 30.0,
            "mu {mu}, sd {sd}: the variant {variant} ± {variant_se} is only {off:.1} se from {}",
            truth[1]
        );
    }
}

#[test]
fn lyy18_matches_quadrature_in_the_location() {
    let theta = [0.1, 0.9 + (-(-0.9f64).exp_m1()).ln()];
    let truth = exact_gradient(theta[0], theta[1]);
    let mut e = engine(EstimatorKind::Lyy18);
    let (mut s, mut sq, n) = (0.0, 0.0, 200_000usize);
    for it in 0..20 {
        e.evaluate(
            &theta,
            StreamKey::new(5, it, Purpose::Other(16)),
            n / 20,
            false,
        )
        .unwrap();
        for x in e.component(0) {
            s += x;
            sq += x * x;
        }
    }
    let mean = s / n as f64;
    let se = ((sq / n as f64 - mean * mean) / (n as f64 - 1.0)).sqrt();
    assert!(
        (mean - truth[0]).abs() <= 4.0 * se,
        "d/d mu {mean} ± {se} vs quadrature {}",
        truth[0]
    );
}

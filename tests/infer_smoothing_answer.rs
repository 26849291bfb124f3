//! DSGD with default options ends at the crisp problem's answer, not the smoothed one's, on
//! models whose exact answers are computed here by quadrature: a shifted step objective, a
//! step likelihood, the same step and nested steps in the smoothing's own units, and a
//! threshold regression whose likelihood reads only the sign of its guards. Tolerances are
//! standard errors across seeds.

use dsgd::experiment::run::RunConfig;
use dsgd::settings::EtaScale;
use dsgd::special::{normal_cdf, normal_pdf};

const SEEDS: u64 = 5;

fn mean_se(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, (v / n).sqrt())
}

fn reports(source: &str) -> Vec<dsgd::RunReport> {
    reports_with(source, &RunConfig::default())
}

/// Runs seeds `0..SEEDS` of `base` (one thread each).
fn reports_with(source: &str, base: &RunConfig) -> Vec<dsgd::RunReport> {
    let model = dsgd::compile("test.dsgd", source).expect("compiles");
    reports_of(&model, base)
}

/// Runs seeds `0..SEEDS` of `base` on `model` (one thread each).
fn reports_of(model: &dsgd::ir::Model, base: &RunConfig) -> Vec<dsgd::RunReport> {
    (0..SEEDS)
        .map(|seed| {
            let config = RunConfig {
                seed,
                threads: Some(1),
                ..base.clone()
            };
            dsgd::fit(model, &config).expect("runs")
        })
        .collect()
}

/// The maximum of `elbo(mu, s)` by a pattern search from `(mu, s)` with first step `h`.
fn pattern_search(
    elbo: impl Fn(f64, f64) -> f64,
    mut mu: f64,
    mut s: f64,
    mut h: f64,
) -> (f64, f64) {
    while h > 1e-11 {
        let mut moved = true;
        while moved {
            moved = false;
            for (dm, ds) in [(h, 0.0), (-h, 0.0), (0.0, h), (0.0, -h)] {
                if s + ds > 0.0 && elbo(mu + dm, s + ds) > elbo(mu, s) {
                    (mu, s) = (mu + dm, s + ds);
                    moved = true;
                }
            }
        }
        h /= 10.0;
    }
    (mu, s)
}

/// The guide's mean and sd of the first latent over the seeds, as (mean, se) pairs.
fn moments(rs: &[dsgd::RunReport]) -> [(f64, f64); 2] {
    let means: Vec<f64> = rs.iter().map(|r| r.latents[0].mean).collect();
    let sds: Vec<f64> = rs.iter().map(|r| r.latents[0].sd).collect();
    [mean_se(&means), mean_se(&sds)]
}

/// DSGD at the default (relative) eta against LYY18 (unbiased for the crisp problem) with
/// the same optimiser: they agree within 4 combined standard errors, both are within 4 of
/// their own standard errors of the exact `(mu, s)`, and no DSGD run warns of a smoothing
/// gap.
fn agrees_with_the_crisp_answer(source: &str, exact: [f64; 2]) {
    let dsgd = reports(source);
    let lyy18 = reports_with(
        source,
        &RunConfig {
            estimator: dsgd::EstimatorKind::Lyy18,
            ..RunConfig::default()
        },
    );
    let what = ["mean", "sd"];
    for (k, ((d, l), exact)) in moments(&dsgd)
        .into_iter()
        .zip(moments(&lyy18))
        .zip(exact)
        .enumerate()
    {
        let se = d.1.hypot(l.1);
        assert!(
            (d.0 - l.0).abs() < 4.0 * se,
            "{}: dsgd {d:?} against lyy18 {l:?}",
            what[k]
        );
        for (who, m) in [("dsgd", d), ("lyy18", l)] {
            assert!(
                (m.0 - exact).abs() < 4.0 * m.1,
                "{}: {who} {m:?} against {exact}",
                what[k]
            );
        }
    }
    for r in &dsgd {
        assert!(r.smoothing_warning.is_none(), "{:?}", r.smoothing_warning);
    }
}

#[test]
fn a_shifted_step_objective_ends_at_the_crisp_optimum() {
    // E[-(z - 1)^2 / 2 + [z >= 1.5]], z ~ N(c, 1): stationary where 1 - c + phi(1.5 - c) = 0.
    let (mut lo, mut hi) = (1.0f64, 3.0f64);
    for _ in 0..100 {
        let c = 0.5 * (lo + hi);
        if 1.0 - c + normal_pdf(1.5 - c) > 0.0 {
            lo = c;
        } else {
            hi = c;
        }
    }
    let exact = 0.5 * (lo + hi);
    let rs = reports(
        "param c = 0;\nlet z = sample Normal(c, 1);\nmaximize -0.5 * (z - 1)^2 + (if z < 1.5 { 0 } else { 1 });\n",
    );
    let cs: Vec<f64> = rs.iter().map(|r| r.params.get("c").unwrap()).collect();
    let (m, se) = mean_se(&cs);
    assert!(
        (m - exact).abs() < 4.0 * se,
        "c {m} +- {se} against {exact}"
    );
    for (c, r) in cs.iter().zip(&rs) {
        assert!((c - exact).abs() < 0.02, "{c} against {exact}");
        // At the crisp answer the final smoothing gap is within its noise: no warning.
        assert!(r.smoothing_warning.is_none(), "{:?}", r.smoothing_warning);
    }
}

#[test]
fn a_step_likelihood_gets_the_crisp_variational_optimum() {
    // x ~ N(0, 1), log-likelihood -1 where x < 0.5. For the guide N(mu, s) the crisp ELBO is
    // -(mu^2 + s^2) / 2 - Phi((0.5 - mu) / s) + log s + const; its maximum by a pattern
    // search.
    let elbo = |mu: f64, s: f64| -(mu * mu + s * s) / 2.0 - normal_cdf((0.5 - mu) / s) + s.ln();
    let (mut mu, mut s) = (0.0f64, 1.0f64);
    let mut h = 0.1;
    while h > 1e-9 {
        let mut moved = true;
        while moved {
            moved = false;
            for (dm, ds) in [(h, 0.0), (-h, 0.0), (0.0, h), (0.0, -h)] {
                if elbo(mu + dm, s + ds) > elbo(mu, s) {
                    (mu, s) = (mu + dm, s + ds);
                    moved = true;
                }
            }
        }
        h /= 10.0;
    }
    assert!(
        (mu - 0.388).abs() < 1e-3 && (s - 1.021).abs() < 1e-3,
        "{mu} {s}"
    );
    let rs = reports("let x = sample Normal(0, 1);\nif x < 0.5 { factor -1; }\n");
    let means: Vec<f64> = rs.iter().map(|r| r.latents[0].mean).collect();
    let sds: Vec<f64> = rs.iter().map(|r| r.latents[0].sd).collect();
    for (xs, exact, what) in [(&means, mu, "mean"), (&sds, s, "sd")] {
        let (m, se) = mean_se(xs);
        assert!(
            (m - exact).abs() < 4.0 * se.max(1e-3),
            "{what} {m} +- {se} against {exact}"
        );
    }
}

/// The exact optimum of the step in the smoothing's own units.
fn units_step_optimum() -> (f64, f64) {
    let elbo =
        |mu: f64, s: f64| -(mu * mu + s * s) / (2.0 * 0.01) - normal_cdf((0.05 - mu) / s) + s.ln();
    pattern_search(elbo, 0.0, 0.1, 0.01)
}

const UNITS_STEP: &str = "let x = sample Normal(0, 0.1);\nif x < 0.05 { factor -1; }\n";

#[test]
fn a_step_in_the_smoothings_own_units_gets_the_crisp_answer_with_relative_eta() {
    // x ~ N(0, 0.1), -1 where x < 0.05: with eta in the guard's units (0.063 at the end,
    // comparable to the guard's spread 0.1) DSGD ends at mean 0.0258; relative to the
    // spread it is the unit-scale step again.
    let (mu, s) = units_step_optimum();
    assert!(
        (mu - 0.0388).abs() < 1e-4 && (s - 0.1021).abs() < 1e-4,
        "{mu} {s}"
    );
    agrees_with_the_crisp_answer(UNITS_STEP, [mu, s]);
}

#[test]
fn nested_steps_in_the_smoothings_own_units_get_the_crisp_answer_with_relative_eta() {
    // x ~ N(0, 0.1), -1 where -0.1 < x < 0.05 (two nested if-statements). With eta in the
    // guards' units DSGD ends at mean 0.0048 and sd 0.1086, and warns. Relative, the
    // guide's scale ends at 0.11671 +- 0.00021; without DoG's settling it ended 3.5 standard
    // errors short (0.11623 +- 0.00022), and the same step in the smoothing's units (above)
    // ended with its mean 4.8 short: the late step's noise biases the averaged iterate.
    let elbo = |mu: f64, s: f64| {
        -(mu * mu + s * s) / (2.0 * 0.01)
            - (normal_cdf((0.05 - mu) / s) - normal_cdf((-0.1 - mu) / s))
            + s.ln()
    };
    let (mu, s) = pattern_search(elbo, 0.0, 0.1, 0.01);
    assert!(
        (mu - 0.01034).abs() < 1e-4 && (s - 0.1170).abs() < 1e-4,
        "{mu} {s}"
    );
    agrees_with_the_crisp_answer(
        "let x = sample Normal(0, 0.1);\nif x < 0.05 { if x > -0.1 { factor -1; } }\n",
        [mu, s],
    );
}

#[test]
fn relative_eta_makes_the_smoothed_objective_blind_to_the_latents_scale() {
    // The unit-scale step and the same model ten times narrower, with the guide scaled
    // alike: on common noise every sample's smoothed ELBO is the same (the prior's and the
    // guide's log 10 cancel) when eta is relative to the guard's spread, and not when it is
    // in the guard's units.
    let wide = dsgd::compile(
        "w.dsgd",
        "let x = sample Normal(0, 1);\nif x < 0.5 { factor -1; }\n",
    )
    .unwrap();
    let narrow = dsgd::compile("n.dsgd", UNITS_STEP).unwrap();
    let rho = |sd: f64| dsgd::special::softplus_inv(sd);
    let values = |m: &dsgd::ir::Model, theta: &[f64], scale: EtaScale| {
        let config = RunConfig {
            eta_scale: scale,
            ..RunConfig::default()
        };
        dsgd::gradient_samples(m, &config, theta, 256, 3999)
            .unwrap()
            .values
    };
    let (a, b) = (
        values(&wide, &[0.3, rho(0.8)], EtaScale::Relative),
        values(&narrow, &[0.03, rho(0.08)], EtaScale::Relative),
    );
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1e-9 * (1.0 + x.abs()), "{x} {y}");
    }
    let (a, b) = (
        values(&wide, &[0.3, rho(0.8)], EtaScale::Absolute),
        values(&narrow, &[0.03, rho(0.08)], EtaScale::Absolute),
    );
    let most = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max);
    assert!(most > 0.05, "{most}");
}

#[test]
fn a_threshold_regression_keeps_its_scale_with_relative_eta() {
    // y_i ~ Bernoulli(0.1 or 0.9 by the sign of a + b x_i): the crisp likelihood reads only
    // the sign, so it cannot tell (a, b) from (2a, 2b); with eta in the guards' units the
    // smoothed one is a logistic regression in (a, b) / eta, whose answer shrinks with eta,
    // and the smoothing gap stays large. Relative to each guard's spread it keeps the crisp
    // problem's scale: a larger crisp ELBO and a gap a small fraction of the absolute one's
    // (measured, 5 seeds: ELBO -115.57 against -123.43, gap 0.25 against 14.8, b 6.6
    // against 0.35).
    let n = 300;
    let mut state = 12345u64;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for _ in 0..n {
        let x = 4.0 * uniform() - 2.0;
        // The labels of a smooth (logistic) truth, as real data would have them: the
        // crisp model is then misspecified, and the smoothed one fits the slope.
        let p = dsgd::special::sigmoid(0.5 + 2.5 * x);
        xs.push(format!("{x:.6}"));
        ys.push(if uniform() < p { "1" } else { "0" });
    }
    let source = format!(
        "const x = [{}];\nconst y = [{}];\nlet a = sample Normal(0, 5);\nlet b = sample Normal(0, 5);\n\
         for i in 0..{n} {{\n  observe y[i] ~ Bernoulli(if a + b * x[i] < 0 {{ 0.1 }} else {{ 0.9 }});\n}}\n",
        xs.join(", "),
        ys.join(", ")
    );
    // As written: lifted out of the observation (the compiler's default), the smoothed
    // program mixes log-densities and the absolute eta's pull towards a logistic regression
    // is gone too (measured, 5 seeds: crisp ELBO -115.64 against relative -115.58), so the
    // comparison of the two scales is made on the program as written.
    let written = dsgd::lang::compile_source(
        "test.dsgd",
        &source,
        std::path::Path::new("."),
        &dsgd::lang::CompileOptions {
            lift_observations: false,
            ..dsgd::lang::CompileOptions::default()
        },
    )
    .expect("compiles");
    let finals = |scale: EtaScale| {
        let rs = reports_of(
            &written,
            &RunConfig {
                eta_scale: scale,
                ..RunConfig::default()
            },
        );
        let values: Vec<f64> = rs.iter().map(|r| r.final_value).collect();
        let gaps: Vec<f64> = rs
            .iter()
            .map(|r| r.trajectory.last().unwrap().gap.unwrap())
            .collect();
        let b: Vec<f64> = rs.iter().map(|r| r.latents[1].mean).collect();
        (mean_se(&values), mean_se(&gaps), mean_se(&b))
    };
    let (rel_value, rel_gap, rel_b) = finals(EtaScale::Relative);
    let (abs_value, abs_gap, abs_b) = finals(EtaScale::Absolute);
    assert!(
        rel_value.0 - abs_value.0 > 4.0 * rel_value.1.hypot(abs_value.1),
        "crisp ELBO relative {rel_value:?} against absolute {abs_value:?}"
    );
    assert!(
        rel_gap.0 < 0.1 * abs_gap.0,
        "gap relative {rel_gap:?} against absolute {abs_gap:?}"
    );
    // The absolute answer is the logistic regression's, at a fraction of the crisp scale.
    assert!(
        rel_b.0 > 3.0 * abs_b.0,
        "b relative {rel_b:?} against absolute {abs_b:?}"
    );
}

#[test]
fn a_step_in_the_smoothings_own_units_warns_when_the_answer_is_the_smoothed_ones() {
    // The step in the smoothing's own units with eta in the guard's units (0.063 at the
    // end, comparable to the guard's spread): DSGD ends at the smoothed problem's answer,
    // and the run must say so.
    let (mu, _) = units_step_optimum();
    let rs = reports_with(
        UNITS_STEP,
        &RunConfig {
            eta_scale: EtaScale::Absolute,
            ..RunConfig::default()
        },
    );
    let means: Vec<f64> = rs.iter().map(|r| r.latents[0].mean).collect();
    let (_, se) = mean_se(&means);
    for (m, r) in means.iter().zip(&rs) {
        let last = r.trajectory.last().unwrap();
        let (gap, gap_se) = (last.gap.unwrap(), last.gap_se.unwrap());
        let noise = gap_se.max(last.value_se);
        // The warning is the documented rule: the gap beyond twice its noise and beyond a
        // millionth of the objective's size.
        assert_eq!(
            r.smoothing_warning.is_some(),
            gap.abs() > 2.0 * noise && gap.abs() > 1e-6 * (1.0 + last.value.abs()),
            "gap {gap} noise {noise}"
        );
        if (m - mu).abs() > 6.0 * se {
            assert!(
                r.smoothing_warning.is_some(),
                "mean {m} against {mu}, no warning"
            );
        }
    }
}

/// A gap resolved beyond two standard errors but of a few parts in a billion of the
/// objective does not warn: the newsvendor stepped by Adam at 1000 ends with `q` far below
/// the demand, where the objective `2 q` is exact to 1e-14 and the smoothing gap of seed 0
/// is 1.2e-8 +- 5.7e-9 (2.1 standard errors) on an objective of 38.7. The warning that
/// matters is the test above; this one catches a rule that reads the standard errors alone.
#[test]
fn a_resolved_but_negligible_gap_does_not_warn() {
    let rs = reports_with(
        "param q = 60;\nlet d = sample Normal(100, 20) fixed;\nmaximize 5 * min(q, d) - 3 * q;\n",
        &RunConfig {
            optimizer: dsgd::optim::OptimizerConfig::Adam(dsgd::optim::AdamConfig {
                lr: 1000.0,
                ..Default::default()
            }),
            ..RunConfig::default()
        },
    );
    let mut resolved = 0;
    for r in &rs {
        let last = r.trajectory.last().unwrap();
        let (gap, gap_se) = (last.gap.unwrap(), last.gap_se.unwrap());
        if gap.abs() > 2.0 * gap_se.max(last.value_se) {
            resolved += 1;
            assert!(gap.abs() < 1e-6 * (1.0 + last.value.abs()), "gap {gap}");
        }
        assert!(r.smoothing_warning.is_none(), "{:?}", r.smoothing_warning);
    }
    assert!(
        resolved > 0,
        "no seed resolves its gap: the test tests nothing"
    );
}

/// The guide's `(loc, scale)` of the first latent on the unconstrained scale, per seed.
fn guide(rs: &[dsgd::RunReport]) -> [Vec<f64>; 2] {
    [
        rs.iter().map(|r| r.latents[0].guide_loc).collect(),
        rs.iter().map(|r| r.latents[0].guide_scale).collect(),
    ]
}

/// A positive latent in a guard: `r ~ Gamma(2, 1)`, `-1` where `r < 1`. The guide is
/// Gaussian on `u = ln r`, where the crisp ELBO of `N(m, s)` is
/// `2m - exp(m + s^2 / 2) - Phi(-m / s) + ln s`; its maximum by a pattern search.
const POSITIVE_IN_GUARD: &str = "let r = sample Gamma(2, 1);\nif r < 1 { factor -1; }\n";

fn positive_in_guard_optimum() -> (f64, f64) {
    let elbo = |m: f64, s: f64| 2.0 * m - (m + s * s / 2.0).exp() - normal_cdf(-m / s) + s.ln();
    pattern_search(elbo, 0.5, 0.6, 0.1)
}

#[test]
fn a_positive_latent_in_a_guard_gets_the_crisp_answer() {
    let (m, s) = positive_in_guard_optimum();
    assert!(
        (m - 0.6862).abs() < 1e-4 && (s - 0.5725).abs() < 1e-4,
        "{m} {s}"
    );
    let rs = reports(POSITIVE_IN_GUARD);
    for (xs, exact, what) in guide(&rs)
        .iter()
        .zip([m, s])
        .zip(["loc", "scale"])
        .map(|((x, e), w)| (x, e, w))
    {
        let (mean, se) = mean_se(xs);
        assert!(
            (mean - exact).abs() < 4.0 * se,
            "{what} {mean} +- {se} against {exact}"
        );
    }
    for r in &rs {
        assert!(r.smoothing_warning.is_none(), "{:?}", r.smoothing_warning);
        assert!(r.converged, "{}", r.convergence);
    }
}

/// DSGD with default options is never worse than the fixed schedule at the same eta: on
/// each kind of model (a shifted step, a step likelihood, nested steps, a positive latent in
/// a guard) its distance to the exact answer is at most Fixed's plus three combined standard
/// errors, and where Fixed's smoothing bias is resolvable (nested steps) DSGD is closer by
/// more than three of them. Measured (5 seeds, DoG, 10^4 steps): nested steps' scale DSGD
/// 0.11671 +- 0.00021, Fixed 0.10565 +- 0.00015, exact 0.11700; the positive latent's scale
/// DSGD 0.5752 +- 0.0013, Fixed 0.5797 +- 0.0012 (2.5 combined standard errors apart),
/// exact 0.5725.
#[test]
fn dsgd_is_never_worse_than_the_fixed_schedule() {
    let fixed = RunConfig {
        estimator: dsgd::EstimatorKind::Fixed,
        ..RunConfig::default()
    };
    let nested = "let x = sample Normal(0, 0.1);\nif x < 0.05 { if x > -0.1 { factor -1; } }\n";
    let nested_elbo = |mu: f64, s: f64| {
        -(mu * mu + s * s) / (2.0 * 0.01)
            - (normal_cdf((0.05 - mu) / s) - normal_cdf((-0.1 - mu) / s))
            + s.ln()
    };
    let (nm, ns) = pattern_search(nested_elbo, 0.0, 0.1, 0.01);
    let (pm, ps) = positive_in_guard_optimum();
    let step_elbo =
        |mu: f64, s: f64| -(mu * mu + s * s) / 2.0 - normal_cdf((0.5 - mu) / s) + s.ln();
    let (sm, ss) = pattern_search(step_elbo, 0.0, 1.0, 0.1);
    // (model, exact guide (loc, scale), which of them Fixed's bias must resolvably move).
    let cases: [(&str, [f64; 2], [bool; 2]); 3] = [
        (nested, [nm, ns], [true, true]),
        (POSITIVE_IN_GUARD, [pm, ps], [false, false]),
        (
            "let x = sample Normal(0, 1);\nif x < 0.5 { factor -1; }\n",
            [sm, ss],
            [false, false],
        ),
    ];
    for (source, exact, resolvable) in cases {
        let d = guide(&reports(source));
        let f = guide(&reports_with(source, &fixed));
        for k in 0..2 {
            let ((dm, dse), (fm, fse)) = (mean_se(&d[k]), mean_se(&f[k]));
            let se = dse.hypot(fse);
            let (dd, fd) = ((dm - exact[k]).abs(), (fm - exact[k]).abs());
            let what = format!(
                "{source:?} [{k}]: dsgd {dm} +- {dse}, fixed {fm} +- {fse}, exact {}",
                exact[k]
            );
            assert!(dd <= fd + 3.0 * se, "{what}");
            if resolvable[k] {
                assert!(dd + 3.0 * se < fd, "{what}");
            }
        }
    }
    // The shifted step objective: a parameter.
    let (mut lo, mut hi) = (1.0f64, 3.0f64);
    for _ in 0..100 {
        let c = 0.5 * (lo + hi);
        if 1.0 - c + normal_pdf(1.5 - c) > 0.0 {
            lo = c;
        } else {
            hi = c;
        }
    }
    let exact = 0.5 * (lo + hi);
    let shifted = "param c = 0;\nlet z = sample Normal(c, 1);\nmaximize -0.5 * (z - 1)^2 + (if z < 1.5 { 0 } else { 1 });\n";
    let c = |rs: Vec<dsgd::RunReport>| -> Vec<f64> {
        rs.iter().map(|r| r.params.get("c").unwrap()).collect()
    };
    let ((dm, dse), (fm, fse)) = (
        mean_se(&c(reports(shifted))),
        mean_se(&c(reports_with(shifted, &fixed))),
    );
    assert!(
        (dm - exact).abs() <= (fm - exact).abs() + 3.0 * dse.hypot(fse),
        "shifted step: dsgd {dm} +- {dse}, fixed {fm} +- {fse}, exact {exact}"
    );
}

//! The rule on made-up runs: stationary, climbing, crawling, worsening, bouncing, jumping and
//! noisy runs, each with the verdict and the advice it must get.

use super::super::stationarity::Window;
use super::objective_trend::{Line, Scatter};
use super::*;

fn row(iter: u64, value: f64, se: f64, param: f64) -> TrajectoryRow {
    TrajectoryRow {
        iter,
        value,
        value_se: se,
        var_component: 0.0,
        var_norm: 0.0,
        eta: None,
        smoothed: None,
        gap: None,
        gap_se: None,
        params: vec![param],
        latent_loc: vec![],
        latent_scale: vec![],
    }
}

/// Pseudo-random noise of a fixed sequence (no randomness in tests of the rule): a hash's
/// uniforms, centred, with unit variance. The stationarity tests use it too.
pub(in crate::experiment) fn noise(k: u64) -> f64 {
    // splitmix64's finaliser: consecutive `k` give unrelated words.
    let mut z = k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 3.46
}

/// A run of 10,000 steps of one parameter whose step `k` has gradient `g(k)` and leaves
/// the value `v(k)`, measured every 100 steps with objective `obj(k)`.
struct Fake {
    rows: Vec<TrajectoryRow>,
    window: Window,
}

fn fake(g: impl Fn(u64) -> f64, v: impl Fn(u64) -> f64, obj: impl Fn(u64) -> f64) -> Fake {
    let n = 10_000;
    let mut window = Window::new(n, 1);
    for k in 0..n {
        let before = if k == 0 { v(0) } else { v(k - 1) };
        window.record(k, &[before], &[g(k)], &[v(k)]);
    }
    let rows = (0..=n / 100)
        .map(|j| row(j * 100, obj(j * 100), 0.1, v(j * 100)))
        .collect();
    Fake { rows, window }
}

fn judge(f: &Fake, lr: Option<f64>, bias: Option<&str>) -> Verdict {
    judge_by(f, lr, false, bias)
}

/// The verdict when the optimiser is DoG, which sets its own step.
fn judge_dog(f: &Fake) -> Verdict {
    judge_by(f, None, true, None)
}

fn judge_by(f: &Fake, lr: Option<f64>, own_step: bool, bias: Option<&str>) -> Verdict {
    let names = ["theta".to_string()];
    let st = f.window.assess();
    assess(&RunFacts {
        kind: ObjectiveKind::Objective,
        stop: StopReason::Completed,
        stop_message: None,
        done: 10_000,
        skipped: 0,
        trajectory: &f.rows,
        param_names: &names,
        latent_names: &[],
        stationarity: st.as_ref(),
        theta_names: &names,
        adam_lr: lr,
        own_step,
        bias,
        maximise: true,
    })
}

fn flat(k: u64) -> f64 {
    -10.0 + 0.1 * noise(k + 11)
}

#[test]
fn a_stationary_run_converges_and_a_biased_one_says_whose_answer() {
    let f = fake(noise, |k| 0.37 + 1e-3 * noise(k + 3), flat);
    let v = judge(&f, Some(0.0015), None);
    assert!(v.converged, "{}", v.reason);
    assert!(v.reason.starts_with("converged: "), "{}", v.reason);
    let v = judge(&f, Some(0.0015), Some("it misses the boundary"));
    assert!(v.converged);
    assert!(
        v.reason
            .starts_with("converged, but to the estimator's biased answer")
            && v.reason.contains("misses the boundary"),
        "{}",
        v.reason
    );
}

#[test]
fn a_steady_climb_wants_a_larger_step_even_when_the_objective_barely_moves() {
    // The case of a tiny step: the value creeps along a clearly non-zero gradient at
    // about the step size per step, the objective flat within its noise.
    let f = fake(|k| 0.76 + 0.2 * noise(k), |k| 1.0 + 1e-5 * k as f64, flat);
    let v = judge(&f, Some(1e-5), None);
    assert!(!v.converged);
    assert!(
        v.reason.contains("mean gradient in `theta`"),
        "{}",
        v.reason
    );
    assert!(v.reason.contains("larger step size"), "{}", v.reason);
}

#[test]
fn a_crawl_far_below_the_step_size_wants_a_smaller_step() {
    // Adam at step 5 moving 1e-4 per step along a steady gradient: it still divides by
    // the huge gradients of earlier jumps.
    let f = fake(|k| 1.0 + 0.01 * noise(k), |k| 1e-4 * k as f64, flat);
    let v = judge(&f, Some(5.0), None);
    assert!(!v.converged);
    assert!(v.reason.contains("crawl"), "{}", v.reason);
    assert!(v.reason.contains("smaller step size"), "{}", v.reason);
}

#[test]
fn an_objective_that_gets_worse_wants_a_smaller_step() {
    let f = fake(noise, |k| 0.37 + 1e-3 * noise(k + 3), |k| -0.01 * k as f64);
    let v = judge(&f, Some(1000.0), None);
    assert!(!v.converged);
    assert!(v.reason.contains("got worse"), "{}", v.reason);
    assert!(v.reason.contains("smaller step size"), "{}", v.reason);
}

/// The step size `smaller` advises for Adam under DoG, checked against the distance the
/// iterates moved per step over the last fifth: that distance to one significant digit.
fn advised_lr(f: &Fake, reason: &str) -> f64 {
    let st = f.window.assess().unwrap();
    let per_step = st.components[0].path / st.steps as f64;
    let lr: f64 = reason
        .split("--optimizer adam --lr ")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no Adam step size in: {reason}"));
    assert!(
        (0.5 * per_step..=1.5 * per_step).contains(&lr),
        "{lr} against {per_step} per step: {reason}"
    );
    lr
}

#[test]
fn under_dog_an_objective_that_gets_worse_says_what_to_set_instead_of_the_step() {
    // DoG has no step size to set: the advice names more iterations (its step shrinks like
    // 1 / sqrt(t)) and Adam at a step from the run's own scale.
    let f = fake(noise, |k| 0.37 + 1e-3 * noise(k + 3), |k| -0.01 * k as f64);
    let v = judge_dog(&f);
    assert!(!v.converged);
    assert!(v.reason.contains("got worse"), "{}", v.reason);
    assert!(
        !v.reason.contains("take a smaller step size"),
        "{}",
        v.reason
    );
    assert!(v.reason.contains("`--iters 40000`"), "{}", v.reason);
    advised_lr(&f, &v.reason);
}

#[test]
fn under_dog_values_moving_against_their_gradient_say_what_to_set() {
    let f = fake(|k| -0.3 + noise(k), |k| 0.37 + 2e-5 * k as f64, flat);
    let v = judge_dog(&f);
    assert!(!v.converged);
    assert!(
        v.reason.contains("against their mean gradient"),
        "{}",
        v.reason
    );
    assert!(
        !v.reason.contains("take a smaller step size"),
        "{}",
        v.reason
    );
    // The values move 2e-5 per step: Adam at 2e-5.
    assert_eq!(advised_lr(&f, &v.reason), 2e-5, "{}", v.reason);
}

#[test]
fn values_moving_against_their_gradient_want_a_smaller_step() {
    let f = fake(|k| -0.3 + noise(k), |k| 0.37 + 2e-5 * k as f64, flat);
    let v = judge(&f, Some(0.0015), None);
    assert!(!v.converged);
    assert!(
        v.reason.contains("against their mean gradient"),
        "{}",
        v.reason
    );
    assert!(v.reason.contains("smaller step size"), "{}", v.reason);
}

/// A variational run of one guided latent `z` whose location and `rho` follow `loc(k)`
/// and `rho(k)` with the guide scale `scale`, the location's gradient `g(k)`. (`loc` and
/// `g` must draw on other noise: step `k`'s gradient is taken at `loc(k - 1)`, and a
/// gradient noise equal to the iterate's would read as curvature.)
fn guided(g: impl Fn(u64) -> f64, loc: impl Fn(u64) -> f64, scale: f64) -> Verdict {
    guided_rho(g, loc, scale, 0.1)
}

/// [`guided`] with `rho`'s gradient noise `rho_noise` per step.
fn guided_rho(
    g: impl Fn(u64) -> f64,
    loc: impl Fn(u64) -> f64,
    scale: f64,
    rho_noise: f64,
) -> Verdict {
    let n = 10_000;
    let mut window = Window::new(n, 2);
    for k in 0..n {
        let b = if k == 0 { 0 } else { k - 1 };
        window.record(
            k,
            &[loc(b), 0.0],
            &[g(k), rho_noise * noise(k + 5)],
            &[loc(k), 0.01 * noise(k + 9)],
        );
    }
    let rows: Vec<TrajectoryRow> = (0..=n / 100)
        .map(|j| TrajectoryRow {
            latent_loc: vec![loc(j * 100)],
            latent_scale: vec![scale],
            params: vec![],
            ..row(j * 100, flat(j * 100), 0.1, 0.0)
        })
        .collect();
    let names = ["mu[z]".to_string(), "rho[z]".to_string()];
    let st = window.assess();
    assess(&RunFacts {
        kind: ObjectiveKind::Elbo,
        stop: StopReason::Completed,
        stop_message: None,
        done: n,
        skipped: 0,
        trajectory: &rows,
        param_names: &[],
        latent_names: &["z".to_string()],
        stationarity: st.as_ref(),
        theta_names: &names,
        adam_lr: Some(0.0015),
        own_step: false,
        bias: None,
        maximise: true,
    })
}

#[test]
fn a_guided_latent_converges_when_its_gradient_resolves_it() {
    // Gradient noise 0.1 per step: the mean is known to about 0.1 / sqrt(2000), which at
    // scale 0.4 locates the optimum far within a quarter of the scale.
    let v = guided(|k| 0.1 * noise(k), |k| 1.0 + 0.002 * noise(k + 1001), 0.4);
    assert!(v.converged, "{}", v.reason);
}

#[test]
fn a_gradient_too_noisy_to_locate_the_optimum_does_not_vouch_for_it() {
    // Score-like noise: 30 per step, so the mean is known to about 0.67, and
    // 3.2 x 0.67 x 0.64^2 is far more than a quarter of the scale 0.64.
    let v = guided(|k| 30.0 * noise(k), |k| 1.4 + 0.002 * noise(k + 1001), 0.64);
    assert!(!v.converged);
    assert!(v.reason.contains("too noisy to locate `z`"), "{}", v.reason);
}

#[test]
fn a_scale_gradient_too_noisy_to_settle_the_scale_does_not_vouch_for_it() {
    // rho's gradient noise 30 per step: its mean known to about 0.67, which at scale 0.6
    // (sigmoid(rho) = 0.45) leaves the scale undecided within 3.2 x 0.67 x 0.36 / 0.9.
    let v = guided_rho(
        |k| 0.1 * noise(k),
        |k| 1.0 + 0.002 * noise(k + 1001),
        0.6,
        30.0,
    );
    assert!(!v.converged);
    assert!(v.reason.contains("settle the scale of `z`"), "{}", v.reason);
}

#[test]
fn a_location_that_jumps_by_more_than_half_a_scale_wants_a_smaller_step() {
    let v = guided(|k| 0.1 * noise(k), |k| 1.0 + 5.0 * noise(k + 1001), 0.35);
    assert!(!v.converged, "{}", v.reason);
    assert!(v.reason.contains("the values jump"), "{}", v.reason);
    assert!(v.reason.contains("smaller step size"), "{}", v.reason);
}

fn plain(rows: &[TrajectoryRow], stop: StopReason, skipped: u64) -> Verdict {
    let names = ["theta".to_string()];
    let mut window = Window::new(10_000, 1);
    for k in 0..10_000 {
        window.record(k, &[0.3], &[noise(k)], &[0.3]);
    }
    let st = window.assess();
    assess(&RunFacts {
        kind: ObjectiveKind::Objective,
        stop,
        stop_message: None,
        done: rows.last().map_or(0, |r| r.iter),
        skipped,
        trajectory: rows,
        param_names: &names,
        latent_names: &[],
        stationarity: st.as_ref(),
        theta_names: &names,
        adam_lr: None,
        own_step: false,
        bias: None,
        maximise: true,
    })
}

#[test]
fn early_stop_skips_and_short_runs_are_not_converged() {
    let rows: Vec<_> = (0..=100).map(|k| row(k * 100, -10.0, 0.1, 0.3)).collect();
    assert!(!plain(&rows, StopReason::NonFinite, 0).converged);
    let v = plain(&rows, StopReason::Completed, 10_000);
    assert!(v.reason.contains("every step was skipped"), "{}", v.reason);
    assert!(!plain(&rows, StopReason::Completed, 3).converged);
    assert!(plain(&rows, StopReason::Completed, 0).converged);
    let short: Vec<_> = (0..=3).map(|k| row(k * 100, -10.0, 0.1, 0.3)).collect();
    let v = plain(&short, StopReason::Completed, 0);
    assert!(
        !v.converged && v.reason.starts_with("not judged"),
        "{}",
        v.reason
    );
}

/// Iterates bouncing by 1 about the optimum 2 of `-(x - 2)^2 / 2` (gradient `2 - x` plus
/// noise), the last one at 3.5: judged as the answer, it is off by 1.5 where the gradient
/// resolves hundredths; the average of the iterates, judged as the answer, is at the
/// optimum. The mean gradient over the window is zero in both.
fn bouncing(averaged: bool) -> Verdict {
    let n = 10_000;
    let x = |k: u64| if k == n - 1 { 3.5 } else { 2.0 + noise(k + 17) };
    let mut window = Window::new(n, 1);
    let mut avg = 2.0;
    for k in 0..n {
        let before = if k == 0 { 2.0 } else { x(k - 1) };
        let g = 2.0 - before + 0.5 * noise(k);
        avg += (x(k) - avg) / (k + 1) as f64;
        let answer = if averaged { avg } else { x(k) };
        window.record_answer(k, &[before], &[g], &[x(k)], &[answer]);
    }
    let rows: Vec<_> = (0..=n / 100)
        .map(|j| row(j * 100, flat(j * 100), 0.1, 2.0))
        .collect();
    let names = ["theta".to_string()];
    let st = window.assess();
    assert_eq!(st.as_ref().unwrap().averaged, averaged);
    assess(&RunFacts {
        kind: ObjectiveKind::Objective,
        stop: StopReason::Completed,
        stop_message: None,
        done: n,
        skipped: 0,
        trajectory: &rows,
        param_names: &names,
        latent_names: &[],
        stationarity: st.as_ref(),
        theta_names: &names,
        adam_lr: Some(1.0),
        own_step: false,
        bias: None,
        maximise: true,
    })
}

#[test]
fn the_answer_is_judged_a_bouncing_last_iterate_is_not_an_average_is() {
    let last = bouncing(false);
    assert!(!last.converged, "{}", last.reason);
    assert!(
        last.reason.contains("at the answer is -1.5"),
        "{}",
        last.reason
    );
    assert!(last.reason.contains("smaller step size"), "{}", last.reason);
    let avg = bouncing(true);
    assert!(avg.converged, "{}", avg.reason);
}

#[test]
fn a_run_stopped_on_an_infinite_objective_is_told_the_model_not_the_step() {
    let rows: Vec<_> = (0..=1).map(|k| row(k * 100, -10.0, 0.1, 0.3)).collect();
    let names = ["theta".to_string()];
    let judge = |msg: &str| {
        assess(&RunFacts {
            kind: ObjectiveKind::Elbo,
            stop: StopReason::NonFinite,
            stop_message: Some(msg),
            done: 100,
            skipped: 0,
            trajectory: &rows,
            param_names: &[],
            latent_names: &[],
            stationarity: None,
            theta_names: &names,
            adam_lr: None,
            own_step: false,
            bias: None,
            maximise: true,
        })
    };
    let v = judge(
        "at iteration 100: the objective estimate is -inf (f = -inf at measurement sample \
         688); factor log(normal_cdf((mu - limit) / sigma)) at m.dsgd:13:5 gives \
         log-density -inf: log(0) is -inf",
    );
    assert!(!v.converged);
    assert!(!v.reason.contains("smaller step"), "{}", v.reason);
    assert!(
        v.reason.contains("not finite")
            && v.reason.contains("init(")
            && v.reason.contains("log_normal_cdf"),
        "{}",
        v.reason
    );
    let v = judge("at iteration 100: the log-density log p(x, z) is NaN at gradient sample 3");
    assert!(!v.reason.contains("smaller step"), "{}", v.reason);
    let v = judge("at iteration 7: the gradient with respect to mu[z] is inf");
    assert!(v.reason.contains("smaller step size"), "{}", v.reason);
}

#[test]
fn drift_standard_error_matches_the_closed_form() {
    // Evenly spaced t with equal se s: se(slope) = s / sqrt(Sxx).
    let t: Vec<f64> = (0..5).map(|k| k as f64 * 10.0).collect();
    let line = Line::fit(&t, &[1.0, 2.0, 3.0, 4.0, 5.0]);
    assert!((line.drift - 4.0).abs() < 1e-12);
    let se = line.drift_se_known(&t, &[0.5; 5]);
    let sxx = 1000.0;
    assert!((se - 0.5 / f64::sqrt(sxx) * 40.0).abs() < 1e-12);
}

#[test]
fn scatter_beyond_the_noise_uncorrelated_is_jumping_and_a_curve_is_not() {
    let t: Vec<f64> = (0..21).map(|k| 8000.0 + 100.0 * k as f64).collect();
    let se = vec![0.01; 21];
    // Residuals of Monte Carlo size: no jump.
    let white = |scale: f64| -> Vec<f64> { (0..21).map(|k| scale * noise(k)).collect() };
    let judge = |y: &[f64]| {
        let line = Line::fit(&t, y);
        Scatter::of(&line, &t, y, &se)
    };
    let calm = judge(&white(0.01));
    assert!(!calm.jumps(), "dispersion {}", calm.dispersion);
    // Ten times the noise, uncorrelated: the values jump.
    let jumping = judge(&white(0.1));
    assert!(
        jumping.jumps(),
        "dispersion {} lag1 {}",
        jumping.dispersion,
        jumping.lag1
    );
    // A smooth curve the line cannot follow, far beyond the noise: still on its way.
    let curve: Vec<f64> = (0..21).map(|k| -((20 - k) as f64).powi(2) * 0.01).collect();
    let c = judge(&curve);
    assert!(
        c.dispersion > 10.0 && !c.jumps(),
        "{} {}",
        c.dispersion,
        c.lag1
    );
    // An exact objective (zero standard errors) is never judged by its scatter.
    let line = Line::fit(&t, &curve);
    assert!(!Scatter::of(&line, &t, &curve, &[0.0; 21]).jumps());
}

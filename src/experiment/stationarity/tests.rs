//! Tests of `stationarity`: kept apart so the module reads as its one job.

use super::*;
use crate::experiment::convergence::tests::noise;

#[test]
fn t_quantiles_match_tables() {
    // Tabulated two-sided critical values.
    for (p, df, t) in [
        (0.975, 10, 2.228139),
        (0.995, 19, 2.860935),
        (0.9995, 19, 3.883406),
        (0.975, 30, 2.042272),
        (0.999, 18, 3.610485),
    ] {
        let got = t_quantile(p, df);
        assert!((got - t).abs() < 2e-3 * t, "t({p}, {df}) = {got}, not {t}");
    }
}

/// A window fed a deterministic sequence.
fn fed(iterations: u64, f: impl Fn(u64) -> (f64, f64)) -> Stationarity {
    let mut w = Window::new(iterations, 1);
    let mut prev = f(0).1;
    for k in 0..iterations {
        let (g, v) = f(k);
        w.record(k, &[prev], &[g], &[v]);
        prev = v;
    }
    w.assess().expect("a full window")
}

#[test]
fn zero_mean_gradient_and_flat_values_pass() {
    let s = fed(10_000, |k| (noise(k), 0.37 + 0.01 * noise(k + 7)));
    let (_, z) = s.worst_gradient().unwrap();
    assert!(z < s.gradient_threshold, "{z}");
    let (_, d) = s.worst_drift().unwrap();
    assert!(d < 1.0, "{d}");
}

#[test]
fn a_gradient_off_zero_fails_and_a_trend_drifts() {
    let s = fed(10_000, |k| (0.2 + noise(k), 0.37 + 1e-5 * k as f64));
    assert!(s.worst_gradient().unwrap().1 > s.gradient_threshold);
    assert!(s.worst_drift().unwrap().1 > 1.0);
    // Batch sums: the window is 8000..10000, in 20 batches of 100.
    assert_eq!((s.from, s.to, s.batches, s.steps), (8000, 10_000, 20, 2000));
    let c = &s.components[0];
    assert!((c.moved - 1e-5 * 2000.0).abs() < 1e-12, "{}", c.moved);
}

#[test]
fn correlated_batch_means_widen_the_standard_error_and_independent_ones_do_not() {
    let ramp: Vec<f64> = (0..200).map(f64::from).collect();
    assert!((ar1_inflation(&ramp) - (1.9f64 / 0.1).sqrt()).abs() < 1e-12);
    let alternating: Vec<f64> = (0..20)
        .map(|k| if k % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    assert_eq!(ar1_inflation(&alternating), 1.0);
    // A walk's batch means are correlated: its drift is measured against a wider error.
    let mut x = 0.0;
    let walk: Vec<f64> = (0..20)
        .map(|k| {
            x += noise(k);
            x
        })
        .collect();
    assert!(ar1_inflation(&walk) > 1.5, "{}", ar1_inflation(&walk));
    let iid: Vec<f64> = (0..2000).map(noise).collect();
    assert!(ar1_inflation(&iid) < 1.1, "{}", ar1_inflation(&iid));
}

#[test]
fn short_windows_are_not_judged() {
    let mut w = Window::new(10, 1);
    for k in 0..10 {
        w.record(k, &[0.0], &[0.0], &[0.0]);
    }
    assert!(w.assess().is_none());
}

//! Tests of `dog`: kept apart so the module reads as its one job.

use super::*;

fn maximise(config: DogConfig, scale: f64, x0: f64, steps: usize) -> (Dog, f64) {
    // f = -(x - 3 scale)^2 / scale^2: the optimum 3 scale, in the parameter's units.
    let mut d = Dog::new(config, 1);
    let mut x = [x0];
    for _ in 0..steps {
        let g = [-2.0 * (x[0] - 3.0 * scale) / (scale * scale)];
        d.step(&mut x, &g);
    }
    (d, x[0])
}

#[test]
fn the_first_step_moves_by_r_eps() {
    let mut d = Dog::new(DogConfig::default(), 2);
    let mut x = [3.0, 4.0];
    d.step(&mut x, &[3.0, 4.0]);
    // r_eps = 1e-6 (1 + |x_0|) = 6e-6, the step r_eps / |g| along g.
    assert!((x[0] - (3.0 + 6e-6 * 0.6)).abs() < 1e-15);
    assert!((x[1] - (4.0 + 6e-6 * 0.8)).abs() < 1e-15);
}

#[test]
fn per_coordinate_the_first_step_is_r_eps_per_component() {
    let config = DogConfig {
        per_coordinate: true,
        forget: None,
        ..DogConfig::default()
    };
    let mut d = Dog::new(config, 2);
    let mut x = [2.0, -1.0];
    d.step(&mut x, &[5.0, -0.25]);
    assert!((x[0] - (2.0 + 3e-6)).abs() < 1e-15);
    assert!((x[1] - (-1.0 - 2e-6)).abs() < 1e-15);
}

#[test]
fn a_forgotten_sum_lets_the_step_recover_when_gradients_shrink() {
    // The same direction throughout, the gradient 10^4 times smaller after 100 steps:
    // with the plain sum the steps stay 10^4 times shorter, with the average they
    // recover once the early ones have decayed (0.999^20000 = 2e-9).
    let run = |forget| {
        let config = DogConfig {
            forget,
            average: None,
            ..DogConfig::default()
        };
        let mut d = Dog::new(config, 1);
        let mut x = [0.0];
        for t in 0..20_000 {
            let g = if t < 100 { 1.0 } else { 1e-4 };
            d.step(&mut x, &[g]);
        }
        let before = x[0];
        d.step(&mut x, &[1e-4]);
        x[0] - before
    };
    let (sum, forgotten) = (run(None), run(Some(0.999)));
    assert!(forgotten > 100.0 * sum, "{forgotten} against {sum}");
}

#[test]
fn finds_the_optimum_at_any_scale() {
    for scale in [1e-3, 1.0, 1e4] {
        let (mut d, x) = maximise(DogConfig::default(), scale, 0.5 * scale, 500);
        assert!((x / scale - 3.0).abs() < 1e-3, "scale {scale}: {x}");
        let avg = d.average().unwrap()[0];
        assert!(
            (avg / scale - 3.0).abs() < 1e-2,
            "scale {scale}: average {avg}"
        );
    }
}

/// A small deterministic generator for the tests' gradients and subsets.
fn lcg(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// Sparse steps (each touching about a third of the components, the gradient zero at
/// the others) against dense steps of the same gradients: after 5000 steps the iterates
/// and the polynomial-decay average agree within 1e-12 relative, the average caught up
/// lazily, the distance kept as a running sum; and a component never touched keeps its
/// start, bit for bit. Catches a catch-up factor off by a step (`P_t` multiplied before
/// the touched components catch up), a stale running distance, a touched component's
/// own update skipped.
#[test]
fn the_lazy_average_is_the_eager_one() {
    for per_coordinate in [false, true] {
        // Per component, a component's sum of squared gradients does not advance
        // without a gradient: the plain sum (no forgetting) is then the dense one.
        let config = DogConfig {
            per_coordinate,
            forget: (!per_coordinate).then_some(0.999),
            ..DogConfig::default()
        };
        let d = 12;
        let start: Vec<f64> = (0..d).map(|i| 0.3 * i as f64 - 1.0).collect();
        let (mut sparse, mut dense) = (Dog::new(config, d), Dog::new(config, d));
        let (mut xs, mut xd) = (start.clone(), start.clone());
        let mut rng = 7u64;
        for _ in 0..5000 {
            // Component 11 is never touched; 0 always (a shared parameter).
            let touched: Vec<u32> = (0..d as u32 - 1)
                .filter(|&i| i == 0 || lcg(&mut rng) < 0.33)
                .collect();
            let mut g = vec![0.0; d];
            for &i in &touched {
                let i = i as usize;
                g[i] = -2.0 * (xs[i] - i as f64) + (lcg(&mut rng) - 0.5);
            }
            sparse.step_touched(&mut xs, &g, &touched);
            dense.step(&mut xd, &g);
        }
        for i in 0..d {
            let (s, e) = (sparse.average_at(i).unwrap(), dense.average().unwrap()[i]);
            assert!(
                (s - e).abs() <= 1e-12 * e.abs().max(1.0),
                "{per_coordinate} {i}: {s} against {e}"
            );
            assert!((xs[i] - xd[i]).abs() <= 1e-12 * xd[i].abs().max(1.0), "{i}");
        }
        assert_eq!(xs[d - 1].to_bits(), start[d - 1].to_bits());
        // Reading the average brings every component up to date: the same numbers.
        let at: Vec<f64> = (0..d).map(|i| sparse.average_at(i).unwrap()).collect();
        assert_eq!(sparse.average().unwrap(), &at[..]);
    }
}

/// A sparse step listing every component is the dense step, bit for bit, and so are
/// dense steps after it.
#[test]
fn a_sparse_step_of_every_component_is_the_dense_step() {
    let d = 5;
    let all: Vec<u32> = (0..d as u32).collect();
    let (mut a, mut b) = (
        Dog::new(DogConfig::default(), d),
        Dog::new(DogConfig::default(), d),
    );
    let (mut xa, mut xb) = (vec![0.5; d], vec![0.5; d]);
    for t in 0..50 {
        let g: Vec<f64> = (0..d)
            .map(|i| (i as f64 - xa[i]) * (1.0 + t as f64 % 3.0))
            .collect();
        if t % 2 == 0 {
            a.step_touched(&mut xa, &g, &all);
        } else {
            a.step(&mut xa, &g);
        }
        b.step(&mut xb, &g);
        assert_eq!(xa, xb, "step {t}");
        assert_eq!(a.average().unwrap(), b.average().unwrap(), "step {t}");
    }
}

/// Noisy ascent on `-(x - target(t))^2 / 2` with unit Gaussian-like noise (a sum of
/// uniforms from a fixed generator); returns DoG's step `dx / g` at every iteration.
fn noisy_steps(config: DogConfig, steps: usize, target: impl Fn(usize) -> f64) -> Vec<f64> {
    let mut d = Dog::new(config, 1);
    let mut x = [0.0];
    let mut state = 7u64;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..steps)
        .map(|t| {
            let noise = (0..12).map(|_| uniform()).sum::<f64>() - 6.0;
            let g = -(x[0] - target(t)) + noise;
            let before = x[0];
            d.step(&mut x, &[g]);
            (x[0] - before) / g
        })
        .collect()
}

/// The mean step over the 200 iterations before `t`.
fn step_near(steps: &[f64], t: usize) -> f64 {
    steps[t - 200..t].iter().sum::<f64>() / 200.0
}

#[test]
fn once_the_distance_is_flat_the_step_falls_like_one_over_t() {
    // Near the optimum the squared gradients are steady (the noise's), so DoG's step
    // halves from t to 4t; settled, it falls four times.
    let settled = noisy_steps(DogConfig::default(), 40_000, |_| 3.0);
    let ratio = step_near(&settled, 40_000) / step_near(&settled, 10_000);
    assert!((ratio - 0.25).abs() < 0.05, "settled: {ratio}");
    let dog = noisy_steps(
        DogConfig {
            settle: None,
            ..DogConfig::default()
        },
        40_000,
        |_| 3.0,
    );
    let ratio = step_near(&dog, 40_000) / step_near(&dog, 10_000);
    assert!((ratio - 0.5).abs() < 0.1, "unsettled: {ratio}");
}

#[test]
fn a_distance_that_grows_again_restores_dogs_step() {
    // The optimum moves from 3 to 300 after 20,000 steps: the distance grows, the step
    // is DoG's again (as large as the unsettled one's) and the iterates get there.
    let target = |t| if t < 20_000 { 3.0 } else { 300.0 };
    let config = DogConfig::default();
    let mut d = Dog::new(config, 1);
    let mut x = [0.0];
    for t in 0..30_000 {
        let g = -(x[0] - target(t));
        d.step(&mut x, &[g]);
    }
    assert!((x[0] - 300.0).abs() < 1e-3, "{}", x[0]);
    let settled = noisy_steps(config, 30_000, target);
    let dog = noisy_steps(
        DogConfig {
            settle: None,
            ..config
        },
        30_000,
        target,
    );
    let ratio = step_near(&settled, 30_000) / step_near(&dog, 30_000);
    assert!(ratio > 0.9, "{ratio}");
}

#[test]
fn a_changed_objective_restores_dogs_step() {
    // Settled after 20,000 steps at a fixed optimum, then told the objective changed:
    // the next step is DoG's (the unsettled optimiser's on the same gradients, up to the
    // slightly different distance and squared gradients its own iterates gave).
    let settled_steps = |changed: bool, settle| {
        let mut d = Dog::new(
            DogConfig {
                settle,
                ..DogConfig::default()
            },
            1,
        );
        let mut x = [0.0];
        for t in 0..20_000 {
            let g = -(x[0] - 3.0) + if t % 2 == 0 { 1.0 } else { -1.0 };
            d.step(&mut x, &[g]);
        }
        if changed {
            d.objective_changed();
        }
        let before = x[0];
        d.step(&mut x, &[1.0]);
        x[0] - before
    };
    let dog = settled_steps(false, None);
    let kept = settled_steps(false, Some(0.1));
    let restored = settled_steps(true, Some(0.1));
    assert!(kept < 0.2 * dog, "{kept} against {dog}");
    assert!(
        (restored / dog - 1.0).abs() < 0.05,
        "{restored} against {dog}"
    );
}

#[test]
fn the_average_forgets_the_start() {
    // Constant iterates after a jump: the polynomial-decay average reaches them.
    let (mut d, x) = maximise(DogConfig::default(), 1.0, -50.0, 3000);
    assert!((x - 3.0).abs() < 1e-6);
    assert!((d.average().unwrap()[0] - 3.0).abs() < 1e-3);
    assert!(Dog::new(DogConfig::default(), 1).average().is_none());
}

//! The engine's speed-ups keep its results: the chunks of a batch shared out to any number
//! of threads give the bits of one thread, drawing the next batch's noise on another
//! thread (`Engine::step_then_draw`) gives the bits of drawing it in turn, and the
//! measurement statistics of `Engine::gradient_spread` are those of plain one-component-at-a-
//! time sums; a batch computed in parts (`Engine::sample_all`) gives the whole batch's bits.
//!
//! Not here: whether the estimators are right (`infer_estimators.rs`).

use dsgd::estimate::{self, Engine, EstimatorKind, Problem, Purpose, StreamKey};

fn engine(kind: EstimatorKind) -> Engine {
    let model = dsgd::models::builtin("cheating").unwrap().unwrap();
    let problem = Problem::new(&model).unwrap();
    let estimator = estimate::build(kind, &problem, 0.1, None).unwrap();
    Engine::new(problem, estimator)
}

#[test]
fn noise_drawn_ahead_gives_the_bits_of_noise_drawn_in_turn() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        for kind in [EstimatorKind::Dsgd, EstimatorKind::Lyy18] {
            let (mut plain, mut ahead) = (engine(kind), engine(kind));
            let mut theta = plain.problem().family().init();
            let key = |k| StreamKey::new(5, k, Purpose::Step);
            // The noise drawn ahead takes the place of a chunk's own buffer: a batch of
            // another size (a short chunk) in between must find a buffer that fits.
            let batches = [16, 16, 16, 7, 7, 16, 16];
            for (k, &batch) in batches.iter().enumerate() {
                let k = k as u64;
                plain.step(&theta, key(k), batch).unwrap();
                // Iteration 3 asks for a key other than the one drawn ahead.
                let next = if k == 2 { key(40) } else { key(k + 1) };
                ahead.step_then_draw(&theta, key(k), batch, next).unwrap();
                let bits = |e: &Engine| {
                    e.sample_gradients()
                        .iter()
                        .chain(e.values())
                        .map(|v| v.to_bits())
                        .collect::<Vec<_>>()
                };
                assert_eq!(bits(&plain), bits(&ahead), "{kind} iteration {k}");
                // Move theta, as a run does: the noise drawn ahead must not depend on it.
                for (t, g) in theta.iter_mut().zip(plain.mean_gradient()) {
                    *t += 0.01 * g;
                }
            }
        }
    });
}

/// Per-sample gradients, values, crisp values and the mean of batches of many chunks (the
/// last one short) are the same bits on 1, 2, 3 and 7 threads, batch after batch.
#[test]
fn chunks_shared_among_threads_give_one_threads_bits() {
    let outputs = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut out = Vec::new();
            for kind in [EstimatorKind::Dsgd, EstimatorKind::Score] {
                let mut e = engine(kind);
                let theta = e.problem().family().init();
                for (k, batch) in [(0, 1000), (1, 37), (2, 1000), (3, 17)] {
                    e.evaluate(&theta, StreamKey::new(9, k, Purpose::Step), batch, true)
                        .unwrap();
                    assert_eq!(e.values().len(), batch);
                    assert_eq!(e.crisp_values().len(), batch);
                    let sample = e.sample_gradients();
                    let batch_f = batch as f64;
                    // The mean is the samples' mean (to rounding: its sums run in chunks).
                    for (p, m) in e.mean_gradient().iter().enumerate() {
                        let plain: f64 = e.component(p).sum::<f64>() / batch_f;
                        assert!(
                            (m - plain).abs() <= 1e-9 * plain.abs().max(1.0),
                            "{m} {plain}"
                        );
                    }
                    out.extend(sample.into_iter().chain(e.values().iter().copied()));
                    out.extend(e.crisp_values().iter().chain(e.mean_gradient()));
                }
            }
            out.into_iter().map(f64::to_bits).collect::<Vec<_>>()
        })
    };
    let one = outputs(1);
    for threads in [2, 3, 7] {
        assert!(one == outputs(threads), "{threads} threads");
    }
}

/// The sample variance (ddof 1, two passes) as a plain loop, in sample order.
fn plain_variance(xs: &[f64]) -> f64 {
    let n = xs.len();
    if n < 2 {
        return 0.0;
    }
    let mut sum = 0.0;
    for &x in xs {
        sum += x;
    }
    let mean = sum / n as f64;
    let mut ss = 0.0;
    for &x in xs {
        ss += (x - mean) * (x - mean);
    }
    ss / (n - 1) as f64
}

#[test]
fn gradient_spread_gives_the_bits_of_plain_sums() {
    // xornet has 50 parameters (not a multiple of four) and batches cross chunk boundaries.
    let model = dsgd::models::builtin("xornet").unwrap().unwrap();
    let problem = Problem::new(&model).unwrap();
    let estimator = estimate::build(EstimatorKind::Dsgd, &problem, 0.1, None).unwrap();
    let mut engine = Engine::new(problem, estimator);
    let theta = engine.problem().family().init();
    let d = engine.problem().dim();
    assert!(
        !d.is_multiple_of(4),
        "{d} parameters: the remainder path is not exercised"
    );
    for batch in [1, 2, 37, 1000] {
        engine
            .evaluate(
                &theta,
                StreamKey::new(3, 4100, Purpose::Measure),
                batch,
                false,
            )
            .unwrap();
        let g = engine.sample_gradients();
        let (mut var, mut norms) = (Vec::new(), Vec::new());
        engine.gradient_spread(&mut var, &mut norms);
        for p in 0..d {
            let column: Vec<f64> = (0..batch).map(|l| g[l * d + p]).collect();
            assert_eq!(
                var[p].to_bits(),
                plain_variance(&column).to_bits(),
                "batch {batch} p {p}"
            );
        }
        for l in 0..batch {
            let mut sq = 0.0;
            for p in 0..d {
                sq += g[l * d + p] * g[l * d + p];
            }
            assert_eq!(
                norms[l].to_bits(),
                f64::sqrt(sq).to_bits(),
                "batch {batch} lane {l}"
            );
        }
    }
}

/// A batch computed part by part (`Engine::sample_all`, what `gradients(n)` runs so that
/// Ctrl-C can stop it between parts) gives the whole batch's gradient samples and values bit
/// for bit, whatever the part size and thread count, for every estimator: each part's lanes
/// get their own noise and the whole batch's chunks (RLOO shares a baseline within one).
/// Catches a part that restarts the lanes' streams at 0, or a part that does not start on a
/// chunk boundary.
#[test]
fn a_batch_in_parts_gives_the_bits_of_one_batch() {
    use std::sync::atomic::AtomicBool;
    let model = dsgd::models::builtin("temperature").unwrap().unwrap();
    let never = AtomicBool::new(false);
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            for kind in EstimatorKind::ALL {
                let problem = Problem::new(&model).unwrap();
                let Ok(estimator) = estimate::build(kind, &problem, 0.1, None) else {
                    continue;
                };
                let mut e = Engine::new(problem, estimator);
                let theta: Vec<f64> = e.problem().family().init();
                let key = StreamKey::new(11, 7, Purpose::Step);
                // Not a whole number of chunks: the last chunk is short.
                let n = 1000;
                e.evaluate(&theta, key, n, false).unwrap();
                let whole: Vec<u64> = e
                    .sample_gradients()
                    .iter()
                    .chain(e.values())
                    .map(|v| v.to_bits())
                    .collect();
                // One chunk, several, a size rounded up to whole chunks, more than `n`.
                for block in [16, 48, 100, 5000, e.block_lanes()] {
                    let all = e
                        .sample_all(&theta, key, n, block, &never)
                        .unwrap()
                        .unwrap();
                    let parts: Vec<u64> = all
                        .gradients
                        .iter()
                        .chain(&all.values)
                        .map(|v| v.to_bits())
                        .collect();
                    assert!(
                        parts == whole,
                        "{kind}, parts of {block}, {threads} threads"
                    );
                }
            }
        });
    }
}

/// A raised flag stops `Engine::sample_all` before its first part.
#[test]
fn a_raised_flag_stops_a_batch_in_parts() {
    use std::sync::atomic::AtomicBool;
    let mut e = engine(EstimatorKind::Dsgd);
    let theta = e.problem().family().init();
    let key = StreamKey::new(1, 0, Purpose::Step);
    let raised = AtomicBool::new(true);
    assert!(
        e.sample_all(&theta, key, 100, 16, &raised)
            .unwrap()
            .is_none()
    );
    let free = AtomicBool::new(false);
    let all = e.sample_all(&theta, key, 100, 16, &free).unwrap().unwrap();
    assert_eq!(all.values.len(), 100);
    assert_eq!(all.gradients.len(), 100 * e.problem().dim());
}

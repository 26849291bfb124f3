//! The engine's speed-ups keep its results: drawing the next batch's noise on another
//! thread (`Engine::evaluate_then_draw`) gives the bits of drawing it in turn.
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
                plain.evaluate(&theta, key(k), batch, false).unwrap();
                // Iteration 3 asks for a key other than the one drawn ahead.
                let next = if k == 2 { key(40) } else { key(k + 1) };
                ahead
                    .evaluate_then_draw(&theta, key(k), batch, false, next)
                    .unwrap();
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

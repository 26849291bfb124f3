//! Tests of `engine`: kept apart so the module reads as its one job.

use super::*;
use crate::estimate::{EstimatorKind, Purpose, build};

/// Engines of one problem run on its threads' scratches, one per thread however many
/// engines there are, and give the bits of engines on problems of their own, batch
/// after batch and in any order.
#[test]
fn engines_of_one_problem_share_its_scratches_and_keep_their_bits() {
    let model = crate::models::builtin("cheating").unwrap().unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        let kinds = [
            EstimatorKind::Dsgd,
            EstimatorKind::Score,
            EstimatorKind::Lyy18,
        ];
        let engine = |problem: &Problem, kind| {
            Engine::new(problem.clone(), build(kind, problem, 0.1, None).unwrap())
        };
        let shared = Problem::new(&model).unwrap();
        let mut together: Vec<Engine> = kinds.iter().map(|&k| engine(&shared, k)).collect();
        let mut apart: Vec<Engine> = kinds
            .iter()
            .map(|&k| engine(&Problem::new(&model).unwrap(), k))
            .collect();
        let theta = shared.family().init();
        let bits = |e: &Engine| {
            let mut out = e.sample_gradients();
            out.extend(e.values().iter().chain(e.crisp_values()));
            out.into_iter().map(f64::to_bits).collect::<Vec<_>>()
        };
        for (k, batch) in [(0, 16), (1, 1000), (2, 37)] {
            // Each engine its own streams: a scratch must not carry one engine's noise
            // or values into another's batch.
            let key = |i: usize| StreamKey::new(3 + i as u64, k, Purpose::Step);
            // The shared engines in turn, the others in reverse order.
            for (i, e) in together.iter_mut().enumerate() {
                e.evaluate(&theta, key(i), batch, true).unwrap();
            }
            for (i, e) in apart.iter_mut().enumerate().rev() {
                e.evaluate(&theta, key(i), batch, true).unwrap();
            }
            for (a, b) in together.iter().zip(&apart) {
                assert!(bits(a) == bits(b), "{} batch {batch}", a.estimator().kind());
            }
        }
        assert!((1..=2).contains(&shared.scratches_made()));
        assert!(apart.iter().all(|e| e.problem().scratches_made() <= 2));
    });
}

/// From outside any pool the closure runs on a worker; on a worker, on that worker.
#[test]
fn on_a_worker_runs_on_a_thread_of_the_pool() {
    assert_eq!(rayon::current_thread_index(), None);
    assert!(on_a_worker(rayon::current_thread_index).is_some());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        let here = rayon::current_thread_index();
        assert!(here.is_some());
        assert_eq!(on_a_worker(rayon::current_thread_index), here);
    });
}

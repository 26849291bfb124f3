//! Gradient samples per second of every estimator on every paper model, batch 16, one
//! thread, through `estimate::Engine` (drawing the noise, the family, the tape and the
//! assembly of the gradient rows): the figure compared with the JAX reference
//! (`dsgd::experiment::paper::JAX_SAMPLES_PER_SECOND`). Each iteration of the benchmark is
//! one optimisation step's batch, with a fresh stream key as in a run.
//!
//! Not here: whole runs with logging (`perf stat` on `dsgd run`), the bare tape
//! (`benches/tape.rs`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use dsgd::estimate::{self, Engine, EstimatorKind, Problem, Purpose, StreamKey};
use dsgd::experiment::paper::JAX_SAMPLES_PER_SECOND;

const BATCH: usize = 16;

fn bench_estimators(c: &mut Criterion) {
    for &(name, _) in JAX_SAMPLES_PER_SECOND.iter() {
        let model = dsgd::models::builtin(name)
            .expect("a paper model is built in")
            .expect("built-in models compile");
        let mut group = c.benchmark_group(format!("estimator_batch16/{name}"));
        group.throughput(Throughput::Elements(BATCH as u64));
        for kind in EstimatorKind::ALL {
            let problem = Problem::new(&model).expect("paper models have valid families");
            let Ok(estimator) = estimate::build(kind, &problem, 0.1, None) else {
                continue; // LYY18 on a model with a non-affine guard
            };
            let mut engine = Engine::new(problem, estimator);
            let theta = engine.problem().family().init();
            let mut k = 0u64;
            group.bench_with_input(BenchmarkId::from_parameter(kind), &kind, |bench, _| {
                bench.iter(|| {
                    k += 1;
                    let key = StreamKey::new(0, k % 10_000, Purpose::Step);
                    engine
                        .step(black_box(&theta), key, BATCH)
                        .expect("finite family at the initial theta");
                    black_box(engine.mean_gradient()[0])
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    targets = bench_estimators
}
criterion_main!(benches);

//! A fixed amount of estimator work for profiling and CPU-time comparisons: `cargo run
//! --release --example engine_work -- MODEL ESTIMATOR ITERATIONS [BATCH]` evaluates ITERATIONS
//! batches of BATCH (default 16) gradient samples (the family's initial `theta`, DSGD/Fixed at
//! eta 0.1 from iteration 4000 on, as `dsgd bench` times them) and prints a checksum of the
//! mean gradients, so that a faster build can be checked to compute the same numbers.
//!
//! MODEL is a built-in name or a `.dsgd` file. Run it under `perf record` to see where the
//! time goes, or compare builds with `scripts/cputime.sh`; with a large BATCH, compare
//! `RAYON_NUM_THREADS=1` and `2` to see how the engine scales with threads (the checksum must
//! not change). Not a benchmark by itself: `dsgd bench` and `cargo bench` are.

use std::path::Path;

use dsgd::estimate::{self, Engine, EstimatorKind, Problem, Purpose, StreamKey};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (name, kind, iters, batch) = match args.as_slice() {
        [name, kind, iters] => (name, kind, iters, 16),
        [name, kind, iters, batch] => (name, kind, iters, batch.parse()?),
        _ => return Err("usage: engine_work MODEL ESTIMATOR ITERATIONS [BATCH]".into()),
    };
    let kind: EstimatorKind = kind.parse()?;
    let iters: u64 = iters.parse()?;
    let model = if name.ends_with(".dsgd") {
        dsgd::lang::compile_file(Path::new(name), &Default::default())?
    } else {
        dsgd::models::builtin(name).ok_or("no such built-in model")??
    };
    let problem = Problem::new(&model)?;
    let estimator = estimate::build(kind, &problem, 0.1, None)?;
    let mut engine = Engine::new(problem, estimator);
    let theta = engine.problem().family().init();
    // On a worker of the pool, as `dsgd run` drives its steps.
    let checksum = estimate::on_a_worker(|| {
        let mut checksum = 0u64;
        for k in 0..iters {
            let key = StreamKey::new(0, 4000 + k % 1000, Purpose::Step);
            engine.step(&theta, key, batch)?;
            for g in engine.mean_gradient() {
                checksum = checksum.rotate_left(5) ^ g.to_bits();
            }
        }
        Ok::<u64, dsgd::family::FamilyError>(checksum)
    })?;
    println!("{checksum:016x}");
    Ok(())
}

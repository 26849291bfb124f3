//! Whether cost grows linearly with program size: the `cheating` survey with 100,
//! 1,000 and 10,000 students (300 to 30,000 if-statements), its compile time (source to
//! tape and machine code) and, for every estimator, the single-thread seconds per gradient
//! sample (batch 16) relative to the 100-student model. Linear cost gives ratios of 10 and
//! 100.
//!
//! `cargo bench --bench scaling [-- STUDENTS...]`. The sizes are timed in turn within each
//! of several rounds (each round times every estimator of a size interleaved,
//! `experiment::cost`), and each cell is its fastest round: a change in the machine's load
//! then shifts every size alike instead of the ratio. Pin it to one core (`taskset -c 1`).
//!
//! Not here: the built-in models' samples per second (`benches/estimators.rs`, `dsgd bench`).

use std::path::Path;
use std::time::Instant;

use dsgd::estimate::{EstimatorKind, Problem};
use dsgd::experiment::cost::{CostConfig, measure_interleaved};
use dsgd::lang::{CompileOptions, compile_source};

/// The built-in survey with `students` students, 35% of whom said yes.
fn survey(students: usize) -> String {
    let source = dsgd::models::builtin_source("cheating").expect("cheating is built in");
    let yes = students * 35 / 100;
    source
        .replace(
            "const students = 100;",
            &format!("const students = {students};"),
        )
        .replace("const yes = 35;", &format!("const yes = {yes};"))
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100, 1_000, 10_000]
    } else {
        sizes
    };
    let config = CostConfig {
        batch: 16,
        warmup_seconds: 0.05,
        repeats: 1,
        repeat_seconds: 0.3,
        threads: 1,
    };
    const ROUNDS: usize = 5;
    let mut models = Vec::new();
    for &students in &sizes {
        let source = survey(students);
        assert!(source.contains(&format!("students = {students}")));
        let clock = Instant::now();
        let model = compile_source(
            "cheating",
            &source,
            Path::new("."),
            &CompileOptions::default(),
        )
        .expect("the survey compiles");
        let problem = Problem::new(&model).expect("the survey's family builds");
        models.push((students, problem, clock.elapsed().as_secs_f64()));
    }
    // Per size, per estimator: the fastest round's seconds per sample.
    let mut best = vec![vec![f64::INFINITY; EstimatorKind::ALL.len()]; sizes.len()];
    for _ in 0..ROUNDS {
        for ((_, problem, _), best) in models.iter().zip(&mut best) {
            let costs = measure_interleaved(problem, &EstimatorKind::ALL, 0.1, None, &config)
                .expect("every estimator applies to the survey");
            for (b, c) in best.iter_mut().zip(&costs) {
                *b = b.min(c.seconds_per_sample());
            }
        }
    }
    println!(
        "students  compile (s)  seconds per sample, fastest of {ROUNDS} rounds (ratio to the first size)"
    );
    for ((students, _, compile), per_sample) in models.iter().zip(&best) {
        let cells: Vec<String> = EstimatorKind::ALL
            .iter()
            .zip(per_sample.iter().zip(&best[0]))
            .map(|(k, (s, b))| format!("{k} {s:.3e} ({:.0}x)", s / b))
            .collect();
        println!("{students:>8}  {compile:>11.3}  {}", cells.join("  "));
    }
}

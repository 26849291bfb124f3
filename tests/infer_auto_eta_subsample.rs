//! `--eta auto` under `--subsample M`: the starting race's candidates and the tightening
//! test read the run's subsample, so the rows they evaluate do not grow with the data (a
//! threshold regression over 2,000 and 20,000 rows reads exactly the same number of rows),
//! while without a subsample they grow with it. Counted, not timed.

use std::sync::atomic::AtomicBool;

use dsgd::estimate::race::{RaceConfig, Start, race};
use dsgd::estimate::{AutoEta, Problem};
use dsgd::lang::{CompileOptions, PlatePolicy};

/// A threshold regression over `n` rows kept as a plate.
fn problem(n: usize) -> Problem {
    let xs: Vec<String> = (0..n)
        .map(|i| format!("{:.4}", -2.0 + 4.0 * ((i * 37) % n) as f64 / n as f64))
        .collect();
    let ys: Vec<&str> = (0..n)
        .map(|i| if (i * 7 + 3) % 5 < 3 { "1" } else { "0" })
        .collect();
    let src = format!(
        "const x = [{}];\nconst y = [{}];\nlet a = sample Normal(0, 5);\nlet b = sample Normal(0, 5);\n\
         for i in 0..{n} {{\n  observe y[i] ~ Bernoulli(if a + b * x[i] < 0 {{ 0.2 }} else {{ 0.8 }});\n}}\n",
        xs.join(", "),
        ys.join(", ")
    );
    let model = dsgd::lang::compile_source(
        "rows.dsgd",
        &src,
        std::path::Path::new("."),
        &CompileOptions {
            plates: PlatePolicy::On,
            ..CompileOptions::default()
        },
    )
    .expect("compiles");
    assert_eq!(model.plates.len(), 1);
    Problem::relative(&model).expect("a problem")
}

/// The rows read by the starting race and by a later tightening check on `n` rows.
fn rows_read(n: usize, subsample: Option<usize>) -> (u64, u64) {
    let problem = problem(n);
    let iterations = 400;
    let decay = problem.analysis().default_eta_decay();
    let auto = AutoEta::new(decay, iterations);
    let optimizer = dsgd::OptimizerConfig::default().build(problem.dim());
    let theta = problem.family().init();
    let cfg = RaceConfig {
        length: auto.race_length(),
        batch: 16,
        samples: 256,
        decay,
        seed: 0,
        subsample,
    };
    let cancel = AtomicBool::new(false);
    let at = |k| Start {
        k,
        theta: &theta,
        optimizer: optimizer.as_ref(),
        cancel: &cancel,
    };
    let candidates = auto.race_at(0).expect("a starting race");
    let start = race(&problem, &cfg, &at(0), &candidates);
    assert!(start.entries.iter().all(|e| e.value.is_finite()));
    let check = race(&problem, &cfg, &at(200), &[0.1, 0.05]);
    assert!(check.test.is_some(), "the tightening test ran");
    (start.rows_read, check.rows_read)
}

#[test]
fn a_subsampled_race_reads_the_same_rows_whatever_the_data() {
    let m = 32;
    let (small, large) = (rows_read(2_000, Some(m)), rows_read(20_000, Some(m)));
    assert!(small.0 > 0 && small.1 > 0, "{small:?}");
    assert_eq!(small, large, "rows read at 2,000 and at 20,000 rows");
    // Every sample reads m rows: the race's and the test's reads are multiples of m.
    assert_eq!(small.0 % m as u64, 0);
    assert_eq!(small.1 % m as u64, 0);
    // Without a subsample every sample reads every row: ten times the data, ten times the
    // rows, and far more than the subsampled race.
    let full = rows_read(2_000, None);
    assert_eq!(full.0 * 10, rows_read(20_000, None).0);
    assert!(full.0 > 50 * small.0, "{full:?} against {small:?}");
}

//! The sweep and the comparison: parallel execution equals serial execution bit for bit,
//! arms and jobs are planned as the paper's sweep, and aggregation computes mean ± std.

use dsgd::estimate::EstimatorKind;
use dsgd::experiment::compare::{Summary, aggregate, arms, jobs, lyy18_refusal, run_comparison};
use dsgd::experiment::report::RunReport;
use dsgd::experiment::reproduction::ReproduceConfig;
use dsgd::experiment::sweep::{run_parallel, run_serial};

/// A built-in model, compiled.
fn builtin_model(name: &str) -> Result<dsgd::Model, dsgd::CompileError> {
    dsgd::builtin(name).expect("a built-in model")
}

fn tiny_base(model: &str) -> dsgd::experiment::run::RunConfig {
    let mut cfg = ReproduceConfig::quick();
    cfg.iterations = 60;
    cfg.log_every = 20;
    cfg.log_samples = 40;
    cfg.base_run(model)
}

/// Everything but the wall time.
fn strip(mut r: RunReport) -> RunReport {
    r.seconds = 0.0;
    r
}

#[test]
fn parallel_sweep_equals_serial_sweep() {
    let models = vec![
        builtin_model("textmsg").unwrap(),
        builtin_model("walk").unwrap(),
    ];
    let mut all = Vec::new();
    for (i, name) in ["textmsg", "walk"].iter().enumerate() {
        let a = arms(&[0.1, 0.14], lyy18_refusal(&models[i]).is_none());
        all.extend(jobs(i, &a, 2, &tiny_base(name)));
    }
    assert_eq!(all.len(), 2 * (2 * (5 + 4)));
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let parallel = pool.install(|| run_parallel(&models, &all, &|_, _| {}));
    let serial = run_serial(&models, &all, &|_, _| {});
    assert_eq!(parallel.len(), serial.len());
    for (p, s) in parallel.into_iter().zip(serial) {
        let (p, s) = (strip(p.unwrap()), strip(s.unwrap()));
        assert_eq!(
            p, s,
            "run {} {} seed {} differs",
            p.model, p.estimator, p.seed
        );
    }
}

#[test]
fn progress_counts_every_run_once() {
    let models = vec![builtin_model("textmsg").unwrap()];
    let a = arms(&[0.1], true);
    let js = jobs(0, &a, 2, &tiny_base("textmsg"));
    let seen = std::sync::Mutex::new(Vec::new());
    let _ = run_parallel(&models, &js, &|d, t| seen.lock().unwrap().push((d, t)));
    let mut seen = seen.into_inner().unwrap();
    seen.sort();
    let want: Vec<(usize, usize)> = (1..=js.len()).map(|d| (d, js.len())).collect();
    assert_eq!(seen, want);
}

#[test]
fn arms_follow_the_paper_and_skip_lyy18_on_xornet() {
    let xornet = builtin_model("xornet").unwrap();
    let note = lyy18_refusal(&xornet).expect("LYY18 does not apply to xornet");
    assert!(note.contains("not affine"), "{note}");
    assert!(lyy18_refusal(&builtin_model("temperature").unwrap()).is_none());
    let a = arms(&dsgd::experiment::paper::ETAS, false);
    assert_eq!(a.len(), 14);
    assert_eq!(
        a.iter()
            .filter(|x| x.estimator == EstimatorKind::Dsgd)
            .count(),
        6
    );
    assert_eq!(a.iter().filter(|x| x.is_auto()).count(), 1);
    assert!(a.iter().all(|x| x.estimator != EstimatorKind::Lyy18));
    let js = jobs(3, &a, 5, &tiny_base("xornet"));
    assert_eq!(js.len(), 70);
    assert!(js.iter().all(|j| j.model == 3));
    // xornet's paper settings: Adam 0.01, decay 0.2.
    assert_eq!(js[0].config.optimizer.lr(), Some(0.01));
    assert_eq!(js[0].config.eta_decay, Some(0.2));
    assert_eq!(js[0].config.eta, 0.06);
    assert_eq!(js[4].config.seed, 4);
}

#[test]
fn summary_is_mean_and_population_std_of_finite_values() {
    let s = Summary::of(&[1.0, 2.0, 6.0, f64::NAN, f64::NEG_INFINITY]);
    assert_eq!(s.n, 3);
    assert_eq!(s.non_finite, 2);
    assert!((s.mean - 3.0).abs() < 1e-12);
    // ddof 0: ((4 + 1 + 9) / 3)^0.5
    assert!((s.std - (14.0f64 / 3.0).sqrt()).abs() < 1e-12);
    assert_eq!(Summary::of(&[5.0]).std, 0.0);
    assert!(Summary::of(&[]).mean.is_nan());
}

#[test]
fn comparison_aggregates_each_arm_over_its_seeds() {
    let model = builtin_model("textmsg").unwrap();
    let base = tiny_base("textmsg");
    let (cmp, a, reports) = run_comparison(&model, &[0.1], 3, &base, &|_, _| {}).unwrap();
    assert_eq!(reports.len(), a.len() * 3);
    let refs: Vec<&RunReport> = reports.iter().collect();
    assert_eq!(aggregate("textmsg", &a, &refs, None), cmp);
    let score = cmp.cell(EstimatorKind::Score, None).unwrap();
    let finals: Vec<f64> = reports
        .iter()
        .filter(|r| r.estimator == "score")
        .map(|r| r.final_value)
        .collect();
    assert_eq!(score.final_elbo, finals);
    assert_eq!(score.summary, Summary::of(&finals));
    let rows: Vec<f64> = reports
        .iter()
        .filter(|r| r.estimator == "score")
        .flat_map(|r| r.trajectory.iter().map(|t| t.var_norm))
        .collect();
    let mean = rows.iter().sum::<f64>() / rows.len() as f64;
    assert!((score.mean_var_norm - mean).abs() <= 1e-12 * mean.abs());
    assert!(cmp.cell(EstimatorKind::Dsgd, Some(0.1)).is_some());
    assert!(cmp.cell(EstimatorKind::Dsgd, Some(0.14)).is_none());
    assert!(run_comparison(&model, &[], 3, &base, &|_, _| {}).is_err());
}

//! Cancelling a run: the loop reads the caller's flag before every step and ends with
//! `RunError::Cancelled`, having taken fewer steps than asked (what Ctrl-C in the Python
//! package relies on); compiling stops as cancelled in the lexer, the parser or the lowering.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dsgd::experiment::observe::Observer;
use dsgd::experiment::run::{RunConfig, RunError, run_cancellable};

/// Raises the flag once `after` steps have been reported, and counts the steps it saw.
struct CancelAfter {
    flag: Arc<AtomicBool>,
    after: u64,
    seen: Arc<AtomicU64>,
}

impl Observer for CancelAfter {
    fn iteration(&mut self, done: u64) {
        self.seen.store(done, Ordering::Relaxed);
        if done >= self.after {
            self.flag.store(true, Ordering::Relaxed);
        }
    }
}

fn config() -> RunConfig {
    RunConfig {
        iterations: 100_000,
        log_every: 10,
        log_samples: 100,
        ..RunConfig::default()
    }
}

#[test]
fn a_raised_flag_ends_the_run_early_with_cancelled() {
    let model = dsgd::models::builtin("example").unwrap().unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicU64::new(0));
    let mut obs = CancelAfter {
        flag: flag.clone(),
        after: 50,
        seen: seen.clone(),
    };
    let err = run_cancellable(&model, &config(), &mut [&mut obs], &flag).unwrap_err();
    assert!(matches!(err, RunError::Cancelled), "{err}");
    // The flag went up after step 50; the segment under way (10 steps) may finish.
    let steps = seen.load(Ordering::Relaxed);
    assert!((50..=60).contains(&steps), "{steps} steps before stopping");
}

#[test]
fn a_flag_raised_before_the_start_takes_no_step() {
    let model = dsgd::models::builtin("example").unwrap().unwrap();
    let flag = Arc::new(AtomicBool::new(true));
    let seen = Arc::new(AtomicU64::new(0));
    let mut obs = CancelAfter {
        flag: flag.clone(),
        after: u64::MAX,
        seen: seen.clone(),
    };
    let err = run_cancellable(&model, &config(), &mut [&mut obs], &flag).unwrap_err();
    assert!(matches!(err, RunError::Cancelled), "{err}");
    assert_eq!(seen.load(Ordering::Relaxed), 0);
}

/// `--eta auto`'s starting race: with the flag up, no candidate takes a step (each fails),
/// where the same race without it measures every finalist.
#[test]
fn a_raised_flag_stops_the_starting_race() {
    use dsgd::estimate::race::{RaceConfig, Start, race};
    use dsgd::estimate::{AutoEta, Problem};
    let model = dsgd::models::builtin("example").unwrap().unwrap();
    let problem = Problem::new(&model).unwrap();
    let auto = AutoEta::new(0.5, 2000);
    let optimizer = dsgd::OptimizerConfig::Adam(dsgd::AdamConfig::default()).build(problem.dim());
    let theta = problem.family().init();
    let cfg = RaceConfig {
        length: auto.race_length(),
        batch: 16,
        samples: 100,
        decay: 0.5,
        seed: 0,
        subsample: None,
    };
    let candidates = auto.race_at(0).unwrap();
    let finish = |raised: bool| {
        let flag = AtomicBool::new(raised);
        let start = Start {
            k: 0,
            theta: &theta,
            optimizer: optimizer.as_ref(),
            cancel: &flag,
        };
        race(&problem, &cfg, &start, &candidates).entries
    };
    let free = finish(false);
    assert!(!free.is_empty() && free.iter().all(|e| e.value.is_finite()));
    let stopped = finish(true);
    assert!(stopped.iter().all(|e| e.value.is_nan()), "{stopped:?}");
}

/// The precise final measurement draws no block once the flag is up.
#[test]
fn a_raised_flag_stops_the_precise_measurement() {
    use dsgd::estimate::Problem;
    use dsgd::experiment::precise::{PreciseConfig, measure_cancellable};
    let model = dsgd::models::builtin("example").unwrap().unwrap();
    let problem = Problem::new(&model).unwrap();
    let theta = problem.family().init();
    let config = PreciseConfig::default();
    let go = |raised: bool| {
        measure_cancellable(&problem, &theta, 0, 0, &config, &AtomicBool::new(raised)).unwrap()
    };
    assert!(go(false).samples >= config.min_samples);
    assert_eq!(go(true).samples, 0);
}

/// A compile whose caller's flag is up stops at its first step and says so.
#[test]
fn a_raised_flag_stops_compiling() {
    use dsgd::lang::{CompileOptions, compile_source};
    let src = "let z = sample Normal(0, 1); for i in 0..1000 { observe z ~ Normal(0, 1); }";
    let opts = CompileOptions {
        cancel: Some(Arc::new(AtomicBool::new(true))),
        ..CompileOptions::default()
    };
    let err = compile_source("t.dsgd", src, std::path::Path::new("."), &opts).unwrap_err();
    assert!(err.message.contains("cancelled"), "{err}");
    assert!(
        compile_source(
            "t.dsgd",
            src,
            std::path::Path::new("."),
            &CompileOptions::default()
        )
        .is_ok()
    );
}

/// Lexing and parsing read the flag as they go, not only the lowering after them: with the
/// flag up, a long text whose last token cannot be lexed, or whose last statement cannot be
/// parsed, stops as cancelled rather than running to that error at its end.
#[test]
fn a_raised_flag_stops_lexing_and_parsing() {
    use dsgd::lang::{CompileOptions, compile_source};
    let statements = "let y = 1 + 2 * 3;\n".repeat(5000);
    let unlexable = format!("{statements}let w = 1 @ 2;");
    let unparsable = format!("{statements}let = ;");
    let compile = |src: &str, raised: bool| {
        let opts = CompileOptions {
            cancel: Some(Arc::new(AtomicBool::new(raised))),
            ..CompileOptions::default()
        };
        compile_source("t.dsgd", src, std::path::Path::new("."), &opts).unwrap_err()
    };
    for src in [&unlexable, &unparsable] {
        let free = compile(src, false);
        assert!(!free.message.contains("cancelled"), "{free}");
        let stopped = compile(src, true);
        assert!(stopped.message.contains("cancelled"), "{stopped}");
        // Stopped near the start, not at the faulty last line.
        let line = stopped.location.as_ref().map(|l| l.line).unwrap_or(0);
        assert!(line < 5000, "stopped at line {line}: {stopped}");
    }
}

/// The lexer's and the parser's own entry points stop on a raised flag and run to the end
/// without one.
#[test]
fn the_lexer_and_the_parser_read_the_flag() {
    use dsgd::lang::{lexer, parser};
    let src = format!("let y = {}1;", "x + ".repeat(20_000));
    let raised = AtomicBool::new(true);
    let tokens = lexer::lex_cancellable(&src, usize::MAX, None).unwrap();
    let e = lexer::lex_cancellable(&src, usize::MAX, Some(&raised)).unwrap_err();
    assert!(e.message.contains("cancelled"), "{e:?}");
    assert!(parser::parse_cancellable(&tokens, None).is_ok());
    let e = parser::parse_cancellable(&tokens, Some(&raised)).unwrap_err();
    assert!(e.message.contains("cancelled"), "{e:?}");
}

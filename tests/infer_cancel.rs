//! Cancelling a run: the loop reads the caller's flag before every step and ends with
//! `RunError::Cancelled`, having taken fewer steps than asked (what Ctrl-C in the Python
//! package relies on).

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

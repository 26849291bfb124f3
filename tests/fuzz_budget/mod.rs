//! The fuzz tests' runner for a time budget (`DSGD_FUZZ_SECONDS`), shared by the core's
//! `harden_lowering` and the command line's `harden_fuzz`.

use std::cell::Cell;
use std::time::{Duration, Instant};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Runs `check` on cases of `strategy` until `DSGD_FUZZ_SECONDS` (default 600) have passed,
/// then prints how many ran. A failure is shrunk and reported as proptest reports it.
pub fn fuzz_for_a_time_budget<S: Strategy>(
    name: &str,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let seconds: u64 = std::env::var("DSGD_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let budget = Duration::from_secs(seconds);
    let config = Config {
        cases: 32,
        failure_persistence: None,
        ..Config::default()
    };
    // A runner runs its number of cases once: each batch gets a new one, seeded from this.
    let mut seeds = TestRunner::new(config.clone());
    let (start, cases) = (Instant::now(), Cell::new(0u64));
    while start.elapsed() < budget {
        let mut runner = TestRunner::new_with_rng(config.clone(), seeds.new_rng());
        let result = runner.run(&strategy, |v| {
            cases.set(cases.get() + 1);
            check(v)
        });
        if let Err(e) = result {
            panic!("{name}: failed after {} cases: {e}", cases.get());
        }
    }
    println!(
        "{name}: {} cases in {:.0} s, no failure",
        cases.get(),
        start.elapsed().as_secs_f64()
    );
}

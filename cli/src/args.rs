//! Value parsers shared by the subcommands' options, so that every command refuses a bad
//! number with the same words: each parses the text and asks the library's checks
//! (`dsgd::settings`), which the Python package asks too.

use dsgd::settings::{self, SettingError, Style};

/// The reason of a refused value, for clap to print after the flag's name.
fn why(e: SettingError) -> String {
    e.why().to_string()
}

fn number(s: &str) -> Result<f64, String> {
    s.parse().map_err(|_| format!("`{s}` is not a number"))
}

/// A finite number greater than zero (`--lr`, `--tolerance`, ...).
pub fn positive(s: &str) -> Result<f64, String> {
    settings::positive("", number(s)?).map_err(why)
}

/// A finite number at least zero (`--sgd-power`).
pub fn non_negative(s: &str) -> Result<f64, String> {
    settings::non_negative("", number(s)?).map_err(why)
}

/// `--eta` as a number.
pub fn eta(s: &str) -> Result<f64, String> {
    settings::eta(number(s)?).map_err(why)
}

/// `--eta-decay`: at least 0 and at most `settings::MAX_ETA_DECAY`.
pub fn eta_decay(s: &str) -> Result<f64, String> {
    settings::eta_decay(number(s)?).map_err(why)
}

/// A whole number at least `N` (`--batch`, `--repeats`, `--max-nodes`). Whether a count fits
/// in memory is checked later, against the model, before anything of that size is
/// allocated.
pub fn count<const N: usize>(s: &str) -> Result<usize, String> {
    let x: usize = s
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number (of at most {})", usize::MAX))?;
    settings::at_least("", x, N).map_err(|_| format!("must be at least {N}, got {s}"))
}

/// `--threads`: at least 1 and at most `settings::max_threads`.
pub fn threads(s: &str) -> Result<usize, String> {
    settings::check_threads(count::<1>(s)?).map_err(why)
}

/// A mistake in the command line found after clap parsed it (a setting that cannot fit, a
/// flag that does not apply): `main` exits with status 2 for it, like clap's own errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

impl From<SettingError> for UsageError {
    /// The library's refusal, naming the options as flags.
    fn from(e: SettingError) -> UsageError {
        UsageError(e.render(Style::Flag))
    }
}

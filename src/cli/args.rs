//! Value parsers shared by the subcommands' options, so that every command refuses a bad
//! number with the same words.

/// A finite number greater than zero (`--eta`, `--lr`, ...).
pub fn positive(s: &str) -> Result<f64, String> {
    let x: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if x > 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(format!("must be positive and finite, got {s}"))
    }
}

/// A finite number at least zero (`--eta-decay`, `--sgd-power`).
pub fn non_negative(s: &str) -> Result<f64, String> {
    let x: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if x >= 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(format!("must be non-negative and finite, got {s}"))
    }
}

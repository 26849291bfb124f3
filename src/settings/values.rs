//! The checks of single values, each naming its option: the command line's value parsers
//! and the Python package call these, so a bad number is refused with the same words.

use super::error::SettingError;

/// A number as a message quotes it: in full when short, else in scientific notation (so
/// that `1e308` is not 309 digits).
pub(crate) fn shown(x: f64) -> String {
    let plain = x.to_string();
    if plain.len() <= 12 {
        plain
    } else {
        format!("{x:e}")
    }
}

/// A finite number greater than zero.
pub fn positive(option: &'static str, x: f64) -> Result<f64, SettingError> {
    if x > 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(SettingError::invalid(
            option,
            format!("must be positive and finite, got {}", shown(x)),
        ))
    }
}

/// A finite number at least zero.
pub fn non_negative(option: &'static str, x: f64) -> Result<f64, SettingError> {
    if x >= 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(SettingError::invalid(
            option,
            format!("must be non-negative and finite, got {}", shown(x)),
        ))
    }
}

/// A whole number at least `min`.
pub fn at_least<T: PartialOrd + Copy + std::fmt::Display>(
    option: &'static str,
    x: T,
    min: T,
) -> Result<T, SettingError> {
    if x >= min {
        Ok(x)
    } else {
        Err(SettingError::invalid(
            option,
            format!("must be a whole number of at least {min}, got {x}"),
        ))
    }
}

/// A whole number given as any integer (Python's are unbounded) as a `u64` of at least
/// `min`: a negative one or one beyond 64 bits is refused with its option's name.
pub fn whole(option: &'static str, x: i128, min: u64) -> Result<u64, SettingError> {
    match u64::try_from(x) {
        Ok(v) if v >= min => Ok(v),
        Ok(_) | Err(_) if x < i128::from(min) => Err(SettingError::invalid(
            option,
            format!("must be a whole number of at least {min}, got {x}"),
        )),
        _ => Err(SettingError::invalid(
            option,
            format!("must be a whole number of at most {}, got {x}", u64::MAX),
        )),
    }
}

/// The largest decay of DSGD's schedule `eta_k = eta (4000 / (k + 1))^decay`. The paper's
/// `1 / (2 l)` is at most 0.5; at 10 the first step's eta is `4000^10 = 1e36` times the
/// given one and the last of `u64::MAX` steps' still above zero, while `1e308` makes eta
/// infinite at the start and zero later.
pub const MAX_ETA_DECAY: f64 = 10.0;

/// The smoothing accuracy `eta`: positive and finite.
pub fn eta(x: f64) -> Result<f64, SettingError> {
    if x > 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(SettingError::invalid(
            "eta",
            format!("must be positive and finite, got {}", shown(x)),
        ))
    }
}

/// DSGD's decay: at least 0 and at most [`MAX_ETA_DECAY`].
pub fn eta_decay(x: f64) -> Result<f64, SettingError> {
    if !(0.0..=MAX_ETA_DECAY).contains(&x) {
        return Err(SettingError::invalid(
            "eta_decay",
            format!(
                "must be at least 0 and at most {MAX_ETA_DECAY} (eta_k = eta (4000 / (k + \
                 1))^decay would overflow or vanish), got {}",
                shown(x)
            ),
        ));
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_out_of_range_name_their_option() {
        assert_eq!(positive("lr", 0.3), Ok(0.3));
        assert_eq!(
            positive("lr", -1.0).unwrap_err().to_string(),
            "lr must be positive and finite, got -1"
        );
        assert!(positive("lr", f64::NAN).is_err() && positive("lr", f64::INFINITY).is_err());
        assert!(non_negative("sgd_power", -0.1).is_err());
        assert!(
            non_negative("sgd_power", -1e308)
                .unwrap_err()
                .to_string()
                .ends_with("got -1e308")
        );
        assert_eq!(whole("iters", 5, 1), Ok(5));
        assert_eq!(
            whole("iters", -5, 1).unwrap_err().to_string(),
            "iters must be a whole number of at least 1, got -5"
        );
        assert!(
            whole("seed", 1 << 70, 0)
                .unwrap_err()
                .to_string()
                .contains("at most")
        );
        assert_eq!(at_least("batch", 0usize, 1).unwrap_err().option(), "batch");
    }

    #[test]
    fn eta_and_its_decay_are_checked() {
        assert_eq!(eta(0.3), Ok(0.3));
        assert_eq!(
            eta(-1.0).unwrap_err().to_string(),
            "eta must be positive and finite, got -1"
        );
        assert!(eta(f64::NAN).is_err() && eta(f64::INFINITY).is_err());
        assert_eq!(eta_decay(0.5), Ok(0.5));
        let e = eta_decay(1e308).unwrap_err().to_string();
        assert!(
            e.starts_with("eta_decay must be at least 0 and at most 10"),
            "{e}"
        );
        assert!(e.ends_with("got 1e308"), "{e}");
        assert!(eta_decay(-0.1).is_err() && eta_decay(f64::NAN).is_err());
    }
}

//! Posterior draws: independent samples of every fitted latent from the fitted family
//! (`dsgd sample`, [`RunReport::draws`](super::report::RunReport::draws)).
//!
//! Draw `k` of latent `i` is `T_i(loc_i + scale_i * s)` with `s` the `i`-th standard normal
//! of draw `k`'s own stream (the keyed streams of the estimators, with a purpose of its own):
//! the draws are a pure function of (fitted family, seed) and draw `k` does not depend on how
//! many are asked for.

use thiserror::Error;

use crate::estimate::{Channel, Purpose, StreamKey};

use super::summary::LatentSummary;
use crate::ir::Transform;

/// Draws of every fitted latent, one row per draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Draws {
    /// The latents' names: the columns.
    pub names: Vec<String>,
    /// `rows[k][i]` is draw `k` of latent `names[i]`.
    pub rows: Vec<Vec<f64>>,
}

/// Why draws cannot be made.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DrawError {
    /// A latent names a transform this version does not know.
    #[error(
        "latent `{latent}` has transform `{transform}`, which this version of dsgd does not know"
    )]
    UnknownTransform {
        /// The latent.
        latent: String,
        /// The transform's name as written.
        transform: String,
    },
    /// A latent's family has a non-finite location or a scale that is not positive.
    #[error("latent `{latent}` has no valid fitted distribution (location {loc}, scale {scale})")]
    BadFamily {
        /// The latent.
        latent: String,
        /// Its location.
        loc: f64,
        /// Its scale.
        scale: f64,
    },
    /// A draw fell outside the latent's support or is not finite: the fitted family (a
    /// tampered or corrupt report) cannot be drawn from.
    #[error(
        "latent `{latent}`: draw {draw} is {value}, outside its support [{low}, {high}] (the \
         fitted family is not one a run writes)"
    )]
    OutOfSupport {
        /// The latent.
        latent: String,
        /// Which draw.
        draw: usize,
        /// Its value.
        value: f64,
        /// The support's lower end.
        low: f64,
        /// The support's upper end.
        high: f64,
    },
}

/// The purpose tag of the draws' streams (apart from every run's).
const DRAWS_TAG: u32 = 0x5a17;

/// The map of a transform named in a report.
fn transform_named(latent: &LatentSummary) -> Result<Transform, DrawError> {
    latent
        .transform_map()
        .ok_or_else(|| DrawError::UnknownTransform {
            latent: latent.name.clone(),
            transform: format!(
                "{} (lower {:?}, upper {:?})",
                latent.transform, latent.lower, latent.upper
            ),
        })
}

/// `n` draws of the latents summarised in `latents`, deterministic in `seed`.
pub fn draw(latents: &[LatentSummary], n: usize, seed: u64) -> Result<Draws, DrawError> {
    let maps = latents
        .iter()
        .map(|l| {
            if !(l.guide_loc.is_finite() && l.guide_scale > 0.0 && l.guide_scale.is_finite()) {
                return Err(DrawError::BadFamily {
                    latent: l.name.clone(),
                    loc: l.guide_loc,
                    scale: l.guide_scale,
                });
            }
            transform_named(l)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut rng = StreamKey::new(seed, 0, Purpose::Other(DRAWS_TAG)).rng(Channel::Noise);
    let mut rows = Vec::with_capacity(n);
    for k in 0..n {
        rng.lane(k);
        let mut row = Vec::with_capacity(latents.len());
        for (l, t) in latents.iter().zip(&maps) {
            let z = t.to_constrained(l.guide_loc + l.guide_scale * rng.normal());
            let (low, high) = t.support();
            if !(z.is_finite() && low <= z && z <= high) {
                return Err(DrawError::OutOfSupport {
                    latent: l.name.clone(),
                    draw: k,
                    value: z,
                    low,
                    high,
                });
            }
            row.push(z);
        }
        rows.push(row);
    }
    Ok(Draws {
        names: latents.iter().map(|l| l.name.clone()).collect(),
        rows,
    })
}

impl Draws {
    /// The draws as CSV: a header of latent names, then one line per draw.
    pub fn to_csv(&self) -> Result<String, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(self.names.iter().map(|n| csv_safe(n)))?;
        for row in &self.rows {
            w.write_record(row.iter().map(|x| x.to_string()))?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| csv::Error::from(e.into_error()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// A name as a CSV header cell that no spreadsheet runs and no reader misparses: control
/// characters (a NUL, a line break) become `?`, and a name a spreadsheet would take for a
/// formula (`=HYPERLINK(..)`, `+`, `-`, `@` first) starts with `'`. A model's latent names
/// never need either; a tampered report's might.
pub fn csv_safe(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if clean.starts_with(['=', '+', '-', '@']) {
        format!("'{clean}")
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::summary::{Identity, summarise_latent};

    #[test]
    fn draws_have_the_fitted_mean_and_sd_within_their_standard_errors() {
        let latents = [
            summarise_latent("a", 2.0, 0.5, &Identity),
            summarise_latent("b", -1.0, 3.0, &Identity),
        ];
        let n = 20_000;
        let d = draw(&latents, n, 11).unwrap();
        assert_eq!(d.names, ["a", "b"]);
        for (i, l) in latents.iter().enumerate() {
            let xs: Vec<f64> = d.rows.iter().map(|r| r[i]).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            // se(mean) = sd / sqrt(n); se(var) = var * sqrt(2 / (n - 1)) for a normal.
            let se_mean = l.sd / (n as f64).sqrt();
            assert!(
                (mean - l.mean).abs() < 4.0 * se_mean,
                "{mean} vs {}",
                l.mean
            );
            let v = l.sd * l.sd;
            assert!((var - v).abs() < 4.0 * v * (2.0 / (n - 1) as f64).sqrt());
        }
    }

    #[test]
    fn draws_are_deterministic_and_prefix_stable() {
        let latents = [summarise_latent("a", 0.0, 1.0, &Identity)];
        let a = draw(&latents, 50, 3).unwrap();
        assert_eq!(a, draw(&latents, 50, 3).unwrap());
        assert_eq!(a.rows[..10], draw(&latents, 10, 3).unwrap().rows[..]);
        assert_ne!(a, draw(&latents, 50, 4).unwrap());
        let csv = a.to_csv().unwrap();
        assert!(csv.starts_with("a\n"));
        assert_eq!(csv.lines().count(), 51);
    }

    #[test]
    fn constrained_draws_follow_the_transform_and_its_closed_form_mean() {
        // z = 1 + exp(u), u ~ N(0.2, 0.4): E z = 1 + exp(0.2 + 0.08), every draw above 1.
        let t = Transform::Exp { lower: 1.0 };
        let l = summarise_latent("s", 0.2, 0.4, &t);
        assert_eq!((l.lower, l.upper), (Some(1.0), None));
        assert_eq!(l.transform_map(), Some(t));
        let mean = 1.0 + (0.2f64 + 0.08).exp();
        assert!((l.mean - mean).abs() < 1e-12);
        let n = 20_000;
        let d = draw(std::slice::from_ref(&l), n, 5).unwrap();
        assert!(d.rows.iter().all(|r| r[0] > 1.0));
        let m = d.rows.iter().map(|r| r[0]).sum::<f64>() / n as f64;
        assert!(
            (m - l.mean).abs() < 4.0 * l.sd / (n as f64).sqrt(),
            "{m} vs {}",
            l.mean
        );
        let b = Transform::Logit {
            lower: -1.0,
            upper: 2.0,
        };
        let l = summarise_latent("p", 0.0, 1.0, &b);
        assert_eq!(l.transform_map(), Some(b));
        assert!((l.q50 - 0.5).abs() < 1e-15 && (l.mean - 0.5).abs() < 1e-12);
    }

    #[test]
    fn unknown_transforms_and_bad_scales_are_refused() {
        let mut l = summarise_latent("a", 0.0, 1.0, &Identity);
        l.transform = "warp".into();
        assert!(matches!(
            draw(&[l], 1, 0),
            Err(DrawError::UnknownTransform { .. })
        ));
        let l = summarise_latent("a", 0.0, 0.0, &Identity);
        assert!(matches!(draw(&[l], 1, 0), Err(DrawError::BadFamily { .. })));
    }

    #[test]
    fn a_tampered_family_whose_draws_overflow_is_refused() {
        // Finite location and scale whose draws are infinite.
        let l = summarise_latent("a", 1e308, 1e308, &Identity);
        assert!(matches!(
            draw(&[l], 100, 0),
            Err(DrawError::OutOfSupport { .. })
        ));
        let t = Transform::Exp { lower: 1.0 };
        let l = summarise_latent("s", 800.0, 1.0, &t);
        assert!(matches!(
            draw(&[l], 10, 0),
            Err(DrawError::OutOfSupport { .. })
        ));
    }

    #[test]
    fn names_go_into_the_header_csv_safe() {
        let d = Draws {
            names: vec![
                "=HYPERLINK(\"http://x\")".into(),
                "a\0b\nc".into(),
                "t[3]".into(),
            ],
            rows: vec![vec![1.0, 2.0, 3.0]],
        };
        let csv = d.to_csv().unwrap();
        let header = csv.lines().next().unwrap();
        assert!(header.starts_with("\"'=HYPERLINK("), "{header}");
        assert!(
            header.contains("a?b?c") && header.ends_with(",t[3]"),
            "{header}"
        );
        assert!(!csv.contains('\0'));
        assert_eq!(csv.lines().count(), 2);
    }
}

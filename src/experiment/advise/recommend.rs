//! What `dsgd advise` concludes from the analysis and the pilot: which estimators are
//! biased for the program, whether Reparam is biased at the initial parameters, and which
//! estimator to use, with the reasons.
//!
//! Why apart from the pilot (`advise.rs`): the pilot measures, this judges; the rules of the
//! recommendation read as one page.

use super::super::bias::estimator_bias;
use super::super::check::CheckReport;
use super::SmoothingGap;
use super::rows;
use super::{BIAS_TEST_LEVEL, BiasCheck, EstimatorAdvice, with_se};
use crate::estimate::EstimatorKind;
use crate::special::probit;

/// What the analysis alone says about an estimator's bias: `dsgd run`'s warning where it is
/// biased for the program.
pub(super) fn static_bias(
    kind: EstimatorKind,
    analysis: &crate::ir::Analysis,
    program: &crate::ir::Program,
) -> (Option<bool>, Option<String>) {
    use EstimatorKind::*;
    if let Some(why) = estimator_bias(kind, analysis, program) {
        return (Some(true), Some(why));
    }
    let jumps = analysis.guards.iter().any(|g| g.jump());
    match kind {
        Reparam | Score | Rloo | Lyy18 => (Some(false), None),
        Dsgd | Fixed => {
            let ifs = analysis.if_count() > 0;
            (
                Some(ifs),
                ifs.then(|| {
                    format!(
                        "smoothing bias at a given eta, which vanishes as eta is tightened (the \
                         run's smoothing gap shows how much is left){}",
                        if jumps {
                            ""
                        } else {
                            "; every if-statement here is continuous, so the crisp estimators \
                             need no smoothing"
                        }
                    )
                }),
            )
        }
    }
}

/// Reparam's pilot gradient against LYY18's (or Score's), component by component.
pub(super) fn reparam_check(
    advice: &mut [EstimatorAdvice],
    names: &[String],
    moving: bool,
    has_ifs: bool,
) -> Option<BiasCheck> {
    if moving || !has_ifs {
        return None;
    }
    let find = |name: &str| {
        advice
            .iter()
            .find(|a| a.estimator == name && a.not_applicable.is_none())
    };
    let reference = find("lyy18").or_else(|| find("score"))?;
    let reparam = find("reparam")?;
    let d = reparam.mean_gradient.len();
    let mut best = (0.0, 0);
    for p in 0..d {
        let se = reparam.standard_error[p].hypot(reference.standard_error[p]);
        let diff = (reparam.mean_gradient[p] - reference.mean_gradient[p]).abs();
        let z = if se > 0.0 {
            diff / se
        } else if diff > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
        if z > best.0 {
            best = (z, p);
        }
    }
    let threshold = probit(1.0 - BIAS_TEST_LEVEL / (2.0 * d.max(1) as f64));
    let check = BiasCheck {
        reference: reference.estimator.clone(),
        max_z: best.0,
        component: names.get(best.1).cloned().unwrap_or_default(),
        threshold,
        biased: best.0 > threshold,
    };
    if let Some(r) = advice.iter_mut().find(|a| a.estimator == "reparam") {
        // The analysis decided; the pilot shows how much it matters at the start.
        let seen = if check.biased {
            format!(
                "the pilot sees it: its gradient differs from {}'s by {:.1} standard errors \
                 (component {})",
                check.reference, check.max_z, check.component
            )
        } else {
            format!(
                "the pilot at the initial parameters does not see it (largest difference from \
                 {}'s gradient {:.1} standard errors, threshold {:.1}), but it is there elsewhere",
                check.reference, check.max_z, check.threshold
            )
        };
        r.bias_note = Some(match r.bias_note.take() {
            Some(why) => format!("{why}; {seen}"),
            None => seen,
        });
    }
    Some(check)
}

/// The recommendation and its reasons: the lowest work-normalised variance among the
/// estimators not biased here (DSGD counts: its bias vanishes as eta tightens), an unbiased
/// one with no eta preferred when DSGD's lead is within the pilot's noise; and why, when the
/// table's lowest row is another. `jumps`: whether any if-statement, a plate body's
/// included, has branches that differ on the boundary.
pub(super) fn recommend(
    check: &CheckReport,
    jumps: bool,
    advice: &[EstimatorAdvice],
    bias: Option<&BiasCheck>,
    gap: Option<&SmoothingGap>,
) -> (String, Vec<String>) {
    let mut reasons = Vec::new();
    let rated: Vec<&EstimatorAdvice> = advice
        .iter()
        .filter(|a| a.not_applicable.is_none() && a.work_ratio_to_score.is_finite())
        .collect();
    if !jumps {
        reasons.push(if check.if_statements == 0 {
            "the model has no if-statements: the reparameterisation gradient is unbiased and \
             needs no smoothing"
                .to_string()
        } else {
            format!(
                "every if-statement ({}) is continuous (its branches agree on the boundary): \
                 the reparameterisation gradient is unbiased and needs no smoothing",
                check.if_statements
            )
        });
        return ("reparam".into(), reasons);
    }
    let choice: String = if let Some(first) = check.param_dependent_guards.first() {
        reasons.push(format!(
            "{} if-statement(s) whose branches differ on the boundary depend on a parameter \
             directly (first at {}): Reparam, Score and RLOO differentiate the crisp program \
             at fixed samples and miss the moving boundary, and LYY18 does not apply; only \
             smoothing accounts for it",
            check.param_dependent_guards.len(),
            first.location
        ));
        "dsgd".into()
    } else {
        if let Some(b) = bias {
            reasons.push(if b.biased {
                format!(
                    "Reparam is biased here: its gradient differs from {}'s by {:.1} standard \
                     errors (threshold {:.1})",
                    b.reference, b.max_z, b.threshold
                )
            } else {
                format!(
                    "Reparam is biased here (its guards read latents), though at the initial \
                     parameters its gradient agrees with {}'s (largest difference {:.1} \
                     standard errors)",
                    b.reference, b.max_z
                )
            });
        }
        let mut unbiased: Vec<&&EstimatorAdvice> =
            rated.iter().filter(|a| a.biased == Some(false)).collect();
        unbiased.sort_by(|a, b| a.work_ratio_to_score.total_cmp(&b.work_ratio_to_score));
        let dsgd = rated.iter().find(|a| a.estimator == "dsgd");
        match (unbiased.first(), dsgd) {
            (Some(u), Some(d)) if u.work_ratio_to_score <= d.work_ratio_to_score => {
                reasons.push(format!(
                    "{} is unbiased and its work-normalised variance at the initial parameters \
                     ({} of Score's) is not above DSGD's ({}): no eta to tune",
                    u.estimator,
                    with_se(u.work_ratio_to_score, u.work_ratio_to_score_se),
                    with_se(d.work_ratio_to_score, d.work_ratio_to_score_se)
                ));
                reasons.extend(rows::also(gap));
                u.estimator.clone()
            }
            (Some(u), Some(d)) if within_noise(d, u) => {
                reasons.push(format!(
                    "DSGD's work-normalised variance ({} of Score's) is below {}'s ({}) by less \
                     than the pilot's noise (2 standard errors): {} is unbiased with no eta to \
                     tune",
                    with_se(d.work_ratio_to_score, d.work_ratio_to_score_se),
                    u.estimator,
                    with_se(u.work_ratio_to_score, u.work_ratio_to_score_se),
                    u.estimator
                ));
                reasons.extend(rows::also(gap));
                u.estimator.clone()
            }
            (_, Some(d)) if let Some((u, why)) = rows::hand_over(gap, &unbiased, d) => {
                reasons.push(why);
                u
            }
            (best, Some(d)) => {
                reasons.push(format!(
                    "DSGD's work-normalised variance is {} of Score's{}; its smoothing bias \
                     vanishes as eta tightens (use --eta auto, and watch the run's smoothing gap)",
                    with_se(d.work_ratio_to_score, d.work_ratio_to_score_se),
                    best.map_or(String::new(), |u| format!(
                        ", below the best unbiased estimator's ({}: {})",
                        u.estimator,
                        with_se(u.work_ratio_to_score, u.work_ratio_to_score_se)
                    ))
                ));
                "dsgd".into()
            }
            (Some(u), None) => u.estimator.clone(),
            (None, None) => "dsgd".into(),
        }
    };
    // The table's lowest row, when it is not the recommendation: say why not.
    if let Some(low) = rated
        .iter()
        .min_by(|a, b| a.work_ratio_to_score.total_cmp(&b.work_ratio_to_score))
        && low.estimator != choice
    {
        let why = match low.biased {
            Some(true) if low.estimator != "dsgd" && low.estimator != "fixed" => {
                "it is biased here (see its row)"
            }
            _ if low.estimator == "dsgd" && gap.is_some_and(|g| g.beyond_noise) => {
                "at the pilot's eta its answer is the smoothed problem's (see above)"
            }
            _ => "the difference is within the pilot's noise and the recommendation needs no eta",
        };
        reasons.push(format!(
            "{} has the table's lowest work-normalised variance ({} of Score's), but {why}",
            low.estimator,
            with_se(low.work_ratio_to_score, low.work_ratio_to_score_se)
        ));
    }
    (choice, reasons)
}

/// Whether `a`'s work ratio is below `b`'s by at most two combined standard errors.
fn within_noise(a: &EstimatorAdvice, b: &EstimatorAdvice) -> bool {
    let se = a.work_ratio_to_score_se.hypot(b.work_ratio_to_score_se);
    b.work_ratio_to_score - a.work_ratio_to_score <= 2.0 * se
}

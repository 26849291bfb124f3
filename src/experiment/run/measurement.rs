//! A measurement at an iterate: the crisp objective estimate with its standard error, the
//! gradient samples' variance, the smoothing gap, and, when something is not finite, which
//! term made it so.

use std::sync::atomic::AtomicBool;

use super::super::culprit;
use super::super::report::TrajectoryRow;
use super::super::summary::guide_moments;
use crate::estimate::{Engine, NonFinite, Purpose, Schedule, StreamKey};
use crate::ir::{Mode, Semantics};

use crate::settings::RunConfig;

/// What went non-finite at iteration `k`, and (when the reference interpreter can tell) the
/// statement whose term did, at the first sample that shows it.
pub(super) fn describe(
    engine: &Engine,
    k: u64,
    nf: NonFinite,
    key: StreamKey,
    theta: &[f64],
) -> String {
    let (what, lane) = match nf {
        // The guide's -log q is finite for finite noise, so a non-finite ELBO sample
        // comes from the model's log-density.
        NonFinite::Value { lane, value } => (
            format!(
                "at iteration {k}: {} is {value} at gradient sample {lane}",
                if engine.problem().mode() == Mode::Variational {
                    "the log-density log p(x, z)"
                } else {
                    "the objective"
                }
            ),
            Some(lane),
        ),
        NonFinite::Gradient { component, value } => (
            format!(
                "at iteration {k}: the gradient with respect to {} is {value}",
                engine.problem().family().names()[component]
            ),
            (0..engine.values().len()).find(|&l| !engine.sample_gradient(l, component).is_finite()),
        ),
    };
    let semantics = engine.estimator().semantics(k);
    match lane.and_then(|l| {
        culprit::explain(
            engine.problem(),
            engine.family_state(),
            theta,
            key,
            l,
            semantics,
        )
    }) {
        Some(why) => format!("{what}; {why}"),
        None => what,
    }
}

/// A measurement: its row and, when the objective estimate is not finite, why; or the
/// message of a family that cannot be evaluated.
pub(super) type Measured = Result<(TrajectoryRow, Option<String>), String>;

/// The measurement row at iteration `k` and `theta`.
pub(super) fn measure(
    engine: &mut Engine,
    cfg: &RunConfig,
    schedule: Schedule,
    theta: &[f64],
    k: u64,
    scratch: &mut (Vec<f64>, Vec<f64>),
    cancel: &AtomicBool,
) -> Option<Measured> {
    let n = cfg.log_samples;
    match engine.evaluate_or_cancel(
        theta,
        StreamKey::new(cfg.seed, k, Purpose::Measure),
        n,
        true,
        cancel,
    ) {
        Err(e) => return Some(Err(format!("at iteration {k}: {e}"))),
        Ok(false) => return None,
        Ok(true) => {}
    }
    let sign = engine.problem().objective_sign();
    let crisp = engine.crisp_values();
    let elbo = sign * crisp.iter().sum::<f64>() / n as f64;
    // Samples that share a chunk's rows are not independent: clusters of a chunk then.
    let cluster = if engine.rows_per_chunk() {
        crate::eval::CHUNK
    } else {
        1
    };
    let value_se = mean_se(crisp, cluster);
    let d = engine.problem().dim();
    let (variances, norms) = scratch;
    engine.gradient_spread(variances, norms);
    let var_sum = variances.iter().fold(0.0, |acc, v| acc + v);
    let var_component = if d == 0 { 0.0 } else { var_sum / d as f64 };
    let var_norm = sample_variance(norms.iter().copied());
    let eta = schedule.eta(k);
    let gap = eta.map(|_| {
        let diffs = engine
            .values()
            .iter()
            .zip(crisp)
            .map(|(s, c)| sign * (s - c));
        let gap = diffs.clone().sum::<f64>() / n as f64;
        let diffs: Vec<f64> = diffs.collect();
        (gap, mean_se(&diffs, cluster))
    });
    let family = engine.problem().family();
    let (latent_loc, latent_scale) = guide_moments(family, theta);
    let row = TrajectoryRow {
        iter: k,
        value: elbo,
        value_se,
        var_component,
        var_norm,
        eta,
        smoothed: gap.map(|(g, _)| elbo + g),
        gap: gap.map(|(g, _)| g),
        gap_se: gap.map(|(_, se)| se),
        params: theta[..family.model_param_count()].to_vec(),
        latent_loc,
        latent_scale,
    };
    let problem = (!elbo.is_finite()).then(|| match crisp.iter().position(|v| !v.is_finite()) {
        Some(l) => {
            let what = format!(
                "at iteration {k}: the objective estimate is {elbo} (f = {} at measurement sample {l})",
                crisp[l]
            );
            let key = StreamKey::new(cfg.seed, k, Purpose::Measure);
            let state = engine.family_state();
            match culprit::explain(engine.problem(), state, theta, key, l, Semantics::Crisp) {
                Some(why) => format!("{what}; {why}"),
                None => what,
            }
        }
        None => format!("at iteration {k}: the objective estimate is {elbo}"),
    });
    Some(Ok((row, problem)))
}

/// The sample variance (ddof 1), two-pass for accuracy.
/// The standard error of the mean of `xs`, whose consecutive runs of `cluster` values are
/// the independent units (1: every value): the cluster-robust formula
/// `sqrt(G / (G - 1) * sum_g (S_g - n_g mean)^2) / n`, which for clusters of one is the
/// sample standard deviation over `sqrt(n)`.
fn mean_se(xs: &[f64], cluster: usize) -> f64 {
    let n = xs.len();
    if cluster <= 1 {
        return (sample_variance(xs.iter().copied()) / n as f64).sqrt();
    }
    let groups = n.div_ceil(cluster);
    if groups < 2 {
        return 0.0;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let ss: f64 = xs
        .chunks(cluster)
        .map(|g| {
            let d = g.iter().sum::<f64>() - g.len() as f64 * mean;
            d * d
        })
        .sum();
    (groups as f64 / (groups - 1) as f64 * ss).sqrt() / n as f64
}

fn sample_variance(xs: impl Iterator<Item = f64> + Clone) -> f64 {
    let (mut n, mut sum) = (0usize, 0.0);
    for x in xs.clone() {
        n += 1;
        sum += x;
    }
    if n < 2 {
        return 0.0;
    }
    let mean = sum / n as f64;
    xs.map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::mean_se;

    #[test]
    fn clusters_of_one_give_the_plain_standard_error_and_larger_ones_the_clustered() {
        let xs = [1.0, 3.0, 2.0, 6.0, 4.0, 8.0];
        // Variance 34 / 5 over 6 values.
        let plain = (6.8f64 / 6.0).sqrt();
        assert!((mean_se(&xs, 1) - plain).abs() < 1e-12);
        // Clusters of two: sums 4, 8, 12 around 2 * 4 = 8: (16 + 0 + 16) * 3/2 = 48.
        assert!((mean_se(&xs, 2) - 48f64.sqrt() / 6.0).abs() < 1e-12);
        // One cluster has no spread to measure.
        assert_eq!(mean_se(&xs, 6), 0.0);
        // A last, shorter cluster: sums 16 and 8 around 5 * 4 and 1 * 4: (16 + 16) * 2 = 64.
        let want = 64f64.sqrt() / 6.0;
        let got = mean_se(&xs, 5);
        assert!((got - want).abs() < 1e-12, "{got} {want}");
    }
}

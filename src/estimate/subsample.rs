//! Subsampled plates: which rows of each plate an iteration reads, drawn afresh, and how the
//! integrand is rescaled so that every estimator stays unbiased for the full-data objective.

use crate::elementary;
use crate::family::{Family, FamilyState};
use crate::special::HALF_LN_2PI;

use super::plates::{PlateRun, Rows};
use super::rng::{Channel, StreamKey};

/// One iteration's subsample: for each plate the rows drawn (increasing) and `n / M`, and
/// what the row latents' part of `-log q` becomes.
///
/// Every estimator is then applied to `f_S`, the integrand with each plate's sum over rows
/// (its body and its rows' own `-log q`) replaced by `n / M` times the sum over the drawn rows
/// `S`. For every `z`, the mean of `f_S` over the draws is `f`: so the pathwise gradient of
/// `f_S` is unbiased for the ELBO's; so is the score estimator's, with the score of the
/// latents `f_S` reads (a row's latents when the row is drawn: an undrawn row's latents do
/// not enter `f_S`, and their score, independent of `f_S`, would add variance only). A
/// drawn row's latents thus get `n / M` times their pathwise gradient, their entropy's
/// included, as in Pyro's subsampled plates.
#[derive(Clone, Debug)]
pub struct Subsample {
    /// Per plate: the drawn rows and `n / M`; `None` where every row is read.
    pub(crate) plates: Vec<Option<(Vec<u32>, f64)>>,
    /// Per model latent, the weight of its `-log q` in `f_S`: 1, or for a row latent `n / M`
    /// when its row is drawn and 0 otherwise. Empty when no subsampled plate has row latents.
    pub(crate) weight: Vec<f64>,
    /// `sum_i weight_i (ln scale_i + ln(2 pi) / 2)` over the latents in the entropy.
    pub(crate) entropy_const: f64,
    /// A step's subsample that reads only what it needs ([`Sparse`]); `weight` is then
    /// empty and `sparse.weights` holds the weights of the latents it reads.
    pub(crate) sparse: Option<Sparse>,
}

/// What a subsampled step over plates with row latents reads, so that it costs `O(M)`
/// whatever the number of rows: the latents it reads (the moved latents outside the
/// subsampled plates' rows, and the drawn rows' own), the weights of their `-log q`, and the
/// components of `theta` its gradient can be non-zero at. The family is evaluated at those
/// latents alone, noise drawn for them alone (the `j`-th normal of a sample's stream for the
/// `j`-th latent read), the gradient assembled and averaged at those components alone, and
/// the optimiser steps those alone: an undrawn row's latents are neither read nor moved.
#[derive(Clone, Debug, Default)]
pub struct Sparse {
    /// The latents read, increasing.
    pub(crate) latents: Vec<u32>,
    /// Per entry of `latents`, the weight of its `-log q` in `f_S`: `n / M` for a drawn
    /// row's latent, 1 for the others.
    pub(crate) weights: Vec<f64>,
    /// The components of `theta` touched, increasing.
    pub(crate) components: Vec<u32>,
}

/// The part of [`Sparse`] that every step shares: the moved latents that are no plate's row
/// latents and the components of `theta` they and the model's parameters make.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedPart {
    pub(crate) latents: Vec<u32>,
    pub(crate) components: Vec<u32>,
}

impl SharedPart {
    /// The shared part of `family`'s latents and components beside `plates`' row latents.
    pub(crate) fn new(family: &Family, plates: &[PlateRun]) -> SharedPart {
        let n = family.latent_count();
        let mut of_a_row = vec![false; n];
        for pr in plates {
            for rl in &pr.plate.row_latents {
                for r in 0..pr.plate.rows {
                    of_a_row[rl.of_row(r) as usize] = true;
                }
            }
        }
        let latents: Vec<u32> = family
            .moved_latents()
            .into_iter()
            .filter(|&i| !of_a_row[i as usize])
            .collect();
        let mut components: Vec<u32> = (0..family.model_param_count() as u32).collect();
        for &i in &latents {
            components.extend(family.own_components(i as usize));
        }
        components.sort_unstable();
        components.dedup();
        SharedPart {
            latents,
            components,
        }
    }
}

/// The [`Sparse`] set of a step that drew `drawn` (per plate, as [`Subsample::plates`]).
pub(crate) fn sparse_set(
    family: &Family,
    plates: &[PlateRun],
    shared: &SharedPart,
    drawn: &[Option<(Vec<u32>, f64)>],
    moved_row: &[u32],
) -> Sparse {
    let mut read: Vec<(u32, f64)> = shared.latents.iter().map(|&i| (i, 1.0)).collect();
    let mut components = shared.components.clone();
    for (pr, d) in plates.iter().zip(drawn) {
        for rl in &pr.plate.row_latents {
            let mut add = |r: usize, wt: f64| {
                let i = rl.of_row(r);
                if moved_row[i as usize] != u32::MAX {
                    read.push((i, wt));
                    components.extend(family.own_components(i as usize));
                }
            };
            match d {
                Some((rows, scale)) => rows.iter().for_each(|&r| add(r as usize, *scale)),
                None => (0..pr.plate.rows).for_each(|r| add(r, 1.0)),
            }
        }
    }
    read.sort_unstable_by_key(|&(i, _)| i);
    components.sort_unstable();
    Sparse {
        latents: read.iter().map(|&(i, _)| i).collect(),
        weights: read.iter().map(|&(_, w)| w).collect(),
        components,
    }
}

/// A step's [`Subsample`] of the rows `drawn` reading only what it needs ([`Sparse`]), with
/// the family evaluated at `theta` for those latents (into `state`).
pub(crate) fn sparse_subsample(
    family: &Family,
    plates: &[PlateRun],
    shared: &SharedPart,
    drawn: Vec<Option<(Vec<u32>, f64)>>,
    moved_row: &[u32],
    state: &mut FamilyState,
    theta: &[f64],
) -> Result<Subsample, crate::family::FamilyError> {
    let sparse = sparse_set(family, plates, shared, &drawn, moved_row);
    state.update_latents(family, theta, &sparse.latents)?;
    let mut entropy_const = 0.0;
    for (&i, &wt) in sparse.latents.iter().zip(&sparse.weights) {
        let i = i as usize;
        if family.in_entropy[i] && wt != 0.0 {
            entropy_const += wt * (elementary::ln(state.scale(i)) + HALF_LN_2PI);
        }
    }
    Ok(Subsample {
        plates: drawn,
        weight: Vec::new(),
        entropy_const,
        sparse: Some(sparse),
    })
}

impl Subsample {
    /// The rows of plate `p`.
    pub(crate) fn rows(this: Option<&Subsample>, p: usize) -> Rows<'_> {
        match this.and_then(|s| s.plates[p].as_ref()) {
            Some((rows, scale)) => Rows::Drawn {
                rows,
                scale: *scale,
            },
            None => Rows::All,
        }
    }

    /// The weights of the latents' `-log q`, when some are not 1.
    pub(crate) fn weights(this: Option<&Subsample>) -> Option<&[f64]> {
        this.map(|s| &s.weight[..]).filter(|w| !w.is_empty())
    }

    /// The [`Sparse`] set of a step that reads only what it needs.
    pub(crate) fn sparse(this: Option<&Subsample>) -> Option<&Sparse> {
        this.and_then(|s| s.sparse.as_ref())
    }

    /// The rows drawn of plate `p`, `None` where every row is read.
    pub fn drawn(&self, p: usize) -> Option<&[u32]> {
        self.plates[p].as_ref().map(|(r, _)| &r[..])
    }
}

/// `m` distinct rows of `0..n`, increasing, drawn by Floyd's algorithm from `key`'s rows
/// channel (a function of the seed, purpose and iteration alone: the same for every sample).
pub(crate) fn draw_rows(key: StreamKey, lane: usize, n: usize, m: usize) -> Vec<u32> {
    let mut rng = key.rng(Channel::Rows);
    // Each plate (and, for measurements, each chunk's plates) its own lane of the stream.
    rng.lane(lane);
    let mut chosen = std::collections::HashSet::with_capacity(m);
    for j in n - m..n {
        let t = rng.index(j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    let mut rows: Vec<u32> = chosen.into_iter().map(|r| r as u32).collect();
    rows.sort_unstable();
    rows
}

/// Per plate, the `m` rows drawn for iteration `key` from stream `stream` and `n / m`
/// (`None` for a plate of at most `m` rows); `None` when no plate has more than `m` rows.
#[allow(clippy::type_complexity)]
pub(crate) fn drawn_rows(
    plates: &[PlateRun],
    key: StreamKey,
    m: usize,
    stream: usize,
) -> Option<Vec<Option<(Vec<u32>, f64)>>> {
    let drawn: Vec<Option<(Vec<u32>, f64)>> = plates
        .iter()
        .enumerate()
        .map(|(p, pr)| {
            let n = pr.plate.rows;
            let lane = stream * plates.len() + p;
            (m < n).then(|| (draw_rows(key, lane, n, m), n as f64 / m as f64))
        })
        .collect();
    (!drawn.iter().all(Option::is_none)).then_some(drawn)
}

/// The subsample of `m` rows a plate for iteration `key` (`None` when no plate has more than
/// `m` rows).
pub(crate) fn subsample(
    plates: &[PlateRun],
    in_entropy: &[bool],
    key: StreamKey,
    m: usize,
    state: &FamilyState,
    stream: usize,
) -> Option<Subsample> {
    let drawn = drawn_rows(plates, key, m, stream)?;
    let with_latents = plates
        .iter()
        .zip(&drawn)
        .any(|(pr, d)| d.is_some() && !pr.plate.row_latents.is_empty());
    let mut weight = Vec::new();
    let mut entropy_const = state.entropy_const();
    if with_latents {
        weight = vec![1.0; in_entropy.len()];
        for (pr, d) in plates.iter().zip(&drawn) {
            let Some((rows, scale)) = d else { continue };
            for rl in &pr.plate.row_latents {
                for r in 0..pr.plate.rows {
                    weight[rl.of_row(r) as usize] = 0.0;
                }
                for &r in rows {
                    weight[rl.of_row(r as usize) as usize] = *scale;
                }
            }
        }
        entropy_const = 0.0;
        for (i, (&wt, &e)) in weight.iter().zip(in_entropy).enumerate() {
            if e && wt != 0.0 {
                entropy_const += wt * (elementary::ln(state.scale(i)) + HALF_LN_2PI);
            }
        }
    }
    Some(Subsample {
        plates: drawn,
        weight,
        entropy_const,
        sparse: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::Purpose;

    /// The rows are distinct, increasing, in range, the same for a key and different for
    /// another iteration; every row is drawn about equally often.
    #[test]
    fn drawn_rows_are_distinct_and_uniform() {
        let (n, m) = (20, 5);
        let mut counts = vec![0usize; n];
        let draws = 4000;
        for it in 0..draws {
            let key = StreamKey::new(7, it, Purpose::Step);
            let rows = draw_rows(key, 0, n, m);
            assert_eq!(rows.len(), m);
            assert!(rows.windows(2).all(|p| p[0] < p[1]));
            assert!(rows.iter().all(|&r| (r as usize) < n));
            assert_eq!(rows, draw_rows(key, 0, n, m));
            for r in rows {
                counts[r as usize] += 1;
            }
        }
        // Each row is drawn with probability m / n: binomial counts, 5 standard errors.
        let p = m as f64 / n as f64;
        let mean = draws as f64 * p;
        let se = (draws as f64 * p * (1.0 - p)).sqrt();
        for c in counts {
            assert!((c as f64 - mean).abs() < 5.0 * se, "{c} against {mean}");
        }
    }
}

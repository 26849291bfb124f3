//! `dsgd diagnose`: the automatic gradient checked against central finite differences.
//!
//! At a few random `(theta, s)` the gradient of `f(theta, phi_theta(s))` from the tape and
//! the family (what every pathwise estimator uses) is compared with central differences of
//! the reference interpreter (`Program::evaluate_all`), in crisp and in smoothed semantics.
//! In crisp semantics a component whose difference quotient crosses a branch boundary is
//! skipped (and counted): the crisp function is discontinuous there.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::estimate::{Channel, Problem, Purpose, StreamKey};
use crate::eval::Values;
use crate::family::{Block, FamilyError, FamilyState};
use crate::ir::{Model, Node, Semantics};

/// Where and how strictly to check.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagnoseConfig {
    /// Random points to check at.
    pub points: usize,
    /// The seed of the random points.
    pub seed: u64,
    /// The accuracy coefficient of the smoothed check.
    pub eta: f64,
    /// Largest acceptable relative error `|ad - fd| / max(1, |ad|, |fd|)`.
    pub tolerance: f64,
    /// Standard deviation of the random perturbation of the initial `theta`.
    pub spread: f64,
}

impl Default for DiagnoseConfig {
    fn default() -> Self {
        DiagnoseConfig {
            points: 3,
            seed: 0,
            eta: crate::settings::DEFAULT_ETA,
            tolerance: 1e-4,
            spread: 0.3,
        }
    }
}

/// The worst error of one block of parameters in one semantics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlockResult {
    /// `crisp` or `smoothed`.
    pub semantics: String,
    /// `params`, `mu` or `rho`.
    pub block: String,
    /// Components compared (over all points).
    pub compared: usize,
    /// Components skipped because a branch flipped inside the difference quotient.
    pub skipped: usize,
    /// The largest relative error over the compared components.
    pub worst_relative_error: f64,
    /// The component where it is, by name.
    pub worst_component: Option<String>,
    /// Whether `worst_relative_error` is within the tolerance.
    pub passed: bool,
}

/// Everything `dsgd diagnose` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiagnoseReport {
    /// The model's name.
    pub model: String,
    /// Random points checked.
    pub points: usize,
    /// The accuracy coefficient of the smoothed check.
    pub eta: f64,
    /// The largest acceptable relative error.
    pub tolerance: f64,
    /// One result per block of parameters and semantics.
    pub blocks: Vec<BlockResult>,
    /// Whether every block passed.
    pub passed: bool,
}

/// Per (semantics, block): compared, skipped, worst error, worst component.
type Tally = (usize, usize, f64, Option<String>);

/// Checks `model`'s gradients at `config.points` random points.
pub fn diagnose(model: &Model, config: &DiagnoseConfig) -> Result<DiagnoseReport, FamilyError> {
    let problem = Problem::new(model)?;
    let fam = problem.family();
    let (d, n) = (problem.dim(), fam.latent_count());
    let mut state = fam.state();
    let mut probe = fam.state();
    let mut scratch = problem.scratch();
    let mut ad = vec![0.0; d];
    let sems = [
        ("crisp", Semantics::Crisp),
        ("smoothed", Semantics::Smoothed { eta: config.eta }),
    ];
    let mut acc: BTreeMap<(usize, Block), Tally> = BTreeMap::new();
    let mut taken = 0;
    let mut attempt = 0u64;
    while taken < config.points && attempt < 4 * config.points as u64 + 4 {
        let key = StreamKey::new(config.seed, attempt, Purpose::Diagnose);
        attempt += 1;
        let mut theta = fam.init();
        let mut choice = key.rng(Channel::Choice);
        let r = choice.lane(0);
        for t in theta.iter_mut() {
            *t += config.spread * r.normal();
        }
        if state.update(fam, &theta).is_err() {
            continue;
        }
        problem.draw(key, 0, 1, &mut scratch);
        taken += 1;
        let s: Vec<f64> = scratch.s[..n].to_vec();
        for (si, &(_, sem)) in sems.iter().enumerate() {
            problem.sweep_gradient(&state, &theta, sem, &mut scratch, Values::Exact, None);
            problem.pathwise_block(&state, &scratch, &mut ad, None);
            for p in 0..d {
                let h = 1e-5 * theta[p].abs().max(1.0);
                let mut t = theta.clone();
                t[p] = theta[p] + h;
                let plus = reference_f(&problem, &mut probe, &t, &s, sem);
                t[p] = theta[p] - h;
                let minus = reference_f(&problem, &mut probe, &t, &s, sem);
                let entry = acc
                    .entry((si, fam.blocks()[p]))
                    .or_insert((0, 0, 0.0, None));
                let (Some((fp, gp)), Some((fm, gm))) = (plus, minus) else {
                    entry.1 += 1;
                    continue;
                };
                if gp != gm {
                    entry.1 += 1;
                    continue;
                }
                let fd = (fp - fm) / (2.0 * h);
                let err = (ad[p] - fd).abs() / 1f64.max(ad[p].abs()).max(fd.abs());
                let err = if err.is_nan() { f64::INFINITY } else { err };
                entry.0 += 1;
                if entry.3.is_none() || err > entry.2 {
                    entry.2 = err;
                    entry.3 = Some(fam.names()[p].clone());
                }
            }
        }
    }
    let blocks: Vec<BlockResult> = acc
        .into_iter()
        .map(
            |((si, block), (compared, skipped, worst, comp))| BlockResult {
                semantics: sems[si].0.to_string(),
                block: block.name().to_string(),
                compared,
                skipped,
                worst_relative_error: worst,
                worst_component: comp,
                passed: worst <= config.tolerance,
            },
        )
        .collect();
    Ok(DiagnoseReport {
        model: problem.name().to_string(),
        points: taken,
        eta: config.eta,
        tolerance: config.tolerance,
        passed: blocks.iter().all(|b| b.passed),
        blocks,
    })
}

/// `f(theta, phi_theta(s))` by the reference interpreter, with the signs of every guard
/// (to detect a branch flip in crisp semantics). `None` when the family is invalid there.
fn reference_f(
    problem: &Problem,
    state: &mut FamilyState,
    theta: &[f64],
    s: &[f64],
    sem: Semantics,
) -> Option<(f64, Vec<bool>)> {
    let fam = problem.family();
    state.update(fam, theta).ok()?;
    let n = fam.latent_count();
    let z: Vec<f64> = (0..n)
        .map(|i| state.loc(i) + state.scale(i) * s[i])
        .collect();
    let program = problem.program();
    let vals = program.evaluate_all(sem, &theta[..fam.model_param_count()], &z);
    let mut f = vals[program.output().index()];
    let sq: f64 = (0..n)
        .filter(|&i| fam.in_entropy(i))
        .map(|i| s[i] * s[i])
        .sum();
    if (0..n).any(|i| fam.in_entropy(i)) {
        f += state.entropy_const() + 0.5 * sq;
    }
    let signs = if sem == Semantics::Crisp {
        (0..program.if_count())
            .map(|k| match program.node(program.if_node(k)) {
                Node::If { guard, .. } => vals[guard.index()] < 0.0,
                _ => false,
            })
            .collect()
    } else {
        Vec::new()
    };
    Some((f, signs))
}

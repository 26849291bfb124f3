//! LYY18 in the scale parameters, measured on a built-in model: our LYY18 against Score,
//! central finite differences of the crisp ELBO, smoothed pathwise at a small eta, and the
//! variant of LYY18 that takes the boundary term's Jacobian factor at the sampled `z`
//! instead of the boundary point (what the paper's public reference code computes).
//!
//! ```sh
//! cargo run --release --example fidelity_gradients -- [model] [iterations] [samples] [components]
//! cargo run --release --example fidelity_gradients -- temperature 0 2097152 6
//! ```
//!
//! The parameters: LYY18 trained for `iterations` steps from the model's initial guide (the
//! paper's Adam settings, seed 0; 0 keeps the initial guide, where on `temperature` every
//! heater switch `qn >= 0.5` is a coin toss, so boundary crossings are common). For the
//! `components` scale parameters (`rho`) where our LYY18 and the variant differ most, it
//! prints each estimate's mean ± standard error over `samples` samples.
//!
//! The variant is built from the same samples: every guard of the model must involve one
//! latent (true of `temperature`), so a sample's boundary term touches only the moved
//! latent's `mu` and `rho`, `b_rho = b_mu s* dsigma/drho`; the variant replaces `s* =
//! (z* - mu) / sigma` by the sample's own `s`: `reparam_rho + b_mu s dsigma/drho`.

use rayon::prelude::*;

use dsgd::estimate::{self, Channel, Engine, EstimatorKind, Problem, Purpose, StreamKey};
use dsgd::experiment::protocol::paper_settings;
use dsgd::experiment::run::{RunConfig, run};
use dsgd::optim::{AdamConfig, OptimizerConfig};
use dsgd::special::sigmoid;

/// Samples per engine call.
const BATCH: usize = 16_384;
/// Finite-difference step in `rho`.
const H: f64 = 0.02;
/// The smoothed estimator's accuracy.
const ETA: f64 = 0.001;

/// Running sums of one quantity per component.
#[derive(Clone)]
struct Acc {
    sum: Vec<f64>,
    sq: Vec<f64>,
    n: f64,
}

impl Acc {
    fn new(d: usize) -> Acc {
        Acc {
            sum: vec![0.0; d],
            sq: vec![0.0; d],
            n: 0.0,
        }
    }
    fn mean_se(&self, p: usize) -> (f64, f64) {
        let m = self.sum[p] / self.n;
        let var = (self.sq[p] / self.n - m * m).max(0.0) * self.n / (self.n - 1.0);
        (m, (var / self.n).sqrt())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("temperature", String::as_str);
    let iterations: u64 = args.get(1).map_or(Ok(0), |s| s.parse())?;
    let samples: usize = args.get(2).map_or(Ok(1 << 21), |s| s.parse())?;
    let shown: usize = args.get(3).map_or(Ok(6), |s| s.parse())?;
    let model = dsgd::builtin(name).ok_or("not a built-in model")??;
    let problem = Problem::new(&model)?;
    if problem
        .analysis()
        .guards
        .iter()
        .any(|g| g.affine.as_ref().map_or(true, |a| a.coefficients.len() > 1))
    {
        return Err(format!("{name} has a guard that is not affine in one latent").into());
    }
    let theta = if iterations == 0 {
        problem.family().init()
    } else {
        let (lr, decay) = paper_settings(name);
        let cfg = RunConfig {
            estimator: EstimatorKind::Lyy18,
            eta_decay: decay,
            iterations,
            optimizer: OptimizerConfig::Adam(AdamConfig {
                lr,
                ..AdamConfig::default()
            }),
            log_every: iterations,
            ..RunConfig::default()
        };
        run(&model, &cfg, &mut [])?.theta
    };
    let names = problem.family().names().to_vec();
    let d = theta.len();
    let engine = |kind, eta| -> Result<Engine, Box<dyn std::error::Error>> {
        let e = estimate::build(kind, &problem, eta, None)?;
        Ok(Engine::new(problem.clone(), e))
    };
    let (mut lyy, mut rep) = (
        engine(EstimatorKind::Lyy18, 0.1)?,
        engine(EstimatorKind::Reparam, 0.1)?,
    );
    let mut score = engine(EstimatorKind::Score, 0.1)?;
    let mut smooth = engine(EstimatorKind::Fixed, ETA)?;
    // The (mu, rho) parameter pair of each guided latent, from the family's names.
    let latent_of: Vec<Option<(usize, usize)>> = (0..d)
        .map(|p| {
            let n = names[p].strip_prefix("rho[")?;
            let mu = names
                .iter()
                .position(|m| m.strip_prefix("mu[") == Some(n))?;
            Some((mu, p))
        })
        .collect();
    let mut state = problem.family().state();
    state.update(problem.family(), &theta)?;
    let n_lat = problem.family().latent_count();
    // Latent index of each rho parameter: the latent whose scale Jacobian names it.
    let mut latent_index = vec![usize::MAX; d];
    for i in 0..n_lat {
        for (p, _dl, ds) in state.jacobian(i) {
            if ds != 0.0 {
                latent_index[p] = i;
            }
        }
    }
    let mut accs = vec![Acc::new(d); 4];
    let mut noise = vec![0.0; n_lat * BATCH];
    let calls = samples.div_ceil(BATCH);
    for it in 0..calls as u64 {
        let key = StreamKey::new(11, it, Purpose::Other(0xF1D));
        lyy.evaluate(&theta, key, BATCH, false)?;
        rep.evaluate(&theta, key, BATCH, false)?;
        score.evaluate(&theta, key, BATCH, false)?;
        smooth.evaluate(&theta, key, BATCH, false)?;
        key.rng(Channel::Noise)
            .fill_lanes(0, BATCH, n_lat, &mut noise);
        for l in 0..BATCH {
            for p in 0..d {
                let (ours, r) = (lyy.sample_gradient(l, p), rep.sample_gradient(l, p));
                let variant = match latent_of[p] {
                    Some((mu, _)) if latent_index[p] != usize::MAX => {
                        let i = latent_index[p];
                        let b_mu = lyy.sample_gradient(l, mu) - rep.sample_gradient(l, mu);
                        r + b_mu * noise[i * BATCH + l] * sigmoid(theta[p])
                    }
                    _ => ours,
                };
                let xs = [
                    ours,
                    variant,
                    score.sample_gradient(l, p),
                    smooth.sample_gradient(l, p),
                ];
                for (a, x) in accs.iter_mut().zip(xs) {
                    a.sum[p] += x;
                    a.sq[p] += x * x;
                }
            }
        }
        for a in accs.iter_mut() {
            a.n += BATCH as f64;
        }
    }
    // The rho components where ours and the variant differ most, in standard errors.
    let mut order: Vec<usize> = (0..d).filter(|&p| latent_of[p].is_some()).collect();
    let z = |p: usize| {
        let (a, sa) = accs[0].mean_se(p);
        let (b, sb) = accs[1].mean_se(p);
        (a - b).abs() / (sa * sa + sb * sb).sqrt()
    };
    order.sort_by(|&a, &b| z(b).total_cmp(&z(a)));
    order.truncate(shown);
    // Central finite differences of the crisp ELBO in those components, common noise.
    let fd = order
        .iter()
        .map(|&p| finite_difference(&problem, &theta, p, samples))
        .collect::<Result<Vec<_>, _>>()?;
    println!(
        "{name}: LYY18 trained {iterations} iterations (seed 0); {} samples per estimate; finite differences h = {H}, smoothed η = {ETA}",
        calls * BATCH
    );
    println!(
        "| component | ours (LYY18) | reference variant | z(ours − variant) | Score | finite differences | smoothed η={ETA} |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let f = |(m, se): (f64, f64)| format!("{m:.1} ± {se:.1}");
    for (&p, &fd) in order.iter().zip(&fd) {
        println!(
            "| {} | {} | {} | {:.1} | {} | {} | {} |",
            names[p],
            f(accs[0].mean_se(p)),
            f(accs[1].mean_se(p)),
            z(p),
            f(accs[2].mean_se(p)),
            f(fd),
            f(accs[3].mean_se(p)),
        );
    }
    let zmax_mu = (0..d)
        .filter(|&p| latent_of[p].is_none())
        .map(|p| {
            let (a, sa) = accs[0].mean_se(p);
            let (b, sb) = accs[2].mean_se(p);
            (a - b).abs() / (sa * sa + sb * sb).sqrt()
        })
        .fold(0.0, f64::max);
    let zmax_rho = (0..d)
        .filter(|&p| latent_of[p].is_some())
        .map(|p| {
            let (a, sa) = accs[0].mean_se(p);
            let (b, sb) = accs[2].mean_se(p);
            (a - b).abs() / (sa * sa + sb * sb).sqrt()
        })
        .fold(0.0, f64::max);
    let zmax_variant = (0..d)
        .filter(|&p| latent_of[p].is_some())
        .map(z)
        .fold(0.0, f64::max);
    println!(
        "max |z| ours vs Score: {zmax_mu:.1} over the mu (and model) components, {zmax_rho:.1} over the rho components; ours vs the variant over the rho components: {zmax_variant:.1}"
    );
    Ok(())
}

/// `(ELBO(theta + h e_p) - ELBO(theta - h e_p)) / 2h` with the same noise on both sides,
/// mean ± standard error over `samples` samples.
fn finite_difference(
    problem: &Problem,
    theta: &[f64],
    p: usize,
    samples: usize,
) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    const CHUNK: usize = dsgd::eval::CHUNK;
    const BLOCK: usize = 4096;
    let side = |sign: f64| -> Result<dsgd::family::FamilyState, Box<dyn std::error::Error>> {
        let mut t = theta.to_vec();
        t[p] += sign * H;
        let mut st = problem.family().state();
        st.update(problem.family(), &t)?;
        Ok(st)
    };
    let (plus, minus) = (side(1.0)?, side(-1.0)?);
    let key = StreamKey::new(12, p as u64, Purpose::Other(0xF1D));
    let blocks = samples.div_ceil(BLOCK);
    let parts: Vec<(f64, f64)> = (0..blocks)
        .into_par_iter()
        .map(|b| {
            let mut sc = problem.scratch();
            let (mut hi, mut lo) = ([0.0; CHUNK], [0.0; CHUNK]);
            let (mut s, mut sq) = (0.0, 0.0);
            for c in 0..BLOCK / CHUNK {
                let first = b * BLOCK + c * CHUNK;
                problem.draw(key, first, CHUNK, &mut sc);
                problem.crisp_values(&plus, theta, &mut sc, &mut hi);
                problem.crisp_values(&minus, theta, &mut sc, &mut lo);
                for (h, l) in hi.iter().zip(&lo) {
                    let x = (h - l) / (2.0 * H);
                    s += x;
                    sq += x * x;
                }
            }
            (s, sq)
        })
        .collect();
    let n = (blocks * BLOCK) as f64;
    let (s, sq) = parts
        .iter()
        .fold((0.0, 0.0), |(a, b), (c, e)| (a + c, b + e));
    let m = s / n;
    let var = (sq / n - m * m).max(0.0) * n / (n - 1.0);
    Ok((m, (var / n).sqrt()))
}

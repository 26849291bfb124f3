//! Gradient throughput of a plate: the threshold regression (one if-statement per data row,
//! `y[i] ~ Bernoulli(if a + b x[i] < 0 { 0.1 } else { 0.9 })`, `a, b ~ Normal(0, 5)`) with
//! its loop kept as a plate, or unrolled, in rows x samples per second of optimisation
//! steps (batch 16), per estimator: the figure to set beside a JAX user's vectorised code of
//! the same model (jit of the gradient, vmap over the 16 samples), one core each.
//!
//! `survey` gives every row a latent of its own, `u[i] ~ Normal(a, 1)`, read by its guard
//! (`u[i] + b x[i] < 0`), as a survey's students are.
//!
//! `sub=M` makes each step read M rows drawn afresh (`--subsample M`); the figure is then
//! per row read.
//!
//! Usage: `cargo run --release --example plate_rows -- N [unrolled] [survey] [sub=M]
//! [SECONDS] [ESTIMATOR...]`.

use std::sync::Arc;
use std::time::Instant;

use dsgd::estimate::{Engine, EstimatorKind, Problem, Purpose, SampleRng, StreamKey, build};
use dsgd::ir::{
    Builder, Dist, LatentKind, LatentSpec, Mode, Model, Plate, RowLatents, Shared, Var,
};

/// `x ~ N(0, 1)`, `y = [0.5 + 1.5 x + e > 0]`, from the crate's own generator.
fn data(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut rng: SampleRng =
        StreamKey::new(1, 0, Purpose::Other(0)).rng(dsgd::estimate::Channel::Noise);
    rng.lane(0);
    let x: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let y = x
        .iter()
        .map(|&x| f64::from(0.5 + 1.5 * x + rng.normal() > 0.0))
        .collect();
    (x, y)
}

fn row<'b>(
    bld: &'b Builder,
    a: Var<'b>,
    b: Var<'b>,
    x: Var<'b>,
    y: Var<'b>,
    u: Option<Var<'b>>,
) -> Var<'b> {
    let Some(u) = u else {
        let p = bld.if_neg(a + b * x, bld.constant(0.1), bld.constant(0.9));
        return bld.log_density(Dist::Bernoulli, y, &[p]).unwrap();
    };
    let p = bld.if_neg(u + b * x, bld.constant(0.2), bld.constant(0.8));
    bld.log_density(Dist::Normal, u, &[a, bld.constant(1.0)])
        .unwrap()
        + bld.log_density(Dist::Bernoulli, y, &[p]).unwrap()
}

fn model(n: usize, unrolled: bool, survey: bool) -> Model {
    let (x, y) = data(n);
    let bld = Builder::new();
    let (a, b) = (bld.latent("a"), bld.latent("b"));
    let us: Vec<Var> = if survey {
        (0..n).map(|r| bld.latent(&format!("u[{r}]"))).collect()
    } else {
        Vec::new()
    };
    let (zero, five) = (bld.constant(0.0), bld.constant(5.0));
    let mut f = bld.log_density(Dist::Normal, a, &[zero, five]).unwrap()
        + bld.log_density(Dist::Normal, b, &[zero, five]).unwrap();
    let mut plates = Vec::new();
    if unrolled {
        for r in 0..n {
            let (xr, yr) = (bld.constant(x[r]), bld.constant(y[r]));
            f = f + row(&bld, a, b, xr, yr, us.get(r).copied());
        }
    } else {
        let body = Builder::new();
        let (ba, bb) = (body.param("a"), body.param("b"));
        let (bx, by) = (body.latent("x"), body.latent("y"));
        let bu = survey.then(|| body.latent("u"));
        let g = row(&body, ba, bb, bx, by, bu);
        plates.push(Plate {
            var: "i".into(),
            span: None,
            rows: n,
            body: Arc::new(body.finish(&[g]).unwrap()),
            shared: vec![Shared::Latent(0), Shared::Latent(1)],
            columns: vec![x.into(), y.into()],
            row_latents: if survey {
                vec![RowLatents {
                    first: 2,
                    stride: 1,
                }]
            } else {
                Vec::new()
            },
        });
    }
    let guided = |name: &str| LatentSpec {
        name: name.into(),
        kind: LatentKind::Guided {
            init_mean: 0.0,
            init_std: 1.0,
        },
        span: None,
    };
    Model {
        name: "threshold".into(),
        mode: Mode::Variational,
        program: bld.finish(&[f]).unwrap().into(),
        latents: [guided("a"), guided("b")]
            .into_iter()
            .chain((0..us.len()).map(|r| guided(&format!("u[{r}]"))))
            .collect(),
        params: Vec::new(),
        plates,
        loops: Vec::new(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let unrolled = args.iter().any(|a| a == "unrolled");
    let survey = args.iter().any(|a| a == "survey");
    let sub: Option<usize> = args
        .iter()
        .find_map(|a| a.strip_prefix("sub=").and_then(|m| m.parse().ok()));
    let seconds: f64 = args
        .iter()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1.0);
    let t = Instant::now();
    let m = model(n, unrolled, survey);
    let problem = Problem::new(&m).unwrap();
    let build_s = t.elapsed().as_secs_f64();
    let theta = problem.family().init();
    let batch = 16;
    let named: Vec<EstimatorKind> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let kinds = if named.is_empty() {
        vec![
            EstimatorKind::Dsgd,
            EstimatorKind::Reparam,
            EstimatorKind::Score,
            EstimatorKind::Rloo,
        ]
    } else {
        named
    };
    for kind in kinds {
        let mut e = Engine::new(problem.clone(), build(kind, &problem, 0.1, None).unwrap());
        e.set_subsample(sub);
        // Warm up (kernel choice, compiled sweeps), then steps for about `seconds`.
        e.step(&theta, StreamKey::new(0, 0, Purpose::Step), batch)
            .unwrap();
        let t = Instant::now();
        let mut steps = 0u64;
        while t.elapsed().as_secs_f64() < seconds {
            e.step(&theta, StreamKey::new(0, 1 + steps, Purpose::Step), batch)
                .unwrap();
            steps += 1;
        }
        let s = t.elapsed().as_secs_f64() / steps as f64;
        println!(
            "{{\"n\": {n}, \"survey\": {survey}, \"subsample\": {sub:?}, \"form\": \"{}\", \"estimator\": \"{kind}\", \"build_s\": {build_s:.3}, \"seconds_per_step\": {s:.3e}, \"row_samples_per_second\": {:.3e}}}",
            if unrolled { "unrolled" } else { "plate" },
            (sub.map_or(n, |m| m.min(n)) * batch) as f64 / s
        );
    }
}

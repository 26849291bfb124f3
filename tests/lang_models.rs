//! The built-in models compile, and `dsgd check`'s facts about them are the paper's: latents,
//! if-statements and nesting depth (models/*.dsgd), safety and LYY18 applicability.

use dsgd::experiment::check::CheckReport;
use dsgd::ir::{LatentKind, Mode, Model, Semantics};
use dsgd::models::{builtin, builtin_names};
use dsgd::special::softplus;

fn model(name: &str) -> Model {
    builtin(name)
        .expect("a built-in")
        .unwrap_or_else(|e| panic!("{name} does not compile:\n{e}"))
}

fn report(name: &str) -> CheckReport {
    CheckReport::new(&model(name), &|s| format!("{}..{}", s.start, s.end))
}

#[test]
fn paper_counts() {
    // (name, latents, if-statements, depth, LYY18 applicable)
    let expected = [
        ("example", 1, 1, 1, true),
        ("temperature", 41, 80, 1, true),
        ("xornet", 25, 28, 3, false),
        ("walk", 16, 31, 1, true),
        ("cheating", 301, 300, 1, true),
        ("textmsg", 3, 37, 1, true),
        ("influenza", 37, 24, 1, true),
    ];
    assert_eq!(builtin_names().len(), expected.len());
    for (name, latents, ifs, depth, lyy18) in expected {
        let r = report(name);
        assert_eq!(
            (r.latents, r.if_statements, r.nesting_depth),
            (latents, ifs, depth),
            "{name}"
        );
        assert_eq!(r.lyy18_applicable, lyy18, "{name}");
        assert_eq!(r.lyy18_blocked_by.is_none(), lyy18, "{name}");
    }
}

#[test]
fn example_is_safe_objective_with_one_parameter() {
    let r = report("example");
    assert_eq!(r.params, 1);
    assert!(r.safe);
    assert_eq!(r.default_eta_decay, 0.5);
    let m = model("example");
    assert_eq!(m.mode, Mode::Objective { minimize: false });
    assert!(matches!(m.latents[0].kind, LatentKind::Family { .. }));
    assert_eq!(m.params[0].init, 1.0);
}

#[test]
fn example_family_outputs_are_theta_and_one() {
    let m = model("example");
    let LatentKind::Family { loc, scale } = m.latents[0].kind else {
        panic!("a family latent")
    };
    let v = m.program.evaluate_all(Semantics::Crisp, &[0.7], &[0.3]);
    assert_eq!(v[loc.index()], 0.7);
    assert_eq!(v[scale.index()], 1.0);
    // f(z) = -z^2/2 + [z >= 0] at z = 0.3 and z = -0.3.
    assert_eq!(
        m.program.evaluate(Semantics::Crisp, &[0.7], &[0.3]),
        -0.045 + 1.0
    );
    assert_eq!(
        m.program.evaluate(Semantics::Crisp, &[0.7], &[-0.3]),
        -0.045
    );
}

#[test]
fn paper_models_are_variational_and_safe_except_xornet() {
    for name in ["temperature", "walk", "cheating", "textmsg", "influenza"] {
        let r = report(name);
        assert_eq!(r.params, 0, "{name}");
        assert!(r.safe, "{name}: {:?}", r.unsafe_guards);
        assert_eq!(model(name).mode, Mode::Variational);
    }
    let x = report("xornet");
    assert!(!x.safe);
    // Layers 2 and 3 (4 inputs x 3 guards) are built from the steps of the layer before.
    assert_eq!(x.unsafe_guards.len(), 12);
    assert_eq!(x.default_eta_decay, 1.0 / 6.0);
}

fn guide(m: &Model, name: &str) -> (f64, f64) {
    let l = m
        .latents
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no latent {name}"));
    match l.kind {
        LatentKind::Guided {
            init_mean,
            init_std,
        } => (init_mean, init_std),
        k => panic!("{name} is {k:?}"),
    }
}

#[test]
fn guide_initialisations_follow_design() {
    let t = model("temperature");
    assert_eq!(guide(&t, "t"), (20.0, 0.001));
    assert_eq!(guide(&t, "qn[1]"), (0.5, 0.001));
    // t_i starts at obs_{i-1}: the first observed temperature for t_1.
    assert_eq!(guide(&t, "t[1]"), (19.793315726903277, 0.4));

    let w = model("walk");
    assert_eq!(guide(&w, "x_0"), (5.0, softplus(1.0)));
    assert!((softplus(1.0) - 1.3133).abs() < 1e-4);

    let c = model("cheating");
    assert_eq!(guide(&c, "c"), (0.0, softplus(1.0)));
    let fixed = c
        .latents
        .iter()
        .filter(|l| {
            matches!(
                l.kind,
                LatentKind::Fixed {
                    loc: 0.0,
                    scale: 1.0
                }
            )
        })
        .count();
    assert_eq!(fixed, 300);

    let x = model("textmsg");
    let (m, sd) = guide(&x, "l1");
    assert!((sd - 0.83255).abs() < 1e-5, "{sd}");
    assert!((m - 2.63624).abs() < 1e-5, "{m}");
    assert_eq!(guide(&x, "tau"), (0.0, softplus(1.0)));

    let f = model("influenza");
    for l in &f.latents {
        assert_eq!(
            guide(&f, &l.name),
            (0.0, std::f64::consts::LN_2),
            "{}",
            l.name
        );
    }

    let n = model("xornet");
    // The reference implementation's jax.random.normal(PRNGKey(0), (25,)), first and last.
    assert_eq!(guide(&n, "W1[0][0]"), (1.622642159461975, 1.0));
    assert_eq!(guide(&n, "b3[0]"), (0.13132767379283905, 1.0));
}

/// The cheating model's log-likelihood at a point, computed by hand from its definition.
#[test]
fn cheating_value_matches_definition() {
    let m = model("cheating");
    let n = m.latents.len();
    let mut z = vec![0.0; n];
    // c = 0.1; students alternate: u above/below c, v, w of alternating signs.
    z[0] = 0.1;
    let mut yes = 0.0;
    for k in 0..100 {
        let (u, v, w) = (
            if k % 3 == 0 { 0.5 } else { -0.5 },
            if k % 2 == 0 { 1.0 } else { -1.0 },
            if k % 5 == 0 { 1.0 } else { -1.0 },
        );
        z[1 + 3 * k] = u;
        z[2 + 3 * k] = v;
        z[3 + 3 * k] = w;
        let (cheat, t1, t2) = (
            f64::from(u >= 0.1),
            f64::from(v >= 0.0),
            f64::from(w >= 0.0),
        );
        yes += t1 * cheat + (1.0 - t1) * t2;
    }
    let p: f64 = yes / 100.0;
    let want = 35.0 * p.ln() + 65.0 * (1.0 - p).ln();
    let got = m.program.evaluate(Semantics::Crisp, &[], &z);
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}

#[test]
fn largest_model_compiles_to_a_small_program() {
    // Sanity bound on the unrolled size (a regression here means lost sharing).
    let r = report("cheating");
    assert!(r.nodes < 2000, "{}", r.nodes);
}

fn log_normal(x: f64, m: f64, s: f64) -> f64 {
    -0.5 * ((x - m) / s).powi(2) - s.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln()
}

/// The walk stops at the first position below 0: only the steps taken count.
#[test]
fn walk_value_matches_definition() {
    let m = model("walk");
    let mut z = vec![0.7; 16];
    z[0] = 0.5; // x_0
    z[1] = 0.3; // p = 0.8
    z[2] = -1.1; // p = -0.3: stops after 2 steps, distance 1.4
    let want = log_normal(0.5, 3.0, 1.0)
        + log_normal(0.3, 0.0, 1.0)
        + log_normal(-1.1, 0.0, 1.0)
        + log_normal(3.75, 1.4, 1.0);
    let got = m.program.evaluate(Semantics::Crisp, &[], &z);
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    // A walk that never stops takes all 15 steps and is penalised by log N(1000 | 7.5, 1).
    let z = vec![0.1; 16];
    let want =
        log_normal(0.1, 3.0, 1.0) + 15.0 * log_normal(0.1, 0.0, 1.0) + log_normal(1000.0, 7.5, 1.0);
    let got = m.program.evaluate(Semantics::Crisp, &[], &z);
    assert!((got - want).abs() < 1e-9 * want.abs(), "{got} vs {want}");
}

/// textmsg: Poisson counts with the rate switching at the change point.
#[test]
fn textmsg_value_matches_definition() {
    let m = model("textmsg");
    let counts: Vec<f64> = include_str!("../models/data/textmsg_counts.csv")
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().trim().parse().unwrap())
        .collect();
    let (l1, l2, tau) = (2.5, 3.0, 0.1);
    let sd = 2f64.ln().sqrt();
    let mean = counts.iter().sum::<f64>() / counts.len() as f64;
    let mu = mean.ln() - sd * sd / 2.0;
    let mut want = log_normal(l1, mu, sd) + log_normal(l2, mu, sd) + log_normal(tau, 0.0, 1.0);
    for d in (1..=73).step_by(2) {
        let rate: f64 = if tau >= dsgd::special::probit((d as f64 + 1.0) / 75.0) {
            l1.exp()
        } else {
            l2.exp()
        };
        let x = counts[d];
        want += x * rate.ln() - rate - dsgd::special::lgamma(x + 1.0);
    }
    let got = m.program.evaluate(Semantics::Crisp, &[], &[l1, l2, tau]);
    assert!((got - want).abs() < 1e-9 * want.abs(), "{got} vs {want}");
}

#[test]
fn affine_forms_are_reported_by_latent_name() {
    let r = report("example");
    let f = r.guards[0].affine.as_ref().expect("affine");
    assert_eq!(
        (f.constant, f.coefficients.clone()),
        (0.0, vec![("z".to_string(), 1.0)])
    );
    // temperature's first guard is `t >= t_upper`: the guard t - 22 with its branches swapped.
    let r = report("temperature");
    let f = r.guards[0].affine.as_ref().expect("affine");
    assert_eq!(
        (f.constant, f.coefficients.clone()),
        (-22.0, vec![("t".to_string(), 1.0)])
    );
    // textmsg: tau against the probit of the elapsed fraction.
    let r = report("textmsg");
    let f = r.guards[0].affine.as_ref().expect("affine");
    assert_eq!(f.coefficients, vec![("tau".to_string(), 1.0)]);
    assert!(
        (f.constant + dsgd::special::probit(2.0 / 75.0)).abs() < 1e-15,
        "{}",
        f.constant
    );
}

/// The models of `docs/first-model.md` compile with the data the page gives them, so the page's
/// commands keep working when the language changes.
#[test]
fn first_model_page_examples_compile_with_their_data() {
    use dsgd::lang::{CompileOptions, DataSet, compile_file_with_data};
    use std::path::Path;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/examples");
    for (model, data, latents) in [
        ("newsvendor.dsgd", None, 1),
        ("counts.dsgd", Some("counts.json"), 1),
        ("censored.dsgd", Some("sensor.json"), 2),
    ] {
        let set = match data {
            None => DataSet::default(),
            Some(file) => {
                let text = std::fs::read_to_string(dir.join(file)).expect("the page's data");
                DataSet::from_json_str(&text, file).expect("valid data")
            }
        };
        let m = compile_file_with_data(&dir.join(model), &set, &CompileOptions::default())
            .unwrap_or_else(|e| panic!("{model} does not compile:\n{e}"));
        assert_eq!(m.latents.len(), latents, "{model}");
    }
}

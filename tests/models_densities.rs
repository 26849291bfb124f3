//! Log-densities of the distributions against values computed independently (a reference
//! table made with Python's `math` module: its own `lgamma`, `log` and `log1p`, from the
//! closed forms), their normalisation by quadrature, and the constrained expansion of a
//! latent (`log p(T(u)) + log |T'(u)|`) against the same table.

use dsgd::ir::{Builder, Dist, Semantics, Transform};

/// `(distribution, arguments, x, log p(x))`, made by Python 3 `math` from the closed forms.
const TABLE: &[(&str, &[f64], f64, f64)] = &[
    ("Gamma", &[2.0, 1.0], 0.1, -2.4025850929940455),
    ("Gamma", &[2.0, 1.0], 0.5, -1.1931471805599454),
    ("Gamma", &[2.0, 1.0], 1.0, -1.0),
    ("Gamma", &[2.0, 1.0], 2.5, -1.583709268125845),
    ("Gamma", &[2.0, 1.0], 7.0, -5.0540898509446865),
    ("Gamma", &[0.5, 3.0], 0.01, 2.2495262944034002),
    ("Gamma", &[0.5, 3.0], 0.2, 0.18166015762640453),
    ("Gamma", &[0.5, 3.0], 1.0, -3.0230587985906454),
    ("Gamma", &[0.5, 3.0], 4.0, -12.71620597915059),
    ("Gamma", &[9.0, 4.0], 0.3, -8.959736087273722),
    ("Gamma", &[9.0, 4.0], 1.5, -0.8842327878009186),
    ("Gamma", &[9.0, 4.0], 2.25, -0.6405119229356036),
    ("Gamma", &[9.0, 4.0], 6.0, -7.793877898841792),
    ("Beta", &[2.0, 2.0], 0.01, -2.823461052613537),
    ("Beta", &[2.0, 2.0], 0.3, 0.23111172096338684),
    ("Beta", &[2.0, 2.0], 0.5, 0.4054651081081647),
    ("Beta", &[2.0, 2.0], 0.9, -0.6161861394238168),
    ("Beta", &[0.5, 0.5], 0.001, 2.3096480038084595),
    ("Beta", &[0.5, 0.5], 0.2, -0.22843915397524583),
    ("Beta", &[0.5, 0.5], 0.7, -0.36440601171706666),
    ("Beta", &[0.5, 0.5], 0.999, 2.3096480038084586),
    ("Beta", &[5.0, 3.0], 0.1, -4.7671010531343105),
    ("Beta", &[5.0, 3.0], 0.625, 0.8122873271511293),
    ("Beta", &[5.0, 3.0], 0.95, -1.5426773745006583),
    ("LogNormal", &[0.0, 1.0], 0.05, -2.410412187057163),
    ("LogNormal", &[0.0, 1.0], 0.5, -0.46601785960382813),
    ("LogNormal", &[0.0, 1.0], 1.0, -0.9189385332046727),
    ("LogNormal", &[0.0, 1.0], 3.0, -2.6210253022790733),
    ("LogNormal", &[0.0, 1.0], 20.0, -8.401876734165144),
    ("LogNormal", &[1.5, 0.3], 2.0, -4.024843310762934),
    ("LogNormal", &[1.5, 0.3], 4.48, -1.2145895647167209),
    ("LogNormal", &[1.5, 0.3], 9.0, -4.612868702002013),
    ("StudentT", &[1.0, 0.0, 1.0], -10.0, -5.75985040269066),
    ("StudentT", &[1.0, 0.0, 1.0], -1.0, -1.8378770664093458),
    ("StudentT", &[1.0, 0.0, 1.0], 0.0, -1.1447298858494004),
    ("StudentT", &[1.0, 0.0, 1.0], 2.5, -3.1257313547159837),
    ("StudentT", &[3.0, 1.0, 2.0], -5.0, -4.466624752423236),
    ("StudentT", &[3.0, 1.0, 2.0], 0.0, -1.8541214455305277),
    ("StudentT", &[3.0, 1.0, 2.0], 1.0, -1.694036030183455),
    ("StudentT", &[3.0, 1.0, 2.0], 4.0, -2.8132676060543003),
    ("StudentT", &[3.0, 1.0, 2.0], 30.0, -10.221741825590811),
    ("StudentT", &[30.0, -2.0, 0.5], -3.0, -2.1741518606059995),
    ("StudentT", &[30.0, -2.0, 0.5], -2.0, -0.23412314481890617),
    ("StudentT", &[30.0, -2.0, 0.5], 0.0, -6.859505374636471),
    ("Cauchy", &[0.0, 1.0], -100.0, -10.355170252825918),
    ("Cauchy", &[0.0, 1.0], -1.0, -1.8378770664093453),
    ("Cauchy", &[0.0, 1.0], 0.0, -1.1447298858494002),
    ("Cauchy", &[0.0, 1.0], 0.5, -1.3678734371636099),
    ("Cauchy", &[0.0, 1.0], 3.0, -3.447314978843446),
    ("Cauchy", &[2.0, 0.1], 1.9, 0.4647080265846991),
    ("Cauchy", &[2.0, 0.1], 2.0, 1.1578552071446453),
    ("Cauchy", &[2.0, 0.1], 5.0, -5.645650050463693),
    ("HalfCauchy", &[1.0], 0.0, -0.4515827052894549),
    ("HalfCauchy", &[1.0], 0.5, -0.6747262566036647),
    ("HalfCauchy", &[1.0], 1.0, -1.1447298858494002),
    ("HalfCauchy", &[1.0], 10.0, -5.066703222130714),
    ("HalfCauchy", &[1.0], 1000.0, -14.26709426325323),
    ("HalfCauchy", &[2.5], 0.1, -1.369472158527307),
    ("HalfCauchy", &[2.5], 2.5, -2.0610206177235555),
    ("HalfCauchy", &[2.5], 40.0, -6.916949522058831),
    ("HalfNormal", &[1.0], 0.0, -0.22579135264472738),
    ("HalfNormal", &[1.0], 0.5, -0.3507913526447274),
    ("HalfNormal", &[1.0], 2.0, -2.2257913526447273),
    ("Exponential", &[2.0], 0.0, std::f64::consts::LN_2),
    ("Exponential", &[2.0], 0.3, 0.09314718055994531),
    ("Exponential", &[2.0], 5.0, -9.306852819440055),
];

fn log_density(d: Dist, args: &[f64], x: f64) -> f64 {
    let b = Builder::new();
    let a: Vec<_> = args.iter().map(|&v| b.constant(v)).collect();
    let lp = b.log_density(d, b.constant(x), &a).unwrap();
    lp.as_const()
        .expect("constant arguments fold to a constant")
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * (1.0 + b.abs())
}

#[test]
fn log_densities_match_the_reference_table() {
    for &(name, args, x, want) in TABLE {
        let d = Dist::from_name(name).unwrap();
        let got = log_density(d, args, x);
        assert!(
            close(got, want, 1e-13),
            "{name}{args:?} at {x}: {got} vs {want}"
        );
    }
    let names: std::collections::BTreeSet<&str> = TABLE.iter().map(|t| t.0).collect();
    for d in [
        "Gamma",
        "Beta",
        "LogNormal",
        "StudentT",
        "Cauchy",
        "HalfCauchy",
    ] {
        assert!(names.contains(d), "{d} is in the table");
    }
}

#[test]
fn a_latent_density_on_the_unconstrained_scale_is_the_density_plus_the_log_jacobian() {
    for &(name, args, x, want) in TABLE {
        let d = Dist::from_name(name).unwrap();
        let b = Builder::new();
        let a: Vec<_> = args.iter().map(|&v| b.constant(v)).collect();
        let s = b.sample_latent("z", d, &a).unwrap();
        let t = s.latent.transform;
        let program = b.finish(&[s.log_density]).unwrap();
        assert_eq!(program.if_count(), 0, "{name}: no support if-statement");
        let u = t.to_unconstrained(x);
        if !u.is_finite() {
            continue; // the edge of the support: no u maps there
        }
        let got = program.evaluate(Semantics::Crisp, &[], &[u]);
        let expected = want + t.log_abs_det_jacobian(u);
        // T(T^-1(x)) is x to a few ulps, which moves log p by its slope times that.
        assert!(
            close(got, expected, 1e-9),
            "{name}{args:?} at {x} (u = {u}): {got} vs {expected}"
        );
    }
}

#[test]
fn every_continuous_density_integrates_to_one() {
    let cases: &[(Dist, &[f64])] = &[
        (Dist::Gamma, &[2.0, 1.5]),
        (Dist::Gamma, &[7.0, 4.0]),
        (Dist::Beta, &[2.0, 3.0]),
        (Dist::Beta, &[1.5, 1.5]),
        (Dist::LogNormal, &[0.2, 0.5]),
        (Dist::StudentT, &[4.0, 1.0, 2.0]),
        (Dist::Cauchy, &[0.5, 0.7]),
        (Dist::HalfCauchy, &[1.3]),
        (Dist::HalfNormal, &[0.8]),
        (Dist::Exponential, &[1.7]),
    ];
    for &(d, args) in cases {
        // On the unconstrained scale the density has light tails for every transform here
        // (Cauchy's real line included, substituted x = sinh(v)), so Simpson's rule over a
        // wide range converges.
        let b = Builder::new();
        let a: Vec<_> = args.iter().map(|&v| b.constant(v)).collect();
        let s = b.sample_latent("z", d, &a).unwrap();
        let t = s.latent.transform;
        let program = b.finish(&[s.log_density]).unwrap();
        let density = |u: f64| program.evaluate(Semantics::Crisp, &[], &[u]).exp();
        let total = match t {
            Transform::Identity => {
                let g = |v: f64| density(v.sinh()) * v.cosh();
                simpson(&g, -40.0, 40.0, 200_000)
            }
            _ => simpson(&density, -60.0, 60.0, 200_000),
        };
        assert!((total - 1.0).abs() < 1e-6, "{d}{args:?}: integral {total}");
    }
}

fn simpson(g: &dyn Fn(f64) -> f64, a: f64, b: f64, n: usize) -> f64 {
    let h = (b - a) / n as f64;
    let mut s = g(a) + g(b);
    for i in 1..n {
        s += g(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

#[test]
fn observed_values_outside_the_support_have_no_density() {
    // The builder API (no compile-time check) keeps support if-statements: -inf outside.
    assert_eq!(
        log_density(Dist::Gamma, &[2.0, 1.0], -1.0),
        f64::NEG_INFINITY
    );
    assert_eq!(log_density(Dist::Beta, &[2.0, 2.0], 1.5), f64::NEG_INFINITY);
    assert_eq!(
        log_density(Dist::HalfCauchy, &[1.0], -0.1),
        f64::NEG_INFINITY
    );
    assert_eq!(
        log_density(Dist::LogNormal, &[0.0, 1.0], -2.0),
        f64::NEG_INFINITY
    );
    // A latent expression observed from such a distribution keeps its support guard.
    let b = Builder::new();
    let z = b.latent("z");
    let lp = b
        .log_density(Dist::Beta, z, &[b.constant(2.0), b.constant(2.0)])
        .unwrap();
    assert_eq!(b.finish(&[lp]).unwrap().if_count(), 2);
}

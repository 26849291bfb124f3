//! `dsgd diagnose` on every distribution a latent can have and every transform: automatic
//! gradients of the unconstrained densities (and of a constrained latent in a guard) agree
//! with finite differences, crisp and smoothed.

use dsgd::experiment::diagnose::{DiagnoseConfig, diagnose};
use dsgd::ir::Transform;
use dsgd::lang::{CompileOptions, compile_source};

const MODEL: &str = "let g = sample Gamma(2, 1);
let b = sample Beta(2, 3);
let l = sample LogNormal(0, 0.5);
let t = sample StudentT(3, 0, 1);
let c = sample Cauchy(0, 1);
let h = sample HalfCauchy(1);
let u = sample Uniform(-1, 2);
let e = sample Exponential(2);
let n = sample HalfNormal(1);
if g < 1.5 { observe 0.4 ~ Normal(t + c, h); } else { observe 0.4 ~ Normal(l, b + 1); }
observe 2 ~ Poisson(g + e);
observe u ~ Normal(n, 1);
";

#[test]
fn diagnose_passes_on_every_distribution_and_transform() {
    let m = compile_source(
        "all.dsgd",
        MODEL,
        std::path::Path::new("."),
        &CompileOptions::default(),
    )
    .unwrap();
    let transforms: Vec<Transform> = (0..m.latents.len())
        .map(|i| m.latent_transform(i))
        .collect();
    assert!(transforms.contains(&Transform::Identity));
    assert!(transforms.contains(&Transform::Exp { lower: 0.0 }));
    assert!(transforms.contains(&Transform::Logit {
        lower: 0.0,
        upper: 1.0
    }));
    assert!(transforms.contains(&Transform::Logit {
        lower: -1.0,
        upper: 2.0
    }));
    // The guard on g is rewritten onto its unconstrained value: the only if-statement.
    assert_eq!(m.program.if_count(), 1);
    let report = diagnose(&m, &DiagnoseConfig::default()).unwrap();
    assert!(report.passed, "{report:?}");
}

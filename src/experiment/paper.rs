//! The paper's published numbers (Wagner et al., AISTATS 2024, Tables 1, 2 and the appendix
//! tables), so that every report can print ours beside theirs.
//!
//! This file holds data only; nothing here is computed.

/// A published `mean ± std` over seeds.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MeanStd {
    /// Mean over seeds.
    pub mean: f64,
    /// Standard deviation over seeds.
    pub std: f64,
}

const fn ms(mean: f64, std: f64) -> MeanStd {
    MeanStd { mean, std }
}

/// The accuracy coefficients of the paper's sweep (`eta = eta_4000`).
pub const ETAS: [f64; 5] = [0.06, 0.1, 0.14, 0.18, 0.22];

/// Final ELBO of one model: DSGD and Fixed by eta (in [`ETAS`] order), the eta-free estimators
/// once (`None` where not applicable).
#[derive(Copy, Clone, Debug)]
pub struct FinalElbo {
    /// The model's name.
    pub model: &'static str,
    /// DSGD's final ELBO by eta.
    pub dsgd: [MeanStd; 5],
    /// Fixed's final ELBO by eta.
    pub fixed: [MeanStd; 5],
    /// Score's final ELBO.
    pub score: MeanStd,
    /// Reparam's final ELBO.
    pub reparam: MeanStd,
    /// LYY18's final ELBO (`None` where the paper did not run it).
    pub lyy18: Option<MeanStd>,
}

/// Appendix table `tab:finalelbo2` (which contains Table 1).
pub const FINAL_ELBO: [FinalElbo; 6] = [
    FinalElbo {
        model: "temperature",
        dsgd: [
            ms(-76.0, 1.0),
            ms(-84.0, 2.0),
            ms(-15_476.0, 4_641.0),
            ms(-94_125.0, 6_930.0),
            ms(-165_787.0, 9_758.0),
        ],
        fixed: [
            ms(-624_250.0, 44_121.0),
            ms(-425.0, 9.0),
            ms(-121_932.0, 85_460.0),
            ms(-32_171.0, 66.0),
            ms(-155_321.0, 61_732.0),
        ],
        score: ms(-2_611_479.0, 255_193.0),
        reparam: ms(-706_729.0, 4_697.0),
        lyy18: Some(ms(-17_502.0, 52_044.0)),
    },
    FinalElbo {
        model: "xornet",
        dsgd: [
            ms(-3_530.0, 3_889.0),
            ms(-33.0, 7.0),
            ms(-27.0, 4.0),
            ms(-25.0, 3.0),
            ms(-30.0, 8.0),
        ],
        fixed: [
            ms(-5_522.0, 4_136.0),
            ms(-2_029.0, 3_305.0),
            ms(-2_028.0, 3_986.0),
            ms(-26.0, 6.0),
            ms(-26.0, 2.0),
        ],
        score: ms(-553.0, 1_507.0),
        reparam: ms(-9_984.0, 38.0),
        lyy18: None,
    },
    FinalElbo {
        model: "walk",
        dsgd: [
            ms(-37.0, 148.0),
            ms(-37.0, 148.0),
            ms(-38.0, 148.0),
            ms(-38.0, 148.0),
            ms(-38.0, 148.0),
        ],
        fixed: [
            ms(-85.0, 197.0),
            ms(-86.0, 197.0),
            ms(-37.0, 148.0),
            ms(-37.0, 148.0),
            ms(-37.0, 148.0),
        ],
        score: ms(-85.0, 197.0),
        reparam: ms(-371_612.0, 8_858.0),
        lyy18: Some(ms(-135.0, 226.0)),
    },
    FinalElbo {
        model: "cheating",
        dsgd: [ms(-65.0, 1.0); 5],
        fixed: [ms(-65.0, 1.0); 5],
        score: ms(-66.0, 1.0),
        reparam: ms(-80.0, 1.0),
        lyy18: Some(ms(-65.0, 1.0)),
    },
    FinalElbo {
        model: "textmsg",
        dsgd: [
            ms(-295.0, 1.0),
            ms(-295.0, 1.0),
            ms(-295.0, 1.0),
            ms(-296.0, 1.0),
            ms(-296.0, 1.0),
        ],
        fixed: [
            ms(-295.0, 1.0),
            ms(-296.0, 1.0),
            ms(-296.0, 1.0),
            ms(-296.0, 1.0),
            ms(-296.0, 1.0),
        ],
        score: ms(-300.0, 1.0),
        reparam: ms(-296.0, 1.0),
        lyy18: Some(ms(-296.0, 1.0)),
    },
    FinalElbo {
        model: "influenza",
        dsgd: [
            ms(-3_586.0, 112.0),
            ms(-3_584.0, 111.0),
            ms(-3_582.0, 111.0),
            ms(-3_579.0, 111.0),
            ms(-3_577.0, 111.0),
        ],
        fixed: [
            ms(-3_589.0, 114.0),
            ms(-3_590.0, 111.0),
            ms(-3_590.0, 111.0),
            ms(-3_589.0, 111.0),
            ms(-3_587.0, 112.0),
        ],
        score: ms(-95_380.0, 3_567.0),
        reparam: ms(-4_045.0, 108.0),
        lyy18: Some(ms(-3_860.0, 106.0)),
    },
];

/// One row of Table 2: cost and work-normalised variances as ratios to Score.
#[derive(Copy, Clone, Debug)]
pub struct VarianceRow {
    /// The estimator's name.
    pub estimator: &'static str,
    /// Cost per sample as a ratio to Score's.
    pub cost: f64,
    /// Work-normalised `Avg(V(.))` as a ratio to Score's.
    pub avg_var: f64,
    /// Work-normalised `V(||.||_2)` as a ratio to Score's.
    pub var_norm: f64,
}

const fn vr(estimator: &'static str, cost: f64, avg_var: f64, var_norm: f64) -> VarianceRow {
    VarianceRow {
        estimator,
        cost,
        avg_var,
        var_norm,
    }
}

/// Table 2 and the appendix table `tab:addvar`, by model.
pub const VARIANCE: [(&str, &[VarianceRow]); 6] = [
    (
        "temperature",
        &[
            vr("dsgd", 1.71, 4.91e-11, 2.54e-10),
            vr("fixed", 1.71, 2.84e-10, 2.24e-09),
            vr("reparam", 1.26, 1.47e-08, 1.94e-08),
            vr("lyy18", 9.61, 1.05e-06, 4.04e-05),
        ],
    ),
    (
        "xornet",
        &[
            vr("dsgd", 1.74, 6.21e-03, 3.66e-02),
            vr("fixed", 1.87, 1.21e-02, 5.43e-02),
            vr("reparam", 0.388, 8.34e-09, 2.62e-09),
        ],
    ),
    (
        "walk",
        &[
            vr("dsgd", 4.70, 1.71e-01, 2.61e-01),
            vr("fixed", 4.70, 9.50e-01, 1.49),
            vr("reparam", 2.17, 8.63e-10, 7.01e-10),
            vr("lyy18", 4.81, 7.92, 1.26e+01),
        ],
    ),
    (
        "cheating",
        &[
            vr("dsgd", 1.52, 2.31e-03, 3.51e-03),
            vr("fixed", 1.52, 2.84e-03, 4.64e-03),
            vr("reparam", 0.936, 4.14e-19, 1.16e-18),
            vr("lyy18", 2.59, 4.27e-02, 1.09e-01),
        ],
    ),
    (
        "textmsg",
        &[
            vr("dsgd", 1.84, 7.89e-03, 1.53e-02),
            vr("fixed", 1.79, 1.08e-02, 2.14e-02),
            vr("reparam", 1.25, 7.99e-03, 1.53e-02),
            vr("lyy18", 4.51, 3.42e-02, 6.00e-02),
        ],
    ),
    (
        "influenza",
        &[
            vr("dsgd", 1.28, 7.77e-03, 3.94e-03),
            vr("fixed", 1.28, 7.92e-03, 3.97e-03),
            vr("reparam", 1.21, 7.60e-03, 3.75e-03),
            vr("lyy18", 8.30, 5.80e-02, 2.88e-02),
        ],
    ),
];

/// The JAX reference implementation's steady-state gradient samples per second, batch 16, one
/// core: DSGD, Fixed, Score, Reparam, LYY18 (`None`: not applicable).
pub const JAX_SAMPLES_PER_SECOND: [(&str, [Option<f64>; 5]); 6] = [
    (
        "temperature",
        [
            Some(2.9e5),
            Some(3.0e5),
            Some(6.1e5),
            Some(6.4e5),
            Some(1.1e5),
        ],
    ),
    (
        "xornet",
        [Some(4.4e5), Some(5.1e5), Some(8.0e5), Some(1.6e6), None],
    ),
    (
        "walk",
        [
            Some(2.2e5),
            Some(2.0e5),
            Some(8.3e5),
            Some(4.5e5),
            Some(1.7e5),
        ],
    ),
    (
        "cheating",
        [
            Some(3.1e5),
            Some(3.3e5),
            Some(5.0e5),
            Some(7.8e5),
            Some(1.9e5),
        ],
    ),
    (
        "textmsg",
        [
            Some(2.9e6),
            Some(3.1e6),
            Some(3.5e6),
            Some(4.3e6),
            Some(1.2e6),
        ],
    ),
    (
        "influenza",
        [
            Some(4.6e5),
            Some(4.5e5),
            Some(5.4e5),
            Some(5.2e5),
            Some(1.2e5),
        ],
    ),
];

/// The published final ELBO table of `model`, if it is one of the paper's.
pub fn final_elbo(model: &str) -> Option<&'static FinalElbo> {
    FINAL_ELBO.iter().find(|f| f.model == model)
}

/// The published variance rows of `model`.
pub fn variance(model: &str) -> Option<&'static [VarianceRow]> {
    VARIANCE
        .iter()
        .find(|(m, _)| *m == model)
        .map(|(_, rows)| *rows)
}

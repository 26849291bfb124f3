//! Tables and claims computed from hand-made results: the paper lookup, the tolerance band,
//! Table 2's work-normalised ratios, and each claim's verdict flipping with the numbers.

use dsgd::estimate::EstimatorKind;
use dsgd::experiment::compare::{Arm, Cell, ModelComparison, Summary};
use dsgd::experiment::cost::Cost;
use dsgd::experiment::report::ObjectiveKind;
use dsgd::experiment::tables::{
    band_check, comparison_table, in_band_scope, num, paper_cell, table1, table1_with, table2,
    variance_rows,
};
use dsgd_report::claims::{ModelResults, Verdict, check_claims, eta_spread};

fn cell(kind: EstimatorKind, eta: Option<f64>, finals: &[f64], var: f64) -> Cell {
    Cell {
        arm: Arm {
            estimator: kind,
            eta,
        },
        final_elbo: finals.to_vec(),
        summary: Summary::of(finals),
        converged: finals.len(),
        stopped_early: 0,
        params: Vec::new(),
        final_precise: vec![None; finals.len()],
        final_value_se: vec![0.0; finals.len()],
        precise_summary: Summary::of(&[]),
        mean_var_component: var,
        mean_var_norm: 2.0 * var,
        late_elbo_std: 0.0,
        problems: Vec::new(),
        seconds: 0.0,
    }
}

fn cost(kind: EstimatorKind, sps: f64) -> Cost {
    Cost {
        estimator: kind.name().into(),
        eta: None,
        batch: 16,
        samples_per_second: sps,
        min: sps,
        max: sps,
        repeats: vec![sps],
    }
}

fn comparison(
    model: &str,
    dsgd: &[f64],
    fixed: &[f64],
    score: f64,
    reparam: f64,
) -> ModelComparison {
    let mut cells = Vec::new();
    for (i, eta) in [0.06, 0.1].into_iter().enumerate() {
        cells.push(cell(
            EstimatorKind::Dsgd,
            Some(eta),
            &[dsgd[i], dsgd[i] + 1.0],
            1.0,
        ));
    }
    for (i, eta) in [0.06, 0.1].into_iter().enumerate() {
        cells.push(cell(
            EstimatorKind::Fixed,
            Some(eta),
            &[fixed[i], fixed[i] + 1.0],
            2.0,
        ));
    }
    cells.push(cell(EstimatorKind::Score, None, &[score, score], 100.0));
    cells.push(cell(EstimatorKind::Reparam, None, &[reparam, reparam], 0.5));
    cells.push(cell(EstimatorKind::Lyy18, None, &[-70.0, -70.0], 50.0));
    ModelComparison {
        model: model.into(),
        kind: ObjectiveKind::Elbo,
        lyy18_note: None,
        cells,
    }
}

#[test]
fn paper_cells_are_looked_up_by_estimator_and_eta() {
    let arm = |k, eta| Arm { estimator: k, eta };
    let t = paper_cell("temperature", &arm(EstimatorKind::Dsgd, Some(0.06))).unwrap();
    assert_eq!((t.mean, t.std), (-76.0, 1.0));
    let t = paper_cell("xornet", &arm(EstimatorKind::Fixed, Some(0.1))).unwrap();
    assert_eq!(t.mean, -2_029.0);
    assert!(paper_cell("xornet", &arm(EstimatorKind::Lyy18, None)).is_none());
    assert!(paper_cell("walk", &arm(EstimatorKind::Dsgd, Some(0.12))).is_none());
    assert!(paper_cell("example", &arm(EstimatorKind::Score, None)).is_none());
    assert_eq!(
        paper_cell("influenza", &arm(EstimatorKind::Score, None))
            .unwrap()
            .mean,
        -95_380.0
    );
}

#[test]
fn band_is_three_std_plus_two_percent_and_only_in_scope() {
    // cheating, paper -65 ± 1: band half-width 3 + 1.3 = 4.3.
    let cmp = comparison("cheating", &[-69.2, -69.9], &[-61.5, -60.0], -66.0, -80.0);
    let band = band_check(&cmp);
    // DSGD x2, Fixed x2, LYY18; Score and Reparam are out of scope.
    assert_eq!(band.len(), 5);
    let get = |label: &str| band.iter().find(|b| b.arm == label).unwrap();
    // Means are finals + 0.5.
    assert!(get("dsgd η=0.06").inside); // -68.7
    assert!(!get("dsgd η=0.1").inside); // -69.4 < -69.3
    assert!(get("fixed η=0.06").inside); // -61.0
    assert!(!get("fixed η=0.1").inside); // -59.5 > -60.7
    assert!((get("dsgd η=0.1").lo - (-69.3)).abs() < 1e-9);
    assert!((get("dsgd η=0.1").difference - (-4.4)).abs() < 1e-9);
    let md = table1(&cmp);
    // dsgd η=0.1, fixed η=0.1 and LYY18 at -70.
    assert!(!get("lyy18").inside);
    assert_eq!(md.matches("**OUT**").count(), 3);
    // A quick run's table does not judge the band.
    let quick = table1_with(&cmp, &[], false);
    assert_eq!(quick.matches("**OUT**").count(), 0);
    assert_eq!(quick.matches("not evaluated").count(), 5);
    // A user's model: no paper or band columns, convergence and early stops instead.
    let user = comparison_table(&cmp);
    assert!(!user.contains("paper") && !user.contains("band"), "{user}");
    assert!(
        user.starts_with(
            "| estimator | η | final ELBO (mean ± std) | converged | stopped early | non-finite |"
        ),
        "{user}"
    );
    assert!(
        user.contains("| score | – | -66.0 ± 0.00 | 2/2 | 0/2 | 0/2 |"),
        "{user}"
    );
    assert!(
        md.contains("| score | – | -66.0 ± 0.00 | -66.0 ± 1.00 | 0.00 |  |"),
        "{md}"
    );
    let t = |k, eta| Arm { estimator: k, eta };
    assert!(in_band_scope(
        "temperature",
        &t(EstimatorKind::Dsgd, Some(0.1))
    ));
    assert!(!in_band_scope(
        "temperature",
        &t(EstimatorKind::Dsgd, Some(0.14))
    ));
    assert!(!in_band_scope(
        "temperature",
        &t(EstimatorKind::Fixed, Some(0.1))
    ));
    assert!(!in_band_scope(
        "xornet",
        &t(EstimatorKind::Dsgd, Some(0.06))
    ));
    assert!(in_band_scope("xornet", &t(EstimatorKind::Dsgd, Some(0.22))));
    assert!(!in_band_scope("walk", &t(EstimatorKind::Dsgd, Some(0.1))));
}

#[test]
fn work_normalised_variance_is_cost_times_variance_relative_to_score() {
    let cmp = comparison("walk", &[-40.0, -40.0], &[-50.0, -50.0], -85.0, -1e5);
    let costs = [
        cost(EstimatorKind::Dsgd, 1e5),
        cost(EstimatorKind::Fixed, 1e5),
        cost(EstimatorKind::Score, 4e5),
        cost(EstimatorKind::Reparam, 2e5),
        cost(EstimatorKind::Lyy18, 5e4),
    ];
    let rows = variance_rows(&cmp, &costs, 0.1);
    let names: Vec<&str> = rows.iter().map(|r| r.estimator.as_str()).collect();
    assert_eq!(names, ["dsgd", "fixed", "reparam", "lyy18", "score"]);
    let dsgd = &rows[0];
    assert!((dsgd.cost_ratio - 4.0).abs() < 1e-12);
    // (4 * 1.0) / (1 * 100)
    assert!((dsgd.avg_var_ratio - 0.04).abs() < 1e-12);
    assert!((dsgd.var_norm_ratio - 0.04).abs() < 1e-12);
    assert!((rows[3].avg_var_ratio - 8.0 * 50.0 / 100.0).abs() < 1e-12);
    assert_eq!(rows[4].avg_var_ratio, 1.0);
    let md = table2("walk", &rows);
    assert!(
        md.contains("| dsgd | 10.00 | 4.00 (4.70) | 4.00e-2 (1.71e-1) |"),
        "{md}"
    );
    // Without Score's cost there is no table.
    assert!(variance_rows(&cmp, &costs[..2], 0.1).is_empty());
}

#[test]
fn claims_follow_the_numbers() {
    let costs = [
        cost(EstimatorKind::Dsgd, 1e5),
        cost(EstimatorKind::Fixed, 1e5),
        cost(EstimatorKind::Score, 1e5),
        cost(EstimatorKind::Reparam, 1e5),
        cost(EstimatorKind::Lyy18, 1e5),
    ];
    // DSGD best, Fixed sensitive to eta.
    let good = |m| comparison(m, &[-80.0, -84.0], &[-600_000.0, -425.0], -2e6, -7e5);
    let models: Vec<ModelComparison> = ["temperature", "xornet", "walk", "influenza"]
        .into_iter()
        .map(good)
        .collect();
    let rows: Vec<_> = models
        .iter()
        .map(|m| variance_rows(m, &costs, 0.1))
        .collect();
    let results: Vec<ModelResults<'_>> = models
        .iter()
        .zip(&rows)
        .map(|(c, v)| ModelResults {
            comparison: c,
            variance: v,
        })
        .collect();
    let claims = check_claims(&results, 0.1);
    assert_eq!(claims.len(), 5);
    assert!(
        claims.iter().all(|c| c.verdict == Verdict::Holds),
        "{claims:#?}"
    );
    assert_eq!(eta_spread(&models[0], EstimatorKind::Dsgd), Some(4.0));

    // Reparam better than DSGD on walk: the first claim fails; Fixed robust: the last fails.
    let mut bad = models.clone();
    bad[2] = comparison("walk", &[-80.0, -84.0], &[-600_000.0, -425.0], -2e6, -10.0);
    bad[1] = comparison("xornet", &[-80.0, -8_000.0], &[-30.0, -31.0], -2e6, -7e5);
    let results: Vec<ModelResults<'_>> = bad
        .iter()
        .zip(&rows)
        .map(|(c, v)| ModelResults {
            comparison: c,
            variance: v,
        })
        .collect();
    let claims = check_claims(&results, 0.1);
    assert_eq!(claims[0].verdict, Verdict::Fails);
    assert!(claims[0].evidence.iter().any(|e| e.contains("NOT worse")));
    assert_eq!(claims[1].verdict, Verdict::Holds);
    assert_eq!(claims[4].verdict, Verdict::Fails);

    // DSGD and Fixed do the same work per sample: their claim compares variances, so a
    // timed cost that makes Fixed look twice as fast does not flip it.
    let mut slow = costs.clone();
    slow[1] = cost(EstimatorKind::Fixed, 2e5);
    let rows2: Vec<_> = models
        .iter()
        .map(|m| variance_rows(m, &slow, 0.1))
        .collect();
    let results: Vec<ModelResults<'_>> = models
        .iter()
        .zip(&rows2)
        .map(|(c, v)| ModelResults {
            comparison: c,
            variance: v,
        })
        .collect();
    let claims = check_claims(&results, 0.1);
    assert_eq!(claims[3].verdict, Verdict::Holds, "{:#?}", claims[3]);

    // Nothing run: untested.
    let none = check_claims(&[], 0.1);
    assert!(none.iter().all(|c| c.verdict == Verdict::Untested));
}

#[test]
fn numbers_print_as_the_paper_prints_them() {
    assert_eq!(num(-2_611_479.4), "-2,611,479");
    assert_eq!(num(-425.0), "-425");
    assert_eq!(num(-65.43), "-65.4");
    assert_eq!(num(1.234), "1.23");
    assert_eq!(num(f64::NAN), "n/a");
    assert_eq!(num(f64::NEG_INFINITY), "-inf");
}

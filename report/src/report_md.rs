//! REPORT.md of `dsgd reproduce`: settings, wall time, figures, Table 1 with the tolerance
//! band, Table 2, the paper's claims checked, and notes on where we differ and why.
//!
//! The prose is the template `REPORT.md.jinja` beside this file; this module computes what
//! it shows from a [`Reproduction`] and formats every number, so the template only places
//! them. Every number is computed from the results, except the paper's published numbers and
//! the explanations, which the template states.

use minijinja::syntax::SyntaxConfig;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value, context};

use crate::claims::{self, ModelResults};
use dsgd::estimate::EstimatorKind;
use dsgd::experiment::compare::Cell;
use dsgd::experiment::reproduction::Reproduction;
use dsgd::experiment::tables::{self, BandCell, num};

/// The report's text with a place for each number.
const TEMPLATE: &str = include_str!("REPORT.md.jinja");

/// The Markdown report. Fails only if the template is broken (a test renders it).
pub fn render(rep: &Reproduction) -> Result<String, minijinja::Error> {
    let mut env = Environment::new();
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()?,
    );
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.add_filter("yes", |b: bool| if b { "yes" } else { "**no**" });
    env.render_named_str("REPORT.md", TEMPLATE, context(rep))
}

/// Everything the template shows, each number formatted as the report writes it.
fn context(rep: &Reproduction) -> Value {
    let c = &rep.config;
    let band: Vec<BandCell> = rep
        .models
        .iter()
        .flat_map(|m| tables::band_check_with(&m.comparison, &m.median_cells))
        .collect();
    let results: Vec<ModelResults<'_>> = rep
        .models
        .iter()
        .map(|m| ModelResults {
            comparison: &m.comparison,
            variance: &m.variance,
        })
        .collect();
    let claims: Value = claims::check_claims(&results, c.variance_eta)
        .into_iter()
        .map(|claim| {
            let word = if c.quick {
                "not evaluated"
            } else {
                claim.verdict.word()
            };
            context! { word, statement => claim.statement, evidence => claim.evidence }
        })
        .collect();
    context! {
        quick => c.quick,
        models => c.models.join(", "),
        etas => format!("{:?}", c.etas),
        etas_each => c.etas.iter().map(|e| e.to_string()).collect::<Value>(),
        seeds => c.seeds,
        runs => rep.runs,
        iterations => c.iterations,
        batch => c.batch,
        log_every => c.log_every,
        log_samples => c.log_samples,
        settings => rep.models.iter().map(|m| context! {
            model => &m.comparison.model,
            lr => m.lr.to_string(),
            decay => num(m.eta_decay),
            figure => &m.figure,
        }).collect::<Value>(),
        cost => context! {
            batch => c.cost.batch,
            warmup => c.cost.warmup_seconds.to_string(),
            repeats => c.cost.repeats,
            repeat => c.cost.repeat_seconds.to_string(),
        },
        variance_eta => c.variance_eta.to_string(),
        wall => context! {
            total => format!("{:.1}", rep.wall_seconds),
            sweep => format!("{:.1}", rep.sweep_seconds),
            threads => rep.threads,
            cost => format!("{:.1}", rep.cost_seconds),
        },
        table1 => rep.models.iter().map(|m| context! {
            model => &m.comparison.model,
            lyy18_note => m.comparison.lyy18_note.as_deref(),
            table => tables::table1_with(&m.comparison, &m.median_cells, !c.quick),
            problems => m.comparison.cells.iter()
                .flat_map(|c| c.problems.iter().cloned())
                .collect::<Value>(),
        }).collect::<Value>(),
        band => context! {
            inside => band.iter().filter(|b| b.inside).count(),
            cells => band.len(),
            median_of => band.iter().find_map(|b| b.median_of),
            rows => band.iter().map(band_row).collect::<Value>(),
        },
        table2 => rep.models.iter().map(|m| context! {
            model => &m.comparison.model,
            table => tables::table2(&m.comparison.model, &m.variance),
        }).collect::<Value>(),
        auto => auto_eta(rep),
        claims,
        precise_claims => crate::fidelity_md::precise_claims(rep),
        notes => notes(rep, &band),
        fidelity => crate::fidelity_md::section(rep),
        per_seed => crate::fidelity_md::per_seed_table(rep, |c| {
            c.final_elbo.iter().map(|&v| num(v)).collect()
        }),
        per_seed_precise => crate::fidelity_md::per_seed_precise(rep),
    }
}

fn band_row(b: &BandCell) -> Value {
    context! {
        model => &b.model,
        arm => &b.arm,
        ours => num(b.ours),
        ours_std => num(b.ours_std),
        paper_mean => num(b.paper_mean),
        paper_std => num(b.paper_std),
        lo => num(b.lo),
        hi => num(b.hi),
        inside => b.inside,
        difference => num(b.difference),
        in_paper_std => if b.paper_std > 0.0 {
            format!("{:.1} paper std", b.difference / b.paper_std)
        } else {
            "–".into()
        },
    }
}

/// Values joined by commas, each as the tables write them.
fn joined(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| num(*v))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many seeds of each DSGD/Fixed cell of `model` ended below `threshold`.
fn stuck_counts(rep: &Reproduction, model: &str, threshold: f64) -> Option<String> {
    let m = rep.models.iter().find(|m| m.comparison.model == model)?;
    let parts: Vec<String> = m
        .comparison
        .cells
        .iter()
        .filter(|c| c.arm.eta.is_some())
        .map(|c| {
            let k = c
                .final_elbo
                .iter()
                .filter(|v| **v < threshold || v.is_nan())
                .count();
            format!("{} {}/{}", c.arm.label(), k, c.final_elbo.len())
        })
        .collect();
    Some(parts.join(", "))
}

/// The numbers of the notes on the cells outside the band and on the known differences
/// (the full reproduction's only); the explanations are what we found when we investigated.
fn notes(rep: &Reproduction, band: &[BandCell]) -> Value {
    let quick = rep.config.quick;
    let out: Value = band
        .iter()
        .filter(|b| !b.inside && !quick)
        .map(|b| {
            let finals = cell_of(rep, &b.model, &b.arm).map(|c| c.final_elbo.clone());
            let median = finals.as_deref().map(tables::median).unwrap_or(f64::NAN);
            context! {
                model => &b.model,
                arm => &b.arm,
                ours => num(b.ours),
                paper_mean => num(b.paper_mean),
                paper_std => num(b.paper_std),
                difference => num(b.difference),
                percent => format!("{:.1}", 100.0 * b.difference / b.paper_mean.abs().max(1e-300)),
                per_seed => finals.as_deref().map_or("–".into(), joined),
                median => num(median),
                median_inside => median >= b.lo && median <= b.hi,
            }
        })
        .collect();
    let fixed = cell_of(rep, "xornet", "fixed η=0.1");
    let xornet = stuck_counts(rep, "xornet", -1000.0).map(|stuck| {
        context! {
            stuck,
            fixed => fixed.map_or("–".into(), |c| {
                format!("{} ± {}", num(c.summary.mean), num(c.summary.std))
            }),
            fixed_stuck => fixed.map_or("–".into(), |c| {
                let stuck = c.final_elbo.iter().filter(|v| **v < -1000.0 || v.is_nan()).count();
                format!("{stuck} of {}", c.final_elbo.len())
            }),
        }
    });
    let walk = cell_of(rep, "walk", "dsgd η=0.1").map(|c| {
        context! {
            positive => c.final_elbo.iter().filter(|v| **v > 0.0).count(),
            seeds => c.final_elbo.len(),
            per_seed => joined(&c.final_elbo),
        }
    });
    let influenza = cell_of(rep, "influenza", "dsgd η=0.1").map(|c| {
        context! {
            mean => num(c.summary.mean),
            std => num(c.summary.std),
            per_seed => joined(&c.final_elbo),
            log_samples => num(rep.config.log_samples as f64),
            // The same final iterates measured precisely: the spread over seeds is the
            // measurement's.
            precise => (c.precise_summary.n > 0).then(|| context! {
                per_seed => c.final_precise.iter()
                    .map(|p| p.map_or("–".into(), |p| num(p.value)))
                    .collect::<Vec<_>>()
                    .join(", "),
                std => num(c.precise_summary.std),
                mean => num(c.precise_summary.mean),
            }),
            first => c.final_elbo.first().map_or("–".into(), |v| num(*v)),
            first_in_std => format!(
                "{:.1}",
                c.final_elbo.first().map_or(f64::NAN, |v| (v - c.summary.mean) / c.summary.std)
            ),
        }
    });
    let temperature = cell_of(rep, "temperature", "lyy18").map(|c| {
        context! {
            mean => num(c.summary.mean),
            std => num(c.summary.std),
            none_far_lower => c.final_elbo.iter().all(|v| *v > -10_000.0),
        }
    });
    context! {
        out,
        xornet,
        walk,
        influenza,
        temperature,
        // The models where our order of the estimators differs from the paper's, if any.
        order_differs => Some(order_differs(rep).join("; ")).filter(|s| !s.is_empty()),
    }
}

/// The models on which our order of the estimators by work-normalised variance differs from
/// the paper's, each with both orders.
fn order_differs(rep: &Reproduction) -> Vec<String> {
    let mut differ = Vec::new();
    for m in &rep.models {
        let Some(published) = dsgd::experiment::paper::variance(&m.comparison.model) else {
            continue;
        };
        let mut ours: Vec<(&str, f64, f64)> = m
            .variance
            .iter()
            .filter(|r| r.estimator != "score")
            .filter_map(|r| {
                let p = published.iter().find(|p| p.estimator == r.estimator)?;
                Some((r.estimator.as_str(), r.avg_var_ratio, p.avg_var))
            })
            .collect();
        let order = |v: &mut Vec<(&str, f64, f64)>, by_ours: bool| -> Vec<String> {
            v.sort_by(|a, b| {
                let (x, y) = if by_ours { (a.1, b.1) } else { (a.2, b.2) };
                x.total_cmp(&y)
            });
            v.iter().map(|e| e.0.to_string()).collect()
        };
        let a = order(&mut ours, true);
        let b = order(&mut ours, false);
        if a != b {
            differ.push(format!(
                "{} (ours {}, paper {})",
                m.comparison.model,
                a.join(" < "),
                b.join(" < ")
            ));
        }
    }
    differ
}

/// The two checks of the adaptive schedule on one model: at least the median of the fixed
/// etas' means, and within 2 % (or 3 nats, whichever is larger) of the best of them.
fn auto_checks(auto: f64, fixed: &[f64]) -> (bool, bool) {
    let best = fixed.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (
        auto >= tables::median(fixed),
        auto >= best - (0.02 * best.abs()).max(3.0),
    )
}

/// `--eta auto` against fixed-schedule DSGD at each eta run: per model, every arm's mean
/// final ELBO and the two checks of the adaptive schedule ([`auto_checks`]), on the paper's
/// final values and, where the runs measured them, on the precise ones.
fn auto_eta(rep: &Reproduction) -> Value {
    let etas = &rep.config.etas;
    let ms = |c: &Cell| format!("{} ± {}", num(c.summary.mean), num(c.summary.std));
    let mut rows = Vec::new();
    // Models with an auto cell and how many pass each check; then the same on the precise
    // values, where measured.
    let (mut passes, mut precise_passes) = ((0, 0, 0), (0, 0, 0));
    for m in &rep.models {
        let cmp = &m.comparison;
        let Some(auto) = cmp.cell(EstimatorKind::Dsgd, None) else {
            continue;
        };
        let fixed: Vec<f64> = etas
            .iter()
            .filter_map(|&e| cmp.cell(EstimatorKind::Dsgd, Some(e)))
            .map(|c| c.summary.mean)
            .collect();
        let (median, best) = auto_checks(auto.summary.mean, &fixed);
        passes.0 += 1;
        passes.1 += usize::from(median);
        passes.2 += usize::from(best);
        let precise: Option<Vec<f64>> = etas
            .iter()
            .map(|&e| {
                cmp.cell(EstimatorKind::Dsgd, Some(e))
                    .filter(|c| c.precise_summary.n > 0)
                    .map(|c| c.precise_summary.mean)
            })
            .collect();
        let precise = match precise {
            Some(fixed) if auto.precise_summary.n > 0 => {
                let (median, best) = auto_checks(auto.precise_summary.mean, &fixed);
                precise_passes.0 += 1;
                precise_passes.1 += usize::from(median);
                precise_passes.2 += usize::from(best);
                Some(context! { mean => num(auto.precise_summary.mean), median, best })
            }
            _ => None,
        };
        rows.push(context! {
            model => &cmp.model,
            auto => ms(auto),
            fixed => etas
                .iter()
                .map(|&e| cmp.cell(EstimatorKind::Dsgd, Some(e)).map_or("–".into(), ms))
                .collect::<Value>(),
            median,
            best,
            precise,
        });
    }
    context! {
        rows,
        models => passes.0,
        median => passes.1,
        best => passes.2,
        precise_models => precise_passes.0,
        precise_median => precise_passes.1,
        precise_best => precise_passes.2,
    }
}

fn cell_of<'a>(rep: &'a Reproduction, model: &str, label: &str) -> Option<&'a Cell> {
    rep.models
        .iter()
        .find(|m| m.comparison.model == model)?
        .comparison
        .cells
        .iter()
        .find(|c| c.arm.label() == label)
}

//! The report of `dsgd check`: counts, nesting depth, safety and affine guards of a model,
//! as a serialisable struct (the `--json` output) with a short human summary.

use serde::Serialize;

use crate::ir::{LoopOutcome, Mode, Model, Span, analyse};

/// Everything `dsgd check` says about a model. Its keys are documented in docs/json.md.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// The model's name.
    pub model: String,
    /// `variational` or `objective` (`maximize`/`minimize`).
    pub mode: String,
    /// Latents (the program's `sample` statements).
    pub latents: usize,
    /// Latents declared `fixed` (included in `latents`).
    pub fixed_latents: usize,
    /// Parameters (`param` declarations).
    pub params: usize,
    /// If-statements of the program outside the loops kept as plates.
    pub if_statements: usize,
    /// If-statements in the plates' bodies, each counted once per row (what an estimator
    /// sees: a plate over 10^5 rows with one if-statement in its body makes 10^5 of them).
    pub plate_if_statements: usize,
    /// The deepest nesting of if-statements (the plates' bodies' included).
    pub nesting_depth: u32,
    /// Nodes of the compiled program.
    pub nodes: usize,
    /// Every guard is safe: the convergence theorem applies.
    pub safe: bool,
    /// The guards that are not safe, with why (a plate's body's once, standing for its
    /// rows').
    pub unsafe_guards: Vec<GuardNote>,
    /// Jumps (if-statements that are not continuous) whose guard reads a parameter
    /// directly: Reparam, Score and RLOO are then biased (their crisp gradients miss the
    /// moving boundary) even when every guard is safe.
    pub param_dependent_guards: Vec<GuardNote>,
    /// Number of guards that are affine in the latents (a plate's guard affine at every
    /// row, its data read as constants, counted once per row).
    pub affine_guards: usize,
    /// Number of if-statements recognised as continuous (their branches agree where the
    /// guard is zero: `min`, `max`, `abs`, `relu`, ...): not jumps, so no estimator is biased
    /// by them and LYY18's boundary term for them is zero. A plate's count once per row.
    pub continuous_guards: usize,
    /// Every jump's guard is affine in the latents (a plate's at every row, its data read as
    /// constants): LYY18 applies.
    pub lyy18_applicable: bool,
    /// The first guard that is not affine, when LYY18 does not apply.
    pub lyy18_blocked_by: Option<GuardNote>,
    /// The decay of DSGD's eta this model gets by default.
    pub default_eta_decay: f64,
    /// Every if-statement, in the program's numbering, then each plate body's (once per
    /// plate, numbered after the program's).
    pub guards: Vec<GuardDetail>,
    /// Every latent's support and the transform that puts it on the real line (the guide is
    /// Gaussian on the unconstrained value).
    pub latent_supports: Vec<LatentSupport>,
    /// The `for` loops kept as plates (compiled once, run over their rows). The analyses
    /// above read their bodies' guards as the unrolled loop's rows would: `if_statements`
    /// counts the program's outside them, `plate_if_statements` theirs.
    pub plates: Vec<PlateNote>,
    /// The `for` loops unrolled, each with the first rule it failed (or the policy that kept
    /// it unrolled).
    pub unrolled_loops: Vec<UnrolledLoop>,
}

/// A loop kept as a plate.
#[derive(Clone, Debug, Serialize)]
pub struct PlateNote {
    /// Where the loop is: `file:line:col`.
    pub location: String,
    /// The loop variable.
    pub var: String,
    /// Rows of the plate.
    pub rows: usize,
    /// Nodes of the body program (compiled once, whatever the number of rows).
    pub body_nodes: usize,
    /// If-statements of the body (each taken once per row).
    pub body_if_statements: usize,
    /// Data columns the body reads by row.
    pub columns: usize,
    /// Latents sampled in each row.
    pub row_latents: usize,
    /// Parameters and outer latents the body reads.
    pub shared_inputs: usize,
}

/// A loop unrolled, and why.
#[derive(Clone, Debug, Serialize)]
pub struct UnrolledLoop {
    /// Where the loop is: `file:line:col`.
    pub location: String,
    /// The loop variable.
    pub var: String,
    /// Iterations unrolled.
    pub rows: usize,
    /// The first rule it failed, or the policy.
    pub reason: String,
    /// Where the rule failed, if at a place of its own.
    pub at: Option<String>,
}

/// Where one latent lives: `support` `real`, `(0, inf)`, `(0, 1)`; `transform` `identity`,
/// `exp` or `logit` (`z = T(u)`, the guide on `u`).
#[derive(Clone, Debug, Serialize)]
pub struct LatentSupport {
    /// The latent's name.
    pub name: String,
    /// `real`, `(0, inf)` or `(0, 1)`.
    pub support: String,
    /// `identity`, `exp` or `logit`.
    pub transform: String,
    /// `z = T(u)` with the latent's name, e.g. `s = exp(u)`.
    pub formula: String,
}

/// One if-statement as the analyses see it.
#[derive(Clone, Debug, Serialize)]
pub struct GuardDetail {
    /// The if-statement's number in the program.
    pub index: usize,
    /// `file:line:col`, or `if-statement #k` when the model came without source.
    pub location: String,
    /// Whether the guard is safe (the convergence theorem's condition).
    pub safe: bool,
    /// The guard as `constant + sum coefficient * latent`, when it is affine (a plate's:
    /// affine at every row, and its form at row 0).
    pub affine: Option<AffineForm>,
    /// The branches agree where the guard is zero: not a jump.
    pub continuous: bool,
    /// The if-statements it stands for: 1, or a plate's rows for its body's.
    pub rows: usize,
}

/// An affine guard `constant + sum_j a_j z_j`, latents by name.
#[derive(Clone, Debug, Serialize)]
pub struct AffineForm {
    /// The constant term.
    pub constant: f64,
    /// The coefficient of each latent it reads, by name.
    pub coefficients: Vec<(String, f64)>,
}

/// One if-statement named by where it is in the source and why it is reported.
#[derive(Clone, Debug, Serialize)]
pub struct GuardNote {
    /// The if-statement's number in the program.
    pub index: usize,
    /// `file:line:col`, or `if-statement #k` when the model came without source.
    pub location: String,
    /// Why it is reported.
    pub reason: String,
    /// The if-statements it stands for: 1, or a plate's rows for its body's.
    pub rows: usize,
}

impl CheckReport {
    /// Analyses `model`. `locate` turns a span into `file:line:col` (the caller has the
    /// source text; the model does not).
    pub fn new(model: &Model, locate: &dyn Fn(Span) -> String) -> CheckReport {
        let p = &model.program;
        let a = analyse(p);
        let where_ = |index: usize, span: Option<Span>| match span {
            Some(s) => locate(s),
            None => format!("if-statement #{index}"),
        };
        // Every if-statement: the program's, then each plate body's once (numbered after the
        // program's), standing for its rows', with the verdicts the unrolled rows get.
        let (body, body_depth) = crate::estimate::body_guards(model);
        let all: Vec<Guard> = a
            .guards
            .iter()
            .map(|g| Guard {
                index: g.index,
                info: g,
                affine: g.affine.clone(),
                rows: 1,
                body_if: None,
            })
            .chain(body.iter().enumerate().map(|(j, g)| Guard {
                index: a.guards.len() + j,
                info: &g.info,
                affine: g.affine.clone(),
                rows: g.rows,
                body_if: Some(g.k),
            }))
            .collect();
        let note = |g: &Guard, reason: String| GuardNote {
            index: g.index,
            location: where_(g.body_if.unwrap_or(g.index), g.info.span),
            reason,
            rows: g.rows,
        };
        let unsafe_guards = all
            .iter()
            .filter_map(|g| {
                g.info
                    .unsafe_reason
                    .as_ref()
                    .map(|r| note(g, r.to_string()))
            })
            .collect();
        // A plate's guard must be affine in the latents at every row, its columns read as
        // data (as LYY18 reads it: `ir::RowGuard`).
        let lyy18_blocked_by = all
            .iter()
            .filter(|g| g.info.jump())
            .find_map(|g| g.affine.as_ref().err().map(|why| note(g, why.to_string())));
        let param_dependent_guards = all
            .iter()
            .filter(|g| g.info.jump() && g.info.depends_on_param)
            .map(|g| note(g, "the guard depends on a parameter directly".to_string()))
            .collect();
        let fixed_latents = model
            .latents
            .iter()
            .filter(|l| matches!(l.kind, crate::ir::LatentKind::Fixed { .. }))
            .count();
        let names = p.latent_names();
        let guards = all
            .iter()
            .map(|g| GuardDetail {
                index: g.index,
                location: where_(g.body_if.unwrap_or(g.index), g.info.span),
                safe: g.info.unsafe_reason.is_none(),
                continuous: g.info.continuous,
                affine: g.affine.as_ref().ok().map(|f| AffineForm {
                    constant: f.constant,
                    coefficients: f
                        .coefficients
                        .iter()
                        .map(|&(j, c)| (names[j as usize].clone(), c))
                        .collect(),
                }),
                rows: g.rows,
            })
            .collect();
        let per_row = |keep: &dyn Fn(&Guard) -> bool| {
            all.iter()
                .filter(|g| keep(g))
                .map(|g| g.rows)
                .fold(0usize, usize::saturating_add)
        };
        let nesting_depth = a.nesting_depth.max(body_depth);
        let latent_supports = p
            .latent_names()
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let t = p.latent_transform(i);
                LatentSupport {
                    name: name.clone(),
                    support: t.support_text(),
                    transform: t.name().to_string(),
                    formula: t.formula(name, "u"),
                }
            })
            .collect();
        let place = |s: Option<Span>| s.map_or_else(|| "(no source)".to_string(), locate);
        let mut plates = Vec::new();
        let mut unrolled_loops = Vec::new();
        for note in &model.loops {
            match &note.outcome {
                LoopOutcome::Plate { index } => {
                    let plate = &model.plates[*index];
                    plates.push(PlateNote {
                        location: place(note.span),
                        var: note.var.clone(),
                        rows: note.rows,
                        body_nodes: plate.body.node_count(),
                        body_if_statements: plate.body.if_count(),
                        columns: plate.columns.len(),
                        row_latents: plate.row_latents.len(),
                        shared_inputs: plate.shared.len(),
                    });
                }
                LoopOutcome::Unrolled { reason, at } => unrolled_loops.push(UnrolledLoop {
                    location: place(note.span),
                    var: note.var.clone(),
                    rows: note.rows,
                    reason: reason.clone(),
                    at: at.map(locate),
                }),
            }
        }
        CheckReport {
            plates,
            unrolled_loops,
            guards,
            latent_supports,
            model: model.name.clone(),
            mode: match model.mode {
                Mode::Variational => "variational".to_string(),
                Mode::Objective { minimize: false } => "objective (maximize)".to_string(),
                Mode::Objective { minimize: true } => "objective (minimize)".to_string(),
            },
            latents: model.latents.len(),
            fixed_latents,
            params: model.params.len(),
            if_statements: a.if_count(),
            plate_if_statements: model
                .plates
                .iter()
                .map(|plate| plate.body.if_count().saturating_mul(plate.rows))
                .fold(0usize, usize::saturating_add),
            nesting_depth,
            nodes: p.node_count(),
            safe: all.iter().all(|g| g.info.unsafe_reason.is_none()),
            unsafe_guards,
            param_dependent_guards,
            affine_guards: per_row(&|g| g.affine.is_ok()),
            continuous_guards: per_row(&|g| g.info.continuous),
            lyy18_applicable: lyy18_blocked_by.is_none(),
            lyy18_blocked_by,
            default_eta_decay: 1.0 / (2.0 * f64::from(nesting_depth.max(1))),
        }
    }
}

/// One if-statement as the report reads it: the program's, or a plate body's standing for
/// its rows'.
struct Guard<'a> {
    /// Its number in the report.
    index: usize,
    info: &'a crate::ir::GuardInfo,
    /// Its affine form (a plate's: at row 0, when affine at every row), or why not.
    affine: Result<crate::ir::AffineGuard, crate::ir::NotAffine>,
    rows: usize,
    /// A plate's guard: its number in the body (what a model without source names it by).
    body_if: Option<usize>,
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "model {} ({})", self.model, self.mode)?;
        let fixed = if self.fixed_latents > 0 {
            format!(" ({} fixed)", self.fixed_latents)
        } else {
            String::new()
        };
        writeln!(f, "  latents        {}{fixed}", self.latents)?;
        let constrained: Vec<&LatentSupport> = self
            .latent_supports
            .iter()
            .filter(|l| l.transform != "identity")
            .collect();
        for (k, l) in constrained.iter().take(10).enumerate() {
            let label = if k == 0 { "constrained" } else { "" };
            writeln!(
                f,
                "  {label:<13}  {} in {}: {}, guide on u",
                l.name, l.support, l.formula
            )?;
        }
        if constrained.len() > 10 {
            writeln!(
                f,
                "                 ... and {} more",
                constrained.len() - 10
            )?;
        }
        writeln!(f, "  parameters     {}", self.params)?;
        if self.plate_if_statements > 0 {
            writeln!(
                f,
                "  if-statements  {} outside plates, {} in plates (each body's once per row)",
                self.if_statements, self.plate_if_statements
            )?;
        } else {
            writeln!(f, "  if-statements  {}", self.if_statements)?;
        }
        writeln!(f, "  nesting depth  {}", self.nesting_depth)?;
        writeln!(f, "  nodes          {}", self.nodes)?;
        if self.safe {
            writeln!(
                f,
                "  safe           yes: every guard is safe, the convergence theorem applies"
            )?;
        } else {
            writeln!(
                f,
                "  safe           no: {} unsafe guard(s)",
                self.unsafe_guards.iter().map(|g| g.rows).sum::<usize>()
            )?;
            // Guards from one place in the source (a loop body, a function) are listed once,
            // in order of first appearance (a map of the places seen, so that tens of
            // thousands of guards take linear time).
            let mut groups: Vec<(&str, &str, usize)> = Vec::new();
            let mut seen: std::collections::HashMap<(&str, &str), usize> =
                std::collections::HashMap::new();
            for g in &self.unsafe_guards {
                let key = (g.location.as_str(), g.reason.as_str());
                match seen.get(&key) {
                    Some(&i) => groups[i].2 += g.rows,
                    None => {
                        seen.insert(key, groups.len());
                        groups.push((key.0, key.1, g.rows));
                    }
                }
            }
            for (location, reason, n) in groups.iter().take(10) {
                let times = if *n > 1 {
                    format!(" ({n} if-statements)")
                } else {
                    String::new()
                };
                writeln!(f, "    {location}{times}: {reason}")?;
            }
            if groups.len() > 10 {
                writeln!(f, "    ... and {} more places", groups.len() - 10)?;
            }
        }
        if let Some(first) = self.param_dependent_guards.first() {
            writeln!(
                f,
                "  warning        {} jump(s) depend on a parameter directly (first at {}): \
                 Reparam, Score and RLOO are biased there; only smoothing (dsgd, fixed) \
                 accounts for the moving boundary (see `dsgd advise`)",
                self.param_dependent_guards
                    .iter()
                    .map(|g| g.rows)
                    .sum::<usize>(),
                first.location
            )?;
        }
        let all = self.if_statements.saturating_add(self.plate_if_statements);
        writeln!(f, "  affine guards  {} of {all}", self.affine_guards)?;
        if self.continuous_guards > 0 {
            writeln!(
                f,
                "  continuous     {} of {all} (branches agree on the boundary: not jumps, no \
                 estimator is biased by them)",
                self.continuous_guards
            )?;
        }
        match &self.lyy18_blocked_by {
            None => writeln!(f, "  LYY18          applicable")?,
            Some(g) => writeln!(
                f,
                "  LYY18          not applicable: the jump at {} is not affine ({})",
                g.location, g.reason
            )?,
        }
        for (k, p) in self.plates.iter().enumerate() {
            let label = if k == 0 { "plates" } else { "" };
            writeln!(
                f,
                "  {label:<13}  {}: for {} over {} rows, body of {} nodes ({} if-statements, \
                 {} columns, {} latents per row)",
                p.location,
                p.var,
                p.rows,
                p.body_nodes,
                p.body_if_statements,
                p.columns,
                p.row_latents
            )?;
        }
        for (k, l) in self.unrolled_loops.iter().take(10).enumerate() {
            let label = if k == 0 { "unrolled" } else { "" };
            let at = match &l.at {
                Some(at) if *at != l.location => format!(" (at {at})"),
                _ => String::new(),
            };
            writeln!(
                f,
                "  {label:<13}  {}: for {} over {} rows: {}{at}",
                l.location, l.var, l.rows, l.reason
            )?;
        }
        if self.unrolled_loops.len() > 10 {
            writeln!(
                f,
                "                 ... and {} more",
                self.unrolled_loops.len() - 10
            )?;
        }
        let decay = format!("{:.4}", self.default_eta_decay);
        let decay = decay.trim_end_matches('0').trim_end_matches('.');
        write!(f, "  eta decay      {decay} (default, 1 / (2 x depth))")
    }
}

//! The statement behind a non-finite stop: the failing sample's latents are drawn again from
//! its key, the reference interpreter finds the term whose value or derivative is NaN or
//! infinite there ([`crate::ir::blame`]), and this says which statement it is, where, with
//! the values it was given: `observe 1 ~ Exponential(z) at m.dsgd:2:1 gives log-density NaN
//! (value 1, rate -0.53): log(-0.53) is NaN`. In a loop kept as a plate, the first row whose
//! body is not finite is named.

use crate::estimate::{Problem, StreamKey};
use crate::family::FamilyState;
use crate::ir::blame::{Culprit, find_culprit, short_number};
use crate::ir::{Program, Semantics, Term, TermKind};
use crate::lang::locate;

/// Characters of a statement quoted in a message, at most (longer ones end in `...`).
const STATEMENT_CHARS: usize = 100;

/// Why sample `lane` of `key`'s draw at `theta` (under `semantics`) is not finite, naming the
/// statement; `None` when the reference interpreter finds nothing wrong at that sample.
pub(crate) fn explain(
    problem: &Problem,
    state: &FamilyState,
    theta: &[f64],
    key: StreamKey,
    lane: usize,
    semantics: Semantics,
) -> Option<String> {
    let family = problem.family();
    let n = family.latent_count();
    let mut s = vec![0.0; n];
    problem.draw_noise(key, lane, 1, &mut s);
    let mut z = vec![0.0; n];
    state.reparameterise(&s, &mut z, 1);
    let m = family.model_param_count();
    let program = problem.program();
    if let Some(culprit) = find_culprit(program, semantics, &theta[..m], &z) {
        return Some(describe(program, &culprit));
    }
    // Then the plates, row by row in order: the first row whose body is not finite.
    for run in problem.plates() {
        let shared = run.shared_values(&theta[..m], &z);
        for r in 0..run.rows {
            let inputs = run.row_inputs(r, &z);
            if let Some(c) = find_culprit(&run.body, semantics, &shared, &inputs) {
                return Some(format!(
                    "{} (row {r} of the loop over `{}`)",
                    describe(&run.body, &c),
                    run.var
                ));
            }
        }
    }
    None
}

/// The sentence for a culprit.
pub fn describe(program: &Program, c: &Culprit) -> String {
    let Some(term) = c.term.map(|t| &program.terms()[t]) else {
        return c.origin.clone();
    };
    let quantity = term.kind.quantity();
    let inputs: Vec<String> = term
        .kind
        .input_names()
        .zip(&c.inputs)
        .map(|(name, &x)| format!("{name} {}", short_number(x)))
        .collect();
    let inputs = if inputs.is_empty() {
        String::new()
    } else {
        format!(" ({})", inputs.join(", "))
    };
    let what = if c.value_not_finite {
        format!("gives {quantity} {}{inputs}", short_number(c.value))
    } else {
        format!(
            "gives {quantity} {} whose derivative is not finite{inputs}",
            short_number(c.value)
        )
    };
    format!("{} {what}: {}", statement(program, term), c.origin)
}

/// `observe y ~ Normal(m, s) at model.dsgd:7:3`, or the kind of statement where the program
/// has no source text.
fn statement(program: &Program, term: &Term) -> String {
    let Some(source) = program.source() else {
        return match term.kind {
            TermKind::Observe(d) => format!("an observe of {d}"),
            TermKind::Sample(d) => format!("a latent drawn from {d}"),
            TermKind::Factor => "a factor".to_string(),
            TermKind::Objective => "an objective term".to_string(),
        };
    };
    let text = &source.text;
    let start = (term.span.start as usize).min(text.len());
    // Enough of a long statement for the quote, not all of it.
    let mut end =
        (term.span.end as usize).clamp(start, text.len().min(start + 8 * STATEMENT_CHARS));
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let quoted = text
        .get(start..end)
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let quoted = quoted.trim_end_matches(';');
    let quoted = if quoted.chars().count() > STATEMENT_CHARS {
        let cut: String = quoted.chars().take(STATEMENT_CHARS).collect();
        format!("{cut}...")
    } else {
        quoted.to_string()
    };
    let at = locate(text, term.span);
    format!("{quoted} at {}:{}:{}", source.file, at.line, at.column)
}

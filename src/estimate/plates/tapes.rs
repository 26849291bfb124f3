//! The tapes a plate runs: its body repeated for a group of consecutive rows (their outputs
//! added in row order) or alone, compiled with the row latents that have a gradient, and one
//! thread's scratch for such a tape.

use crate::eval::{BatchGradient, CHUNK, Tape, Workspace};
use crate::ir::{Builder, Node, NodeId, Program, Var};

use super::inputs::Call;
use super::{BLOCK_ROWS, PlateRun};

/// A tape of `rows` consecutive rows of the body, and which of its latent inputs have a
/// gradient.
#[derive(Debug)]
pub(super) struct RowsTape {
    pub(super) tape: Tape,
    pub(super) rows: usize,
    /// Per row of the group, per active row latent: its row of the tape's latent gradient.
    pub(super) active: Vec<u32>,
}

impl RowsTape {
    pub(super) fn new(body: &Program, rows: usize, active_inputs: &[bool]) -> RowsTape {
        let program = if rows == 1 {
            body.clone()
        } else {
            repeated(body, rows)
        };
        let inputs = body.latent_count();
        let mut mask = Vec::with_capacity(inputs * rows);
        for _ in 0..rows {
            mask.extend_from_slice(active_inputs);
        }
        let active = (0..inputs * rows)
            .filter(|&j| mask[j])
            .map(|j| j as u32)
            .collect();
        RowsTape {
            // The plain weights: a body's smoothed if-statements are most of a smoothed
            // gradient's time over the rows (see `Tape::with_plain_weights`).
            // Its inputs are handed over as their noise (see `run_calls`).
            tape: Tape::compile_active(&program, 0, Some(&mask))
                .with_plain_weights()
                .with_noise_latents(),
            rows,
            active,
        }
    }
}

/// `body` for `rows` consecutive rows: its latents repeated for each row (row `t`'s input
/// `j` is latent `t * inputs + j`), its parameters shared, its outputs added in row order.
fn repeated(body: &Program, rows: usize) -> Program {
    let b = Builder::new();
    for name in body.param_names() {
        b.param(name);
    }
    let inputs = body.latent_count();
    for t in 0..rows {
        for (j, name) in body.latent_names().iter().enumerate() {
            b.latent_on(&format!("{name}#{t}"), body.latent_transform(j));
        }
    }
    let mut total: Option<Var<'_>> = None;
    for t in 0..rows {
        let out = copy_body(
            &b,
            body,
            |k| b.param_at(k as usize).expect("declared above"),
            |i| {
                b.latent_at(t * inputs + i as usize)
                    .expect("declared above")
            },
            |_| {},
        );
        total = Some(match total {
            None => out,
            Some(s) => s + out,
        });
    }
    let total = total.expect("at least one row");
    b.finish(&[total])
        .expect("a repeated body is as valid as the body")
}

/// `body`'s nodes built again in `b`, its parameter `k` as `param(k)` and its latent `i` as
/// `latent(i)`, with `on_if(index)` called before each if-statement is built; returns the
/// body's output. The group tape and the analyses' view copy a body so.
pub(super) fn copy_body<'b>(
    b: &'b Builder,
    body: &Program,
    param: impl Fn(u32) -> Var<'b>,
    latent: impl Fn(u32) -> Var<'b>,
    mut on_if: impl FnMut(u32),
) -> Var<'b> {
    let var = |id: NodeId| b.var(id).expect("a node of this builder");
    let mut map = Vec::with_capacity(body.node_count());
    for node in body.nodes() {
        let m = |id: NodeId| var(map[id.index()]);
        let v = match *node {
            Node::Const(c) => b.constant(c),
            Node::Param(k) => param(k),
            Node::Latent(i) => latent(i),
            Node::Unary(op, x) => b.unary(op, m(x)),
            Node::Binary(op, x, y) => b.binary(op, m(x), m(y)),
            Node::If {
                guard,
                then_,
                else_,
                index,
            } => {
                on_if(index);
                b.if_neg(m(guard), m(then_), m(else_))
            }
        };
        map.push(v.id());
    }
    var(map[body.output().index()])
}

/// One thread's scratch for one of a plate's tapes.
#[derive(Clone, Debug)]
pub(super) struct TapeScratch {
    pub(super) ws: Workspace,
    /// Per lane of the chunk, a call's per-lane values and gradients.
    pub(super) grads: Vec<BatchGradient>,
    /// Per lane of the chunk, a call's per-lane values of a forward sweep.
    pub(super) outs: Vec<Vec<f64>>,
}

impl TapeScratch {
    pub(super) fn new(t: &RowsTape) -> TapeScratch {
        let lanes = BLOCK_ROWS / t.rows;
        TapeScratch {
            ws: t.tape.workspace(),
            grads: (0..CHUNK)
                .map(|_| BatchGradient::for_latents(&t.tape, lanes, t.active.clone()))
                .collect(),
            outs: vec![vec![0.0; lanes.next_multiple_of(CHUNK)]; CHUNK],
        }
    }
}

impl PlateRun {
    /// The tape a call runs: the body for one row per lane, or repeated for a group.
    pub(super) fn tape_for(&self, call: Call) -> &RowsTape {
        if call.per == 1 {
            &self.single
        } else {
            &self.group
        }
    }
}

//! Compiling one output of a program to a tape: nodes become slots and forward steps (lane
//! steps, and uniform steps that run once per call), common sequences are fused, and the
//! reverse plans are built, values and adjoints are given places (`layout.rs`), and the
//! crisp forward-only plan is built (`crisp.rs`).
//!
//! Not here: the instruction set (`instr.rs`), the fusions (`fuse.rs`), the reverse plans
//! (`plan.rs`) and running a tape (`evaluate.rs`, `sweep.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::ir::{Node, NodeId, Program};

use super::checked;
use super::crisp;
use super::fuse::{self, Pattern};
use super::instr::{NONE, Op, Step};
use super::layout;
use super::plan::{Shape, plan, share_guard_weights, share_unread_weights};
use super::tape::{Compiled, Tape};

/// Identifies a compiled tape, so a workspace knows whose constants it holds.
static NEXT_TAPE_ID: AtomicU64 = AtomicU64::new(1);

/// The live nodes of one output as slots and forward steps, before fusion.
struct Lowered {
    consts: Vec<(u32, f64)>,
    /// Steps whose value is the same in every lane (see [`Tape::uniform_steps`]).
    uniform_steps: Vec<Step>,
    steps: Vec<Step>,
    /// Per slot, whether its value is the same in every lane.
    uniform: Vec<bool>,
    adj: Vec<u32>,
    active_count: usize,
    if_slots: usize,
    latent_slots: Vec<Option<u32>>,
    param_slots: Vec<Option<u32>>,
    output: u32,
}

impl Tape {
    /// Compiles output `output` of `program` (only the nodes it depends on).
    pub fn compile(program: &Program, output: usize) -> Tape {
        Tape::compile_active(program, output, None)
    }

    /// Like [`Tape::compile`], but gradients are wanted only for the latents `i` with
    /// `active[i]` (all of them when `active` is `None`). The reverse sweep then skips every
    /// node that depends on nothing but constants, parameters and inactive latents (e.g. the
    /// coin tosses of a randomised-response survey), and the gradient with respect to an
    /// inactive latent is reported as zero. Every other gradient keeps its bits: an active
    /// node's adjoint receives the same contributions in the same order.
    pub fn compile_active(program: &Program, output: usize, active: Option<&[bool]>) -> Tape {
        let Lowered {
            consts,
            mut uniform_steps,
            mut steps,
            uniform,
            adj,
            active_count: _,
            if_slots,
            latent_slots,
            param_slots,
            output,
        } = lower(program, output, active);
        let uniform_ifs = uniform_steps
            .iter()
            .filter_map(|st| match st.op {
                Op::If { index, .. } => Some(index),
                _ => None,
            })
            .collect();
        let weights_read_again = share_guard_weights(&mut steps, &uniform, if_slots);
        let reused_weights = steps
            .iter()
            .filter(|st| matches!(st.op, Op::If { reuse: true, .. }))
            .count();
        let mut constant = vec![None; adj.len()];
        for &(s, c) in &consts {
            constant[s as usize] = Some(c);
        }
        let fuse_pass = |pattern, steps: &mut Vec<Step>| {
            fuse::fuse(pattern, steps, &uniform_steps, &constant, output)
        };
        let mut fused = fuse_pass(Pattern::NormalSquare, &mut steps);
        let fused_squares = steps
            .iter()
            .filter(|st| {
                matches!(
                    st.op,
                    Op::NormalSquare { .. } | Op::SquareDiff { .. } | Op::Square { .. }
                )
            })
            .count();
        let poisson = fuse_pass(Pattern::PoissonTerm, &mut steps);
        let fused_poisson = poisson.len() / 2;
        fused.extend(poisson);
        let mut chains = Vec::new();
        let before = steps.len();
        fused.extend(fuse::fuse_sum_chains(
            &mut steps,
            &uniform_steps,
            adj.len(),
            output,
            &mut chains,
        ));
        let fused_chains = before - steps.len();
        // The reverse sweep visits all steps in their original (topological) order, reversed.
        let mut all: Vec<Step> = uniform_steps.iter().chain(&steps).copied().collect();
        all.sort_by_key(|s| s.out);
        // The adjoints read after a sweep: those of the latents and parameters.
        let inputs: Vec<u32> = (latent_slots.iter().chain(&param_slots))
            .filter_map(|s| s.map(|s| adj[s as usize]))
            .filter(|&a| a != NONE)
            .collect();
        let shape = Shape {
            steps: &all,
            adj: &adj,
            uniform: &uniform,
            fused: &fused,
            chains: &chains,
            output,
            inputs: &inputs,
        };
        let mut smooth_plan = plan(&shape, true);
        let mut crisp_plan = plan(&shape, false);
        let if_slots = share_unread_weights(
            &weights_read_again,
            [&mut uniform_steps, &mut steps],
            [&mut smooth_plan, &mut crisp_plan],
        );
        let (mut consts, mut param_slots) = (consts, param_slots);
        let (logical_steps, logical_chains) = (steps.clone(), chains.clone());
        let placed = layout::place(
            layout::Logical {
                slots: adj.len(),
                uniform: &uniform,
                uniform_steps: &mut uniform_steps,
                steps,
                chains,
                adj: &adj,
                output,
                consts: &mut consts,
                latent_slots: &latent_slots,
                param_slots: &mut param_slots,
            },
            [&mut smooth_plan, &mut crisp_plan],
        );
        let crisp = crisp::build(&crisp::Source {
            steps: &logical_steps,
            chains: &logical_chains,
            constant: &constant,
            pinned_place: &placed.pinned_place,
            uniform: &uniform,
            output,
            compact: &placed.compact,
        });
        // The constants' places, for the compiled code (placing moved them to pinned ones).
        let mut compact = placed.compact;
        compact.constants = consts.clone();
        let checked = checked::build(&compact, [&smooth_plan, &crisp_plan]);
        Tape::new(Compiled {
            id: NEXT_TAPE_ID.fetch_add(1, Ordering::Relaxed),
            plain_weights: false,
            noise_latents: false,
            len: adj.len(),
            consts,
            uniform_steps,
            compact,
            checked,
            crisp,
            forced_plan: std::sync::OnceLock::new(),
            adjoints: placed.adjoints,
            out_adj: placed.out_adj,
            latent_adj: placed.latent_adj,
            param_adj: placed.param_adj,
            if_slots,
            output: placed.output,
            smooth_plan,
            crisp_plan,
            forward_jit: Default::default(),
            reverse_jit: Default::default(),
            latent_count: latent_slots.len(),
            param_slots,
            if_count: program.if_count(),
            uniform_ifs,
            fused_squares,
            fused_poisson,
            fused_chains,
            reused_weights,
        })
    }
}

/// Gives every node `output` depends on a slot (in arena order, so operands come first), its
/// adjoint index if it depends on an active latent or a parameter, and its forward step.
fn lower(program: &Program, output: usize, active: Option<&[bool]>) -> Lowered {
    let root = program.outputs()[output];
    let live = program.reachable_from(&[root]);
    let mut slot = vec![u32::MAX; program.node_count()];
    let mut l = Lowered {
        consts: Vec::new(),
        uniform_steps: Vec::new(),
        steps: Vec::new(),
        uniform: Vec::new(),
        adj: Vec::new(),
        active_count: 0,
        if_slots: 0,
        latent_slots: vec![None; program.latent_count()],
        param_slots: vec![None; program.param_count()],
        output: 0,
    };
    for (i, node) in program.nodes().iter().enumerate() {
        if !live[i] {
            continue;
        }
        let s = l.adj.len() as u32;
        slot[i] = s;
        let at = |id: NodeId| slot[id.index()];
        let op = match *node {
            Node::Const(c) => {
                l.consts.push((s, c));
                None
            }
            Node::Param(k) => {
                l.param_slots[k as usize] = Some(s);
                Some(Op::Param { k })
            }
            Node::Latent(j) => {
                l.latent_slots[j as usize] = Some(s);
                Some(Op::Latent { i: j })
            }
            Node::Unary(op, a) => Some(Op::Unary { op, a: at(a) }),
            Node::Binary(op, a, b) => Some(Op::Binary {
                op,
                a: at(a),
                b: at(b),
            }),
            Node::If {
                guard,
                then_,
                else_,
                index,
            } => {
                l.if_slots += 1;
                Some(Op::If {
                    g: at(guard),
                    t: at(then_),
                    e: at(else_),
                    index,
                    cache: l.if_slots as u32 - 1,
                    product: false,
                    reuse: false,
                })
            }
        };
        // Operands are earlier live nodes: the sweeps index by these without re-checking.
        assert!(node.operands().all(|o| slot[o.index()] < s));
        let is_active = match node {
            Node::Const(_) => false,
            Node::Param(_) => true,
            Node::Latent(j) => active.is_none_or(|a| a.get(*j as usize).copied().unwrap_or(true)),
            _ => node
                .operands()
                .any(|o| l.adj[slot[o.index()] as usize] != NONE),
        };
        l.adj.push(if is_active {
            l.active_count += 1;
            l.active_count as u32 - 1
        } else {
            NONE
        });
        let is_uniform = match node {
            Node::Const(_) | Node::Param(_) => true,
            Node::Latent(_) => false,
            _ => node.operands().all(|o| l.uniform[slot[o.index()] as usize]),
        };
        l.uniform.push(is_uniform);
        if let Some(op) = op {
            if is_uniform {
                l.uniform_steps.push(Step { out: s, op });
            } else {
                l.steps.push(Step { out: s, op });
            }
        }
    }
    l.output = slot[root.index()];
    l
}

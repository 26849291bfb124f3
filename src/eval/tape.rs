//! Compiling a program to a tape and sweeping it forward and backward over a batch.

use crate::ir::{Branch, Node, Program, Semantics, Unary};

use super::kernels;

/// Lanes processed together: values and adjoints of a chunk stay in cache, and the batch
/// result does not depend on how the batch is split (every lane is computed alone).
pub const CHUNK: usize = 32;

/// One instruction; `out` is the instruction's own slot and operands are earlier slots.
#[derive(Copy, Clone, Debug)]
enum Instr {
    Const {
        c: f64,
    },
    Param {
        k: u32,
    },
    Latent {
        i: u32,
    },
    Unary {
        op: Unary,
        a: u32,
    },
    Binary {
        op: crate::ir::Binary,
        a: u32,
        b: u32,
    },
    If {
        g: u32,
        t: u32,
        e: u32,
        index: u32,
    },
}

/// A program compiled for batched evaluation of one of its outputs.
#[derive(Clone, Debug)]
pub struct Tape {
    instrs: Vec<Instr>,
    /// Whether a slot depends on a latent or a parameter (only those carry adjoints).
    active: Vec<bool>,
    output: u32,
    latent_slots: Vec<Option<u32>>,
    param_slots: Vec<Option<u32>>,
    if_count: usize,
}

/// Scratch memory for one thread: values and adjoints of one chunk.
#[derive(Clone, Debug)]
pub struct Workspace {
    values: Vec<f64>,
    adjoints: Vec<f64>,
}

/// Per-sample results of [`Tape::gradient`]: the value and its gradient with respect to every
/// latent and every parameter. Latent-major: `latents[i * batch + lane]`.
#[derive(Clone, Debug, Default)]
pub struct BatchGradient {
    pub batch: usize,
    pub value: Vec<f64>,
    pub latents: Vec<f64>,
    pub params: Vec<f64>,
}

impl BatchGradient {
    /// Storage for `batch` samples of `tape`'s program.
    pub fn new(tape: &Tape, batch: usize) -> BatchGradient {
        let mut g = BatchGradient::default();
        g.resize(tape, batch);
        g
    }

    /// Resizes for `batch` samples (allocates only when growing).
    pub fn resize(&mut self, tape: &Tape, batch: usize) {
        self.batch = batch;
        self.value.resize(batch, 0.0);
        self.latents.resize(tape.latent_count() * batch, 0.0);
        self.params.resize(tape.param_count() * batch, 0.0);
    }

    /// d value / d z_i for sample `lane`.
    pub fn latent(&self, i: usize, lane: usize) -> f64 {
        self.latents[i * self.batch + lane]
    }

    /// d value / d theta_k for sample `lane`.
    pub fn param(&self, k: usize, lane: usize) -> f64 {
        self.params[k * self.batch + lane]
    }
}

impl Tape {
    /// Compiles output `output` of `program` (only the nodes it depends on).
    pub fn compile(program: &Program, output: usize) -> Tape {
        let root = program.outputs()[output];
        let live = program.reachable_from(&[root]);
        let mut slot = vec![u32::MAX; program.node_count()];
        let mut instrs = Vec::new();
        let mut active = Vec::new();
        let mut latent_slots = vec![None; program.latent_count()];
        let mut param_slots = vec![None; program.param_count()];
        for (i, node) in program.nodes().iter().enumerate() {
            if !live[i] {
                continue;
            }
            let s = instrs.len() as u32;
            slot[i] = s;
            let at = |id: crate::ir::NodeId| slot[id.index()];
            let instr = match *node {
                Node::Const(c) => Instr::Const { c },
                Node::Param(k) => {
                    param_slots[k as usize] = Some(s);
                    Instr::Param { k }
                }
                Node::Latent(j) => {
                    latent_slots[j as usize] = Some(s);
                    Instr::Latent { i: j }
                }
                Node::Unary(op, a) => Instr::Unary { op, a: at(a) },
                Node::Binary(op, a, b) => Instr::Binary {
                    op,
                    a: at(a),
                    b: at(b),
                },
                Node::If {
                    guard,
                    then_,
                    else_,
                    index,
                } => Instr::If {
                    g: at(guard),
                    t: at(then_),
                    e: at(else_),
                    index,
                },
            };
            let is_active = match instr {
                Instr::Const { .. } => false,
                Instr::Param { .. } | Instr::Latent { .. } => true,
                _ => node.operands().any(|o| active[slot[o.index()] as usize]),
            };
            instrs.push(instr);
            active.push(is_active);
        }
        Tape {
            instrs,
            active,
            output: slot[root.index()],
            latent_slots,
            param_slots,
            if_count: program.if_count(),
        }
    }

    pub fn latent_count(&self) -> usize {
        self.latent_slots.len()
    }

    pub fn param_count(&self) -> usize {
        self.param_slots.len()
    }

    /// Number of instructions (live nodes of the compiled output).
    pub fn len(&self) -> usize {
        self.instrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.instrs.is_empty()
    }

    /// If-statements of the program (indices used by [`Semantics::Forced`]).
    pub fn if_count(&self) -> usize {
        self.if_count
    }

    /// Scratch space for evaluating this tape.
    pub fn workspace(&self) -> Workspace {
        Workspace {
            values: vec![0.0; self.instrs.len() * CHUNK],
            adjoints: vec![0.0; self.instrs.len() * CHUNK],
        }
    }

    /// Values of the output for `batch` samples. `latents` is latent-major
    /// (`latents[i * batch + lane]`), `out` has `batch` entries.
    pub fn forward(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: &[f64],
        out: &mut [f64],
    ) {
        let batch = out.len();
        self.check_inputs(ws, params, latents, batch);
        let mut start = 0;
        while start < batch {
            let w = CHUNK.min(batch - start);
            self.forward_chunk(ws, semantics, params, latents, batch, start, w);
            let o = self.output as usize * CHUNK;
            out[start..start + w].copy_from_slice(&ws.values[o..o + w]);
            start += w;
        }
    }

    /// Values and per-sample gradients for `grad.batch` samples.
    pub fn gradient(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: &[f64],
        grad: &mut BatchGradient,
    ) {
        let batch = grad.batch;
        self.check_inputs(ws, params, latents, batch);
        assert_eq!(
            grad.latents.len(),
            self.latent_count() * batch,
            "gradient buffer size"
        );
        assert_eq!(
            grad.params.len(),
            self.param_count() * batch,
            "gradient buffer size"
        );
        let mut start = 0;
        while start < batch {
            let w = CHUNK.min(batch - start);
            self.forward_chunk(ws, semantics, params, latents, batch, start, w);
            self.reverse_chunk(ws, semantics, w);
            let o = self.output as usize * CHUNK;
            grad.value[start..start + w].copy_from_slice(&ws.values[o..o + w]);
            for (slots, dest) in [
                (&self.latent_slots, &mut grad.latents),
                (&self.param_slots, &mut grad.params),
            ] {
                for (i, s) in slots.iter().enumerate() {
                    let d = &mut dest[i * batch + start..i * batch + start + w];
                    match s {
                        Some(s) => {
                            let s = *s as usize * CHUNK;
                            d.copy_from_slice(&ws.adjoints[s..s + w]);
                        }
                        None => d.fill(0.0),
                    }
                }
            }
            start += w;
        }
    }

    fn check_inputs(&self, ws: &Workspace, params: &[f64], latents: &[f64], batch: usize) {
        assert_eq!(params.len(), self.param_count(), "one value per parameter");
        assert_eq!(
            latents.len(),
            self.latent_count() * batch,
            "latents are latent-major"
        );
        assert_eq!(
            ws.values.len(),
            self.instrs.len() * CHUNK,
            "workspace of another tape"
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn forward_chunk(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: &[f64],
        batch: usize,
        start: usize,
        w: usize,
    ) {
        let vals = &mut ws.values;
        for (s, instr) in self.instrs.iter().enumerate() {
            let (before, rest) = vals.split_at_mut(s * CHUNK);
            let out = &mut rest[..w];
            let v = |x: u32| &before[x as usize * CHUNK..x as usize * CHUNK + w];
            match *instr {
                Instr::Const { c } => out.fill(c),
                Instr::Param { k } => out.fill(params[k as usize]),
                Instr::Latent { i } => {
                    let i = i as usize;
                    out.copy_from_slice(&latents[i * batch + start..i * batch + start + w]);
                }
                Instr::Unary { op, a } => kernels::unary_forward(op, v(a), out),
                Instr::Binary { op, a, b } => kernels::binary_forward(op, v(a), v(b), out),
                Instr::If { g, t, e, index } => match semantics {
                    Semantics::Smoothed { eta } => {
                        kernels::smooth_forward(v(g), v(t), v(e), out, eta)
                    }
                    _ => kernels::select_forward(v(g), v(t), v(e), out, forced(semantics, index)),
                },
            }
        }
    }

    fn reverse_chunk(&self, ws: &mut Workspace, semantics: Semantics, w: usize) {
        let adj = &mut ws.adjoints;
        adj.fill(0.0);
        let o = self.output as usize * CHUNK;
        adj[o..o + w].fill(1.0);
        let vals = &ws.values;
        let range = |x: u32| x as usize * CHUNK..x as usize * CHUNK + w;
        for (s, instr) in self.instrs.iter().enumerate().rev() {
            if !self.active[s] {
                continue;
            }
            let s = s as u32;
            let v = |x: u32| &vals[range(x)];
            match *instr {
                Instr::Const { .. } | Instr::Param { .. } | Instr::Latent { .. } => {}
                Instr::Unary { op, a } => {
                    if !self.active[a as usize] {
                        continue;
                    }
                    let [ad, ad_a] = adj.get_disjoint_mut([range(s), range(a)]).expect("a < s");
                    kernels::unary_reverse(op, ad, v(a), v(s), ad_a);
                }
                Instr::Binary { op, a, b } => {
                    let (act_a, act_b) = (self.active[a as usize], self.active[b as usize]);
                    if a == b {
                        let [ad, ad_a] = adj.get_disjoint_mut([range(s), range(a)]).expect("a < s");
                        kernels::binary_reverse_same(op, ad, v(a), v(s), ad_a);
                    } else if act_a && act_b {
                        let [ad, ad_a, ad_b] = adj
                            .get_disjoint_mut([range(s), range(a), range(b)])
                            .expect("distinct operands");
                        kernels::binary_reverse(op, ad, v(a), v(b), v(s), Some(ad_a), Some(ad_b));
                    } else {
                        let x = if act_a { a } else { b };
                        let [ad, ad_x] = adj.get_disjoint_mut([range(s), range(x)]).expect("x < s");
                        let (ga, gb) = if act_a {
                            (Some(ad_x), None)
                        } else {
                            (None, Some(ad_x))
                        };
                        kernels::binary_reverse(op, ad, v(a), v(b), v(s), ga, gb);
                    }
                }
                Instr::If { g, t, e, index } => {
                    self.reverse_if(adj, vals, semantics, s, [g, t, e], index, w);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn reverse_if(
        &self,
        adj: &mut [f64],
        vals: &[f64],
        semantics: Semantics,
        s: u32,
        [g, t, e]: [u32; 3],
        index: u32,
        w: usize,
    ) {
        let range = |x: u32| x as usize * CHUNK..x as usize * CHUNK + w;
        let v = |x: u32| &vals[range(x)];
        // The guard carries an adjoint only under smoothing; operands that alias each other
        // (`if z < 0 then z else -z`) are handled one at a time.
        let smoothed = matches!(semantics, Semantics::Smoothed { .. });
        let targets: [(u32, bool); 3] = [
            (g, smoothed && self.active[g as usize]),
            (t, self.active[t as usize]),
            (e, self.active[e as usize]),
        ];
        let aliased =
            |i: usize, j: usize| targets[i].1 && targets[j].1 && targets[i].0 == targets[j].0;
        if aliased(0, 1) || aliased(0, 2) || aliased(1, 2) {
            for (which, &(x, on)) in targets.iter().enumerate() {
                if !on {
                    continue;
                }
                let [ad, ad_x] = adj
                    .get_disjoint_mut([range(s), range(x)])
                    .expect("operand < s");
                let mut slots: [Option<&mut [f64]>; 3] = [None, None, None];
                slots[which] = Some(ad_x);
                if_reverse(semantics, index, [v(g), v(t), v(e)], ad, slots);
            }
            return;
        }
        // Distinct operands: one pass computes the weights once for all of them.
        let mut on = [0usize; 3];
        let mut n = 0;
        for (which, &(_, is_on)) in targets.iter().enumerate() {
            if is_on {
                on[n] = which;
                n += 1;
            }
        }
        let r = |k: usize| range(targets[on[k]].0);
        let mut slots: [Option<&mut [f64]>; 3] = [None, None, None];
        let ad = match n {
            0 => return,
            1 => {
                let [ad, x0] = adj.get_disjoint_mut([range(s), r(0)]).expect("operand < s");
                slots[on[0]] = Some(x0);
                ad
            }
            2 => {
                let [ad, x0, x1] = adj
                    .get_disjoint_mut([range(s), r(0), r(1)])
                    .expect("distinct operands");
                slots[on[0]] = Some(x0);
                slots[on[1]] = Some(x1);
                ad
            }
            _ => {
                let [ad, x0, x1, x2] = adj
                    .get_disjoint_mut([range(s), r(0), r(1), r(2)])
                    .expect("distinct operands");
                slots = [Some(x0), Some(x1), Some(x2)];
                ad
            }
        };
        if_reverse(semantics, index, [v(g), v(t), v(e)], ad, slots);
    }
}

/// The reverse rule of one if-statement under `semantics`, accumulating into the given
/// adjoints of guard, then and else (`None` for those that carry none).
fn if_reverse(
    semantics: Semantics,
    index: u32,
    [g, t, e]: [&[f64]; 3],
    ad: &[f64],
    [ad_g, ad_t, ad_e]: [Option<&mut [f64]>; 3],
) {
    match semantics {
        Semantics::Smoothed { eta } => kernels::smooth_reverse(g, t, e, ad, ad_g, ad_t, ad_e, eta),
        _ => kernels::select_reverse(g, ad, ad_t, ad_e, forced(semantics, index)),
    }
}

/// Under `Forced { index, branch }`, whether if-statement `index` is forced to `then`.
#[inline]
fn forced(semantics: Semantics, index: u32) -> Option<bool> {
    match semantics {
        Semantics::Forced { index: k, branch } if k == index => Some(branch == Branch::Then),
        _ => None,
    }
}

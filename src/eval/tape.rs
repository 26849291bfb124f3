//! Compiling a program to a tape, and the batch entry points that sweep it chunk by chunk.
//!
//! Not here: the sweeps over one chunk (`sweep.rs`) and the per-op lane rules (`kernels.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::ir::{Binary, Branch, Node, Program, Semantics, Unary};

use super::fuse;
use super::kernels::Lanes;
use super::sweep;

/// Lanes processed together, as one fixed-width array per node: the lane loops compile to
/// straight-line vector code. The batch result does not depend on how the batch is split
/// (every lane is computed alone); a short last chunk is padded with copies of its last
/// sample, whose results are dropped.
pub const CHUNK: usize = 16;

/// No adjoint: the operand does not depend on a latent or a parameter.
pub(super) const NONE: u32 = u32::MAX;

/// One forward instruction writing slot `out`; operands are earlier slots (checked when
/// compiling, so `operand < out` always holds).
#[derive(Copy, Clone, Debug)]
pub(super) struct Step {
    pub out: u32,
    pub op: Op,
}

/// What an instruction computes. Constants are not instructions: they are written into a
/// workspace once and never overwritten.
#[derive(Copy, Clone, Debug)]
pub(super) enum Op {
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
        op: Binary,
        a: u32,
        b: u32,
    },
    /// `c * ((x - m) / s)^2` for a constant `c`: the quadratic term of a normal log-density,
    /// four instructions whose intermediate results nobody else reads, fused so that they
    /// stay in registers (see [`fuse_normal_square`](super::fuse::fuse_normal_square)). Same operations, same bits.
    NormalSquare {
        x: u32,
        m: u32,
        s: u32,
        c: f64,
    },
    /// `((base + t1) + t2) + ...`, the terms `chains[from..to]` of the tape (see
    /// [`fuse_sum_chains`](super::fuse::fuse_sum_chains)).
    SumChain {
        base: u32,
        from: u32,
        to: u32,
    },
    /// `cache` is where the smoothing weights of the forward sweep are kept for the reverse
    /// one (if-statements whose weights the reverse sweep never reads share one place).
    If {
        g: u32,
        t: u32,
        e: u32,
        index: u32,
        cache: u32,
    },
}

/// Where a reverse step sends one contribution: an adjoint index, and whether this is the
/// first contribution that adjoint receives in the sweep (then it is written, not added, and
/// the adjoint needs no zeroing).
#[derive(Copy, Clone, Debug)]
pub(super) struct Target {
    pub adj: u32,
    pub first: bool,
}

const NO_TARGET: Target = Target {
    adj: NONE,
    first: false,
};

/// One reverse instruction: the forward step, its own adjoint index, and the targets of its
/// operands (guard, then, else for an `If`; `a`, `b` for a binary op, only `to[0]` when
/// `a == b`).
#[derive(Copy, Clone, Debug)]
pub(super) struct RevStep {
    pub step: Step,
    pub ad: u32,
    pub to: [Target; 3],
    /// The step's operands hold the same value in every lane (they depend on parameters
    /// and constants only), so its local derivatives are computed once, not per lane.
    pub uniform: bool,
}

/// The reverse sweep for one family of semantics (whether guards carry adjoints).
#[derive(Clone, Debug, Default)]
pub(super) struct Plan {
    pub steps: Vec<RevStep>,
    /// Adjoints of latents and parameters no step writes (e.g. a latent read only by crisp
    /// guards): zeroed every chunk, as the gradient reads them.
    pub zero: Vec<u32>,
    /// The target of each sum-chain term (parallel to the tape's `chains`).
    pub chain_targets: Vec<Target>,
}

/// A program compiled for batched evaluation of one of its outputs.
#[derive(Clone, Debug)]
pub struct Tape {
    /// Identifies the constants a workspace holds (a clone shares them, so shares the id).
    id: u64,
    len: usize,
    pub(super) consts: Vec<(u32, f64)>,
    /// Steps whose value is the same in every lane (parameters and what depends on them
    /// and on constants only): run once per call, not once per chunk.
    pub(super) uniform_steps: Vec<Step>,
    /// The other steps, run for every chunk.
    pub(super) steps: Vec<Step>,
    /// Adjoint index of each slot (`NONE` where the slot depends on no latent or parameter).
    pub(super) adj: Vec<u32>,
    pub(super) active_count: usize,
    pub(super) if_slots: usize,
    pub(super) output: u32,
    pub(super) smooth_plan: Plan,
    pub(super) crisp_plan: Plan,
    /// The terms of every [`Op::SumChain`]: `(slot, whether the partial sum is the right
    /// operand)`.
    pub(super) chains: Vec<(u32, bool)>,
    latent_slots: Vec<Option<u32>>,
    param_slots: Vec<Option<u32>>,
    if_count: usize,
    /// Indices of the if-statements among `uniform_steps` (their guards read no latent).
    uniform_ifs: Vec<u32>,
    fused_squares: usize,
    fused_chains: usize,
}

/// Scratch memory for one thread: values, adjoints and smoothing weights of one chunk.
#[derive(Clone, Debug)]
pub struct Workspace {
    /// Which tape's constants `values` holds.
    pub(super) tape_id: u64,
    pub(super) values: Vec<Lanes>,
    pub(super) adjoints: Vec<Lanes>,
    pub(super) weights: Vec<[Lanes; 2]>,
    pub(super) simd: bool,
    /// Whether `values` hold one chunk's crisp forward sweep (for
    /// [`Tape::forward_forced`] to redo only what changed), except downstream of the
    /// if-statements in `forced`.
    pub(super) crisp_chunk: bool,
    pub(super) forced: Vec<u32>,
    /// Per slot, whether the incremental forced sweep recomputes it; and those steps.
    pub(super) dirty: Vec<bool>,
    pub(super) partial: Vec<Step>,
    /// Per if-statement of the program, whether the incremental sweep redoes it.
    pub(super) reforce: Vec<bool>,
    /// One sample's latents, for forcing one sample at a time.
    pub(super) point: Vec<f64>,
}

impl Workspace {
    /// Records what `values` hold after a sweep under `semantics` over `batch` samples.
    fn note_sweep(&mut self, semantics: Semantics, batch: usize) {
        self.crisp_chunk = semantics == Semantics::Crisp && batch <= CHUNK;
        self.forced.clear();
    }

    /// Chooses the vector code path (AVX2/FMA where the CPU has it, the default) or the
    /// portable one. Both give bit-identical results; this exists to test and measure that.
    pub fn set_simd(&mut self, on: bool) {
        self.simd = on;
    }
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

static NEXT_TAPE_ID: AtomicU64 = AtomicU64::new(1);

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
        let root = program.outputs()[output];
        let live = program.reachable_from(&[root]);
        let mut slot = vec![u32::MAX; program.node_count()];
        let mut consts = Vec::new();
        let mut steps = Vec::new();
        let mut uniform_steps = Vec::new();
        let mut uniform = Vec::new();
        let mut adj = Vec::new();
        let mut active_count = 0u32;
        let mut if_slots = 0u32;
        let mut latent_slots = vec![None; program.latent_count()];
        let mut param_slots = vec![None; program.param_count()];
        for (i, node) in program.nodes().iter().enumerate() {
            if !live[i] {
                continue;
            }
            let s = adj.len() as u32;
            slot[i] = s;
            let at = |id: crate::ir::NodeId| slot[id.index()];
            let op = match *node {
                Node::Const(c) => {
                    consts.push((s, c));
                    None
                }
                Node::Param(k) => {
                    param_slots[k as usize] = Some(s);
                    Some(Op::Param { k })
                }
                Node::Latent(j) => {
                    latent_slots[j as usize] = Some(s);
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
                    if_slots += 1;
                    Some(Op::If {
                        g: at(guard),
                        t: at(then_),
                        e: at(else_),
                        index,
                        cache: if_slots - 1,
                    })
                }
            };
            // Operands are earlier live nodes: the sweeps index by these without re-checking.
            assert!(node.operands().all(|o| slot[o.index()] < s));
            let is_active = match node {
                Node::Const(_) => false,
                Node::Param(_) => true,
                Node::Latent(j) => {
                    active.is_none_or(|a| a.get(*j as usize).copied().unwrap_or(true))
                }
                _ => node
                    .operands()
                    .any(|o| adj[slot[o.index()] as usize] != NONE),
            };
            adj.push(if is_active {
                active_count += 1;
                active_count - 1
            } else {
                NONE
            });
            let is_uniform = match node {
                Node::Const(_) | Node::Param(_) => true,
                Node::Latent(_) => false,
                _ => node.operands().all(|o| uniform[slot[o.index()] as usize]),
            };
            uniform.push(is_uniform);
            if let Some(op) = op {
                if is_uniform {
                    uniform_steps.push(Step { out: s, op });
                } else {
                    steps.push(Step { out: s, op });
                }
            }
        }
        let output = slot[root.index()];
        let uniform_ifs = uniform_steps
            .iter()
            .filter_map(|st| match st.op {
                Op::If { index, .. } => Some(index),
                _ => None,
            })
            .collect();
        let mut constant = vec![None; adj.len()];
        for &(s, c) in &consts {
            constant[s as usize] = Some(c);
        }
        let mut fused = fuse::fuse_normal_square(&mut steps, &uniform_steps, &constant, output);
        let fused_squares = fused.len() / 3;
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
            if_slots as usize,
            [&mut uniform_steps, &mut steps],
            [&mut smooth_plan, &mut crisp_plan],
        );
        Tape {
            id: NEXT_TAPE_ID.fetch_add(1, Ordering::Relaxed),
            len: adj.len(),
            consts,
            uniform_steps,
            steps,
            adj,
            active_count: active_count as usize,
            if_slots,
            output,
            smooth_plan,
            crisp_plan,
            latent_slots,
            param_slots,
            if_count: program.if_count(),
            uniform_ifs,
            chains,
            fused_squares,
            fused_chains,
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
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// If-statements of the program (indices used by [`Semantics::Forced`]).
    pub fn if_count(&self) -> usize {
        self.if_count
    }

    /// How many normal-density quadratic terms `c ((x - m) / s)^2` were fused into one
    /// instruction each (for tests and benchmark reports).
    pub fn fused_squares(&self) -> usize {
        self.fused_squares
    }

    /// Instructions of the reverse sweep under `semantics` (for tests and benchmark
    /// reports): steps whose adjoint can only be zero, or cannot flow on to a latent or
    /// parameter, are left out.
    pub fn reverse_len(&self, semantics: Semantics) -> usize {
        match semantics {
            Semantics::Smoothed { .. } => self.smooth_plan.steps.len(),
            _ => self.crisp_plan.steps.len(),
        }
    }

    /// How many additions were fused away into sum chains (for tests and benchmark reports).
    pub fn fused_additions(&self) -> usize {
        self.fused_chains
    }

    /// Scratch space for evaluating this tape.
    pub fn workspace(&self) -> Workspace {
        let mut ws = Workspace {
            tape_id: 0,
            values: vec![[0.0; CHUNK]; self.len],
            adjoints: vec![[0.0; CHUNK]; self.active_count],
            weights: vec![[[0.0; CHUNK]; 2]; self.if_slots],
            simd: true,
            crisp_chunk: false,
            forced: Vec::new(),
            dirty: vec![false; self.len],
            partial: Vec::new(),
            reforce: vec![false; self.if_count],
            point: vec![0.0; self.latent_count()],
        };
        self.prepare(&mut ws);
        ws
    }

    /// Writes this tape's constants into `ws` unless it already holds them.
    fn prepare(&self, ws: &mut Workspace) {
        if ws.tape_id != self.id {
            for &(s, c) in &self.consts {
                ws.values[s as usize] = [c; CHUNK];
            }
            ws.tape_id = self.id;
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
        let output = self.output as usize;
        self.forward_chunks(ws, semantics, params, latents, batch, |ws, start, w| {
            out[start..start + w].copy_from_slice(&ws.values[output][..w]);
        });
        ws.note_sweep(semantics, batch);
    }

    /// Values of the output for `batch` samples, each under its own forcing: sample `l` is
    /// evaluated under `Semantics::Forced { index: forced[l].0, branch: forced[l].1 }`. Gives
    /// the bits of one [`Tape::forward`] call per sample, at the cost of one batch.
    pub fn forward_forced(
        &self,
        ws: &mut Workspace,
        params: &[f64],
        latents: &[f64],
        forced: &[(u32, Branch)],
        out: &mut [f64],
    ) {
        self.forward_forced_near(ws, params, latents, forced, None, out);
    }

    /// [`Tape::forward_forced`] where the caller vouches that only the latents listed in
    /// `moved` (all of them when `None`) can differ from those of the last sweep on `ws`: the
    /// incremental sweep then compares only those instead of every latent of every lane (for
    /// a program with tens of thousands of latents, that comparison alone streams megabytes
    /// per call). A latent wrongly left out keeps its old value.
    pub fn forward_forced_near(
        &self,
        ws: &mut Workspace,
        params: &[f64],
        latents: &[f64],
        forced: &[(u32, Branch)],
        moved: Option<&[u32]>,
        out: &mut [f64],
    ) {
        let batch = out.len();
        assert_eq!(forced.len(), batch, "one forcing per sample");
        self.check_inputs(ws, params, latents, batch);
        // A uniform if-statement is evaluated once for all lanes; forcing it in some lanes
        // only takes the per-sample path.
        if forced.iter().any(|(k, _)| self.uniform_ifs.contains(k)) {
            let mut point = std::mem::take(&mut ws.point);
            for (l, &(index, branch)) in forced.iter().enumerate() {
                for (i, p) in point.iter_mut().enumerate() {
                    *p = latents[i * batch + l];
                }
                let sem = Semantics::Forced { index, branch };
                self.forward(ws, sem, params, &point, &mut out[l..l + 1]);
            }
            ws.point = point;
            return;
        }
        if self.forward_forced_incremental(ws, params, latents, forced, moved, out) {
            return;
        }
        self.prepare(ws);
        ws.crisp_chunk = false;
        sweep::uniform_pass(self, ws, Semantics::Crisp, params);
        let mut start = 0;
        while start < batch {
            let w = CHUNK.min(batch - start);
            let mut force = sweep::LaneForce {
                index: [u32::MAX; CHUNK],
                then: [false; CHUNK],
            };
            for l in 0..CHUNK {
                let (k, b) = forced[start + l.min(w - 1)];
                force.index[l] = k;
                force.then[l] = b == Branch::Then;
            }
            let input = sweep::Input {
                params,
                latents,
                batch,
                start,
                w,
                force: Some(&force),
            };
            sweep::forward_chunk(self, ws, Semantics::Crisp, &input);
            out[start..start + w].copy_from_slice(&ws.values[self.output as usize][..w]);
            start += w;
        }
    }

    /// [`Tape::forward_forced`] when `ws` holds the crisp sweep of one chunk at the same
    /// parameters: only the steps downstream of a latent whose value changed or of a forced
    /// if-statement (this call's or the last one's) are redone; every other slot already
    /// holds the value a full sweep would compute (LYY18 moves one coordinate and forces one
    /// if-statement per sample). False, doing nothing, when `ws` holds no such sweep.
    fn forward_forced_incremental(
        &self,
        ws: &mut Workspace,
        params: &[f64],
        latents: &[f64],
        forced: &[(u32, Branch)],
        moved: Option<&[u32]>,
        out: &mut [f64],
    ) -> bool {
        let w = out.len();
        if ws.tape_id != self.id || !ws.crisp_chunk || w == 0 || w > CHUNK {
            return false;
        }
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits();
        for (k, s) in self.param_slots.iter().enumerate() {
            if let Some(s) = s
                && !same(ws.values[*s as usize][0], params[k])
            {
                return false;
            }
        }
        let mut dirty = std::mem::take(&mut ws.dirty);
        dirty.fill(false);
        let mut compare = |i: usize| {
            if let Some(s) = self.latent_slots.get(i).copied().flatten() {
                let src = &latents[i * w..(i + 1) * w];
                let held = &ws.values[s as usize];
                dirty[s as usize] = (0..CHUNK).any(|l| !same(held[l], src[l.min(w - 1)]));
            }
        };
        match moved {
            Some(moved) => moved.iter().for_each(|&i| compare(i as usize)),
            None => (0..self.latent_slots.len()).for_each(compare),
        }
        let mut reforce = std::mem::take(&mut ws.reforce);
        for &k in ws.forced.iter().chain(forced.iter().map(|(k, _)| k)) {
            if let Some(r) = reforce.get_mut(k as usize) {
                *r = true;
            }
        }
        let mut partial = std::mem::take(&mut ws.partial);
        partial.clear();
        for step in &self.steps {
            let d = |s: u32| dirty[s as usize];
            let is = match step.op {
                Op::Param { .. } => false,
                Op::Latent { .. } => d(step.out),
                Op::Unary { a, .. } => d(a),
                Op::Binary { a, b, .. } => d(a) || d(b),
                Op::NormalSquare { x, m, s, .. } => d(x) || d(m) || d(s),
                Op::SumChain { base, from, to } => {
                    d(base)
                        || self.chains[from as usize..to as usize]
                            .iter()
                            .any(|&(t, _)| d(t))
                }
                Op::If { g, t, e, index, .. } => d(g) || d(t) || d(e) || reforce[index as usize],
            };
            if is {
                dirty[step.out as usize] = true;
                partial.push(*step);
            }
        }
        let mut force = sweep::LaneForce {
            index: [u32::MAX; CHUNK],
            then: [false; CHUNK],
        };
        for l in 0..CHUNK {
            let (k, b) = forced[l.min(w - 1)];
            force.index[l] = k;
            force.then[l] = b == Branch::Then;
        }
        let input = sweep::Input {
            params,
            latents,
            batch: w,
            start: 0,
            w,
            force: Some(&force),
        };
        sweep::forward_steps(&partial, &self.chains, ws, &input);
        out.copy_from_slice(&ws.values[self.output as usize][..w]);
        for &k in &ws.forced {
            reforce[k as usize] = false;
        }
        ws.forced.clear();
        for &(k, _) in forced {
            if let Some(r) = reforce.get_mut(k as usize) {
                *r = false;
                ws.forced.push(k);
            }
        }
        ws.reforce = reforce;
        ws.dirty = dirty;
        ws.partial = partial;
        true
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
        self.forward_chunks(ws, semantics, params, latents, batch, |ws, start, w| {
            sweep::reverse_chunk(self, ws, semantics);
            ws.note_sweep(semantics, batch);
            grad.value[start..start + w].copy_from_slice(&ws.values[self.output as usize][..w]);
            for (slots, dest) in [
                (&self.latent_slots, &mut grad.latents),
                (&self.param_slots, &mut grad.params),
            ] {
                for (i, s) in slots.iter().enumerate() {
                    let d = &mut dest[i * batch + start..i * batch + start + w];
                    match s.map(|s| self.adj[s as usize]) {
                        Some(a) if a != NONE => d.copy_from_slice(&ws.adjoints[a as usize][..w]),
                        _ => d.fill(0.0),
                    }
                }
            }
        });
    }

    /// Prepares the workspace, evaluates what is the same in every lane once, then sweeps
    /// forward chunk by chunk, handing each chunk's first lane and width to `after_chunk`
    /// (which reads the chunk's values, or sweeps it back).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn forward_chunks(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: &[f64],
        batch: usize,
        mut after_chunk: impl FnMut(&mut Workspace, usize, usize),
    ) {
        self.prepare(ws);
        sweep::uniform_pass(self, ws, semantics, params);
        let mut start = 0;
        while start < batch {
            let w = CHUNK.min(batch - start);
            let input = sweep::Input {
                params,
                latents,
                batch,
                start,
                w,
                force: None,
            };
            sweep::forward_chunk(self, ws, semantics, &input);
            after_chunk(ws, start, w);
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
        assert!(
            ws.values.len() == self.len
                && ws.adjoints.len() == self.active_count
                && ws.weights.len() == self.if_slots,
            "workspace of another tape"
        );
    }
}

/// Gives the smoothing weights the reverse sweep reads (those of the if-statements in the
/// smoothed plan) places of their own, in the order the reverse sweep reads them, and lets all
/// the others share one scratch place: the reverse sweep then streams through a dense array
/// (for `cheating`, a third of the size, without the coin tosses' weights in between) instead
/// of picking every third entry out of a large one. Returns the number of places.
fn share_unread_weights(
    if_slots: usize,
    step_lists: [&mut Vec<Step>; 2],
    plans: [&mut Plan; 2],
) -> usize {
    let [smooth, crisp] = plans;
    let mut place = vec![u32::MAX; if_slots];
    let mut next = 0u32;
    for rs in smooth.steps.iter().rev() {
        if let Op::If { cache, .. } = rs.step.op
            && place[cache as usize] == u32::MAX
        {
            place[cache as usize] = next;
            next += 1;
        }
    }
    let shared = next;
    let scratch_needed = place.contains(&u32::MAX);
    for p in place.iter_mut().filter(|p| **p == u32::MAX) {
        *p = shared;
    }
    let renumber = |step: &mut Step| {
        if let Op::If { cache, .. } = &mut step.op {
            *cache = place[*cache as usize];
        }
    };
    for list in step_lists {
        list.iter_mut().for_each(renumber);
    }
    for plan in [smooth, crisp] {
        plan.steps.iter_mut().for_each(|rs| renumber(&mut rs.step));
    }
    shared as usize + usize::from(scratch_needed)
}

/// Per slot, whether adjoints flow from it to an active latent or parameter along the edges
/// the semantics differentiates (a crisp guard passes nothing).
fn reaches_inputs(steps: &[Step], adj: &[u32], chains: &[(u32, bool)], smooth: bool) -> Vec<bool> {
    let mut reach = vec![false; adj.len()];
    for step in steps {
        let r = |s: u32| reach[s as usize];
        let here = match step.op {
            Op::Param { .. } | Op::Latent { .. } => adj[step.out as usize] != NONE,
            Op::Unary { a, .. } => r(a),
            Op::Binary { a, b, .. } => r(a) || r(b),
            Op::NormalSquare { x, m, s, .. } => r(x) || r(m) || r(s),
            Op::SumChain { base, from, to } => {
                r(base)
                    || chains[from as usize..to as usize]
                        .iter()
                        .any(|&(t, _)| r(t))
            }
            Op::If { g, t, e, .. } => (smooth && r(g)) || r(t) || r(e),
        };
        reach[step.out as usize] = here;
    }
    reach
}

/// What the reverse plans are built from: every step in slot order, the adjoint index and
/// uniformity of each slot, the slots fused away, the sum-chain terms, the output, and the
/// adjoints the gradient reads.
struct Shape<'a> {
    steps: &'a [Step],
    adj: &'a [u32],
    uniform: &'a [bool],
    fused: &'a [u32],
    chains: &'a [(u32, bool)],
    output: u32,
    inputs: &'a [u32],
}

/// The reverse sweep for smoothed (`smooth`: guards carry adjoints) or crisp and forced
/// semantics: the steps with something to propagate, in reverse order, and which
/// contribution comes first to each adjoint. The order of contributions is the order in which
/// the sweep makes them (reverse instruction order; guard, then, else within an `If`), so
/// "first" here is first there.
fn plan(shape: &Shape, smooth: bool) -> Plan {
    let Shape {
        steps,
        adj,
        uniform,
        fused,
        chains,
        output,
        inputs,
    } = *shape;
    let mut chain_targets = vec![NO_TARGET; chains.len()];
    let active_count = adj.iter().filter(|&&a| a != NONE).count();
    let mut seen = vec![false; active_count];
    // Slots fused away are never read: their adjoints need no zeroing.
    for &f in fused {
        if adj[f as usize] != NONE {
            seen[adj[f as usize] as usize] = true;
        }
    }
    if adj[output as usize] != NONE {
        seen[adj[output as usize] as usize] = true;
    }
    // Whether a slot's adjoint can receive anything but zeros: the output's does, and so do
    // the operands of a live step along the edges this semantics differentiates (crisp
    // guards pass nothing). Readers come after their operands, so the reversed walk knows a
    // step's liveness when it reaches it. A dead step would only add exact `+0.0`s (adjoints
    // are never `-0.0`: the first contribution is written as `0.0 + c`), so skipping it
    // changes no bit; it saves e.g. the crisp sweep through everything xornet's guards read.
    //
    // Symmetrically, a contribution is only worth making to a slot from which adjoints can
    // flow on to a latent or parameter (`reaches`, in slot order): under crisp semantics
    // nothing that only feeds guards does (the Reparam gradient of `cheating` is exactly
    // zero, so its reverse sweep becomes empty). Such a slot's adjoint never reaches an
    // input's, so the gradient keeps its bits.
    let reaches = reaches_inputs(steps, adj, chains, smooth);
    let live = std::cell::RefCell::new(vec![false; adj.len()]);
    live.borrow_mut()[output as usize] = true;
    let mut target = |slot: u32, wanted: bool| -> Target {
        let a = adj[slot as usize];
        if !wanted || a == NONE || !reaches[slot as usize] {
            return NO_TARGET;
        }
        live.borrow_mut()[slot as usize] = true;
        let first = !seen[a as usize];
        seen[a as usize] = true;
        Target { adj: a, first }
    };
    let mut out = Vec::new();
    for &step in steps.iter().rev() {
        let ad = adj[step.out as usize];
        if ad == NONE || !live.borrow()[step.out as usize] || !reaches[step.out as usize] {
            continue;
        }
        let to = match step.op {
            Op::Param { .. } | Op::Latent { .. } => continue,
            Op::Unary { a, .. } => [target(a, true), NO_TARGET, NO_TARGET],
            Op::Binary { a, b, .. } if a == b => [target(a, true), NO_TARGET, NO_TARGET],
            Op::Binary { a, b, .. } => [target(a, true), target(b, true), NO_TARGET],
            // In the order of the unfused sweep: the division's `s`, then the
            // subtraction's `x` and `m`.
            Op::NormalSquare { x, m, s, .. } => {
                let ts = target(s, true);
                let tx = target(x, true);
                [ts, tx, target(m, true)]
            }
            // The additions in reverse, each adding to its term; the base comes last.
            Op::SumChain { base, from, to } => {
                for j in (from..to).rev() {
                    chain_targets[j as usize] = target(chains[j as usize].0, true);
                }
                [target(base, true), NO_TARGET, NO_TARGET]
            }
            Op::If { g, t, e, .. } => {
                let tg = target(g, smooth);
                let tt = target(t, true);
                [tg, tt, target(e, true)]
            }
        };
        let chain = matches!(step.op, Op::SumChain { .. });
        if chain || to.iter().any(|t| t.adj != NONE) {
            out.push(RevStep {
                step,
                ad,
                to,
                uniform: uniform[step.out as usize],
            });
        }
    }
    // Every live step's own adjoint is written before it is read; of the others, only the
    // inputs' adjoints are read (as the gradient), so only they need zeroing.
    let zero = inputs
        .iter()
        .copied()
        .filter(|&a| !seen[a as usize])
        .collect();
    Plan {
        steps: out,
        zero,
        chain_targets,
    }
}

//! LYY18's forced sweeps: the output for a batch in which every sample forces one
//! if-statement to a branch of its own (crisp at every other), done incrementally right after
//! a crisp sweep of the same chunk by redoing only what the forcing and the moved coordinates
//! reach.
//!
//! Not here: the ordinary batch entry points (`evaluate.rs`) and the sweeps (`sweep.rs`).

use crate::ir::{Branch, Semantics};

use super::instr::{CHUNK, NONE, Op, Step};
use super::sweep;
use super::tape::Tape;
use super::workspace::Workspace;

/// Scratch memory of the forced sweeps, beside a [`Workspace`] (only LYY18 needs it).
#[derive(Clone, Debug)]
pub struct ForcedScratch {
    /// Per slot, whether the incremental forced sweep recomputes it; and those steps.
    dirty: Vec<bool>,
    partial: Vec<Step>,
    /// Per if-statement of the program, whether the incremental sweep redoes it.
    reforce: Vec<bool>,
    /// One sample's latents, for forcing one sample at a time.
    point: Vec<f64>,
}

impl Tape {
    /// Scratch memory for [`Tape::forward_forced`] on this tape.
    pub fn forced_scratch(&self) -> ForcedScratch {
        ForcedScratch {
            dirty: vec![false; self.len],
            partial: Vec::with_capacity(self.full.steps.len()),
            reforce: vec![false; self.if_count],
            point: vec![0.0; self.latent_count()],
        }
    }

    /// Values of the output for `batch` samples, each under its own forcing: sample `l` is
    /// evaluated under `Semantics::Forced { index: forced[l].0, branch: forced[l].1 }`. Gives
    /// the bits of one [`Tape::forward`] call per sample, at the cost of one batch.
    pub fn forward_forced(
        &self,
        ws: &mut Workspace,
        scratch: &mut ForcedScratch,
        params: &[f64],
        latents: &[f64],
        forced: &[(u32, Branch)],
        out: &mut [f64],
    ) {
        self.forward_forced_near(ws, scratch, params, latents, forced, None, out);
    }

    /// [`Tape::forward_forced`] where the caller vouches that only the latents listed in
    /// `moved` (all of them when `None`) can differ from those of the last sweep on `ws`: the
    /// incremental sweep then compares only those instead of every latent of every lane (for
    /// a program with tens of thousands of latents, that comparison alone streams megabytes
    /// per call). A latent wrongly left out keeps its old value.
    #[allow(clippy::too_many_arguments)]
    pub fn forward_forced_near(
        &self,
        ws: &mut Workspace,
        scratch: &mut ForcedScratch,
        params: &[f64],
        latents: &[f64],
        forced: &[(u32, Branch)],
        moved: Option<&[u32]>,
        out: &mut [f64],
    ) {
        let batch = out.len();
        assert_eq!(forced.len(), batch, "one forcing per sample");
        self.check_inputs(ws, params, &latents.into(), batch);
        // A uniform if-statement is evaluated once for all lanes; forcing it in some lanes
        // only takes the per-sample path.
        if forced.iter().any(|(k, _)| self.uniform_ifs.contains(k)) {
            let point = &mut scratch.point;
            for (l, &(index, branch)) in forced.iter().enumerate() {
                for (i, p) in point.iter_mut().enumerate() {
                    *p = latents[i * batch + l];
                }
                let sem = Semantics::Forced { index, branch };
                self.forward(ws, sem, params, point, &mut out[l..l + 1]);
            }
            return;
        }
        // The incremental sweep reads values of the crisp sweep before it, which only the
        // full layout keeps; a workspace switches to it at the first forced sweep.
        self.use_full(ws);
        if self.forward_forced_incremental(ws, scratch, params, latents, forced, moved, out) {
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
                latents: latents.into(),
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
    #[allow(clippy::too_many_arguments)]
    fn forward_forced_incremental(
        &self,
        ws: &mut Workspace,
        scratch: &mut ForcedScratch,
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
        let dirty = &mut scratch.dirty;
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
        let reforce = &mut scratch.reforce;
        for &k in ws.forced.iter().chain(forced.iter().map(|(k, _)| k)) {
            if let Some(r) = reforce.get_mut(k as usize) {
                *r = true;
            }
        }
        let partial = &mut scratch.partial;
        partial.clear();
        for step in &self.full.steps {
            let d = |s: u32| dirty[s as usize];
            let is = match step.op {
                Op::Param { .. } => false,
                Op::Latent { .. } => d(step.out),
                Op::Unary { a, .. } => d(a),
                Op::Binary { a, b, .. } => d(a) || d(b),
                Op::NormalSquare { x, m, s, .. } => d(x) || d(m) || d(s),
                Op::SquareDiff { x, m, .. } => d(x) || d(m),
                Op::Square { x, s, .. } => d(x) || (s != NONE && d(s)),
                Op::PoissonTerm { r, .. } => d(r),
                Op::SumChain { base, from, to } => {
                    d(base)
                        || self.full.chains[from as usize..to as usize]
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
            latents: latents.into(),
            batch: w,
            start: 0,
            w,
            force: Some(&force),
        };
        sweep::forward_steps(partial, &self.full.chains, ws, &input);
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
        true
    }
}

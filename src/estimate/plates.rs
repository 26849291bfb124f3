//! Plates in the estimators: each plate's body compiled to tapes of its own and run over the
//! rows, its value and gradients added to the outer program's per sample.
//!
//! For one sample (a lane of the chunk) the body's parameters are the shared values of that
//! sample (the model's parameters, and global latents `loc + scale * s` formed as the outer
//! sweep forms them). The rows go through the *group* tape: the body repeated for
//! [`GROUP_ROWS`] consecutive rows, their outputs added in row order, so that one lane of the
//! tape's batch is a group of rows and the per-chunk work of a sweep (a few hundred cycles,
//! more than a small body's own) is paid once per sixteen groups instead of once per sixteen
//! rows. The last `rows % GROUP_ROWS` rows go through the body's own tape. A call of a tape
//! runs [`BLOCK_ROWS`] rows; their inputs are handed over as reparameterised noise of
//! location `-0.0` and scale `1` (`-0.0 + 1 * x` is `x`, bit for bit, signed zeros
//! included), so that the compiled forward sweep, which reads only that form, runs.
//!
//! Each lane's groups are summed in row order, the lanes' chains side by side: the sums are
//! the same whatever the number of threads or the kernel set.
//!
//! Subsampled ([`Subsample`](super::Subsample)): the rows are the drawn ones, in increasing order, and the sums
//! are scaled by `n / M`; a row's own latents get a gradient only when the row is drawn.

use crate::eval::{BatchGradient, CHUNK, Latents, Tape, Values, Workspace};
use crate::family::FamilyState;
use crate::ir::{Builder, Node, Plate, Program, Semantics, Shared, Var};

/// Rows per call of a tape: large enough that the per-call work (the shared part of the
/// body, run once per call) is negligible, small enough that a block's inputs and per-group
/// gradients of all sixteen lanes stay in the L2 cache. A multiple of [`GROUP_ROWS`].
pub(crate) const BLOCK_ROWS: usize = 1024;

/// Rows per lane of the group tape (see the module doc).
pub(crate) const GROUP_ROWS: usize = 16;

/// Where the summed gradient of one body parameter goes in the outer per-sample gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Target {
    /// Row `k` of the parameters' gradient (the model's parameter `theta_k`).
    Param(usize),
    /// Row `r` of the latents' gradient (a moved latent sampled outside the loop).
    Latent(usize),
    /// Nowhere: a fixed latent, whose gradient is never read.
    Nowhere,
}

/// A tape of `rows` consecutive rows of the body, and which of its latent inputs have a
/// gradient.
#[derive(Debug)]
struct RowsTape {
    tape: Tape,
    rows: usize,
    /// Per row of the group, per active row latent: its row of the tape's latent gradient.
    active: Vec<u32>,
}

impl RowsTape {
    fn new(body: &Program, rows: usize, active_inputs: &[bool]) -> RowsTape {
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
            tape: Tape::compile_active(&program, 0, Some(&mask)),
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
    let var = |id: crate::ir::NodeId| b.var(id).expect("a node of this builder");
    let mut total: Option<Var<'_>> = None;
    for t in 0..rows {
        let mut map = Vec::with_capacity(body.node_count());
        for node in body.nodes() {
            let m = |id: crate::ir::NodeId| var(map[id.index()]);
            let v = match *node {
                Node::Const(c) => b.constant(c),
                Node::Param(k) => b.param_at(k as usize).expect("declared above"),
                Node::Latent(i) => b
                    .latent_at(t * inputs + i as usize)
                    .expect("declared above"),
                Node::Unary(op, x) => b.unary(op, m(x)),
                Node::Binary(op, x, y) => b.binary(op, m(x), m(y)),
                Node::If {
                    guard,
                    then_,
                    else_,
                    ..
                } => b.if_neg(m(guard), m(then_), m(else_)),
            };
            map.push(v.id());
        }
        let out = var(map[body.output().index()]);
        total = Some(match total {
            None => out,
            Some(s) => s + out,
        });
    }
    let total = total.expect("at least one row");
    b.finish(&[total])
        .expect("a repeated body is as valid as the body")
}

/// One plate made ready to run.
#[derive(Debug)]
pub(crate) struct PlateRun {
    pub(crate) plate: Plate,
    /// The body for [`GROUP_ROWS`] rows, and for one.
    group: RowsTape,
    single: RowsTape,
    /// Per body parameter: where its gradient goes, and whether it is the first to write
    /// that row at a call (the outer sweep leaves a row it has no adjoint for as zeros written
    /// once, so the first writer overwrites it instead of adding).
    targets: Vec<(Target, bool)>,
    /// The row latents with a gradient, by their index `q` among the plate's.
    active: Vec<usize>,
    /// Per guard factor of a body smoothed relative to its guards' spread
    /// ([`Shared::GuardFactor`]): the model latents it reads with their mean-square
    /// coefficients (`ir::scale_plate_guards`).
    factors: crate::ir::PlateFactors,
    /// The columns of a full-data sweep's calls, each call's laid out as its inputs
    /// (see [`PlateRun::fill_columns`]), one call after another: a full-data call reads its
    /// inputs from here, as they are where the plate has no row latents, instead of
    /// gathering them from the columns at every call of every sweep.
    laid: Vec<f64>,
}

/// One thread's scratch for one plate.
#[derive(Clone, Debug)]
pub(crate) struct PlateScratch {
    group: TapeScratch,
    single: TapeScratch,
    /// Per lane of the chunk, a call's inputs, input-major (`[j * lanes + g]` for a call of
    /// `lanes` lanes); lane 0's serves every lane of a plate without row latents.
    inputs: Vec<Vec<f64>>,
    /// One lane's shared values (the body's parameters).
    shared: Vec<f64>,
    /// The identity as a location-scale map: `-0.0` and `1` per input.
    zero: Vec<f64>,
    one: Vec<f64>,
    /// Per parameter and lane (`[k * CHUNK + l]`), the gradient summed so far.
    acc: Vec<f64>,
}

/// One thread's scratch for one of a plate's tapes.
#[derive(Clone, Debug)]
struct TapeScratch {
    ws: Workspace,
    /// Per lane of the chunk, a call's per-lane values and gradients.
    grads: Vec<BatchGradient>,
    /// Per lane of the chunk, a call's per-lane values of a forward sweep.
    outs: Vec<Vec<f64>>,
}

impl PlateScratch {
    /// Runs every sweep of this plate's tapes in the build `set` (for tests).
    #[cfg(test)]
    pub(crate) fn set_kernels(&mut self, set: crate::eval::vmath::KernelSet) {
        self.group.ws.set_kernels(set);
        self.single.ws.set_kernels(set);
    }
}

impl TapeScratch {
    fn new(t: &RowsTape) -> TapeScratch {
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

/// Which rows a call runs.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Rows<'a> {
    /// Every row, scale 1.
    All,
    /// The drawn rows (increasing), their sums scaled by `scale` (`n / M`).
    Drawn { rows: &'a [u32], scale: f64 },
}

impl Rows<'_> {
    /// The row at position `t` of the sequence.
    #[inline(always)]
    fn at(&self, t: usize) -> usize {
        match self {
            Rows::All => t,
            Rows::Drawn { rows, .. } => rows[t] as usize,
        }
    }

    fn scale(&self) -> f64 {
        match self {
            Rows::All => 1.0,
            Rows::Drawn { scale, .. } => *scale,
        }
    }
}

/// The outer gradient rows a plate adds into, and the chunk's noise.
pub(crate) struct Outer<'a> {
    pub theta: &'a [f64],
    pub state: &'a FamilyState,
    /// The chunk's noise, latent-major (`s[i * w + l]`).
    pub s: &'a [f64],
    pub w: usize,
    /// The moved-latent row of each model latent (`u32::MAX` for a fixed one).
    pub moved_row: &'a [u32],
}

/// A call's rows: positions `start..start + lanes * per` of the row sequence, `per` to a
/// lane of a tape of `per` rows.
#[derive(Clone, Copy)]
struct Call {
    start: usize,
    lanes: usize,
    per: usize,
}

impl Call {
    /// The lanes a call runs: whole chunks, so that the compiled sweeps run (they take whole
    /// chunks only; the interpreter's sweep of a repeated body costs several times theirs).
    fn padded(self) -> usize {
        self.lanes.next_multiple_of(CHUNK)
    }

    /// The position in the row sequence of lane `g`'s row `t` (a padding lane's is the last
    /// lane's).
    #[inline(always)]
    fn position(self, g: usize, t: usize) -> usize {
        self.start + g.min(self.lanes - 1) * self.per + t
    }
}

impl PlateRun {
    /// `plate` compiled; `wanted[i]` says whether model latent `i` has a gradient,
    /// `moved_row` is its row, `written` which outer rows are already written at every call
    /// (updated with the rows this plate writes first).
    pub(crate) fn new(
        plate: &Plate,
        wanted: &[bool],
        moved_row: &[u32],
        written: &mut std::collections::HashSet<Target>,
        factors: crate::ir::PlateFactors,
    ) -> PlateRun {
        let body = &plate.body;
        let c = plate.columns.len();
        assert_eq!(
            body.param_count(),
            plate.shared.len(),
            "one shared value per body parameter"
        );
        assert_eq!(
            body.latent_count(),
            c + plate.row_latents.len(),
            "the body's latents are the columns, then the row latents"
        );
        let active: Vec<usize> = (0..plate.row_latents.len())
            .filter(|&q| wanted[plate.row_latents[q].first as usize])
            .collect();
        let mut active_inputs = vec![false; body.latent_count()];
        for &q in &active {
            active_inputs[c + q] = true;
        }
        let targets = plate
            .shared
            .iter()
            .map(|s| {
                let t = match *s {
                    Shared::Param(k) => Target::Param(k as usize),
                    Shared::Latent(i) => match moved_row[i as usize] {
                        u32::MAX => Target::Nowhere,
                        r => Target::Latent(r as usize),
                    },
                    // A schedule value: its derivative is never read.
                    Shared::GuardFactor(_) => Target::Nowhere,
                };
                let first = t != Target::Nowhere && written.insert(t);
                (t, first)
            })
            .collect();
        let mut run = PlateRun {
            plate: plate.clone(),
            group: RowsTape::new(body, GROUP_ROWS, &active_inputs),
            single: RowsTape::new(body, 1, &active_inputs),
            targets,
            active,
            factors,
            laid: Vec::new(),
        };
        run.laid = run.lay_out_columns();
        run
    }

    /// Every full-data call's columns laid out as its inputs, in call order (the row
    /// latents' places left at zero).
    fn lay_out_columns(&self) -> Vec<f64> {
        let inputs = self.plate.body.latent_count();
        let calls = Self::calls(self.plate.rows);
        let len = calls.map(|c| inputs * c.per * c.padded()).sum();
        let mut laid = vec![0.0; len];
        let mut at = 0;
        for call in Self::calls(self.plate.rows) {
            let size = inputs * call.per * call.padded();
            self.fill_columns(&mut laid[at..at + size], call, Rows::All);
            at += size;
        }
        laid
    }

    /// Scratch for one thread.
    pub(crate) fn scratch(&self) -> PlateScratch {
        let inputs = self.plate.body.latent_count();
        PlateScratch {
            group: TapeScratch::new(&self.group),
            single: TapeScratch::new(&self.single),
            inputs: {
                let lanes = if self.plate.row_latents.is_empty() {
                    1
                } else {
                    CHUNK
                };
                vec![vec![0.0; inputs * (BLOCK_ROWS + CHUNK)]; lanes]
            },
            shared: vec![0.0; self.plate.shared.len()],
            zero: vec![-0.0; inputs * GROUP_ROWS],
            one: vec![1.0; inputs * GROUP_ROWS],
            acc: vec![0.0; self.plate.shared.len() * CHUNK],
        }
    }

    /// The calls that cover `count` rows: blocks through the group tape, then the rows left
    /// one to a lane.
    fn calls(count: usize) -> impl Iterator<Item = Call> {
        let grouped = count - count % GROUP_ROWS;
        let blocks = (0..grouped).step_by(BLOCK_ROWS).map(move |start| Call {
            start,
            lanes: (BLOCK_ROWS.min(grouped - start)) / GROUP_ROWS,
            per: GROUP_ROWS,
        });
        blocks.chain((grouped < count).then_some(Call {
            start: grouped,
            lanes: count - grouped,
            per: 1,
        }))
    }

    /// The tape a call runs: the body for one row per lane, or repeated for a group.
    fn tape_for(&self, call: Call) -> &RowsTape {
        if call.per == 1 {
            &self.single
        } else {
            &self.group
        }
    }

    /// Fills lane `l`'s shared values.
    fn shared_values(&self, ps: &mut PlateScratch, o: &Outer<'_>, l: usize) {
        for (v, s) in ps.shared.iter_mut().zip(&self.plate.shared) {
            *v = match *s {
                Shared::Param(k) => o.theta[k as usize],
                Shared::Latent(i) => {
                    let i = i as usize;
                    // As `Latents::load` forms it: multiplied, then added.
                    o.state.loc(i) + o.state.scale(i) * o.s[i * o.w + l]
                }
                Shared::GuardFactor(j) => {
                    crate::ir::plate_guard_factor(&self.factors[j as usize], |i| o.state.scale(i))
                }
            };
        }
    }

    /// Makes a call's inputs ready: `Some(at)` where every lane reads them from
    /// `self.laid[at..]` (a full-data call of a plate without row latents, `at` being the
    /// call's place there), else `None`, each lane reading its buffer of `ps.inputs`.
    fn call_inputs(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        call: Call,
        rows: Rows<'_>,
        at: usize,
    ) -> Option<usize> {
        let len = self.plate.body.latent_count() * call.per * call.padded();
        match rows {
            Rows::All if self.plate.row_latents.is_empty() => return Some(at),
            Rows::All => ps.inputs[0][..len].copy_from_slice(&self.laid[at..at + len]),
            Rows::Drawn { .. } => self.fill_columns(&mut ps.inputs[0], call, rows),
        }
        self.fill_row_latents(ps, o, call, rows);
        None
    }

    /// Writes the call's columns: input `t * inputs + j` of lane `g` is column `j` at the
    /// row of position `start + g * per + t`; the padding lanes up to a whole chunk repeat
    /// the last lane.
    fn fill_columns(&self, buf: &mut [f64], call: Call, rows: Rows<'_>) {
        let inputs = self.plate.body.latent_count();
        let nb = call.padded();
        for (j, col) in self.plate.columns.iter().enumerate() {
            for t in 0..call.per {
                let dest = &mut buf[(t * inputs + j) * nb..(t * inputs + j + 1) * nb];
                for (g, x) in dest.iter_mut().enumerate() {
                    *x = col[rows.at(call.position(g, t))];
                }
            }
        }
    }

    /// Writes the call's row latents of every lane (the columns, in lane 0's buffer, copied
    /// to the others first): a row's latent index, location and scale are found once, and
    /// its noise of all lanes is contiguous.
    fn fill_row_latents(&self, ps: &mut PlateScratch, o: &Outer<'_>, call: Call, rows: Rows<'_>) {
        if self.plate.row_latents.is_empty() {
            return;
        }
        let inputs = self.plate.body.latent_count();
        let c = self.plate.columns.len();
        let nb = call.padded();
        let len = inputs * call.per * nb;
        let (first, others) = ps.inputs.split_at_mut(1);
        for buf in &mut others[..o.w - 1] {
            buf[..len].copy_from_slice(&first[0][..len]);
        }
        let w = o.w;
        for (q, rl) in self.plate.row_latents.iter().enumerate() {
            for t in 0..call.per {
                let j = t * inputs + c + q;
                for g in 0..nb {
                    let i = rl.of_row(rows.at(call.position(g, t))) as usize;
                    let (lo, sc) = (o.state.loc(i), o.state.scale(i));
                    let noise = &o.s[i * w..(i + 1) * w];
                    for (buf, &sn) in ps.inputs.iter_mut().zip(noise) {
                        buf[j * nb + g] = lo + sc * sn;
                    }
                }
            }
        }
    }

    /// Adds the plate's value and gradients to the outer per-sample gradient `grad` (of the
    /// chunk's `o.w` lanes) under `semantics`.
    pub(crate) fn add_gradient(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        semantics: Semantics,
        values: Values,
        rows: Rows<'_>,
        grad: &mut BatchGradient,
    ) {
        let w = o.w;
        let k_count = self.plate.shared.len();
        let count = match rows {
            Rows::All => self.plate.rows,
            Rows::Drawn { rows, .. } => rows.len(),
        };
        let inputs = self.plate.body.latent_count();
        let scale = rows.scale();
        let mut value = [0.0; CHUNK];
        ps.acc.fill(0.0);
        // A row latent's gradient row is written by its plate alone: undrawn rows get zeros.
        if let Rows::Drawn { .. } = rows {
            for &q in &self.active {
                let rl = self.plate.row_latents[q];
                for r in 0..self.plate.rows {
                    let m = o.moved_row[rl.of_row(r) as usize] as usize;
                    grad.latents[m * w..(m + 1) * w].fill(0.0);
                }
            }
        }
        let mut at = 0;
        for call in Self::calls(count) {
            let (n, nb) = (call.lanes, call.padded());
            let rt = self.tape_for(call);
            let len = inputs * call.per * nb;
            let laid = self.call_inputs(ps, o, call, rows, at);
            at += len;
            for l in 0..w {
                self.shared_values(ps, o, l);
                // Split from the other fields of `ps` the call reads.
                let ts = if call.per == 1 {
                    &mut ps.single
                } else {
                    &mut ps.group
                };
                let g = &mut ts.grads[l];
                g.resize(&rt.tape, nb);
                rt.tape.gradient_latents(
                    &mut ts.ws,
                    semantics,
                    &ps.shared,
                    Latents::Affine {
                        noise: match laid {
                            Some(at) => &self.laid[at..at + len],
                            None => &ps.inputs[l.min(ps.inputs.len() - 1)][..len],
                        },
                        loc: &ps.zero[..inputs * call.per],
                        scale: &ps.one[..inputs * call.per],
                    },
                    g,
                    values,
                );
            }
            let ts = if call.per == 1 { &ps.single } else { &ps.group };
            let grads = &ts.grads[..w];
            // Row order within each lane; the lanes' chains side by side.
            let vals: [&[f64]; CHUNK] = std::array::from_fn(|l| match grads.get(l) {
                Some(g) => &g.value[..n],
                None => &[][..],
            });
            add_lanes(&mut value[..w], &vals[..w], n);
            for k in 0..k_count {
                let cols: [&[f64]; CHUNK] = std::array::from_fn(|l| match grads.get(l) {
                    Some(g) => &g.params[k * nb..k * nb + n],
                    None => &[][..],
                });
                add_lanes(&mut ps.acc[k * CHUNK..k * CHUNK + w], &cols[..w], n);
            }
            for (a, &q) in self.active.iter().enumerate() {
                let rl = self.plate.row_latents[q];
                for t in 0..call.per {
                    let row = a + t * self.active.len();
                    for gi in 0..n {
                        let r = rows.at(call.position(gi, t));
                        let m = o.moved_row[rl.of_row(r) as usize] as usize;
                        for (l, g) in grads.iter().enumerate() {
                            grad.latents[m * w + l] = scale * g.latents[row * nb + gi];
                        }
                    }
                }
            }
        }
        for (v, x) in grad.value[..w].iter_mut().zip(&value) {
            *v += scale * x;
        }
        for (k, &(target, first)) in self.targets.iter().enumerate() {
            let dest = match target {
                Target::Param(p) => &mut grad.params[p * w..(p + 1) * w],
                Target::Latent(r) => &mut grad.latents[r * w..(r + 1) * w],
                Target::Nowhere => continue,
            };
            for (d, &a) in dest.iter_mut().zip(&ps.acc[k * CHUNK..k * CHUNK + w]) {
                *d = if first { scale * a } else { *d + scale * a };
            }
        }
    }

    /// Adds the plate's value to `out[..o.w]` (a forward sweep only) under `semantics`.
    pub(crate) fn add_values(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        semantics: Semantics,
        rows: Rows<'_>,
        out: &mut [f64],
    ) {
        let w = o.w;
        let count = match rows {
            Rows::All => self.plate.rows,
            Rows::Drawn { rows, .. } => rows.len(),
        };
        let inputs = self.plate.body.latent_count();
        let mut value = [0.0; CHUNK];
        let mut at = 0;
        for call in Self::calls(count) {
            let (n, nb) = (call.lanes, call.padded());
            let rt = self.tape_for(call);
            let len = inputs * call.per * nb;
            let laid = self.call_inputs(ps, o, call, rows, at);
            at += len;
            for l in 0..w {
                self.shared_values(ps, o, l);
                // Split from the other fields of `ps` the call reads.
                let ts = if call.per == 1 {
                    &mut ps.single
                } else {
                    &mut ps.group
                };
                rt.tape.forward_latents(
                    &mut ts.ws,
                    semantics,
                    &ps.shared,
                    Latents::Affine {
                        noise: match laid {
                            Some(at) => &self.laid[at..at + len],
                            None => &ps.inputs[l.min(ps.inputs.len() - 1)][..len],
                        },
                        loc: &ps.zero[..inputs * call.per],
                        scale: &ps.one[..inputs * call.per],
                    },
                    &mut ts.outs[l][..nb],
                );
            }
            let ts = if call.per == 1 { &ps.single } else { &ps.group };
            let vals: [&[f64]; CHUNK] = std::array::from_fn(|l| match ts.outs.get(l) {
                Some(v) if l < w => &v[..n],
                _ => &[][..],
            });
            add_lanes(&mut value[..w], &vals[..w], n);
        }
        let scale = rows.scale();
        for (v, x) in out[..w].iter_mut().zip(&value) {
            *v += scale * x;
        }
    }
}

/// `acc[l] += src[l][0] + ... + src[l][n - 1]`, one addition after another in each lane, the
/// lanes' chains interleaved.
#[inline]
#[allow(clippy::needless_range_loop)] // one row of every lane at a time, on purpose
fn add_lanes(acc: &mut [f64], src: &[&[f64]], n: usize) {
    if let (Ok(acc), Ok(src)) = (
        <&mut [f64; CHUNK]>::try_from(&mut *acc),
        <&[&[f64]; CHUNK]>::try_from(src),
    ) {
        let src: [&[f64]; CHUNK] = std::array::from_fn(|l| &src[l][..n]);
        for t in 0..n {
            for l in 0..CHUNK {
                acc[l] += src[l][t];
            }
        }
        return;
    }
    for t in 0..n {
        for (a, s) in acc.iter_mut().zip(src) {
            *a += s[t];
        }
    }
}

/// The body of `plate` as the analyses must see it: in the model's terms, its shared
/// parameters the model's parameters (`Param(p)`, of `params` in all), everything else it
/// reads a latent (the shared latents, then the columns, then the row latents). A column is
/// data, but read as a latent the analyses stay on the safe side: a guard on a column is
/// taken to move with the latents, a product with one to be non-affine. Each if-statement
/// keeps its span, so that warnings point into the loop.
pub(crate) fn analysis_view(plate: &Plate, param_names: &[String]) -> Program {
    let body = &plate.body;
    let b = Builder::new();
    for name in param_names {
        b.param(name);
    }
    let mut shared_latent = vec![None; plate.shared.len()];
    for (k, s) in plate.shared.iter().enumerate() {
        if let Shared::Latent(i) = s {
            shared_latent[k] = Some(b.latent(&format!("z{i}")).id());
        }
    }
    let first_input = b.latent_count();
    for name in body.latent_names() {
        b.latent(name);
    }
    let var = |id: crate::ir::NodeId| b.var(id).expect("a node of this builder");
    let mut map = Vec::with_capacity(body.node_count());
    for node in body.nodes() {
        let m = |id: crate::ir::NodeId| var(map[id.index()]);
        let v = match *node {
            Node::Const(c) => b.constant(c),
            Node::Param(k) => match (plate.shared[k as usize], shared_latent[k as usize]) {
                (_, Some(id)) => var(id),
                (Shared::Param(p), None) => b.param_at(p as usize).expect("declared above"),
                (Shared::Latent(_), None) => unreachable!("declared above"),
                // The analysis reads the model's own plates, whose guards have no factors.
                (Shared::GuardFactor(_), None) => b.constant(1.0),
            },
            Node::Latent(j) => b
                .latent_at(first_input + j as usize)
                .expect("declared above"),
            Node::Unary(op, x) => b.unary(op, m(x)),
            Node::Binary(op, x, y) => b.binary(op, m(x), m(y)),
            Node::If {
                guard,
                then_,
                else_,
                index,
            } => {
                b.set_span(body.if_span(index as usize));
                b.if_neg(m(guard), m(then_), m(else_))
            }
        };
        map.push(v.id());
    }
    let out = var(map[body.output().index()]);
    b.finish(&[out])
        .expect("a body in the model's terms is as valid as the body")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{Purpose, StreamKey};
    use crate::ir::Builder;

    /// A plate with a row latent, rows enough for two blocks and a remainder.
    fn plated() -> crate::ir::Model {
        use crate::ir::{Dist, LatentKind, LatentSpec, Mode, RowLatents};
        use std::sync::Arc;
        let n = 1100;
        let outer = Builder::new();
        let (a, b) = (outer.latent("a"), outer.latent("b"));
        for r in 0..n {
            outer.latent(&format!("u[{r}]"));
        }
        let (zero, five) = (outer.constant(0.0), outer.constant(5.0));
        let f = outer.log_density(Dist::Normal, a, &[zero, five]).unwrap()
            + outer.log_density(Dist::Normal, b, &[zero, five]).unwrap();
        let body = Builder::new();
        let (ba, bb) = (body.param("a"), body.param("b"));
        let (x, y, u) = (body.latent("x"), body.latent("y"), body.latent("u"));
        let one = body.constant(1.0);
        let p = body.if_neg(u + bb * x, body.constant(0.2), body.constant(0.7));
        let g = body.log_density(Dist::Normal, u, &[ba, one]).unwrap()
            + body.log_density(Dist::Bernoulli, y, &[p]).unwrap();
        let guided = |name: String| LatentSpec {
            name,
            kind: LatentKind::Guided {
                init_mean: 0.1,
                init_std: 0.6,
            },
            span: None,
        };
        let mut latents = vec![guided("a".into()), guided("b".into())];
        latents.extend((0..n).map(|r| guided(format!("u[{r}]"))));
        crate::ir::Model {
            name: "plated".into(),
            mode: Mode::Variational,
            program: outer.finish(&[f]).unwrap().into(),
            latents,
            params: Vec::new(),
            loops: Vec::new(),
            plates: vec![Plate {
                var: "i".into(),
                span: None,
                rows: n,
                body: Arc::new(body.finish(&[g]).unwrap()),
                shared: vec![Shared::Latent(0), Shared::Latent(1)],
                columns: vec![
                    (0..n).map(|r| (r as f64 * 0.37).sin()).collect(),
                    (0..n).map(|r| (r % 3 == 0) as u8 as f64).collect(),
                ],
                row_latents: vec![RowLatents {
                    first: 2,
                    stride: 1,
                }],
            }],
        }
    }

    /// Every kernel set gives the plate's values and gradients the same bits (the compiled
    /// sweeps included), smoothed and crisp, full and short chunks.
    #[test]
    fn a_plates_results_do_not_depend_on_the_kernel_set() {
        use crate::estimate::Problem;
        use crate::eval::vmath::KernelSet;
        let problem = Problem::new(&plated()).unwrap();
        let theta = problem.family().init();
        let mut state = problem.family().state();
        state.update(problem.family(), &theta).unwrap();
        let key = StreamKey::new(4, 9, Purpose::Step);
        let run = |set: KernelSet, w: usize, sem: Semantics| {
            let mut sc = problem.scratch();
            sc.ws.set_kernels(set);
            for ps in &mut sc.plates {
                ps.set_kernels(set);
            }
            problem.draw(key, 0, w, &mut sc);
            let mut bits = Vec::new();
            // Twice: a workspace's second sweep (its kernel chosen) must agree with the first.
            for _ in 0..2 {
                problem.sweep_gradient(&state, &theta, sem, &mut sc, Values::Exact, None);
                bits.extend(sc.grad.value.iter().chain(sc.grad.latents.iter()));
                let mut out = vec![0.0; w];
                problem.forward_values(&state, &theta, sem, &mut sc, &mut out, None);
                bits.extend(out);
            }
            bits.into_iter().map(f64::to_bits).collect::<Vec<_>>()
        };
        for sem in [Semantics::Smoothed { eta: 0.3 }, Semantics::Crisp] {
            for w in [CHUNK, 5] {
                let want = run(KernelSet::Portable, w, sem);
                for set in KernelSet::available() {
                    assert!(run(set, w, sem) == want, "{set:?} {sem:?} w {w}");
                }
            }
        }
    }
}

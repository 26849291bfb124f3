//! The reverse sweep over one chunk of lanes: the adjoints of every active slot from the
//! values and smoothing weights the forward sweep left, in the interpreter's AVX2 build (its
//! AVX-512 build was slower on every model measured; the portable one with FMA where the CPU
//! has it) or in the plan's machine code (`jit/reverse.rs` on a CPU with AVX-512,
//! `jit/avx2/reverse.rs` on one with AVX2 and FMA only), which gives the same bits.
//!
//! Not here: the plans the sweep follows (`plan.rs`) and the forward sweep (`sweep.rs`).

use crate::cpu::feature_builds;
use crate::ir::{Binary, Semantics, Unary};

#[cfg(target_arch = "x86_64")]
use crate::cpu;

use super::instr::{CHUNK, FOLD_A, FOLD_B, Lanes, NONE, Op, Plan, Target, forward_only_op};
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
use super::jit;
use super::kernels::{self, Wants};
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
use super::sweep::SharedLanes;
use super::sweep::forced;
use super::tape::Tape;
#[cfg(target_arch = "x86_64")]
use super::vmath::KernelSet;
use super::workspace::Workspace;

/// Adjoints of every active slot for the chunk last swept forward: in the plan's machine
/// code where it runs (AVX-512's, or AVX2's on a CPU without AVX-512; not where a build was
/// set, but for a compiled one), else in the
/// interpreter's AVX2 build (in the AVX-512 set too), else its portable one.
pub(super) fn reverse_chunk(tape: &Tape, ws: &mut Workspace, semantics: Semantics) {
    let (plan, smooth) = plan_of(tape, semantics);
    for &a in &plan.zero {
        ws.adjoints[a as usize] = [0.0; CHUNK];
    }
    if tape.out_adj != NONE {
        ws.adjoints[tape.out_adj as usize] = [1.0; CHUNK];
    }
    #[cfg(all(feature = "jit", target_arch = "x86_64"))]
    if let Some(avx2) = compiled_width(ws)
        && reverse_jit(tape, plan, smooth, ws, semantics, avx2)
    {
        return;
    }
    let steps = 0..plan.steps.len();
    let (adj, vals, weights) = (&mut ws.adjoints, &ws.values, &ws.weights);
    #[cfg(target_arch = "x86_64")]
    if ws.kernels != Some(KernelSet::Portable) && cpu::avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { reverse_steps_avx2(plan, steps, adj, vals, weights, semantics) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if cpu::fma() {
        // SAFETY: the CPU has FMA (checked just above).
        unsafe { reverse_steps_fma(plan, steps, adj, vals, weights, semantics) };
        return;
    }
    let _ = smooth;
    reverse_steps(plan, steps, adj, vals, weights, semantics);
}

/// The reverse plan of `semantics` and whether it is the smoothed one (forced semantics
/// share the crisp plan: guards carry no adjoint under either).
fn plan_of(tape: &Tape, semantics: Semantics) -> (&Plan, bool) {
    match semantics {
        Semantics::Smoothed { .. } => (&tape.smooth_plan, true),
        _ => (&tape.crisp_plan, false),
    }
}

/// Which machine code the reverse sweep may run in (`Some(true)` the AVX2 one, `Some(false)`
/// the AVX-512 one): the widest the CPU runs wherever no build was set, or the compiled one
/// of either width where it was. Why not only where the forward sweep's timed choice keeps
/// the AVX2 machine code: the reverse code gains where the forward one does not (CPU time of
/// one pinned thread under `DSGD_KERNELS=avx2`, AMD Zen 5 guest: temperature's DSGD sample
/// 1.11x with the reverse sweep always compiled, 0.97x with it compiled only where the
/// forward choice was; textmsg 0.99x either way, cheating 1.07x).
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
fn compiled_width(ws: &Workspace) -> Option<bool> {
    match ws.kernels {
        Some(KernelSet::Jit) => Some(false),
        Some(KernelSet::Avx2Jit) => Some(true),
        None => Some(!cpu::avx512()),
        Some(_) => None,
    }
}

/// The reverse sweep in the plan's machine code, if it is compiled and fits the workspace
/// (smoothed or crisp semantics; a forced if-statement needs the interpreter). Returns
/// whether it ran.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
fn reverse_jit(
    tape: &Tape,
    plan: &Plan,
    smooth: bool,
    ws: &mut Workspace,
    semantics: Semantics,
    avx2: bool,
) -> bool {
    if matches!(semantics, Semantics::Forced { .. }) {
        return false;
    }
    let Some(code) = tape
        .reverse_jit
        .get(plan, smooth, &tape.compact.constants, avx2)
    else {
        return false;
    };
    if ws.values.len() < code.slots
        || ws.adjoints.len() < code.adjoints
        || ws.weights.len() < code.weights
    {
        return false;
    }
    let mut env = ReverseEnv {
        plan,
        semantics,
        values: SharedLanes::of(&mut ws.values),
        adjoints: SharedLanes::of(&mut ws.adjoints),
        weights: SharedLanes::of(&mut ws.weights),
    };
    let mut frame = jit::Frame {
        values: env.values.ptr,
        params: std::ptr::null(),
        noise: std::ptr::null(),
        stride: 0,
        loc: std::ptr::null(),
        scale: std::ptr::null(),
        sign: -0.0,
        consts: code.consts.as_ptr(),
        weights: env.weights.ptr,
        adjoints: env.adjoints.ptr,
        inv_eta: match semantics {
            // As `kernels::smooth_reverse_guard` scales the weights' product.
            Semantics::Smoothed { eta } => 1.0 / eta,
            _ => 0.0,
        },
        call_back: reverse_call_back,
        env: (&raw mut env).cast(),
    };
    // SAFETY: checked just above: the code's value, adjoint and weight places are all in the
    // buffers the frame points to, and the call back runs the interpreter on the same ones.
    unsafe { code.run(&mut frame) };
    true
}

/// What the reverse code's calls back into the interpreter need.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
struct ReverseEnv<'a> {
    plan: &'a Plan,
    semantics: Semantics,
    values: SharedLanes,
    adjoints: SharedLanes,
    weights: SharedLanes,
}

/// Runs reverse steps `from..to` in the interpreter's AVX2 build, for the compiled code.
///
/// # Safety
/// `frame.env` must point to the [`ReverseEnv`] of the running sweep, whose pointers no
/// reference aliases while the compiled code runs.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
unsafe extern "sysv64" fn reverse_call_back(frame: *mut jit::Frame, from: u32, to: u32) {
    // SAFETY: the caller's contract; the slices are the workspace's buffers, which only this
    // call touches until it returns. The CPU has AVX-512 or AVX2 and FMA (the code's).
    unsafe {
        let env = &*((*frame).env as *const ReverseEnv);
        let (adj, values, weights) = (
            env.adjoints.slice(),
            env.values.slice(),
            env.weights.slice(),
        );
        reverse_steps_avx2(
            env.plan,
            from as usize..to as usize,
            adj,
            values,
            weights,
            env.semantics,
        );
    }
}

feature_builds! {
    {
        #[cfg(target_arch = "x86_64")]
        [fn] (
            plan: &Plan,
            steps: std::ops::Range<usize>,
            adj: &mut [Lanes],
            vals: &[Lanes],
            weights: &[Lanes],
            semantics: Semantics,
        ) {
            reverse_steps(plan, steps, adj, vals, weights, semantics);
        }
    }
    reverse_steps_avx2 = "avx2,fma";
    /// The portable build with FMA (see `sweep::forward_fma`).
    reverse_steps_fma = "fma";
}

/// Reverse steps `steps` of `plan` (all of them after the zeroing `reverse_chunk` does,
/// or a run the compiled code hands back).
#[inline(always)]
fn reverse_steps(
    plan: &Plan,
    steps: std::ops::Range<usize>,
    adj: &mut [Lanes],
    vals: &[Lanes],
    weights: &[Lanes],
    semantics: Semantics,
) {
    for rs in &plan.steps[steps] {
        // Adjoints share places (`layout.rs`), though never a step's own with one of its
        // targets: each arm reads its own adjoint where it is, computes every contribution,
        // and only then writes the targets. (A copy of the own adjoint, which the borrow of
        // the targets would otherwise need, went through the stack at every step.)
        let own = rs.ad as usize;
        let v = |s: u32| &vals[s as usize];
        let [t0, t1, t2, ..] = rs.to;
        match rs.step.op {
            Op::Param { .. } | Op::Latent { .. } => {}
            Op::Unary { op, a } => {
                let ad = &adj[own];
                let c = if rs.uniform {
                    kernels::unary_reverse_uniform(op, ad, v(a)[0], v(rs.step.out)[0])
                } else {
                    kernels::unary_reverse(op, ad, v(a), v(rs.step.out))
                };
                if op == Unary::Neg {
                    kernels::sub_into(&mut adj[t0.adj as usize], &c, t0.first);
                } else {
                    kernels::add_into(&mut adj[t0.adj as usize], &c, t0.first);
                }
            }
            Op::Binary { op, a, b } if a == b => {
                let c = kernels::binary_reverse_same(op, &adj[own], v(a), v(rs.step.out));
                kernels::add_into(&mut adj[t0.adj as usize], &c, t0.first);
            }
            Op::Binary {
                op: op @ (Binary::Add | Binary::Sub),
                ..
            } if t0.adj != NONE && t1.adj != NONE => {
                // Both operands take the step's adjoint itself (unmasked; the second's
                // subtracted for `Sub`): one copy, in registers, written twice.
                let c = adj[own];
                kernels::add_into(&mut adj[t0.adj as usize], &c, t0.first);
                if op == Binary::Sub {
                    kernels::sub_into(&mut adj[t1.adj as usize], &c, t1.first);
                } else {
                    kernels::add_into(&mut adj[t1.adj as usize], &c, t1.first);
                }
            }
            Op::Binary { op, a, b } => {
                let wants = wanted(t0.adj != NONE, t1.adj != NONE);
                let (ca, cb) =
                    kernels::binary_reverse(op, wants, &adj[own], v(a), v(b), v(rs.step.out));
                put(adj, t0, &ca);
                if t1.adj != NONE {
                    if kernels::binary_reverse_subtracts(op, wants) {
                        kernels::sub_into(&mut adj[t1.adj as usize], &cb, t1.first);
                    } else {
                        kernels::add_into(&mut adj[t1.adj as usize], &cb, t1.first);
                    }
                }
            }
            Op::NormalSquare { x, m, s, c } => {
                let wants = wanted(t1.adj != NONE, t2.adj != NONE);
                let [cs, cx, cm] = kernels::normal_square_reverse(
                    &adj[own],
                    [v(x), v(m), v(s)],
                    c,
                    wants,
                    t0.adj != NONE,
                );
                put(adj, t0, &cs);
                put_difference(adj, [t1, t2], wants, &cx, &cm);
            }
            Op::SquareDiff { x, m, c } => {
                // Targets as [`Op::NormalSquare`]'s, without the scale's.
                let wants = wanted(t1.adj != NONE, t2.adj != NONE);
                let [cx, cm] = kernels::square_diff_reverse(&adj[own], [v(x), v(m)], c, wants);
                put_difference(adj, [t1, t2], wants, &cx, &cm);
            }
            Op::Square { x, s, c } => {
                let [cs, cx] =
                    kernels::square_reverse(&adj[own], v(x), (s != NONE).then(|| v(s)), c);
                put(adj, t0, &cs);
                put(adj, t1, &cx);
            }
            Op::PoissonTerm { r, c, .. } => {
                if t0.adj != NONE {
                    let (ad, to) = own_and_target(adj, own, t0.adj as usize);
                    let from_log = kernels::poisson_term_reverse(ad, v(r), c);
                    kernels::sub_into(to, ad, t0.first);
                    kernels::add_into(to, &from_log, false);
                }
            }
            Op::SumChain { from, to, .. } => {
                // The additions in reverse; each partial sum has one reader, so its adjoint
                // is `0.0 +` its one contribution, and the base takes the last one.
                let mut d = adj[own];
                let none = [0.0; CHUNK];
                for j in (from..to).rev() {
                    let tt = plan.chain_targets[j as usize];
                    let wants = wanted(j > from || t0.adj != NONE, tt.adj != NONE);
                    let (c_acc, c_term) =
                        kernels::binary_reverse(Binary::Add, wants, &d, &none, &none, &none);
                    put(adj, tt, &c_term);
                    if j > from {
                        kernels::add_into(&mut d, &c_acc, true);
                    } else {
                        put(adj, t0, &c_acc);
                    }
                }
            }
            forward_only_op!() => unreachable!("only forward-only layouts have this step"),
            Op::If {
                g,
                t,
                e,
                index,
                cache,
                product,
                ..
            } => {
                // In this order: aliased operands (`if z < 0 then z else -z`) accumulate
                // guard, then, else one after the other. Each contribution is written as soon
                // as it is made: the three made first and written then spilled to the stack.
                // A contribution that is not made is one the plan does not want (`product`
                // sends nothing to the branches, a crisp guard takes nothing).
                match semantics {
                    Semantics::Smoothed { eta } if product => {
                        let w = &weights[cache as usize];
                        let cg = kernels::smooth_reverse_guard(w, v(t), v(e), &adj[own], eta);
                        put(adj, t0, &cg);
                        if let Some(op) = rs.folded_guard {
                            fold_guard(adj, op, &cg, rs.to);
                        }
                    }
                    Semantics::Smoothed { eta } => {
                        let (we, wt) = (&weights[cache as usize], &weights[cache as usize + 1]);
                        // An `if`, not `bool::then`: a closure may stay out of line, compiled
                        // without this build's AVX2.
                        let cg = if t0.adj != NONE || rs.folded_guard.is_some() {
                            Some(kernels::smooth_reverse_guard_pair(
                                we,
                                wt,
                                v(t),
                                v(e),
                                &adj[own],
                                eta,
                            ))
                        } else {
                            None
                        };
                        if let Some(cg) = &cg {
                            put(adj, t0, cg);
                        }
                        if t1.adj != NONE {
                            let ct = kernels::smooth_reverse_branch(wt, &adj[own]);
                            put(adj, t1, &ct);
                        }
                        if t2.adj != NONE {
                            let ce = kernels::smooth_reverse_branch(we, &adj[own]);
                            put(adj, t2, &ce);
                        }
                        if let (Some(op), Some(cg)) = (rs.folded_guard, &cg) {
                            fold_guard(adj, op, cg, rs.to);
                        }
                    }
                    _ => {
                        let ad = &adj[own];
                        let (ct, ce) = kernels::select_reverse(v(g), ad, forced(semantics, index));
                        put(adj, t1, &ct);
                        put(adj, t2, &ce);
                    }
                }
            }
        }
    }
}

/// The reverse step of a guard `a + b` or `a - b` folded into its smoothed if-statement
/// ([`RevStep::folded_guard`](super::instr::RevStep)): the guard's adjoint would have been
/// `0.0 + cg` (its one contribution, written as a first one), and its sum's reverse step
/// sends that on exactly as the `Binary` arm of [`reverse_body`] does.
#[inline(always)]
fn fold_guard(adj: &mut [Lanes], op: Binary, cg: &Lanes, to: [Target; 5]) {
    let (ta, tb) = (to[FOLD_A], to[FOLD_B]);
    let mut d = [0.0; CHUNK];
    for (d, &c) in d.iter_mut().zip(cg) {
        *d = 0.0 + c;
    }
    if ta.adj != NONE && tb.adj != NONE {
        kernels::add_into(&mut adj[ta.adj as usize], &d, ta.first);
        if op == Binary::Sub {
            kernels::sub_into(&mut adj[tb.adj as usize], &d, tb.first);
        } else {
            kernels::add_into(&mut adj[tb.adj as usize], &d, tb.first);
        }
    } else {
        let none = [0.0; CHUNK];
        let wants = wanted(ta.adj != NONE, tb.adj != NONE);
        let (ca, cb) = kernels::binary_reverse(op, wants, &d, &none, &none, &none);
        put(adj, ta, &ca);
        put(adj, tb, &cb);
    }
}

/// Which of two operands take a contribution, from whether each has an adjoint (at least
/// one has: a step with neither is not in the reverse plan).
#[inline(always)]
fn wanted(first: bool, second: bool) -> Wants {
    match (first, second) {
        (true, true) => Wants::Both,
        (true, false) => Wants::A,
        _ => Wants::B,
    }
}

/// The contributions of a fused density term's difference `x - m` to `x` and `m` (targets
/// `tx`, `tm`): `cx` to `x`, and to `m` either `cx` subtracted (both wanted, as the unfused
/// `Sub` rule does) or `cm`.
#[inline(always)]
fn put_difference(adj: &mut [Lanes], [tx, tm]: [Target; 2], wants: Wants, cx: &Lanes, cm: &Lanes) {
    put(adj, tx, cx);
    if wants == Wants::Both {
        kernels::sub_into(&mut adj[tm.adj as usize], cx, tm.first);
    } else {
        put(adj, tm, cm);
    }
}

/// Adds contribution `c` into target `t`'s adjoint, if it has one.
#[inline(always)]
fn put(adj: &mut [Lanes], t: Target, c: &Lanes) {
    if t.adj != NONE {
        kernels::add_into(&mut adj[t.adj as usize], c, t.first);
    }
}

/// The step's own adjoint `own` to read and a target's `t` to write: never the same place
/// (`layout.rs`), so both borrows split one slice.
#[inline(always)]
fn own_and_target(adj: &mut [Lanes], own: usize, t: usize) -> (&Lanes, &mut Lanes) {
    debug_assert_ne!(own, t, "a step's own adjoint is never its target's");
    if own < t {
        let (lo, hi) = adj.split_at_mut(t);
        (&lo[own], &mut hi[0])
    } else {
        let (lo, hi) = adj.split_at_mut(own);
        (&hi[0], &mut lo[t])
    }
}

//! The forward and reverse sweeps over one chunk of lanes, and the choice between the vector
//! (AVX2/FMA, and AVX-512 for the forward sweep) and portable builds of them (with FMA where
//! the CPU has it, see `crate::cpu`).
//!
//! Every build is the same Rust code compiled again: Rust never contracts `a * b + c` into a
//! fused multiply-add on its own, so enabling FMA or AVX-512 changes the instructions LLVM
//! may use but not a single result. The vector builds are chosen at run time with
//! `crate::cpu` (and, between AVX2 and AVX-512, by `kernel_choice`), so users need no
//! `RUSTFLAGS`.
//!
//! Not here: the compile-time plans the sweeps follow (`compile.rs`, `plan.rs`).

use crate::cpu::feature_builds;
use crate::ir::{Branch, Semantics, binary_value, unary_value};

#[cfg(target_arch = "x86_64")]
use crate::cpu;

use super::input::Latents;
use super::instr::{CHUNK, Lanes, NONE, Op, Step, UNREAD, forward_only_op};
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
use super::jit;
use super::kernel_choice;
use super::kernels;
use super::layout::Layout;
use super::tape::Tape;
use super::vmath::KernelSet;
use super::workspace::Workspace;

/// The inputs of one chunk: lanes `start..start + w` of a batch of `batch` samples.
pub(super) struct Input<'a> {
    pub params: &'a [f64],
    pub latents: Latents<'a>,
    pub batch: usize,
    pub start: usize,
    pub w: usize,
    /// Per-lane forcing (crisp elsewhere), for [`Tape::forward_forced`].
    pub force: Option<&'a LaneForce>,
    /// The smoothing weights without their corrections ([`Tape::with_plain_weights`]).
    pub plain_weights: bool,
}

/// One forced if-statement per lane: lane `l` takes branch `then[l]` at if-statement
/// `index[l]` and is crisp at every other one.
pub(super) struct LaneForce {
    pub index: [u32; CHUNK],
    pub then: [bool; CHUNK],
}

/// Values of the steps that are the same in every lane, once for a whole call (they depend
/// on nothing but the parameters and constants, so no chunk overwrites them): computed on one
/// lane and copied to the others, which gives the bits computing every lane would.
pub(super) fn uniform_pass(tape: &Tape, ws: &mut Workspace, semantics: Semantics, params: &[f64]) {
    let vals = &mut ws.values[..];
    for step in &tape.uniform_steps {
        let v = |s: u32| vals[s as usize][0];
        let r = match step.op {
            Op::Param { k } => params[k as usize],
            Op::Latent { .. } => unreachable!("a latent is never uniform"),
            Op::Unary { op, a } => unary_value(op, v(a)),
            Op::Binary { op, a, b } => binary_value(op, v(a), v(b)),
            Op::NormalSquare { .. }
            | Op::SquareDiff { .. }
            | Op::Square { .. }
            | Op::PoissonTerm { .. }
            | Op::SumChain { .. } => {
                unreachable!("only lane steps are fused")
            }
            forward_only_op!() => unreachable!("only forward-only layouts have this step"),
            Op::If {
                g,
                t,
                e,
                index,
                cache,
                product,
                reuse: _,
            } => {
                // Only lane steps reuse weights (`plan::share_guard_weights`).
                let one = |x: f64| [x; CHUNK];
                let (g, t, e) = (one(v(g)), one(v(t)), one(v(e)));
                match semantics {
                    Semantics::Smoothed { eta } => {
                        let (we, wt) = if tape.plain_weights {
                            kernels::smooth_weights_plain(&g, eta)
                        } else {
                            kernels::smooth_weights(&g, eta)
                        };
                        keep_weights(&mut ws.weights, cache, product, &we, &wt);
                        kernels::smooth_forward(&we, &wt, &t, &e)[0]
                    }
                    _ => kernels::select_forward(&g, &t, &e, forced(semantics, index))[0],
                }
            }
        };
        vals[step.out as usize] = [r; CHUNK];
    }
}

/// Values of every lane-dependent slot of `layout` for one chunk (and the smoothing weights
/// of every if-statement).
pub(super) fn forward_chunk(
    tape: &Tape,
    layout: &Layout,
    ws: &mut Workspace,
    semantics: Semantics,
    x: &Input,
) {
    match ws.kernels {
        Some(set) => forward_with(set, tape, layout, ws, semantics, x),
        None if kernel_choice::builds().len() > 1 => {
            // Taken out while the sweeps borrow the workspace.
            let mut choice = *ws.choice_for(layout);
            choice.run(semantics, |set| {
                forward_with(set, tape, layout, ws, semantics, x)
            });
            *ws.choice_for(layout) = choice;
        }
        None => forward_with(KernelSet::best(), tape, layout, ws, semantics, x),
    }
}

/// The forward sweep of the layout in the build `set`: for a compiled set, in the layout's
/// machine code where it can run (AVX-512's, or AVX2 and FMA's), in the interpreter's build
/// of the same width otherwise.
fn forward_with(
    set: KernelSet,
    tape: &Tape,
    layout: &Layout,
    ws: &mut Workspace,
    semantics: Semantics,
    x: &Input,
) {
    let interpreter = match set {
        KernelSet::Jit => KernelSet::Avx512,
        KernelSet::Avx2Jit => KernelSet::Avx2,
        _ => set,
    };
    #[cfg(all(feature = "jit", target_arch = "x86_64"))]
    if interpreter != set
        && forward_compiled(tape, layout, ws, semantics, x, set == KernelSet::Avx2Jit)
    {
        return;
    }
    let _ = tape;
    forward_in(interpreter, &layout.steps, &layout.chains, ws, semantics, x);
}

/// The forward sweep in the layout's machine code, if it is compiled and can run (a full
/// chunk of reparameterised noise, smoothed or crisp semantics, no per-lane forcing) and
/// fits the workspace. Returns whether it ran.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
fn forward_compiled(
    tape: &Tape,
    layout: &Layout,
    ws: &mut Workspace,
    semantics: Semantics,
    x: &Input,
    avx2: bool,
) -> bool {
    let (steps, chains) = (&layout.steps[..], &layout.chains[..]);
    let crisp = match semantics {
        Semantics::Smoothed { .. } => false,
        // The forced layout (LYY18's workspaces) is not compiled: its crisp sweep is a
        // small part of LYY18's time, and its code would be one more copy of the tape's
        // (on the 10,000-student survey, LYY18's peak memory went from 91 to 109 MB).
        Semantics::Crisp if !ws.forced_layout => true,
        _ => return false,
    };
    let Latents::Affine { noise, loc, scale } = x.latents else {
        return false;
    };
    let code = match tape.forward_code(layout, crisp, avx2) {
        Some(code)
            if x.force.is_none()
                && x.w == CHUNK
                && ws.values.len() >= code.slots
                && ws.weights.len() >= code.weights
                && x.params.len() >= code.params
                && loc.len() >= code.latents
                && scale.len() >= code.latents
                && (!code.noise_latents
                    || noise_only(&loc[..code.latents], &scale[..code.latents]))
                && (code.latents == 0
                    || (code.latents - 1) * x.batch + x.start + CHUNK <= noise.len()) =>
        {
            code
        }
        _ => return false,
    };
    let mut env = CallBackEnv {
        avx2,
        steps,
        chains,
        semantics,
        x,
        values: SharedLanes::of(&mut ws.values),
        weights: SharedLanes::of(&mut ws.weights),
    };
    let mut frame = jit::Frame {
        values: env.values.ptr,
        params: x.params.as_ptr(),
        noise: noise[x.start..].as_ptr(),
        stride: x.batch * std::mem::size_of::<f64>(),
        loc: loc.as_ptr(),
        scale: scale.as_ptr(),
        sign: -0.0,
        consts: code.consts.as_ptr(),
        weights: env.weights.ptr,
        adjoints: std::ptr::null_mut(),
        inv_eta: match semantics {
            // As `kernels::smooth_weights` scales the guard.
            Semantics::Smoothed { eta } => 1.0 / eta,
            _ => 0.0,
        },
        call_back,
        env: (&raw mut env).cast(),
    };
    // SAFETY: checked just above: the code's places, parameters and latents are all in the
    // buffers the frame points to, and `call_back` runs the interpreter on the same ones.
    unsafe { code.run(&mut frame) };
    true
}

/// Whether every latent of locations `loc` and scales `scale` is its noise itself
/// (location `-0.0`, scale 1), as code that reads latents as their noise needs: known by
/// their address where they are `Tape::noise_factors`' (a slice that starts where an
/// immutable static does lies in it), else read.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
fn noise_only(loc: &[f64], scale: &[f64]) -> bool {
    use super::tape::{NOISE_LOC, NOISE_SCALE};
    if std::ptr::eq(loc.as_ptr(), NOISE_LOC.as_ptr())
        && std::ptr::eq(scale.as_ptr(), NOISE_SCALE.as_ptr())
    {
        return true;
    }
    let (zero, one) = ((-0.0f64).to_bits(), 1.0f64.to_bits());
    let off = |xs: &[f64], want: u64| xs.iter().fold(0, |acc, x| acc | (x.to_bits() ^ want));
    off(loc, zero) | off(scale, one) == 0
}

/// What the compiled code's calls back into the interpreter need.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
struct CallBackEnv<'a> {
    /// Whether the code is AVX2's (its calls back then run the interpreter's AVX2 build: the
    /// CPU may lack AVX-512).
    avx2: bool,
    steps: &'a [Step],
    chains: &'a [(u32, bool)],
    semantics: Semantics,
    x: &'a Input<'a>,
    values: SharedLanes,
    weights: SharedLanes,
}

/// A workspace buffer that compiled code and its calls back into the interpreter share:
/// where it starts and how many lanes it holds, so that a call back can make the slice again.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
#[derive(Clone, Copy, Debug)]
pub(super) struct SharedLanes {
    /// The first lanes (what the compiled code's frame points to).
    pub(super) ptr: *mut Lanes,
    len: usize,
}

#[cfg(all(feature = "jit", target_arch = "x86_64"))]
impl SharedLanes {
    pub(super) fn of(buffer: &mut [Lanes]) -> SharedLanes {
        SharedLanes {
            ptr: buffer.as_mut_ptr(),
            len: buffer.len(),
        }
    }

    /// The buffer again.
    ///
    /// # Safety
    /// The buffer outlives `'a`, and nothing else reads or writes it while the slice lives.
    pub(super) unsafe fn slice<'a>(self) -> &'a mut [Lanes] {
        // SAFETY: the caller's contract; `ptr` and `len` are those of a live slice.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// Runs lane steps `from..to` in the interpreter's AVX-512 build (AVX2 for the AVX2 code),
/// for the compiled code.
///
/// # Safety
/// `frame.env` must point to the [`CallBackEnv`] of the running sweep, whose pointers no
/// reference aliases while the compiled code runs.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
unsafe extern "sysv64" fn call_back(frame: *mut jit::Frame, from: u32, to: u32) {
    // SAFETY: the caller's contract; the slices are the workspace's buffers, which only this
    // call touches until it returns.
    unsafe {
        let env = &*((*frame).env as *const CallBackEnv);
        let (values, weights) = (env.values.slice(), env.weights.slice());
        let steps = &env.steps[from as usize..to as usize];
        if env.avx2 {
            forward_avx2(steps, env.chains, values, weights, env.semantics, env.x);
        } else {
            forward_avx512(steps, env.chains, values, weights, env.semantics, env.x);
        }
    }
}

/// Crisp values of `steps` only (a subset of the tape's lane steps, in order) for one chunk
/// under `x.force`: the incremental forced sweep. Where no build was set, in the interpreter's
/// build that ran the workspace's crisp sweeps faster (AVX2 until that is known; AVX2 in the
/// AVX-512 set): measured on LYY18's sweeps, AVX-512 made textmsg's 1.13x faster and walk's
/// 0.95x, as it does the whole sweep.
pub(super) fn forward_steps(steps: &[Step], chains: &[(u32, bool)], ws: &mut Workspace, x: &Input) {
    let set = match ws.kernels {
        Some(KernelSet::Portable) => KernelSet::Portable,
        None => ws
            .forward_choice
            .interpreter(Semantics::Crisp)
            .unwrap_or(KernelSet::Avx2),
        _ => KernelSet::Avx2,
    };
    forward_in(set, steps, chains, ws, Semantics::Crisp, x);
}

/// The forward sweep of `steps` in the build `set` (the portable one where the CPU lacks it).
fn forward_in(
    set: KernelSet,
    steps: &[Step],
    chains: &[(u32, bool)],
    ws: &mut Workspace,
    semantics: Semantics,
    x: &Input,
) {
    #[cfg(target_arch = "x86_64")]
    match set {
        KernelSet::Avx512 if cpu::avx512() => {
            // SAFETY: the CPU has AVX-512 (checked just above).
            unsafe { forward_avx512(steps, chains, &mut ws.values, &mut ws.weights, semantics, x) };
            return;
        }
        KernelSet::Avx2 | KernelSet::Avx512 if cpu::avx2_fma() => {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            unsafe { forward_avx2(steps, chains, &mut ws.values, &mut ws.weights, semantics, x) };
            return;
        }
        _ if cpu::fma() => {
            // SAFETY: the CPU has FMA (checked just above).
            unsafe { forward_fma(steps, chains, &mut ws.values, &mut ws.weights, semantics, x) };
            return;
        }
        _ => {}
    }
    let _ = set;
    forward_body(steps, chains, &mut ws.values, &mut ws.weights, semantics, x);
}

feature_builds! {
    {
        #[cfg(target_arch = "x86_64")]
        [fn] (
            steps: &[Step],
            chains: &[(u32, bool)],
            vals: &mut [Lanes],
            weights: &mut [Lanes],
            semantics: Semantics,
            x: &Input,
        ) {
            forward_body(steps, chains, vals, weights, semantics, x);
        }
    }
    /// The portable build with FMA (128-bit, as on aarch64): its `mul_add`s are instructions
    /// where the baseline build calls the runtime's `fma`.
    forward_fma = "fma";
    forward_avx2 = "avx2,fma";
    forward_avx512 = "avx2,fma,avx512f,avx512dq,avx512vl,avx512bw";
}

#[inline(always)]
fn forward_body(
    steps: &[Step],
    chains: &[(u32, bool)],
    vals: &mut [Lanes],
    weights: &mut [Lanes],
    semantics: Semantics,
    x: &Input,
) {
    for step in steps {
        let out = step.out as usize;
        let v = |s: u32| &vals[s as usize];
        let r: Lanes = match step.op {
            Op::Param { k } => [x.params[k as usize]; CHUNK],
            Op::Latent { i } => x.latents.load(i as usize, x.batch, x.start, x.w),
            Op::Unary { op, a } => kernels::unary_forward(op, v(a)),
            Op::Binary { op, a, b } => kernels::binary_forward(op, v(a), v(b)),
            Op::NormalSquare { x, m, s, c } => kernels::normal_square_forward(v(x), v(m), v(s), c),
            Op::SquareDiff { x, m, c } => kernels::square_diff_forward(v(x), v(m), c),
            Op::Square { x, s, c } => kernels::square_forward(v(x), (s != NONE).then(|| v(s)), c),
            Op::PoissonTerm {
                r,
                c,
                c_left,
                stand_in,
            } => kernels::poisson_term_forward(v(r), c, c_left, stand_in),
            Op::StandIn { op, a } => kernels::stand_in_forward(op, v(a)),
            Op::SumChain { base, from, to } => {
                let mut acc = *v(base);
                for &(t, right) in &chains[from as usize..to as usize] {
                    acc = kernels::sum_step(&acc, v(t), right);
                }
                acc
            }
            Op::If {
                g,
                t,
                e,
                index,
                cache,
                product,
                reuse,
            } => match semantics {
                Semantics::Smoothed { .. } if reuse => {
                    let c = cache as usize;
                    kernels::smooth_forward(&weights[c], &weights[c + 1], v(t), v(e))
                }
                Semantics::Smoothed { eta } => {
                    let (we, wt) = if x.plain_weights {
                        kernels::smooth_weights_plain(v(g), eta)
                    } else {
                        kernels::smooth_weights(v(g), eta)
                    };
                    let r = kernels::smooth_forward(&we, &wt, v(t), v(e));
                    keep_weights(weights, cache, product, &we, &wt);
                    r
                }
                _ => match x.force {
                    None => kernels::select_forward(v(g), v(t), v(e), forced(semantics, index)),
                    Some(f) => {
                        let (t, e) = (v(t), v(e));
                        let mut r = kernels::select_forward(v(g), t, e, None);
                        for l in 0..CHUNK {
                            if f.index[l] == index {
                                r[l] = if f.then[l] { t[l] } else { e[l] };
                            }
                        }
                        r
                    }
                },
            },
            Op::Select { g, t, e } => kernels::select_forward(v(g), v(t), v(e), None),
            Op::SelectNeg { g, a, e } => kernels::select_neg_forward(v(g), v(a), v(e)),
            Op::SquareDiffSub { x, m, k, c } => {
                kernels::minus(&kernels::square_diff_forward(v(x), v(m), c), v(k))
            }
            Op::SquareSub { x, k, c } => {
                kernels::minus(&kernels::square_forward(v(x), None, c), v(k))
            }
            Op::SelectLess { a, b, t, e } => kernels::select_less_forward(v(a), v(b), v(t), v(e)),
            Op::SelectSum { a, b, t, e } => kernels::select_sum_forward(v(a), v(b), v(t), v(e)),
            Op::SelectChain {
                base,
                from,
                to,
                t,
                e,
            } => {
                let mut acc = *v(base);
                for &(term, right) in &chains[from as usize..to as usize] {
                    acc = kernels::sum_step(&acc, v(term), right);
                }
                kernels::select_forward(&acc, v(t), v(e), None)
            }
            Op::SelectLatent { i, t, e } => {
                let z = x.latents.load(i as usize, x.batch, x.start, x.w);
                kernels::select_forward(&z, v(t), v(e), None)
            }
            Op::SelectLessLatent { i, b, t, e } => {
                let z = x.latents.load(i as usize, x.batch, x.start, x.w);
                kernels::select_less_forward(&z, v(b), v(t), v(e))
            }
        };
        vals[out] = r;
    }
}

/// Keeps a smoothed if-statement's weights for the reverse sweep: both, or (`product`) the
/// product `wt * we` its guard's contribution needs, computed as the reverse rule would, or
/// none where no sweep reads them ([`UNREAD`]).
#[inline(always)]
pub(super) fn keep_weights(
    weights: &mut [Lanes],
    cache: u32,
    product: bool,
    we: &Lanes,
    wt: &Lanes,
) {
    if cache == UNREAD {
        return;
    }
    let c = cache as usize;
    if product {
        weights[c] = std::array::from_fn(|l| wt[l] * we[l]);
    } else {
        weights[c] = *we;
        weights[c + 1] = *wt;
    }
}

/// Under `Forced { index, branch }`, whether if-statement `index` is forced to `then`.
#[inline(always)]
pub(super) fn forced(semantics: Semantics, index: u32) -> Option<bool> {
    match semantics {
        Semantics::Forced { index: k, branch } if k == index => Some(branch == Branch::Then),
        _ => None,
    }
}

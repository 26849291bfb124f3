//! The forward and reverse sweeps compiled to machine code (`KernelSet::Jit`, and their
//! AVX2 code, `KernelSet::Avx2Jit`) give the interpreter's bits: on random programs of every primitive (the cheap ones the code runs itself, the
//! others it hands back), with long runs of cheap steps that overflow its register cache, and
//! on every built-in model and on indicators (if-statements between 1 and 0) at the edges;
//! smoothed and crisp, values and gradients, latents given as
//! reparameterised noise (what the engine passes, and what the code reads), with a short
//! last chunk (which the interpreter runs). An ignored test fuzzes the same comparison for a
//! time budget.
//!
//! On a CPU without AVX-512, or in a crate built without the `jit` feature, the set is not
//! available and each test checks only that nothing is compiled.
//!
//! The workspaces' buffers lie between inaccessible pages (`guard_pages`, this binary's
//! allocator): compiled code that reads or writes past one faults here.

mod eval_common;
#[cfg(unix)]
mod guard_pages;

#[cfg(unix)]
#[global_allocator]
static GUARD_PAGES: guard_pages::GuardPages = guard_pages::GuardPages;

use dsgd::eval::vmath::KernelSet;
use dsgd::eval::{BatchGradient, CHUNK, Latents, Tape, Values};
use dsgd::ir::{Binary, Builder, CompiledForm, Domain, Program, Semantics, Unary, Var};
use eval_common::{Lcg, bits};

const BATCH: usize = 3 * CHUNK + 5;

/// A random program of `len` nodes over 4 latents and 2 parameters; most nodes are cheap
/// (sums, differences, products, quotients, negations, square roots, selects), some are
/// not (elementary functions, powers), and each reads recent nodes mostly, so that values
/// are read again while the code may still hold them in registers.
fn program(rng: &mut Lcg, len: usize) -> Program {
    let b = Builder::new();
    let mut pool: Vec<Var<'_>> = (0..4).map(|i| b.latent(&format!("z{i}"))).collect();
    pool.extend((0..2).map(|k| b.param(&format!("p{k}"))));
    let mut out = Vec::new();
    for _ in 0..len {
        let n = pool.len();
        let pick = |rng: &mut Lcg| {
            if rng.next() < 0.7 {
                pool[n - 1 - rng.below(n.min(8))]
            } else {
                pool[rng.below(n)]
            }
        };
        let (x, y, w) = (pick(rng), pick(rng), pick(rng));
        let k = b.constant(rng.next() * 4.0 - 2.0);
        // Mostly steps the code runs inline; an elementary function now and then (a call
        // back into the interpreter: a layout with many is not compiled).
        let kind = if rng.next() < 0.015 {
            12 + rng.below(3)
        } else {
            rng.below(12)
        };
        let node = match kind {
            0..12 => cheap_node(&b, kind, x, y, w, k),
            12 => (x * 0.1).tanh().exp(),
            13 => (x * x + 1.0).ln(),
            // No inline form in either sweep.
            _ => (x * 0.3).sin(),
        };
        pool.push(node);
        if rng.next() < 0.3 {
            out.push(node);
        }
    }
    out.push(*pool.last().unwrap());
    let total = b.sum(&out);
    b.finish(&[total])
        .expect("a generated program is well formed")
}

/// Node `kind` (below 12) of `x`, `y`, `w` and the constant `k`: one the compiled code runs
/// inline (sums, differences, products, quotients, negations, square roots, if-statements).
fn cheap_node<'b>(
    b: &'b Builder,
    kind: usize,
    x: Var<'b>,
    y: Var<'b>,
    w: Var<'b>,
    k: Var<'b>,
) -> Var<'b> {
    match kind {
        0 => x + y,
        1 => x - y,
        2 => x * y,
        3 => x / (y * y + 0.5),
        4 => -x,
        5 => (x * x + 0.1).sqrt(),
        6 => x + k,
        7 => k * x,
        8 => b.if_neg(x - k, y, w),
        9 => b.if_neg(x + y, w, k),
        10 => b.if_neg(x, k, y) + b.sum(&[x, y, w, k]),
        // A guard folded into its if-statement with both operands taking its adjoint.
        _ => b.if_neg(x - y, w, k),
    }
}

/// Values and gradients of a batch, and a forward-only sweep, in the build `set`.
fn run(tape: &Tape, set: KernelSet, sem: Semantics, params: &[f64], noise: &[f64]) -> Vec<u64> {
    let n = tape.latent_count();
    let loc: Vec<f64> = (0..n).map(|i| 0.3 * i as f64 - 0.4).collect();
    let scale: Vec<f64> = (0..n).map(|i| 0.5 + 0.25 * (i % 5) as f64).collect();
    run_affine(tape, set, sem, params, noise, &loc, &scale)
}

/// [`run`] with the latents `loc + scale * noise`.
fn run_affine(
    tape: &Tape,
    set: KernelSet,
    sem: Semantics,
    params: &[f64],
    noise: &[f64],
    loc: &[f64],
    scale: &[f64],
) -> Vec<u64> {
    let n = tape.latent_count();
    let latents = Latents::Affine { noise, loc, scale };
    let mut ws = tape.workspace();
    ws.set_kernels(set);
    let mut out = Vec::new();
    // Exact values, then checked ones (their logarithms only the output reads stand-ins):
    // the same gradient bits.
    let mut grads = Vec::new();
    for values in [Values::Exact, Values::Checked] {
        let mut g = BatchGradient::new(tape, BATCH);
        tape.gradient_latents(&mut ws, sem, params, latents, &mut g, values);
        out.extend(bits(&g.value));
        let mut gb = Vec::new();
        for lane in 0..BATCH {
            let lat: Vec<f64> = (0..n).map(|i| g.latent(i, lane)).collect();
            let par: Vec<f64> = (0..params.len()).map(|k| g.param(k, lane)).collect();
            gb.extend(bits(&lat));
            gb.extend(bits(&par));
        }
        grads.push(gb);
    }
    assert!(
        grads[0] == grads[1],
        "{set:?} {sem:?}: checked gradients differ"
    );
    out.extend(grads.pop().unwrap());
    let mut fwd = vec![0.0; BATCH];
    tape.forward_latents(&mut ws, sem, params, latents, &mut fwd);
    out.extend(bits(&fwd));
    out
}

/// Asserts that the compiled code gives the portable build's bits on `tape` under `sem`
/// ([`run`]'s values and gradients); `what` names the case in the message.
fn assert_compiled_bits(
    tape: &Tape,
    sem: Semantics,
    params: &[f64],
    zs: &[f64],
    what: impl std::fmt::Display,
) {
    let want = run(tape, KernelSet::Portable, sem, params, zs);
    for set in compiled_sets() {
        let got = run(tape, set, sem, params, zs);
        assert!(got == want, "{what}, {sem:?}: {set:?} differs");
    }
}

/// The builds with compiled code this CPU runs (AVX-512's and AVX2's on a CPU with AVX-512).
fn compiled_sets() -> Vec<KernelSet> {
    KernelSet::available()
        .into_iter()
        .filter(|s| matches!(s, KernelSet::Jit | KernelSet::Avx2Jit))
        .collect()
}

fn noise(rng: &mut Lcg, latents: usize) -> Vec<f64> {
    (0..latents * BATCH)
        .map(|_| 6.0 * rng.next() - 3.0)
        .collect()
}

/// A small `eta` too, where weights underflow to zero and the products they scale are dropped.
const SEMANTICS: [Semantics; 3] = [
    Semantics::Smoothed { eta: 0.1 },
    Semantics::Smoothed { eta: 1e-3 },
    Semantics::Crisp,
];

#[test]
fn compiled_sweeps_give_the_interpreters_bits_on_random_programs() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        let p = program(&mut Lcg(1), 10);
        assert!(Tape::compile(&p, 0).jit_coverage(SEMANTICS[0]).is_none());
        return;
    }
    let mut rng = Lcg(0x5eed);
    let (mut compiled, mut inline, mut called) = (0, 0, 0);
    let (mut rev_compiled, mut rev_inline, mut rev_called) = (0, 0, 0);
    let (mut avx2_compiled, mut avx2_inline, mut avx2_called) = (0, 0, 0);
    let cases = 60;
    for case in 0..cases {
        let len = [5, 40, 400][case % 3];
        let p = program(&mut rng, len);
        let tape = Tape::compile(&p, 0);
        let params = [rng.next() - 0.5, rng.next() + 0.5];
        let zs = noise(&mut rng, tape.latent_count());
        for sem in SEMANTICS {
            assert_compiled_bits(
                &tape,
                sem,
                &params,
                &zs,
                format!("case {case} ({len} nodes)"),
            );
            if let Some(c) = tape.jit_coverage(sem) {
                compiled += 1;
                inline += c.inline;
                called += c.called;
            }
            if let Some(c) = tape.reverse_jit_coverage(sem) {
                rev_compiled += 1;
                rev_inline += c.inline;
                rev_called += c.called;
            }
            if let Some(c) = tape.avx2_reverse_jit_coverage(sem) {
                avx2_compiled += 1;
                avx2_inline += c.inline;
                avx2_called += c.called;
            }
        }
    }
    // The AVX2 reverse code runs wherever the AVX-512 one does (the same plans).
    if compiled_sets().contains(&KernelSet::Avx2Jit) {
        assert_eq!(
            (avx2_compiled, avx2_inline, avx2_called),
            (rev_compiled, rev_inline, rev_called)
        );
    }
    // The reverse sweeps, too, mostly compiled, calls back included.
    assert!(
        rev_compiled > 2 * cases && rev_inline > 10_000 && rev_called > 20,
        "reverse: {rev_compiled} compiled, {rev_inline} inline, {rev_called} called"
    );
    // Most crisp layouts were compiled (a smoothed if-statement is a call back, so fewer
    // smoothed ones), and their calls back were exercised too.
    assert!(
        compiled > cases,
        "{compiled} of {} compiled",
        cases * SEMANTICS.len()
    );
    assert!(
        inline > 10_000 && called > 50,
        "{inline} inline, {called} called"
    );
}

/// `x` (a latent, within 3 of 0) mapped onto `domain` by steps the compiled code runs inline.
fn onto<'b>(domain: Domain, x: Var<'b>) -> Var<'b> {
    match domain {
        Domain::Real => x * 0.5,
        Domain::Positive | Domain::NonZero => x * x + 0.1,
        Domain::AboveMinusOne => x * x - 0.5,
        Domain::OpenUnit => 1.0 / (x * x + 1.5),
    }
}

/// A program of `node` (read twice, so no pass fuses it away) among 80 steps the compiled
/// code runs inline: a layout with one call back in it is compiled.
fn with_padding(b: &Builder, node: Var<'_>, z: Var<'_>, w: Var<'_>) -> Program {
    let mut t = w;
    for i in 0..40 {
        t = t * (1.0 + i as f64 * 0.01) - z;
    }
    let out = b.sum(&[node, node * w, t]);
    b.finish(&[out]).expect("well formed")
}

#[test]
fn every_primitive_runs_where_its_descriptor_says_with_the_interpreters_bits() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    let mut rng = Lcg(41);
    let mut check = |p: &Program, what: String, forward: CompiledForm, reverse: CompiledForm| {
        let tape = Tape::compile(p, 0);
        let zs = noise(&mut rng, tape.latent_count());
        for sem in SEMANTICS {
            assert_compiled_bits(&tape, sem, &[], &zs, &what);
            let c = tape.jit_coverage(sem).expect("compiled");
            assert_eq!(
                c.called > 0,
                forward == CompiledForm::CallBack,
                "{what} {sem:?}: {c:?}"
            );
            for c in [
                tape.reverse_jit_coverage(sem),
                tape.avx2_reverse_jit_coverage(sem),
            ] {
                let c = c.expect("compiled");
                assert_eq!(
                    c.called > 0,
                    reverse == CompiledForm::CallBack,
                    "{what} {sem:?}: {c:?}"
                );
            }
        }
    };
    for &op in Unary::ALL {
        let b = Builder::new();
        let (z, w) = (b.latent("z"), b.latent("w"));
        let node = b.unary(op, onto(op.info().domain, z));
        let info = op.info();
        check(
            &with_padding(&b, node, z, w),
            op.to_string(),
            info.forward,
            info.reverse,
        );
    }
    for &op in Binary::ALL {
        let b = Builder::new();
        let (z, w) = (b.latent("z"), b.latent("w"));
        let [da, db] = op.info().domain;
        let node = b.binary(op, onto(da, z), onto(db, w));
        let info = op.info();
        check(
            &with_padding(&b, node, z, w),
            op.to_string(),
            info.forward,
            info.reverse,
        );
    }
}

#[test]
fn compiled_sweeps_give_the_interpreters_bits_on_the_built_in_models() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    let mut rng = Lcg(7);
    for name in dsgd::models::builtin_names() {
        let model = dsgd::models::builtin(name).unwrap().unwrap();
        let tape = Tape::compile(&model.program, 0);
        let params = vec![0.4; model.program.param_count()];
        let zs = noise(&mut rng, tape.latent_count());
        for sem in SEMANTICS {
            let want = run(&tape, KernelSet::Portable, sem, &params, &zs);
            assert!(
                want.iter().any(|&b| b != f64::NAN.to_bits()),
                "{name}: all NaN"
            );
            for set in compiled_sets() {
                let got = run(&tape, set, sem, &params, &zs);
                assert!(got == want, "{name} {sem:?}: {set:?} differs");
            }
            for c in [tape.jit_coverage(sem), tape.avx2_jit_coverage(sem)]
                .into_iter()
                .flatten()
            {
                assert!(
                    c.called * 32 <= c.inline + c.called,
                    "{name} {sem:?}: {c:?}"
                );
            }
            // Every built-in model's reverse sweeps compile whole, in both widths.
            for c in [
                tape.reverse_jit_coverage(sem),
                tape.avx2_reverse_jit_coverage(sem),
            ] {
                let c = c.expect("compiled");
                assert_eq!(c.called, 0, "{name} {sem:?}: {c:?}");
                assert_eq!(c.inline, tape.reverse_len(sem), "{name} {sem:?}");
            }
        }
    }
    // Crisp layouts of cheap steps and fused density terms compile whole: the random walk,
    // the network and the epidemic model, and the survey but for its final logarithms.
    for name in ["walk", "xornet", "influenza"] {
        let model = dsgd::models::builtin(name).unwrap().unwrap();
        let tape = Tape::compile(&model.program, 0);
        let c = tape.jit_coverage(Semantics::Crisp).expect("compiled");
        assert_eq!(c.called, 0, "{name}: {c:?}");
    }
    let model = dsgd::models::builtin("cheating").unwrap().unwrap();
    let tape = Tape::compile(&model.program, 0);
    let c = tape.jit_coverage(Semantics::Crisp).expect("compiled");
    assert!(c.inline > 1000 && c.called <= 2, "{c:?}");
}

/// Runs `tape` on the latents `zs` themselves (location 0 and scale 1: the latent is the noise,
/// but for -0, which becomes +0) in the portable build and the compiled code, under every
/// semantics, and asserts the same bits with no step called back in either compiled sweep.
fn assert_compiled_bits_on(tape: &Tape, zs: &[f64]) {
    for sem in SEMANTICS {
        let want = run_affine(tape, KernelSet::Portable, sem, &[], zs, &[0.0], &[1.0]);
        for set in compiled_sets() {
            let got = run_affine(tape, set, sem, &[], zs, &[0.0], &[1.0]);
            assert!(got == want, "{sem:?}: {set:?} differs");
        }
        assert_eq!(tape.jit_coverage(sem).map(|c| c.called), Some(0), "{sem:?}");
        if compiled_sets().contains(&KernelSet::Avx2Jit) {
            assert_eq!(
                tape.avx2_jit_coverage(sem).map(|c| c.called),
                Some(0),
                "{sem:?}"
            );
            assert_eq!(
                tape.avx2_reverse_jit_coverage(sem).map(|c| c.called),
                Some(0),
                "{sem:?}"
            );
        }
        assert_eq!(
            tape.reverse_jit_coverage(sem).map(|c| c.called),
            Some(0),
            "{sem:?}"
        );
    }
}

/// A batch of latents: `edges` in the first lanes, then `spread` of uniform numbers in [0, 1).
fn edges_then(edges: &[f64], spread: impl Fn(f64) -> f64, rng: &mut Lcg) -> Vec<f64> {
    (0..BATCH)
        .map(|l| edges.get(l).copied().unwrap_or_else(|| spread(rng.next())))
        .collect()
}

#[test]
fn compiled_logarithms_give_the_interpreters_bits_at_the_edges() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    let b = Builder::new();
    let z = b.latent("z");
    let out = b.sum(&[z.ln(), (z * z).ln()]);
    let p = b.finish(&[out]).expect("well formed");
    let tape = Tape::compile(&p, 0);
    let edges = [
        0.0,
        -0.0,
        -1.0,
        f64::MIN_POSITIVE,
        f64::MIN_POSITIVE / 3.0,
        5e-324,
        1e-310,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0,
        std::f64::consts::SQRT_2,
        std::f64::consts::FRAC_1_SQRT_2,
        1.0 + f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
    ];
    let mut rng = Lcg(11);
    let zs = edges_then(&edges, |u| (u * 1400.0 - 700.0).exp2(), &mut rng);
    assert_compiled_bits_on(&tape, &zs);
}

#[test]
fn compiled_exponentials_give_the_interpreters_bits_at_the_edges() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    let b = Builder::new();
    let z = b.latent("z");
    let out = b.sum(&[z.exp(), (z * 0.5).exp()]);
    let p = b.finish(&[out]).expect("well formed");
    let tape = Tape::compile(&p, 0);
    // The clamps (710 from above, -750 from below), overflow (above 709.78), subnormal
    // results (below -708.4), zero (below -745.13), the reduction's halfway points.
    let edges = [
        0.0,
        -0.0,
        709.782712893384,
        709.7827128933841,
        709.79,
        710.0,
        711.0,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -708.39,
        -708.4,
        -720.5,
        -745.1332191019411,
        -745.14,
    ];
    let more = [
        -750.0,
        -800.0,
        -f64::MAX,
        1e-300,
        -1e-300,
        5e-324,
        std::f64::consts::LN_2 / 2.0,
        -std::f64::consts::LN_2 / 2.0,
        1.0,
        -1.0,
        1419.6,
        -1491.0,
    ];
    let mut rng = Lcg(13);
    for given in [&edges[..], &more[..]] {
        let zs = edges_then(given, |u| u * 1480.0 - 760.0, &mut rng);
        assert_compiled_bits_on(&tape, &zs);
    }
}

#[test]
fn compiled_indicators_give_the_interpreters_bits() {
    // The code takes a weight itself as the value of an if-statement between the constants
    // 1 and 0 (either way round); not between 1 and 2, nor 0 and 1 both in one branch's
    // place. At the edges: NaN guards (both weights the same NaN), infinite and huge guards
    // (weights exactly 0 and 1), zero of either sign.
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    let b = Builder::new();
    let z = b.latent("z");
    let (zero, one, two) = (b.constant(0.0), b.constant(1.0), b.constant(2.0));
    let out = b.sum(&[
        b.if_neg(z, one, zero),
        b.if_neg(z - 0.5, zero, one) * z,
        b.if_neg(z + 0.25, one, two),
        b.if_neg(z * z - 1.0, one, one) * (z * 0.5),
        b.if_neg(-z, zero, zero),
    ]);
    let p = b.finish(&[out]).expect("well formed");
    let tape = Tape::compile(&p, 0);
    let edges = [
        0.0,
        -0.0,
        0.5,
        -0.25,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        -f64::MAX,
        1e300,
        -1e300,
        5e-324,
        -5e-324,
        1.0,
        -1.0,
        800.0,
    ];
    let mut rng = Lcg(17);
    let zs = edges_then(&edges, |u| u * 8.0 - 4.0, &mut rng);
    assert_compiled_bits_on(&tape, &zs);
}

#[test]
fn compiled_sweeps_of_long_programs_give_the_interpreters_bits() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    // Long enough that the forward code is assembled in several parts (their calls to the
    // shared routines cross from one part to the code before it).
    let mut rng = Lcg(0x10c);
    let p = program(&mut rng, 6_000);
    let tape = Tape::compile(&p, 0);
    let params = [0.3, 0.8];
    let zs = noise(&mut rng, tape.latent_count());
    for sem in SEMANTICS {
        assert_compiled_bits(&tape, sem, &params, &zs, "long program");
    }
    let c = tape.jit_coverage(SEMANTICS[0]).expect("compiled");
    assert!(c.inline + c.called > 3 * 2_048, "{c:?}");
    // Its reverse plan too, in several parts of 1,024 steps.
    let c = tape.reverse_jit_coverage(SEMANTICS[0]).expect("compiled");
    assert!(c.inline + c.called > 3 * 1_024, "reverse: {c:?}");
    // A reverse plan longer than the compiled code's bound (50,000 steps) runs in the
    // interpreter, with the same bits as ever.
    let p = program(&mut rng, 150_000);
    let tape = Tape::compile(&p, 0);
    assert!(tape.reverse_len(SEMANTICS[0]) > 50_000);
    let zs = noise(&mut rng, tape.latent_count());
    let sem = SEMANTICS[0];
    assert_compiled_bits(&tape, sem, &params, &zs, "150,000 nodes");
    assert!(tape.reverse_jit_coverage(sem).is_none());
}

/// A program that runs a random body of `body` nodes `reps` times, as a model's `for` loop
/// does once unrolled: each iteration reads two latents of its own, the parameters, the
/// body's constants and the value the iteration before carried over, and keeps one value
/// for the output's sum; the output reads a value of the body's middle from the last
/// iteration too (a value most iterations need not store).
fn looped_program(rng: &mut Lcg, body: usize, reps: usize) -> Program {
    let b = Builder::new();
    let params = [b.param("p0"), b.param("p1")];
    let template: Vec<(usize, [usize; 3], f64)> = (0..body)
        .map(|_| {
            let picks = [rng.below(6), rng.below(6), rng.below(6)];
            (rng.below(12), picks, rng.next() * 4.0 - 2.0)
        })
        .collect();
    let mut carried = b.latent("z");
    let mut kept = Vec::new();
    let mut middle = carried;
    for r in 0..reps {
        let mut pool = vec![
            carried,
            params[0],
            params[1],
            b.latent(&format!("x{r}")),
            b.latent(&format!("y{r}")),
        ];
        for (node, &(kind, picks, c)) in template.iter().enumerate() {
            let n = pool.len();
            let [mut x, y, w] = picks.map(|i| pool[n - 1 - i % n]);
            if node == 0 {
                x = carried;
            }
            let k = b.constant(c);
            // Kind 10's sum would be a sum chain, which no loop contains: an indicator (an
            // if-statement between 1 and 0) times a value instead.
            pool.push(match kind {
                10 => b.if_neg(x, b.constant(1.0), b.constant(0.0)) * y,
                _ => cheap_node(&b, kind, x, y, w, k),
            });
        }
        carried = *pool.last().unwrap();
        kept.push(pool[pool.len() - 2]);
        middle = pool[5 + body / 2];
    }
    kept.extend([carried, middle]);
    let total = b.sum(&kept);
    b.finish(&[total])
        .expect("a generated program is well formed")
}

#[test]
fn compiled_loops_over_repeated_blocks_give_the_interpreters_bits() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    let mut rng = Lcg(0x100b);
    let (mut inline, mut looped) = (0, 0);
    let (mut rev_inline, mut rev_looped) = (0, 0);
    // Layouts of 2,048 steps or more (smaller ones run no loops).
    for case in 0..12 {
        let p = looped_program(&mut rng, 4 + case % 5, [600, 900, 1500][case % 3]);
        let tape = Tape::compile(&p, 0);
        let params = [rng.next() - 0.5, rng.next() + 0.5];
        let zs = noise(&mut rng, tape.latent_count());
        for sem in SEMANTICS {
            assert_compiled_bits(&tape, sem, &params, &zs, format!("case {case}"));
            if let Some(c) = tape.jit_coverage(sem) {
                inline += c.inline;
                looped += c.looped;
            }
            if let Some(c) = tape.reverse_jit_coverage(sem) {
                rev_inline += c.inline;
                rev_looped += c.looped;
            }
        }
    }
    assert!(looped * 2 > inline, "{inline} inline, {looped} looped");
    assert!(
        rev_looped * 2 > rev_inline,
        "reverse: {rev_inline} inline, {rev_looped} looped"
    );
    // The survey with 400 students: most of its steps in loops, smoothed and crisp.
    let source = dsgd::models::builtin_source("cheating").expect("built in");
    let source = source
        .replace("const students = 100;", "const students = 400;")
        .replace("const yes = 35;", "const yes = 140;");
    let tape = tape_of_source("cheating", &source);
    let zs = noise(&mut rng, tape.latent_count());
    for sem in SEMANTICS {
        assert_compiled_bits(&tape, sem, &[], &zs, "survey");
        let c = tape.jit_coverage(sem).expect("compiled");
        assert!(c.looped * 10 > c.inline * 7, "survey, {sem:?}: {c:?}");
        // (Crisp, its plan is empty: no guard carries an adjoint.)
        let c = tape.reverse_jit_coverage(sem).expect("compiled");
        assert!(
            c.looped * 10 >= c.inline * 7,
            "survey, reverse, {sem:?}: {c:?}"
        );
    }
}

/// A time-budget fuzz of the compiled code against the interpreter: random programs (as
/// above, of 5 to 800 nodes) and random loop bodies repeated enough to loop, from fresh seeds,
/// until `DSGD_FUZZ_SECONDS` (default 600) have passed. A failure, or a case that runs for
/// a minute, names its seed; rerun one with `DSGD_FUZZ_SEED`.
/// `DSGD_FUZZ_SECONDS=600 cargo test --release --test eval_jit -- --ignored --nocapture`
#[test]
#[ignore = "a time-budget fuzz; run with --ignored"]
fn compiled_sweeps_fuzz_for_a_time_budget() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    let seconds: u64 = std::env::var("DSGD_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let first: u64 = std::env::var("DSGD_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let start = std::time::Instant::now();
    let mut seed = first;
    let (mut cases, mut looped) = (0u64, 0usize);
    while cases == 0 || start.elapsed().as_secs() < seconds {
        let mut rng = Lcg(seed);
        let p = if rng.next() < 0.25 {
            let body = 1 + rng.below(40);
            let reps = 2_100 / body + rng.below(200);
            looped_program(&mut rng, body, reps)
        } else {
            let len = 5 + rng.below(800);
            program(&mut rng, len)
        };
        let params = [rng.next() * 4.0 - 2.0, rng.next() * 4.0 - 2.0];
        looped += within_a_minute(format!("seed {seed}"), move || {
            let tape = Tape::compile(&p, 0);
            let zs = noise(&mut rng, tape.latent_count());
            let mut looped = 0;
            for sem in SEMANTICS {
                assert_compiled_bits(&tape, sem, &params, &zs, format!("seed {seed}"));
                looped += tape.jit_coverage(sem).map_or(0, |c| c.looped);
            }
            looped
        });
        cases += 1;
        seed = seed.wrapping_add(1);
    }
    println!("{cases} programs from seed {first} ({looped} looped forward steps)");
}

/// A sum of more recent values than the compiled code has registers (every register then
/// holds one of its terms) compiles and gives the interpreter's bits, forward and reverse;
/// so does an if-statement on such a sum. (The forward code's choice of a register for the
/// sum looked for one holding no term, and looped for ever.)
#[test]
fn sums_of_more_terms_than_registers_give_the_interpreters_bits() {
    if !KernelSet::available().contains(&KernelSet::Jit) {
        return;
    }
    let mut rng = Lcg(0x5a5a);
    for terms in [9, 10, 11, 16, 40] {
        let b = Builder::new();
        let z: Vec<Var<'_>> = (0..4).map(|i| b.latent(&format!("z{i}"))).collect();
        let p = b.param("p");
        // One step each, so that the last ten steps' values are all terms.
        let fresh: Vec<Var<'_>> = (0..terms)
            .map(|k| b.constant(0.5 + k as f64) * z[k % 4])
            .collect();
        let guarded = b.if_neg(b.sum(&fresh[1..]), fresh[1], fresh[terms - 1]);
        let total = b.sum(&fresh);
        let out = b.sum(&[total * p, guarded * p]);
        let prog = b.finish(&[out]).expect("a well-formed program");
        let tape = Tape::compile(&prog, 0);
        let zs = noise(&mut rng, tape.latent_count());
        within_a_minute(format!("{terms} terms"), move || {
            for sem in SEMANTICS {
                assert_compiled_bits(&tape, sem, &[0.7], &zs, format!("{terms} terms"));
            }
            assert!(
                tape.jit_coverage(Semantics::Crisp).is_some(),
                "{terms} terms"
            );
        });
    }
    // The same from a model's source: a sum of twelve scaled latents as an if-statement's
    // guard.
    let terms: Vec<String> = (0..12).map(|k| format!("{}.5 * z{}", k, k % 4)).collect();
    let source = format!(
        "param p = 1.0;\n{}\nlet s = {};\nmaximize if s < 0 {{ -s }} else {{ s }};",
        (0..4)
            .map(|i| format!("let z{i} = sample Normal(p, 1);"))
            .collect::<Vec<_>>()
            .join("\n"),
        terms.join(" + ")
    );
    let tape = tape_of_source("sum.dsgd", &source);
    let zs = noise(&mut rng, tape.latent_count());
    within_a_minute("the model".into(), move || {
        for sem in SEMANTICS {
            assert_compiled_bits(&tape, sem, &[1.0], &zs, "the model");
        }
    });
}

/// The tape of a model's source `source` (the file name `name`, for messages).
fn tape_of_source(name: &str, source: &str) -> Tape {
    let model =
        dsgd::lang::compile_source(name, source, std::path::Path::new("."), &Default::default())
            .unwrap_or_else(|e| panic!("{name} compiles: {e}"));
    Tape::compile(&model.program, 0)
}

/// `check()` on a thread, failing if it does not finish within a minute (a hang then fails
/// the test instead of stalling it) and with its panic if it panics.
fn within_a_minute<R: Send + 'static>(
    what: String,
    check: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (done, finished) = std::sync::mpsc::channel();
    let check = std::thread::spawn(move || {
        let r = check();
        let _ = done.send(());
        r
    });
    let outcome = finished.recv_timeout(std::time::Duration::from_secs(60));
    assert!(
        !matches!(outcome, Err(std::sync::mpsc::RecvTimeoutError::Timeout)),
        "{what}: no result in 60 s"
    );
    check
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The guard pages are there: a read just past the end of a workspace-like buffer, or just
/// before its start, faults. Each probe runs in a child process (this test again, told which
/// end to probe), whose death by `SIGSEGV` is the pass.
#[cfg(unix)]
#[test]
fn reading_just_outside_a_buffer_faults() {
    use std::os::unix::process::ExitStatusExt;
    if let Some(side) = std::env::var_os("DSGD_GUARD_PAGE_PROBE") {
        probe_outside(side == "end");
    }
    for side in ["end", "start"] {
        let out = std::process::Command::new(std::env::current_exe().expect("this test"))
            .args([
                "reading_just_outside_a_buffer_faults",
                "--exact",
                "--test-threads=1",
            ])
            .env("DSGD_GUARD_PAGE_PROBE", side)
            .output()
            .expect("the test binary runs");
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSEGV),
            "{side}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// Reads the number just past the end (or just before the start) of a buffer of three lane
/// arrays that lies against a guard page there; never returns.
#[cfg(unix)]
fn probe_outside(end: bool) -> ! {
    let mut kept = Vec::new();
    for _ in 0..8 {
        let buf = dsgd::aligned::ArrayBuf::<CHUNK>::zeroed(3);
        let (p, bytes) = (buf.as_ptr().cast::<f64>(), std::mem::size_of_val(&buf[..]));
        // SAFETY: none: this reads outside the buffer on purpose, where the guard page makes
        // it fault (the test passes when this process dies of it).
        unsafe {
            if end && (p as usize + bytes).is_multiple_of(4096) {
                std::ptr::read_volatile(p.add(3 * CHUNK));
            }
            if !end && (p as usize).is_multiple_of(4096) {
                std::ptr::read_volatile(p.sub(1));
            }
        }
        kept.push(buf);
    }
    std::process::exit(0)
}

/// A tape with the plain smoothing weights (a plate body's: no rounding corrections) gives
/// the interpreter's bits in every compiled build too, on the built-in models with
/// if-statements; breaking the compiled routines' plain sigmoid (or compiling the corrected
/// one for such a tape) fails here.
#[test]
fn compiled_plain_weights_give_the_interpreters_bits() {
    let mut rng = Lcg(0x91a1);
    for name in ["temperature", "cheating", "textmsg"] {
        let model = dsgd::models::builtin(name).unwrap().unwrap();
        let tape = Tape::compile(&model.program, 0).with_plain_weights();
        let params = vec![0.4; model.program.param_count()];
        let zs = noise(&mut rng, tape.latent_count());
        for sem in SEMANTICS {
            assert_compiled_bits(&tape, sem, &params, &zs, format!("{name}, plain weights"));
        }
        // The plain weights differ from the corrected ones somewhere: the comparison is not
        // of the same code.
        let plain = run(&tape, KernelSet::Portable, SEMANTICS[0], &params, &zs);
        let corrected = run(
            &Tape::compile(&model.program, 0),
            KernelSet::Portable,
            SEMANTICS[0],
            &params,
            &zs,
        );
        assert!(
            plain != corrected,
            "{name}: plain and corrected weights agree"
        );
    }
}

/// The plain weights' routines give the interpreter's bits over the whole range of a guard:
/// weights near one half, in the tails, where the small weight turns subnormal and where it
/// underflows to zero, at every entry of the exponential's table (the guards spread over
/// many sixteenths of `ln 2` per unit of `eta`), and infinite and NaN guards.
#[test]
fn compiled_plain_weights_give_the_interpreters_bits_over_the_guards_range() {
    let b = Builder::new();
    let z = b.latent("z");
    let w = b.latent("w");
    let total = b.if_neg(z, w * 3.0, w - 1.0);
    let program = b.finish(&[total]).unwrap();
    let tape = Tape::compile(&program, 0).with_plain_weights();
    let mut rng = Lcg(0x7ab1);
    for round in 0..200 {
        let zs: Vec<f64> = (0..2 * BATCH)
            .map(|i| {
                let u = rng.next();
                let sign = if rng.next() < 0.5 { -1.0 } else { 1.0 };
                match (round + i) % 9 {
                    // NaN guards, quiet and signalling, of either sign, with payloads.
                    4 | 5 => {
                        let quiet = if (round + i) % 9 == 5 { 1u64 << 51 } else { 0 };
                        let nan =
                            f64::from_bits(0x7ff0_0000_0000_0001 | quiet | (u.to_bits() >> 14));
                        if sign < 0.0 { -nan } else { nan }
                    }
                    6 => sign * f64::INFINITY,
                    // |x| up to 800 at eta 1: past the clamp at 750.
                    0 | 7 => sign * 800.0 * u,
                    // the subnormal small weights, and their end near 745.
                    1 => sign * (700.0 + 50.0 * u),
                    2 => sign * 4.0 * u,
                    _ => sign * 10f64.powf(-300.0 + 303.0 * u),
                }
            })
            .collect();
        for sem in [
            Semantics::Smoothed { eta: 1.0 },
            Semantics::Smoothed { eta: 0.37 },
        ] {
            let want = run_affine(
                &tape,
                KernelSet::Portable,
                sem,
                &[],
                &zs,
                &[0.0, 0.0],
                &[1.0, 1.0],
            );
            for set in compiled_sets() {
                let got = run_affine(&tape, set, sem, &[], &zs, &[0.0, 0.0], &[1.0, 1.0]);
                assert!(got == want, "{set:?} {sem:?} round {round}: differs");
            }
        }
    }
}

//! The tape's gradients equal, bit for bit, a plain one-sample reverse sweep over the
//! program's nodes (the tape's rules applied in their original order, with no lanes, no
//! hoisting, no first-write adjoints), in every semantics and in both the vector and the
//! portable build of the sweeps. That pins every speed-up of the tape to the exact results
//! of the straightforward algorithm, signed zeros and NaN included.
//!
//! Not here: whether those gradients are right (`core_props.rs`).

use dsgd::eval::{BatchGradient, CHAIN_SEGMENT, CHUNK, Tape};
use dsgd::ir::{
    Binary, Branch, Builder, Dist, Node, Program, Semantics, Unary, binary_derivatives,
    unary_derivative,
};
use dsgd::special::sigmoid_pair;

const BATCH: usize = 2 * CHUNK + 5;

/// A program with what the tape treats specially: parameter-only subgraphs (uniform in the
/// lanes), an if-statement whose guard is a parameter, aliased operands (`x * x`, `x - x`,
/// `if z < 0 then z else -z`), a latent read only by a guard, an unused latent, and a branch
/// that is NaN where it is not taken (when `with_nan`; smoothing mixes it into every lane).
fn program(with_nan: bool) -> Program {
    let b = Builder::new();
    let z: Vec<_> = (0..5).map(|i| b.latent(&format!("z{i}"))).collect();
    let _unused = b.latent("unused");
    let th = b.param("theta");
    let rho = b.param("rho");
    let scale = rho.softplus();
    let uniform_if = b.if_neg(th, scale.ln(), th * th);
    let a = (z[0] - th) / scale;
    let dens = -0.5 * a.powi(2) - scale.ln() + uniform_if;
    let same = z[2].sin();
    let aliased = b.if_neg(z[1], z[1], -z[1]) + z[1] * z[1] + (same - z[2].sin()) / same;
    let guard_only = b.if_neg(z[3], z[2].exp(), z[2].sin());
    let nan_branch = if with_nan {
        b.if_neg(z[4] + 10.0, (-(z[4] + 10.0)).ln(), z[4].tanh())
    } else {
        z[4].tanh()
    };
    let rest = (z[0] * z[1]).sigmoid()
        + (z[2] / (z[1].powi(2) + 1.0))
        + (z[0].softplus() + 0.1).pow(th * th);
    let sugar = b.max(z[0], z[2]) + b.abs(z[1] - th) + b.relu(z[2]);
    // Normal log-densities (whose quadratic term the tape fuses) with the value, the location
    // or the scale constant, a parameter or a latent, one of scale 1 and two of location 0
    // (which the builder folds away), and one whose residual is read twice.
    let normal = |x, m, s| b.log_density(Dist::Normal, x, &[m, s]).unwrap();
    let dens2 = normal(z[0], th, scale)
        + normal(b.constant(1.5), z[1], z[2].softplus())
        + normal(z[3], b.constant(0.5), b.constant(0.1))
        + normal(z[2], z[3], scale)
        + normal(z[4], z[4] * 0.5, b.constant(2.0))
        + normal(z[1], z[3].sin(), b.constant(1.0))
        + normal(z[2], b.constant(0.0), scale)
        + normal(z[3].cos(), b.constant(0.0), b.constant(1.0))
        + (z[0] - th) * 0.01;
    // Poisson log-densities of counts (whose rate-dependent part the tape fuses), the count
    // on either side of its product (the builder orders operands by node: `ln(r2)` exists
    // before the constant 7), and one with a uniform rate (not fused).
    let poisson = |x: f64, r| b.log_density(Dist::Poisson, b.constant(x), &[r]).unwrap();
    let r2 = z[2] * z[2] + 0.5;
    let _ = r2.ln();
    let p2 = poisson(7.0, r2);
    let r1 = z[3].exp();
    let counts = poisson(3.0, r1) + p2 + poisson(2.0, th.exp()) + r1 * 0.25;
    // A sum chain (fused) with a term read twice more between its addition and the chain's
    // end: fusing that addition would change the order of the term's three contributions
    // (1, then 1e16 and -1e16: the 1 survives only in the unfused order).
    let shared = z[0].sin();
    let mut acc = z[1] * 1.5 + shared;
    acc = acc + z[2].cos();
    acc = acc + shared * 1e16;
    acc = acc + shared * -1e16;
    acc = acc + z[3] * z[4];
    // A guard choosing between constants (the tape keeps only the product of its weights),
    // and a sum chain longer than one segment of the fused sum.
    let step = b.if_neg(z[0] - z[3], b.constant(2.0), b.constant(-1.0));
    let mut long = step * z[1];
    for k in 0..2 * CHAIN_SEGMENT + 3 {
        long = long + z[k % 5] * (k as f64 + 0.25);
    }
    // One source `if` assigning three variables: three if-statements on one guard, the later
    // two reading the first's smoothing weights (constant branches, whose reverse step alone
    // would keep only the product of the weights, and lane branches).
    let split = z[1] - z[4] * 0.5;
    let assigned = b.if_neg(split, b.constant(3.0), b.constant(-0.5)) * z[0]
        + b.if_neg(split, z[2], z[3].sin())
        + b.if_neg(split, b.constant(1.0), b.constant(0.0));
    // Two guards with a common operand, their if-statements in the opposite order: the
    // later sum's contributions may move into its if-statement, the earlier one's may not
    // (they would then reach `z2` before the other's, changing the order of additions).
    let first_guard = z[2] - z[0] * 0.5;
    let second_guard = z[2] - z[4];
    let crossed = b.if_neg(second_guard, z[3] * 3.0, b.constant(1.0)) * 7.0
        + b.if_neg(first_guard, b.constant(-2.0), z[1]) * 1e-3;
    let f = dens
        + crossed
        + assigned
        + aliased
        + guard_only
        + 0.5 * nan_branch
        + rest.powi(2).ln_1p()
        + sugar
        + dens2
        + counts
        + acc
        + step
        + long;
    b.finish(&[f]).unwrap()
}

/// `d * local`, or exactly zero where `d` is zero.
fn masked(d: f64, local: f64) -> f64 {
    if d == 0.0 { 0.0 } else { d * local }
}

/// One sample's value and gradient (latents then parameters) by a plain reverse sweep.
fn reference(p: &Program, sem: Semantics, params: &[f64], z: &[f64]) -> Vec<f64> {
    let v = p.evaluate_all(sem, params, z);
    let root = p.output().index();
    let live = p.reachable_from(&[p.output()]);
    let nodes = p.nodes();
    let mut active = vec![false; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        active[i] = match n {
            Node::Const(_) => false,
            Node::Param(_) | Node::Latent(_) => true,
            _ => n.operands().any(|o| active[o.index()]),
        };
    }
    let mut adj = vec![0.0; nodes.len()];
    adj[root] = 1.0;
    for i in (0..nodes.len()).rev() {
        if !live[i] || !active[i] {
            continue;
        }
        let d = adj[i];
        match nodes[i] {
            Node::Const(_) | Node::Param(_) | Node::Latent(_) => {}
            Node::Unary(op, a) => {
                let a = a.index();
                if !active[a] {
                } else if op == Unary::Neg {
                    adj[a] -= d;
                } else {
                    adj[a] += masked(d, unary_derivative(op, v[a], v[i]));
                }
            }
            Node::Binary(op, a, b) => {
                let (a, b) = (a.index(), b.index());
                let (da, db) = binary_derivatives(op, v[a], v[b], v[i]);
                if a == b {
                    adj[a] += masked(d, da + db);
                } else if active[a] && active[b] {
                    match op {
                        Binary::Add => (adj[a], adj[b]) = (adj[a] + d, adj[b] + d),
                        Binary::Sub => (adj[a], adj[b]) = (adj[a] + d, adj[b] - d),
                        _ => (adj[a], adj[b]) = (adj[a] + masked(d, da), adj[b] + masked(d, db)),
                    }
                } else if active[a] {
                    adj[a] += masked(d, da);
                } else {
                    adj[b] += masked(d, db);
                }
            }
            Node::If {
                guard,
                then_,
                else_,
                index,
            } => {
                let (g, t, e) = (guard.index(), then_.index(), else_.index());
                let gate = |w: f64, c: f64| if d == 0.0 || w == 0.0 { 0.0 } else { c };
                let (cg, ct, ce) = match sem {
                    Semantics::Smoothed { eta } => {
                        let (we, wt) = sigmoid_pair(v[g] / eta);
                        let w = wt * we;
                        let cg = gate(w, d * (w / eta) * (v[e] - v[t]));
                        (Some(cg), gate(wt, d * wt), gate(we, d * we))
                    }
                    _ => {
                        let take = match sem {
                            Semantics::Forced { index: k, branch } if k == index => {
                                branch == Branch::Then
                            }
                            _ => v[g] < 0.0,
                        };
                        (None, if take { d } else { 0.0 }, if take { 0.0 } else { d })
                    }
                };
                if let Some(cg) = cg.filter(|_| active[g]) {
                    adj[g] += cg;
                }
                if active[t] {
                    adj[t] += ct;
                }
                if active[e] {
                    adj[e] += ce;
                }
            }
        }
    }
    let mut out = vec![v[root]];
    let mut grads = vec![0.0; p.latent_count() + p.param_count()];
    for (i, n) in nodes.iter().enumerate() {
        match *n {
            Node::Latent(j) if live[i] => grads[j as usize] = adj[i],
            Node::Param(k) if live[i] => grads[p.latent_count() + k as usize] = adj[i],
            _ => {}
        }
    }
    out.extend(grads);
    out
}

fn latents(n: usize, batch: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n * batch)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            8.0 * u - 4.0
        })
        .collect()
}

fn semantics(p: &Program) -> Vec<Semantics> {
    let mut all = vec![
        Semantics::Crisp,
        Semantics::Smoothed { eta: 0.3 },
        Semantics::Smoothed { eta: 1e-4 },
    ];
    for index in 0..p.if_count() as u32 {
        for branch in [Branch::Then, Branch::Else] {
            all.push(Semantics::Forced { index, branch });
        }
    }
    all
}

#[test]
fn tape_gradients_equal_a_plain_reverse_sweep_bit_for_bit() {
    let p = program(true);
    let tape = Tape::compile(&p, 0);
    // Every density in `dens2`; the first, whose residual `z0 - theta` has other readers, as
    // the square of the quotient only (as is `dens`'s quadratic term, the same node).
    assert_eq!(tape.fused_squares(), 8);
    assert_eq!(tape.fused_poisson_terms(), 2);
    assert_eq!(tape.reused_weights(), 2);
    // `z0 - z3` of the guard choosing between constants, `-(z4 + 10)`'s sum of the NaN
    // branch's guard and `second_guard`; `split` has three readers and stays a step of its
    // own, and `first_guard`'s contributions would overtake `second_guard`'s.
    assert_eq!(tape.folded_guards(), 3);
    assert!(tape.fused_additions() >= 10, "{}", tape.fused_additions());
    let n = p.latent_count();
    let mut checked = 0;
    for (round, params) in [[0.7, -0.4], [-1.2, 2.0], [0.0, -0.0]].iter().enumerate() {
        let zs = latents(n, BATCH, 17 + round as u64);
        for sem in semantics(&p) {
            for simd in [true, false] {
                let mut ws = tape.workspace();
                ws.set_simd(simd);
                let mut g = BatchGradient::new(&tape, BATCH);
                tape.gradient(&mut ws, sem, params, &zs, &mut g);
                for lane in 0..BATCH {
                    let z: Vec<f64> = (0..n).map(|i| zs[i * BATCH + lane]).collect();
                    let want = reference(&p, sem, params, &z);
                    let mut got = vec![g.value[lane]];
                    got.extend((0..n).map(|i| g.latent(i, lane)));
                    got.extend((0..params.len()).map(|k| g.param(k, lane)));
                    let bits = |xs: &[f64]| xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "{sem:?} simd {simd} lane {lane}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
}

#[test]
fn vector_and_portable_sweeps_agree_bit_for_bit_on_random_inputs() {
    let p = program(true);
    let tape = Tape::compile(&p, 0);
    let n = p.latent_count();
    for seed in 0..20u64 {
        let batch = 1 + (seed as usize * 7) % (3 * CHUNK);
        let zs = latents(n, batch, seed);
        let params = [zs[0] * 0.5, zs[batch - 1]];
        for sem in semantics(&p) {
            let mut out = Vec::new();
            for simd in [true, false] {
                let mut ws = tape.workspace();
                ws.set_simd(simd);
                let mut g = BatchGradient::new(&tape, batch);
                tape.gradient(&mut ws, sem, &params, &zs, &mut g);
                let mut f = vec![0.0; batch];
                tape.forward(&mut ws, sem, &params, &zs, &mut f);
                let all: Vec<u64> = [&g.value[..], &g.latents[..], &g.params[..], &f[..]]
                    .iter()
                    .flat_map(|xs| xs.iter().map(|x| x.to_bits()))
                    .collect();
                out.push(all);
            }
            assert_eq!(out[0], out[1], "seed {seed} {sem:?}");
        }
    }
}

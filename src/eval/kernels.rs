//! Per-op forward and backward rules over one chunk of lanes, as fixed-width arrays.
//!
//! Every lane loop runs over exactly [`CHUNK`] lanes of a `[f64; CHUNK]`, so it compiles to
//! straight-line (vector) code with no bounds checks and no remainder loop. The rules are the
//! scalar definitions of `crate::ir` (`unary_value`, `binary_derivatives`, ...) applied lane by
//! lane, in the same order of floating-point operations as the reference interpreter.
//!
//! Backward rules return *contributions* instead of accumulating: the sweep adds them into
//! the operands' adjoints (or, for the first contribution, writes `0.0 + c`, which is what
//! accumulating into a zeroed adjoint gives, signed zeros included). A lane whose incoming
//! adjoint is exactly zero contributes exactly zero, even where the local derivative is
//! infinite or NaN (`log` at 0 in an untaken branch): the "strong zero" that keeps crisp and
//! smoothed if-statements from leaking NaN.
//!
//! Not here: which operands carry adjoints, or the order of the instructions (`sweep.rs`).

use crate::elementary::{self, sigmoid_big_small, sigmoid_pair_order};
use crate::ir::{
    Binary, Unary, binary_derivatives, binary_value, unary_derivative, unary_value,
    unary_without_stand_in,
};

use super::instr::{CHUNK, Lanes};
use super::vmath;

/// Calls `$m!(op)` with `op` a constant expression in every arm, so that the closures built
/// from it specialise to one straight-line loop per operation.
macro_rules! each_unary {
    ($op:expr, $m:ident) => {
        match $op {
            Unary::Neg => $m!(Unary::Neg),
            Unary::Exp => $m!(Unary::Exp),
            Unary::Log => $m!(Unary::Log),
            Unary::Log1p => $m!(Unary::Log1p),
            Unary::Expm1 => $m!(Unary::Expm1),
            Unary::Sqrt => $m!(Unary::Sqrt),
            Unary::Softplus => $m!(Unary::Softplus),
            Unary::Sigmoid => $m!(Unary::Sigmoid),
            Unary::Tanh => $m!(Unary::Tanh),
            Unary::Sin => $m!(Unary::Sin),
            Unary::Cos => $m!(Unary::Cos),
            Unary::Lgamma => $m!(Unary::Lgamma),
            Unary::Probit => $m!(Unary::Probit),
            Unary::NormalCdf => $m!(Unary::NormalCdf),
            Unary::LogNormalCdf => $m!(Unary::LogNormalCdf),
            Unary::Powi(2) => $m!(Unary::Powi(2)),
            Unary::Powi(n) => $m!(Unary::Powi(n)),
        }
    };
}

macro_rules! each_binary {
    ($op:expr, $m:ident) => {
        match $op {
            Binary::Add => $m!(Binary::Add),
            Binary::Sub => $m!(Binary::Sub),
            Binary::Mul => $m!(Binary::Mul),
            Binary::Div => $m!(Binary::Div),
            Binary::Pow => $m!(Binary::Pow),
        }
    };
}

/// `f` on every lane.
#[inline(always)]
fn map(f: impl Fn(usize) -> f64) -> Lanes {
    let mut out = [0.0; CHUNK];
    for (l, y) in out.iter_mut().enumerate() {
        *y = f(l);
    }
    out
}

/// `d * local`, or exactly zero where `d` is zero (the strong zero).
#[inline(always)]
fn masked(d: f64, local: f64) -> f64 {
    let c = d * local;
    if d == 0.0 { 0.0 } else { c }
}

/// `op(a)` on every lane; `exp` and `ln` by [`vmath`] (the scalar definitions' lane loops).
#[inline(always)]
pub fn unary_forward(op: Unary, a: &Lanes) -> Lanes {
    match op {
        Unary::Exp => return vmath::exp_lanes(a),
        Unary::Log => return vmath::ln_lanes(a),
        _ => {}
    }
    macro_rules! run {
        ($o:expr) => {
            map(|l| unary_value($o, a[l]))
        };
    }
    each_unary!(op, run)
}

/// The contribution `ad * op'(a)` to `a`'s adjoint. `Neg` is the exception: it returns `ad`
/// itself, which the sweep *subtracts*, as the scalar rule `adj -= ad` does.
#[inline(always)]
pub fn unary_reverse(op: Unary, ad: &Lanes, a: &Lanes, v: &Lanes) -> Lanes {
    if op == Unary::Neg {
        return *ad;
    }
    macro_rules! run {
        ($o:expr) => {
            map(|l| masked(ad[l], unary_derivative($o, a[l], v[l])))
        };
    }
    each_unary!(op, run)
}

/// [`unary_reverse`] where `a` (so `op(a)`) is the same in every lane: the local derivative
/// is computed once, which gives the same bits as computing it per lane.
#[inline(always)]
pub fn unary_reverse_uniform(op: Unary, ad: &Lanes, a: f64, v: f64) -> Lanes {
    if op == Unary::Neg {
        return *ad;
    }
    let local = unary_derivative(op, a, v);
    map(|l| masked(ad[l], local))
}

/// `op(a, b)` on every lane.
#[inline(always)]
pub fn binary_forward(op: Binary, a: &Lanes, b: &Lanes) -> Lanes {
    macro_rules! run {
        ($o:expr) => {
            map(|l| binary_value($o, a[l], b[l]))
        };
    }
    each_binary!(op, run)
}

/// Which operands of a binary instruction take a contribution.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Wants {
    A,
    B,
    Both,
}

/// Contributions to the adjoints of `a` and `b` (only those in `wants` are computed; the
/// other is left zero). With `Add`/`Sub` and both operands wanted, the contributions are
/// `ad` unmasked, and for `Sub` the second is `ad` to be *subtracted* (see
/// [`binary_reverse_subtracts`]).
#[inline(always)]
pub fn binary_reverse(
    op: Binary,
    wants: Wants,
    ad: &Lanes,
    a: &Lanes,
    b: &Lanes,
    v: &Lanes,
) -> (Lanes, Lanes) {
    let zero = [0.0; CHUNK];
    macro_rules! run {
        ($o:expr) => {
            match wants {
                // Two lane loops, one per operand: a single loop filling both arrays was
                // unrolled into scalar and two-lane code with stack spills (a third of
                // xornet's reverse sweep). Each partial is the same expression either way.
                Wants::Both => (
                    map(|l| masked(ad[l], binary_derivatives($o, a[l], b[l], v[l]).0)),
                    map(|l| masked(ad[l], binary_derivatives($o, a[l], b[l], v[l]).1)),
                ),
                Wants::A => (
                    map(|l| masked(ad[l], binary_derivatives($o, a[l], b[l], v[l]).0)),
                    zero,
                ),
                Wants::B => (
                    zero,
                    map(|l| masked(ad[l], binary_derivatives($o, a[l], b[l], v[l]).1)),
                ),
            }
        };
    }
    match (op, wants) {
        (Binary::Add | Binary::Sub, Wants::Both) => (*ad, *ad),
        _ => each_binary!(op, run),
    }
}

/// Whether [`binary_reverse`]'s second contribution is to be subtracted.
#[inline(always)]
pub fn binary_reverse_subtracts(op: Binary, wants: Wants) -> bool {
    op == Binary::Sub && wants == Wants::Both
}

/// The contribution of `op(a, a)` to `a`'s adjoint: both partials at once.
#[inline(always)]
pub fn binary_reverse_same(op: Binary, ad: &Lanes, a: &Lanes, v: &Lanes) -> Lanes {
    macro_rules! run {
        ($o:expr) => {
            map(|l| {
                let (da, db) = binary_derivatives($o, a[l], a[l], v[l]);
                masked(ad[l], da + db)
            })
        };
    }
    each_binary!(op, run)
}

/// `c * ((x - m) / s)^2`, by the same four scalar operations as the unfused instructions.
#[inline(always)]
pub fn normal_square_forward(x: &Lanes, m: &Lanes, s: &Lanes, c: f64) -> Lanes {
    map(|l| {
        let u = binary_value(Binary::Div, binary_value(Binary::Sub, x[l], m[l]), s[l]);
        binary_value(Binary::Mul, c, unary_value(Unary::Powi(2), u))
    })
}

/// Reverse of [`normal_square_forward`]: the contributions to `s`, `x` and `m`, computed as
/// the unfused sweep computes them, every intermediate adjoint included (each intermediate
/// has one reader, so its adjoint is `0.0 +` its one contribution). `wants` says which of
/// `x` (A), `m` (B) carry adjoints, `want_s` whether `s` does. With both `x` and `m`, the
/// contribution to `m` is `x`'s own, to be *subtracted* as the unfused `Sub` rule does, and
/// the third array is left zero: returning one array twice was compiled to a copy through
/// the stack, read back in halves.
#[inline(always)]
pub fn normal_square_reverse(
    ad: &Lanes,
    [x, m, s]: [&Lanes; 3],
    c: f64,
    wants: Wants,
    want_s: bool,
) -> [Lanes; 3] {
    let mut cs = [0.0; CHUNK];
    let mut ad_d = [0.0; CHUNK];
    // The adjoint of the division's result `u`, and the division's partials.
    let lane = |l: usize| {
        let dx = binary_value(Binary::Sub, x[l], m[l]);
        let u = binary_value(Binary::Div, dx, s[l]);
        let p = unary_value(Unary::Powi(2), u);
        // `c * p` and `p * c` have the same partial with respect to `p`: `c`.
        let ad_p = 0.0 + masked(ad[l], binary_derivatives(Binary::Mul, c, p, 0.0).1);
        let ad_u = 0.0 + masked(ad_p, unary_derivative(Unary::Powi(2), u, p));
        (ad_u, binary_derivatives(Binary::Div, dx, s[l], u))
    };
    // Two loops, so that a constant scale (a crisp sweep's usual case) costs no `-u / s`.
    if want_s {
        for l in 0..CHUNK {
            let (ad_u, (dd, ds)) = lane(l);
            cs[l] = masked(ad_u, ds);
            ad_d[l] = 0.0 + masked(ad_u, dd);
        }
    } else {
        for (l, d) in ad_d.iter_mut().enumerate() {
            let (ad_u, (dd, _)) = lane(l);
            *d = 0.0 + masked(ad_u, dd);
        }
    }
    let (da, db) = binary_derivatives(Binary::Sub, 0.0, 0.0, 0.0);
    let zero = [0.0; CHUNK];
    let (cx, cm) = match wants {
        Wants::Both => (ad_d, zero),
        Wants::A => (map(|l| masked(ad_d[l], da)), zero),
        Wants::B => (zero, map(|l| masked(ad_d[l], db))),
    };
    [cs, cx, cm]
}

/// `c * (x - m)^2`, by the same three scalar operations as the unfused instructions.
#[inline(always)]
pub fn square_diff_forward(x: &Lanes, m: &Lanes, c: f64) -> Lanes {
    map(|l| {
        let u = binary_value(Binary::Sub, x[l], m[l]);
        binary_value(Binary::Mul, c, unary_value(Unary::Powi(2), u))
    })
}

/// Reverse of [`square_diff_forward`]: the contributions to `x` and `m`, as
/// [`normal_square_reverse`] makes them without the division (the subtraction's own adjoint
/// is the square's contribution, `0.0 +` it); with both, `x`'s is also `m`'s, to be
/// subtracted, and the second array is left zero.
#[inline(always)]
pub fn square_diff_reverse(ad: &Lanes, [x, m]: [&Lanes; 2], c: f64, wants: Wants) -> [Lanes; 2] {
    let mut ad_d = [0.0; CHUNK];
    for l in 0..CHUNK {
        let u = binary_value(Binary::Sub, x[l], m[l]);
        let p = unary_value(Unary::Powi(2), u);
        let ad_p = 0.0 + masked(ad[l], binary_derivatives(Binary::Mul, c, p, 0.0).1);
        ad_d[l] = 0.0 + masked(ad_p, unary_derivative(Unary::Powi(2), u, p));
    }
    let (da, db) = binary_derivatives(Binary::Sub, 0.0, 0.0, 0.0);
    let zero = [0.0; CHUNK];
    match wants {
        Wants::Both => [ad_d, zero],
        Wants::A => [map(|l| masked(ad_d[l], da)), zero],
        Wants::B => [zero, map(|l| masked(ad_d[l], db))],
    }
}

/// `c * (x / s)^2`, or `c * x^2` without `s`, by the same scalar operations as the unfused
/// instructions.
#[inline(always)]
pub fn square_forward(x: &Lanes, s: Option<&Lanes>, c: f64) -> Lanes {
    let sq = |u: f64| binary_value(Binary::Mul, c, unary_value(Unary::Powi(2), u));
    match s {
        Some(s) => map(|l| sq(binary_value(Binary::Div, x[l], s[l]))),
        None => map(|l| sq(x[l])),
    }
}

/// Reverse of [`square_forward`]: the contributions to `s` (zero without it) and `x`, as
/// [`normal_square_reverse`] makes them without the subtraction (the division's or, without
/// `s`, the square's contribution goes to `x` itself).
#[inline(always)]
pub fn square_reverse(ad: &Lanes, x: &Lanes, s: Option<&Lanes>, c: f64) -> [Lanes; 2] {
    // The contribution of `c * p` to `p = u^2` and on to `u`.
    let to_u = |l: usize, u: f64| {
        let p = unary_value(Unary::Powi(2), u);
        let ad_p = 0.0 + masked(ad[l], binary_derivatives(Binary::Mul, c, p, 0.0).1);
        masked(ad_p, unary_derivative(Unary::Powi(2), u, p))
    };
    let Some(s) = s else {
        return [[0.0; CHUNK], map(|l| to_u(l, x[l]))];
    };
    let mut cs = [0.0; CHUNK];
    let mut cx = [0.0; CHUNK];
    for l in 0..CHUNK {
        let u = binary_value(Binary::Div, x[l], s[l]);
        let ad_u = 0.0 + to_u(l, u);
        let (dx, ds) = binary_derivatives(Binary::Div, x[l], s[l], u);
        cs[l] = masked(ad_u, ds);
        cx[l] = masked(ad_u, dx);
    }
    [cs, cx]
}

/// `c * ln(r) - r` (or `ln(r) * c - r`), by the same three scalar operations as the unfused
/// instructions.
/// With `stand_in`, the logarithm is [`elementary::ln_stand_in`] (the checked layout's: see
/// `checked.rs`).
#[inline(always)]
pub fn poisson_term_forward(r: &Lanes, c: f64, c_left: bool, stand_in: bool) -> Lanes {
    let lr = if stand_in {
        ln_stand_in_forward(r)
    } else {
        vmath::ln_lanes(r)
    };
    map(|l| {
        let p = if c_left {
            binary_value(Binary::Mul, c, lr[l])
        } else {
            binary_value(Binary::Mul, lr[l], c)
        };
        binary_value(Binary::Sub, p, r[l])
    })
}

/// [`elementary::ln_stand_in`] of every lane.
#[inline(always)]
pub fn ln_stand_in_forward(a: &Lanes) -> Lanes {
    map(|l| elementary::ln_stand_in(a[l]))
}

/// The stand-in of `op` (one whose descriptor says it has one: `Log`, `Log1p` or `Softplus`)
/// of every lane (see `checked.rs`).
#[inline(always)]
pub fn stand_in_forward(op: Unary, a: &Lanes) -> Lanes {
    match op {
        Unary::Log => ln_stand_in_forward(a),
        Unary::Log1p => map(|l| elementary::log1p_stand_in(a[l])),
        Unary::Softplus => map(|l| elementary::softplus_stand_in(a[l])),
        unary_without_stand_in!() => unreachable!("no stand-in for {op:?}"),
    }
}

/// Reverse of [`poisson_term_forward`]: `r`'s two contributions in the unfused sweep's order,
/// the subtraction's (to be *subtracted*; it is the step's own adjoint) and then the
/// logarithm's (to be added), every intermediate adjoint computed as the unfused sweep
/// computes it (each has one reader, so it is `0.0 +` its one contribution). The
/// multiplication's partial with respect to the logarithm is `c` in either operand order.
#[inline(always)]
pub fn poisson_term_reverse(ad: &Lanes, r: &Lanes, c: f64) -> Lanes {
    map(|l| {
        let ad_p = 0.0 + ad[l];
        let ad_l = 0.0 + masked(ad_p, c);
        masked(ad_l, unary_derivative(Unary::Log, r[l], 0.0))
    })
}

/// One addition of a sum chain: `acc + t`, or `t + acc` where the partial sum was the right
/// operand (the order of the unfused instruction, so that even NaN payloads agree).
#[inline(always)]
pub fn sum_step(acc: &Lanes, t: &Lanes, acc_right: bool) -> Lanes {
    if acc_right {
        map(|l| binary_value(Binary::Add, t[l], acc[l]))
    } else {
        map(|l| binary_value(Binary::Add, acc[l], t[l]))
    }
}

/// `a - b` on every lane: what a fused density term subtracts last.
#[inline(always)]
pub fn minus(a: &Lanes, b: &Lanes) -> Lanes {
    map(|l| binary_value(Binary::Sub, a[l], b[l]))
}

/// Crisp (or forced) select: `then` where the guard is negative (or forced), else `else`.
#[inline(always)]
pub fn select_forward(g: &Lanes, t: &Lanes, e: &Lanes, force: Option<bool>) -> Lanes {
    match force {
        Some(true) => *t,
        Some(false) => *e,
        None => map(|l| blend(g[l] < 0.0, t[l], e[l])),
    }
}

/// [`select_forward`] of the guard `a - b`, subtracted here (the subtraction's own scalar
/// rule), not read from the workspace.
#[inline(always)]
pub fn select_less_forward(a: &Lanes, b: &Lanes, t: &Lanes, e: &Lanes) -> Lanes {
    map(|l| blend(binary_value(Binary::Sub, a[l], b[l]) < 0.0, t[l], e[l]))
}

/// [`select_forward`] of the then-branch `-a`, negated here (the negation's own scalar
/// rule).
#[inline(always)]
pub fn select_neg_forward(g: &Lanes, a: &Lanes, e: &Lanes) -> Lanes {
    map(|l| blend(g[l] < 0.0, unary_value(Unary::Neg, a[l]), e[l]))
}

/// [`select_forward`] of the guard `a + b`, added here (the addition's own scalar rule).
#[inline(always)]
pub fn select_sum_forward(a: &Lanes, b: &Lanes, t: &Lanes, e: &Lanes) -> Lanes {
    map(|l| blend(binary_value(Binary::Add, a[l], b[l]) < 0.0, t[l], e[l]))
}

/// `if take_t { t } else { e }` as a bitwise blend of the two values: written as a
/// branch on loaded values, LLVM selects between the two *addresses* and loads lane by lane
/// (a sixth of temperature's crisp forward sweep); the masks compile to a compare and a
/// vector blend. The same bits either way.
#[inline(always)]
fn blend(take_t: bool, t: f64, e: f64) -> f64 {
    let m = u64::from(take_t).wrapping_neg();
    f64::from_bits((t.to_bits() & m) | (e.to_bits() & !m))
}

/// Crisp (or forced) select, reverse: the contributions to `then` and `else` (the adjoint
/// where the branch is taken, zero elsewhere); the guard gets none (the crisp function is
/// flat in the guard almost everywhere). Bitwise blends, as in the forward select: written as
/// branches, with the adjoint read in place, LLVM loaded it lane by lane under a branch
/// (textmsg's Reparam 1.3x slower).
#[inline(always)]
pub fn select_reverse(g: &Lanes, ad: &Lanes, force: Option<bool>) -> (Lanes, Lanes) {
    let zero = [0.0; CHUNK];
    match force {
        Some(true) => (*ad, zero),
        Some(false) => (zero, *ad),
        None => (
            map(|l| blend(g[l] < 0.0, ad[l], 0.0)),
            map(|l| blend(g[l] < 0.0, 0.0, ad[l])),
        ),
    }
}

/// The weights `(sigma(x), sigma(-x))`, `x = g * (1 / eta)`, of a smoothed if-statement's else
/// and then branches: computed once in the forward sweep and kept for the reverse one.
/// `special::sigmoid_pair`'s operations, its one `exp` taken for all lanes at once.
///
/// `g` is scaled by the reciprocal of `eta`, one scalar division per chunk, not divided by
/// `eta` lane by lane: a vector division costs as much as a third of the `exp`.
#[inline(always)]
pub fn smooth_weights(g: &Lanes, eta: f64) -> (Lanes, Lanes) {
    smooth_weights_by(g, eta, elementary::exp_of_nonpositive, sigmoid_big_small)
}

/// [`smooth_weights`] with [`elementary::exp_of_nonpositive_tabled`] and
/// [`elementary::sigmoid_big_small_plain`]'s weights (a plate body's tape:
/// `Tape::with_plain_weights`).
#[inline(always)]
pub fn smooth_weights_plain(g: &Lanes, eta: f64) -> (Lanes, Lanes) {
    smooth_weights_by(
        g,
        eta,
        elementary::exp_of_nonpositive_tabled,
        elementary::sigmoid_big_small_plain,
    )
}

#[inline(always)]
fn smooth_weights_by(
    g: &Lanes,
    eta: f64,
    exp_of_nonpositive: impl Fn(f64) -> f64,
    big_small: impl Fn(f64) -> (f64, f64),
) -> (Lanes, Lanes) {
    let mut we = [0.0; CHUNK];
    let mut wt = [0.0; CHUNK];
    let inv_eta = 1.0 / eta;
    let x = map(|l| g[l] * inv_eta);
    // `exp(-|x|)` without `exp`'s clamp from above and its NaN select: the argument is at
    // most 0 (so one scaling by a power of two suffices), and a NaN `x` gets its weights from
    // `sigmoid_pair_order`.
    let e = map(|l| exp_of_nonpositive(-x[l].abs()));
    // Arithmetic, then selects, in two loops: one loop returning the ordered pair may be
    // compiled lane by lane with branches.
    let mut big = [0.0; CHUNK];
    let mut small = [0.0; CHUNK];
    for l in 0..CHUNK {
        (big[l], small[l]) = big_small(e[l]);
    }
    for l in 0..CHUNK {
        (we[l], wt[l]) = sigmoid_pair_order(x[l], big[l], small[l]);
    }
    (we, wt)
}

/// Smoothed if: `sigma(-g/eta) t + sigma(g/eta) e`, a branch whose weight underflows to
/// exactly zero contributes exactly zero (even if it is infinite).
#[inline(always)]
pub fn smooth_forward(we: &Lanes, wt: &Lanes, t: &Lanes, e: &Lanes) -> Lanes {
    // The products are computed unconditionally (and then dropped where the weight is
    // zero) so that the loop is a select, which vectorises, not a branch.
    map(|l| {
        let (pt, pe) = (wt[l] * t[l], we[l] * e[l]);
        let tt = if wt[l] == 0.0 { 0.0 } else { pt };
        let ee = if we[l] == 0.0 { 0.0 } else { pe };
        tt + ee
    })
}

/// Smoothed if, reverse: the contribution `ad * w` to a branch of weight `w` (`wt` for then,
/// `we` for else), exactly zero where the adjoint or the weight is zero (a branch whose
/// weight underflowed takes nothing, even where its own derivative is infinite).
#[inline(always)]
pub fn smooth_reverse_branch(w: &Lanes, ad: &Lanes) -> Lanes {
    map(|l| {
        let c = ad[l] * w[l];
        if ad[l] == 0.0 || w[l] == 0.0 { 0.0 } else { c }
    })
}

/// Smoothed if, reverse: the contribution to the guard, `d/dg = sigma'(x) / eta * (e - t)`
/// with `sigma'(x) = sigma(x) sigma(-x)` the product `wt * we` of the weights, the division
/// by `eta` a multiplication by its reciprocal as in [`smooth_weights`].
#[inline(always)]
pub fn smooth_reverse_guard_pair(
    we: &Lanes,
    wt: &Lanes,
    t: &Lanes,
    e: &Lanes,
    ad: &Lanes,
    eta: f64,
) -> Lanes {
    let w = map(|l| wt[l] * we[l]);
    smooth_reverse_guard(&w, t, e, ad, eta)
}

/// [`smooth_reverse_guard_pair`] from the product `w = wt * we` of the weights (kept by the
/// forward sweep): the same operations on the same values.
#[inline(always)]
pub fn smooth_reverse_guard(w: &Lanes, t: &Lanes, e: &Lanes, ad: &Lanes, eta: f64) -> Lanes {
    let inv_eta = 1.0 / eta;
    map(|l| {
        let c = ad[l] * (w[l] * inv_eta) * (e[l] - t[l]);
        if ad[l] == 0.0 || w[l] == 0.0 { 0.0 } else { c }
    })
}

/// `dst += c` lane by lane, or `dst = 0.0 + c` for the first contribution.
#[inline(always)]
pub fn add_into(dst: &mut Lanes, c: &Lanes, first: bool) {
    if first {
        *dst = map(|l| 0.0 + c[l]);
    } else {
        for l in 0..CHUNK {
            dst[l] += c[l];
        }
    }
}

/// `dst -= c` lane by lane, or `dst = 0.0 - c` for the first contribution.
#[inline(always)]
pub fn sub_into(dst: &mut Lanes, c: &Lanes, first: bool) {
    if first {
        *dst = map(|l| 0.0 - c[l]);
    } else {
        for l in 0..CHUNK {
            dst[l] -= c[l];
        }
    }
}

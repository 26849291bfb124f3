//! Per-op forward and backward rules over a chunk of lanes, side by side.
//!
//! Every rule reads the operands' stored forward values and accumulates into the operands'
//! adjoints with `+=`. A lane whose incoming adjoint is exactly zero contributes exactly zero,
//! even where the local derivative is infinite or NaN (`log` at 0 in an untaken branch): the
//! "strong zero" that keeps crisp and smoothed if-statements from leaking NaN.

use crate::ir::{Binary, Unary, binary_derivatives, binary_value, unary_derivative, unary_value};
use crate::special::sigmoid_pair;

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

/// `out[l] = op(a[l])`.
pub fn unary_forward(op: Unary, a: &[f64], out: &mut [f64]) {
    macro_rules! run {
        ($o:expr) => {
            for (y, &x) in out.iter_mut().zip(a) {
                *y = unary_value($o, x);
            }
        };
    }
    each_unary!(op, run)
}

/// `ad_a[l] += ad[l] * op'(a[l])`, strong zero where `ad[l] == 0`.
pub fn unary_reverse(op: Unary, ad: &[f64], a: &[f64], v: &[f64], ad_a: &mut [f64]) {
    if op == Unary::Neg {
        for (g, &d) in ad_a.iter_mut().zip(ad) {
            *g -= d;
        }
        return;
    }
    macro_rules! run {
        ($o:expr) => {
            for l in 0..ad.len().min(a.len()).min(v.len()).min(ad_a.len()) {
                let d = ad[l];
                let c = d * unary_derivative($o, a[l], v[l]);
                ad_a[l] += if d == 0.0 { 0.0 } else { c };
            }
        };
    }
    each_unary!(op, run)
}

/// `out[l] = op(a[l], b[l])`.
pub fn binary_forward(op: Binary, a: &[f64], b: &[f64], out: &mut [f64]) {
    macro_rules! run {
        ($o:expr) => {
            for ((y, &x), &z) in out.iter_mut().zip(a).zip(b) {
                *y = binary_value($o, x, z);
            }
        };
    }
    each_binary!(op, run)
}

/// Accumulates the adjoints of both operands (either may be inactive, `None`). `a` and `b`
/// may be the same node (`x * x`); the caller then passes the same adjoint twice through
/// [`binary_reverse_same`] instead.
pub fn binary_reverse(
    op: Binary,
    ad: &[f64],
    a: &[f64],
    b: &[f64],
    v: &[f64],
    mut ad_a: Option<&mut [f64]>,
    mut ad_b: Option<&mut [f64]>,
) {
    let n = ad.len();
    let (a, b, v) = (&a[..n], &b[..n], &v[..n]);
    // One loop per combination of active operands, so that the loops carry no `Option`
    // test and the partial derivative nobody needs is never computed.
    macro_rules! run {
        ($o:expr) => {
            match (ad_a.as_deref_mut(), ad_b.as_deref_mut()) {
                (Some(ga), Some(gb)) => {
                    let (ga, gb) = (&mut ga[..n], &mut gb[..n]);
                    for l in 0..n {
                        let d = ad[l];
                        let (da, db) = binary_derivatives($o, a[l], b[l], v[l]);
                        let (ca, cb) = (d * da, d * db);
                        ga[l] += if d == 0.0 { 0.0 } else { ca };
                        gb[l] += if d == 0.0 { 0.0 } else { cb };
                    }
                }
                (Some(ga), None) => {
                    let ga = &mut ga[..n];
                    for l in 0..n {
                        let d = ad[l];
                        let c = d * binary_derivatives($o, a[l], b[l], v[l]).0;
                        ga[l] += if d == 0.0 { 0.0 } else { c };
                    }
                }
                (None, Some(gb)) => {
                    let gb = &mut gb[..n];
                    for l in 0..n {
                        let d = ad[l];
                        let c = d * binary_derivatives($o, a[l], b[l], v[l]).1;
                        gb[l] += if d == 0.0 { 0.0 } else { c };
                    }
                }
                (None, None) => {}
            }
        };
    }
    match (op, ad_a.as_deref_mut(), ad_b.as_deref_mut()) {
        (Binary::Add, Some(ga), Some(gb)) => {
            for l in 0..ad.len() {
                ga[l] += ad[l];
                gb[l] += ad[l];
            }
        }
        (Binary::Sub, Some(ga), Some(gb)) => {
            for l in 0..ad.len() {
                ga[l] += ad[l];
                gb[l] -= ad[l];
            }
        }
        _ => each_binary!(op, run),
    }
}

/// Reverse rule for `op(a, a)`: both partials go to one adjoint.
pub fn binary_reverse_same(op: Binary, ad: &[f64], a: &[f64], v: &[f64], ad_a: &mut [f64]) {
    for l in 0..ad.len() {
        let d = ad[l];
        let (da, db) = binary_derivatives(op, a[l], a[l], v[l]);
        let c = d * (da + db);
        ad_a[l] += if d == 0.0 { 0.0 } else { c };
    }
}

/// Crisp (or forced) select: `then` where `take_then`, else `else`.
pub fn select_forward(g: &[f64], t: &[f64], e: &[f64], out: &mut [f64], force: Option<bool>) {
    match force {
        Some(true) => out.copy_from_slice(&t[..out.len()]),
        Some(false) => out.copy_from_slice(&e[..out.len()]),
        None => {
            for l in 0..out.len() {
                out[l] = if g[l] < 0.0 { t[l] } else { e[l] };
            }
        }
    }
}

/// Crisp (or forced) select, reverse: the adjoint goes to the taken branch only; the guard
/// gets none (the crisp function is flat in the guard almost everywhere).
pub fn select_reverse(
    g: &[f64],
    ad: &[f64],
    ad_t: Option<&mut [f64]>,
    ad_e: Option<&mut [f64]>,
    force: Option<bool>,
) {
    let n = ad.len();
    if let Some(at) = ad_t {
        for l in 0..n {
            let take = force.unwrap_or(g[l] < 0.0);
            at[l] += if take { ad[l] } else { 0.0 };
        }
    }
    if let Some(ae) = ad_e {
        for l in 0..n {
            let take = force.unwrap_or(g[l] < 0.0);
            ae[l] += if take { 0.0 } else { ad[l] };
        }
    }
}

/// Smoothed if: `sigma(-g/eta) t + sigma(g/eta) e`, a branch whose weight underflows to
/// exactly zero contributes exactly zero (even if it is infinite).
pub fn smooth_forward(g: &[f64], t: &[f64], e: &[f64], out: &mut [f64], eta: f64) {
    for l in 0..out.len() {
        let (we, wt) = sigmoid_pair(g[l] / eta);
        let tt = if wt == 0.0 { 0.0 } else { wt * t[l] };
        let ee = if we == 0.0 { 0.0 } else { we * e[l] };
        out[l] = tt + ee;
    }
}

/// Smoothed if, reverse. `d/dg = sigma'(g/eta) / eta * (e - t)` with
/// `sigma'(x) = sigma(x) sigma(-x)`.
#[allow(clippy::too_many_arguments)]
pub fn smooth_reverse(
    g: &[f64],
    t: &[f64],
    e: &[f64],
    ad: &[f64],
    mut ad_g: Option<&mut [f64]>,
    mut ad_t: Option<&mut [f64]>,
    mut ad_e: Option<&mut [f64]>,
    eta: f64,
) {
    for l in 0..ad.len() {
        let d = ad[l];
        let (we, wt) = sigmoid_pair(g[l] / eta);
        if let Some(at) = ad_t.as_deref_mut() {
            let c = d * wt;
            at[l] += if d == 0.0 || wt == 0.0 { 0.0 } else { c };
        }
        if let Some(ae) = ad_e.as_deref_mut() {
            let c = d * we;
            ae[l] += if d == 0.0 || we == 0.0 { 0.0 } else { c };
        }
        if let Some(ag) = ad_g.as_deref_mut() {
            let w = wt * we;
            let c = d * (w / eta) * (e[l] - t[l]);
            ag[l] += if d == 0.0 || w == 0.0 { 0.0 } else { c };
        }
    }
}

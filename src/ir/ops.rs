//! The value of each primitive on one number: the single definition shared by constant
//! folding and the tape, so that a folded program and an evaluated one agree bit for bit.
//! `exp`, `ln`, `log1p`, the sigmoid and softplus are [`crate::elementary`]'s, which the tape's
//! vector code runs with the same operations; the rarer `expm1`, `tanh`, `sin`, `cos` and `pow`
//! are the `libm` crate's (portable Rust; within 2 ulp of the platform's, 3 for `tanh`, checked
//! in `tests/eval_portable_functions.rs`), never the platform's C library, whose last bits
//! differ between systems: a run must give the same bits on every machine.

use super::node::{Binary, Unary};
use crate::{elementary, special};

/// The value of a unary primitive at `x`.
#[inline(always)]
pub fn unary_value(op: Unary, x: f64) -> f64 {
    match op {
        Unary::Neg => -x,
        Unary::Exp => elementary::exp(x),
        Unary::Log => elementary::ln(x),
        Unary::Log1p => elementary::log1p(x),
        Unary::Expm1 => libm::expm1(x),
        Unary::Sqrt => x.sqrt(),
        Unary::Softplus => special::softplus(x),
        Unary::Sigmoid => special::sigmoid(x),
        Unary::Tanh => libm::tanh(x),
        Unary::Sin => libm::sin(x),
        Unary::Cos => libm::cos(x),
        Unary::Lgamma => special::lgamma(x),
        Unary::Probit => special::probit(x),
        Unary::NormalCdf => special::normal_cdf(x),
        Unary::LogNormalCdf => special::log_normal_cdf(x),
        Unary::Powi(n) => x.powi(n),
    }
}

/// The derivative of a unary primitive at `x`, given its value `v = op(x)`.
///
/// Conventions at the edges of the domain follow the limits: `d log(0) = +inf`,
/// `d sqrt(0) = +inf`. The caller masks lanes whose adjoint is zero, so these infinities
/// never reach a gradient through an untaken branch.
#[inline(always)]
pub fn unary_derivative(op: Unary, x: f64, v: f64) -> f64 {
    match op {
        Unary::Neg => -1.0,
        Unary::Exp => v,
        Unary::Log => 1.0 / x,
        Unary::Log1p => 1.0 / (1.0 + x),
        Unary::Expm1 => v + 1.0,
        Unary::Sqrt => 0.5 / v,
        Unary::Softplus => special::sigmoid(x),
        Unary::Sigmoid => v * (1.0 - v),
        Unary::Tanh => 1.0 - v * v,
        Unary::Sin => libm::cos(x),
        Unary::Cos => -libm::sin(x),
        Unary::Lgamma => special::digamma(x),
        // d Phi^{-1}(p) / dp = 1 / phi(Phi^{-1}(p)).
        Unary::Probit => 1.0 / special::normal_pdf(v),
        Unary::NormalCdf => special::normal_pdf(x),
        Unary::LogNormalCdf => special::log_normal_cdf_derivative(x, v),
        Unary::Powi(0) => 0.0,
        Unary::Powi(n) => f64::from(n) * x.powi(n - 1),
    }
}

/// The value of a binary primitive.
#[inline(always)]
pub fn binary_value(op: Binary, a: f64, b: f64) -> f64 {
    match op {
        Binary::Add => a + b,
        Binary::Sub => a - b,
        Binary::Mul => a * b,
        Binary::Div => a / b,
        Binary::Pow => libm::pow(a, b),
    }
}

/// The partial derivatives `(d/da, d/db)` of a binary primitive, given its value `v`.
#[inline(always)]
pub fn binary_derivatives(op: Binary, a: f64, b: f64, v: f64) -> (f64, f64) {
    match op {
        Binary::Add => (1.0, 1.0),
        Binary::Sub => (1.0, -1.0),
        Binary::Mul => (b, a),
        Binary::Div => (1.0 / b, -v / b),
        // d a^b / da = b a^(b-1); d a^b / db = a^b ln a.
        Binary::Pow => (b * libm::pow(a, b - 1.0), v * elementary::ln(a)),
    }
}

//! The methods and operators of [`Var`](super::Var), the handle a model is written with:
//! each builds its node through the builder.

use super::super::node::{Binary, NodeId, Unary};
use super::{Builder, Var};
use std::ops;

impl<'b> Var<'b> {
    /// The node this handle refers to.
    pub fn id(self) -> NodeId {
        self.id
    }

    /// The builder this handle belongs to.
    pub fn builder(self) -> &'b Builder {
        self.builder
    }

    /// The constant value of this node, if it folded to a constant.
    pub fn as_const(self) -> Option<f64> {
        self.builder.g.borrow().constant_of(self.id)
    }

    fn unary(self, op: Unary) -> Var<'b> {
        self.builder.unary(op, self)
    }

    pub fn exp(self) -> Var<'b> {
        self.unary(Unary::Exp)
    }
    pub fn ln(self) -> Var<'b> {
        self.unary(Unary::Log)
    }
    pub fn ln_1p(self) -> Var<'b> {
        self.unary(Unary::Log1p)
    }
    pub fn exp_m1(self) -> Var<'b> {
        self.unary(Unary::Expm1)
    }
    pub fn sqrt(self) -> Var<'b> {
        self.unary(Unary::Sqrt)
    }
    pub fn softplus(self) -> Var<'b> {
        self.unary(Unary::Softplus)
    }
    pub fn sigmoid(self) -> Var<'b> {
        self.unary(Unary::Sigmoid)
    }
    pub fn tanh(self) -> Var<'b> {
        self.unary(Unary::Tanh)
    }
    pub fn sin(self) -> Var<'b> {
        self.unary(Unary::Sin)
    }
    pub fn cos(self) -> Var<'b> {
        self.unary(Unary::Cos)
    }
    pub fn lgamma(self) -> Var<'b> {
        self.unary(Unary::Lgamma)
    }
    pub fn probit(self) -> Var<'b> {
        self.unary(Unary::Probit)
    }
    pub fn normal_cdf(self) -> Var<'b> {
        self.unary(Unary::NormalCdf)
    }
    pub fn log_normal_cdf(self) -> Var<'b> {
        self.unary(Unary::LogNormalCdf)
    }
    pub fn powi(self, n: i32) -> Var<'b> {
        self.unary(Unary::Powi(n))
    }
    /// `self^e`; an exponent that is a compile-time integer becomes `powi`.
    pub fn pow(self, e: Var<'b>) -> Var<'b> {
        self.builder.pow(self, e)
    }
}

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<'b> ops::$trait<Var<'b>> for Var<'b> {
            type Output = Var<'b>;
            fn $method(self, rhs: Var<'b>) -> Var<'b> {
                self.builder.binary($op, self, rhs)
            }
        }
        impl<'b> ops::$trait<f64> for Var<'b> {
            type Output = Var<'b>;
            fn $method(self, rhs: f64) -> Var<'b> {
                let c = self.builder.constant(rhs);
                self.builder.binary($op, self, c)
            }
        }
        impl<'b> ops::$trait<Var<'b>> for f64 {
            type Output = Var<'b>;
            fn $method(self, rhs: Var<'b>) -> Var<'b> {
                let c = rhs.builder.constant(self);
                rhs.builder.binary($op, c, rhs)
            }
        }
    };
}

binary_operator!(Add, add, Binary::Add);
binary_operator!(Sub, sub, Binary::Sub);
binary_operator!(Mul, mul, Binary::Mul);
binary_operator!(Div, div, Binary::Div);

impl<'b> ops::Neg for Var<'b> {
    type Output = Var<'b>;
    fn neg(self) -> Var<'b> {
        self.unary(Unary::Neg)
    }
}

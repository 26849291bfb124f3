//! The primitives and one descriptor each: the table everything else about a primitive is
//! derived from or checked against.
//!
//! A primitive's value and derivative are code (`ops.rs`, with its lane loops in
//! `eval::kernels` and its machine code in `eval::jit`); what the rest of the crate needs to
//! know about it is a row here: its name (in IR dumps and, for a built-in function, in the
//! language: `Builder::apply` and the language's list of built-ins take the rows, never a
//! copy), which values its derivative reads (the tape's layout keeps exactly those alive for
//! the reverse sweep), whether the compiled sweeps run it inline or hand it back to the
//! interpreter, whether checked sweeps may replace it by a stand-in, and where it is defined.
//! Every match over the primitives is exhaustive (no `_` arm), and `ALL` lists every variant by
//! construction, so a new primitive without its row, its value, its derivative, its lane loop
//! or its compiled form does not compile; `tests/core_primitives.rs` checks each row against
//! the code (a derivative that reads a value its row does not declare fails there).

use std::fmt;

/// Declares an enum and its `ALL`, which lists every variant once (a variant with a field by
/// the example given after `=`): a variant cannot be left out of it.
macro_rules! primitives {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident $(($field:ty) = $example:expr)? ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant $(($field))? ),*
        }

        impl $name {
            /// Every primitive once, in declaration order (one with a field by an example).
            pub const ALL: &'static [$name] = &[ $( $name::$variant $(($example))? ),* ];
        }
    };
}

primitives! {
    /// Operations of one argument.
    #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
    pub enum Unary {
        Neg,
        Exp,
        Log,
        Log1p,
        Expm1,
        Sqrt,
        Softplus,
        Sigmoid,
        Tanh,
        Sin,
        Cos,
        Lgamma,
        /// The normal quantile `Phi^{-1}`.
        Probit,
        /// The standard normal CDF `Phi`.
        NormalCdf,
        /// `ln Phi`, finite where `Phi` underflows (a censored observation's log-likelihood).
        LogNormalCdf,
        /// `x^n` for a compile-time integer `n` (defined for negative `x`, unlike `Pow`).
        Powi(i32) = 3,
    }
}

/// The pattern of the unary primitives the compiled sweeps hand back to the interpreter both
/// forward and reverse and that have no stand-in: the two patterns below share it.
macro_rules! unary_called_back_without_stand_in {
    () => {
        $crate::ir::Unary::Sin
            | $crate::ir::Unary::Cos
            | $crate::ir::Unary::Lgamma
            | $crate::ir::Unary::Probit
            | $crate::ir::Unary::NormalCdf
            | $crate::ir::Unary::LogNormalCdf
            | $crate::ir::Unary::Powi(_)
    };
}
pub(crate) use unary_called_back_without_stand_in;

/// The pattern of the unary primitives without a stand-in (`UnaryInfo::stand_in` false), for
/// the matches over the stand-ins (the interpreter's and the compiled sweeps'): one list,
/// checked against the rows by a test, the matches staying exhaustive.
macro_rules! unary_without_stand_in {
    () => {
        $crate::ir::Unary::Neg
            | $crate::ir::Unary::Exp
            | $crate::ir::Unary::Expm1
            | $crate::ir::Unary::Sqrt
            | $crate::ir::Unary::Sigmoid
            | $crate::ir::Unary::Tanh
            | $crate::ir::unary_called_back_without_stand_in!()
    };
}
pub(crate) use unary_without_stand_in;

/// The pattern of the unary primitives the compiled sweeps hand back to the interpreter both
/// forward and reverse (`CompiledForm::CallBack` in both columns), for the emitters' matches
/// over their inline forms: one list, checked against the rows by a test.
#[cfg_attr(
    not(all(feature = "jit", target_arch = "x86_64")),
    allow(unused_macros)
)]
macro_rules! unary_called_back {
    () => {
        $crate::ir::Unary::Softplus | $crate::ir::unary_called_back_without_stand_in!()
    };
}
#[cfg_attr(
    not(all(feature = "jit", target_arch = "x86_64")),
    allow(unused_imports)
)]
pub(crate) use unary_called_back;

primitives! {
    /// Operations of two arguments.
    #[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
    pub enum Binary {
        Add,
        Sub,
        Mul,
        Div,
        /// `x^y = exp(y ln x)`, for `x > 0` (use `Powi` for integer exponents).
        Pow,
    }
}

/// The values a local derivative reads besides the incoming adjoint: the operands `a` and
/// `b` and the primitive's own value (`unary_derivative`'s `x` and `v`,
/// `binary_derivatives`' `a`, `b` and `v`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Reads {
    pub a: bool,
    pub b: bool,
    pub value: bool,
}

impl Reads {
    pub const NOTHING: Reads = Reads {
        a: false,
        b: false,
        value: false,
    };
    pub const A: Reads = Reads {
        a: true,
        ..Reads::NOTHING
    };
    pub const B: Reads = Reads {
        b: true,
        ..Reads::NOTHING
    };
    pub const VALUE: Reads = Reads {
        value: true,
        ..Reads::NOTHING
    };

    /// What either reads.
    pub const fn and(self, other: Reads) -> Reads {
        Reads {
            a: self.a || other.a,
            b: self.b || other.b,
            value: self.value || other.value,
        }
    }
}

/// How the compiled sweeps (`eval::jit`, AVX-512) run a primitive.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum CompiledForm {
    /// In the machine code itself (instructions, or a routine emitted once and called).
    Inline,
    /// By a call back into the interpreter (a layout with many such steps is not compiled).
    CallBack,
}

/// Where a primitive's value and derivative are finite: the arguments tests draw from.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Domain {
    /// Every real number (as long as the value does not overflow).
    Real,
    /// `x > 0`.
    Positive,
    /// `x != 0`.
    NonZero,
    /// `x > -1`.
    AboveMinusOne,
    /// `0 < x < 1`.
    OpenUnit,
}

/// The descriptor of a unary primitive.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct UnaryInfo {
    /// Its name in IR dumps and error messages (`powi` is followed by its exponent).
    pub name: &'static str,
    /// Whether the language has it as a built-in function of one argument, by `name`.
    pub function: bool,
    /// What its derivative reads (of `a` and the value).
    pub reads: Reads,
    /// How the compiled forward and reverse sweeps run it.
    pub forward: CompiledForm,
    pub reverse: CompiledForm,
    /// Whether a gradient sweep whose values are only checked for finiteness may compute
    /// a stand-in instead, finite where it is (`elementary::ln_stand_in` and the like;
    /// `eval/checked.rs`).
    pub stand_in: bool,
    pub domain: Domain,
}

/// The descriptor of a binary primitive.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct BinaryInfo {
    /// Its name in IR dumps.
    pub name: &'static str,
    /// Its operator in error messages (`a + b`), if it has one.
    pub symbol: Option<&'static str>,
    /// What the partial derivative in `a` reads, and that in `b`.
    pub reads: [Reads; 2],
    /// How the compiled forward and reverse sweeps run it.
    pub forward: CompiledForm,
    pub reverse: CompiledForm,
    /// Where each operand may be.
    pub domain: [Domain; 2],
}

impl Unary {
    /// This primitive's row.
    pub const fn info(self) -> UnaryInfo {
        use CompiledForm::{CallBack, Inline};
        const fn row(
            name: &'static str,
            reads: Reads,
            (forward, reverse): (CompiledForm, CompiledForm),
            domain: Domain,
        ) -> UnaryInfo {
            UnaryInfo {
                name,
                function: true,
                reads,
                forward,
                reverse,
                stand_in: false,
                domain,
            }
        }
        let (a, v) = (Reads::A, Reads::VALUE);
        match self {
            Unary::Neg => UnaryInfo {
                function: false,
                ..row("neg", Reads::NOTHING, (Inline, Inline), Domain::Real)
            },
            Unary::Exp => row("exp", v, (Inline, Inline), Domain::Real),
            Unary::Log => UnaryInfo {
                stand_in: true,
                ..row("log", a, (Inline, Inline), Domain::Positive)
            },
            Unary::Log1p => UnaryInfo {
                stand_in: true,
                ..row("log1p", a, (CallBack, Inline), Domain::AboveMinusOne)
            },
            Unary::Expm1 => row("expm1", v, (CallBack, Inline), Domain::Real),
            Unary::Sqrt => row("sqrt", v, (Inline, Inline), Domain::Positive),
            Unary::Softplus => UnaryInfo {
                stand_in: true,
                ..row("softplus", a, (CallBack, CallBack), Domain::Real)
            },
            Unary::Sigmoid => row("sigmoid", v, (CallBack, Inline), Domain::Real),
            Unary::Tanh => row("tanh", v, (CallBack, Inline), Domain::Real),
            Unary::Sin => row("sin", a, (CallBack, CallBack), Domain::Real),
            Unary::Cos => row("cos", a, (CallBack, CallBack), Domain::Real),
            Unary::Lgamma => row("lgamma", a, (CallBack, CallBack), Domain::Positive),
            Unary::Probit => row("probit", v, (CallBack, CallBack), Domain::OpenUnit),
            Unary::NormalCdf => row("normal_cdf", a, (CallBack, CallBack), Domain::Real),
            Unary::LogNormalCdf => row(
                "log_normal_cdf",
                a.and(v),
                (CallBack, CallBack),
                Domain::Real,
            ),
            // Written `pow(x, n)` in the language (`Builder::pow`).
            Unary::Powi(n) => UnaryInfo {
                function: false,
                ..row(
                    "powi",
                    if n == 0 { Reads::NOTHING } else { a },
                    (CallBack, CallBack),
                    if n < 0 { Domain::NonZero } else { Domain::Real },
                )
            },
        }
    }

    /// The primitive that is the language's built-in function `name`, if one is.
    pub fn from_name(name: &str) -> Option<Unary> {
        Unary::ALL
            .iter()
            .copied()
            .find(|op| op.info().function && op.info().name == name)
    }
}

impl Binary {
    /// This primitive's row.
    pub const fn info(self) -> BinaryInfo {
        use CompiledForm::{CallBack, Inline};
        const fn row(
            name: &'static str,
            symbol: Option<&'static str>,
            reads: [Reads; 2],
            compiled: CompiledForm,
            domain: [Domain; 2],
        ) -> BinaryInfo {
            BinaryInfo {
                name,
                symbol,
                reads,
                forward: compiled,
                reverse: compiled,
                domain,
            }
        }
        let (a, b, v, none) = (Reads::A, Reads::B, Reads::VALUE, Reads::NOTHING);
        let real = [Domain::Real, Domain::Real];
        match self {
            Binary::Add => row("add", Some("+"), [none, none], Inline, real),
            Binary::Sub => row("sub", Some("-"), [none, none], Inline, real),
            // d(ab)/da = b, d(ab)/db = a.
            Binary::Mul => row("mul", Some("*"), [b, a], Inline, real),
            // d(a/b)/da = 1/b, d(a/b)/db = -v/b.
            Binary::Div => row(
                "div",
                Some("/"),
                [b, b.and(v)],
                Inline,
                [Domain::Real, Domain::NonZero],
            ),
            // d a^b/da = b a^(b-1), d a^b/db = v ln a.
            Binary::Pow => row(
                "pow",
                None,
                [a.and(b), a.and(v)],
                CallBack,
                [Domain::Positive, Domain::Real],
            ),
        }
    }
}

impl fmt::Display for Unary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.info().name)?;
        if let Unary::Powi(n) = self {
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Binary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.info().name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The patterns name exactly the rows they say: a primitive given a stand-in or an inline
    /// form in its row but left in a pattern (or the reverse) fails here.
    #[test]
    fn the_patterns_agree_with_the_rows() {
        let powers = [0, 1, -2].map(Unary::Powi);
        for op in Unary::ALL.iter().copied().chain(powers) {
            let info = op.info();
            assert_eq!(
                matches!(op, unary_without_stand_in!()),
                !info.stand_in,
                "{op:?}"
            );
            assert_eq!(
                matches!(op, unary_called_back!()),
                info.forward == CompiledForm::CallBack && info.reverse == CompiledForm::CallBack,
                "{op:?}"
            );
        }
    }
}

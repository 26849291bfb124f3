//! The language's built-in functions: one row each, from which `Builder::apply` and the
//! language's list of built-ins (the lowering's, and its error notes) are derived. The
//! primitives' rows come from their descriptors (`primitive.rs`); the others are built from
//! primitives, the non-smooth ones (`abs`, `max`, ...) with if-statements, which smoothing
//! sees like any other.

use super::builder::{Builder, Var, check_arity};
use super::error::IrError;
use super::primitive::Unary;

/// How many arguments a built-in function takes.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Arity {
    One,
    Two,
    /// One or more (or an array of them).
    AtLeastOne,
}

/// A built-in function of the language.
#[derive(Copy, Clone, Debug)]
pub struct Function {
    pub name: &'static str,
    pub arity: Arity,
    /// Whether it is smooth (a primitive, or made of primitives); one that is not is made
    /// with if-statements.
    pub smooth: bool,
    body: Body,
}

/// What a built-in function builds.
#[derive(Copy, Clone, Debug)]
enum Body {
    Primitive(Unary),
    Mean,
    Sum,
    Abs,
    Max,
    Min,
    Relu,
    Step,
    Pow,
}

/// The built-ins that are not a primitive's row.
const BUILT: [Function; 8] = {
    const fn f(name: &'static str, arity: Arity, smooth: bool, body: Body) -> Function {
        Function {
            name,
            arity,
            smooth,
            body,
        }
    }
    use Arity::{AtLeastOne, One, Two};
    [
        f("mean", AtLeastOne, true, Body::Mean),
        f("sum", AtLeastOne, true, Body::Sum),
        f("abs", One, false, Body::Abs),
        f("max", Two, false, Body::Max),
        f("min", Two, false, Body::Min),
        f("relu", One, false, Body::Relu),
        f("step", One, false, Body::Step),
        // `Powi` for a small integer constant exponent, else `Pow`: smooth either way.
        f("pow", Two, true, Body::Pow),
    ]
};

impl Function {
    /// Every built-in function: the primitives that are one, in [`Unary::ALL`]'s order, then
    /// the others.
    pub fn all() -> impl Iterator<Item = Function> {
        let primitives = Unary::ALL
            .iter()
            .filter(|op| op.info().function)
            .map(|&op| Function {
                name: op.info().name,
                arity: Arity::One,
                smooth: true,
                body: Body::Primitive(op),
            });
        primitives.chain(BUILT)
    }

    /// The built-in function `name`, if there is one.
    pub fn named(name: &str) -> Option<Function> {
        Function::all().find(|f| f.name == name)
    }
}

impl Builder {
    /// Applies a built-in function by its language name, checking the number of arguments.
    pub fn apply<'b>(&'b self, name: &str, args: &[Var<'b>]) -> Result<Var<'b>, IrError> {
        let f = Function::named(name).ok_or_else(|| IrError::UnknownFunction(name.to_string()))?;
        let (expected, ok) = match f.arity {
            Arity::One => ("1", args.len() == 1),
            Arity::Two => ("2", args.len() == 2),
            Arity::AtLeastOne => ("at least 1", !args.is_empty()),
        };
        check_arity(name, expected, ok, args.len())?;
        Ok(match f.body {
            Body::Primitive(op) => self.unary(op, args[0]),
            Body::Mean => self.sum(args) / args.len() as f64,
            Body::Sum => self.sum(args),
            Body::Abs => self.abs(args[0]),
            Body::Max => self.max(args[0], args[1]),
            Body::Min => self.min(args[0], args[1]),
            Body::Relu => self.relu(args[0]),
            Body::Step => self.step(args[0]),
            Body::Pow => self.pow(args[0], args[1]),
        })
    }
}

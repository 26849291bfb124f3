//! If-statements lifted out of an observation's distribution: `observe x ~ D(if c {a} else
//! {b})` becomes `if c {log D(x; a)} else {log D(x; b)}` when `x` is data and `a` and `b`
//! are constants.
//!
//! Both programs are the same crisp program: the guard picks one branch, and that branch's
//! log-density is the one the original evaluates. They differ in what smoothing makes of them.
//! Smoothed with weight `w = sigma(-g / eta)`, the original evaluates `log D(x; w a + (1 - w)
//! b)`, a density at a mixture of the arguments, whose error against the crisp value is of
//! first order in `eta` near the boundary (for a Bernoulli with 0.9 and 0.1, `ln 0.5` at the
//! boundary against the crisp `ln 0.9` or `ln 0.1`: the concave logarithm of a mixture lies
//! above the mixture of the logarithms, so the error keeps one sign and does not cancel
//! across the boundary). The lifted program evaluates `w log D(x; a) + (1 - w) log D(x; b)`,
//! a mixture of log-densities: its error `(w - [g < 0]) (log D(x; a) - log D(x; b))` is odd
//! in the guard around the boundary, so it cancels to first order when averaged over a
//! guard whose density is smooth there, and what is left is of second order in `eta`. A
//! model with one such observation per data row sums these errors over the rows, so the
//! order decides whether the smoothed optimum stays within noise of the crisp one as the
//! rows grow.
//!
//! Only constants are lifted, and only into an observation of data: both branches must be
//! numbers strictly inside what the argument may be (a probability strictly between 0 and 1,
//! a scale above 0: `Dist::interior_argument`), so each lifted log-density is finite wherever
//! the observed value is in the support, and the lifted if-statement never mixes an infinite
//! branch, which the crisp program never evaluates, into the smoothed value. The decision
//! reads no row's data, so a plate and its unrolled loop lift alike. Otherwise (a branch that
//! reads a latent or a parameter, a probability of 0 or 1, a count, a bound) the observation
//! is left as written. LYY18's boundary term reads the crisp program's jump at the boundary,
//! which is the same for both programs.

use super::Lowerer;
use crate::ir::{Dist, IrError, Node, Var};

/// How many if-statements one observation may lift (each doubles the log-densities it
/// builds): nested if-statements beyond this keep their mixture.
const MAX_LIFTED: usize = 4;

impl<'b, 'r> Lowerer<'b, 'r> {
    /// The log-density of `observe x ~ d(args)`, with if-statements on data lifted out of the
    /// arguments (the module's doc says when and why).
    pub(super) fn observed_log_density(
        &self,
        d: Dist,
        x: Var<'b>,
        args: &[Var<'b>],
    ) -> Result<Var<'b>, IrError> {
        if self.opts.lift_observations
            && self.is_data(x)
            && let Some(lp) = self.lifted(d, x, args, MAX_LIFTED)?
        {
            return Ok(lp);
        }
        self.plain_log_density(d, x, args)
    }

    /// The log-density as written (no lifting).
    fn plain_log_density(&self, d: Dist, x: Var<'b>, args: &[Var<'b>]) -> Result<Var<'b>, IrError> {
        if d == Dist::Bernoulli && self.row_dependent(x) {
            // A 0/1 read from data: unrolled, `x ln p + (1 - x) ln(1 - p)` folds to one of its
            // logarithms, and a logarithm of 0 in the other is dropped with its zero factor.
            // This gives the same bits in every row.
            Ok(self.b.bernoulli_of_binary(x, args[0]))
        } else {
            self.b.log_density(d, x, args)
        }
    }

    /// The lifted log-density when some argument is an if-statement whose branches are
    /// constants inside the argument's domain; `None` when nothing is lifted.
    fn lifted(
        &self,
        d: Dist,
        x: Var<'b>,
        args: &[Var<'b>],
        budget: usize,
    ) -> Result<Option<Var<'b>>, IrError> {
        if budget == 0 {
            return Ok(None);
        }
        for (k, &arg) in args.iter().enumerate() {
            let Node::If {
                guard,
                then_,
                else_,
                ..
            } = self.b.node_of(arg)
            else {
                continue;
            };
            let (then_, else_) = (self.b.handle(then_), self.b.handle(else_));
            let inside = |v: Var<'b>| v.as_const().is_some_and(|c| d.interior_argument(k, c));
            if !(inside(then_) && inside(else_)) {
                continue;
            }
            // Any other argument that is an if-statement too is lifted inside each branch.
            let branch = |value: Var<'b>| -> Result<Var<'b>, IrError> {
                let mut a = args.to_vec();
                a[k] = value;
                match self.lifted(d, x, &a, budget - 1)? {
                    Some(lp) => Ok(lp),
                    None => self.plain_log_density(d, x, &a),
                }
            };
            let (t, e) = (branch(then_)?, branch(else_)?);
            let (t, e) = (self.as_column(t), self.as_column(e));
            return Ok(Some(self.b.if_neg(self.b.handle(guard), t, e)));
        }
        Ok(None)
    }

    /// A branch's log-density, a column of its own where it reads the row's data only: the
    /// body then reads each row's value, computed once as the unrolled row folds it (the same
    /// bits), instead of computing its logarithm at every row of every sweep, and of both
    /// branches where the guard's branches are evaluated together.
    fn as_column(&self, lp: Var<'b>) -> Var<'b> {
        if !self.row_dependent(lp) {
            return lp;
        }
        match self.b.row_values(lp) {
            Some(values) => self.b.column("log-density", values.into()),
            None => lp,
        }
    }

    /// Whether `v` is data: a constant, or (in a plate's body) computed from the row's
    /// columns and constants only.
    fn is_data(&self, v: Var<'b>) -> bool {
        v.as_const().is_some() || self.row_dependent(v)
    }
}

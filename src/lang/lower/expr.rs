//! Lowering of expressions: arithmetic, arrays, calls (built-in and inlined), conditions
//! and `sample`.

use super::Map;
use std::rc::Rc;

use super::super::ast::{BinOp, CmpOp, Comprehension, Expr, ExprKind, Ident};
use super::super::bind::DataValue;
use super::super::diagnostic::Diag;
use super::value::{Cond, Shape};
use super::{BUILTINS, Lowerer, Value};
use crate::ir::{Span, Var};

/// Deepest nesting of arrays (a matrix is 2).
pub(crate) const MAX_ARRAY_DEPTH: usize = 64;

/// Loop bounds and indices must be integers of at most this size.
const MAX_INT: f64 = 1e15;

impl<'b, 'r> Lowerer<'b, 'r> {
    pub(super) fn expr(&mut self, e: &Expr) -> Result<Value<'b>, Diag> {
        self.tick(e.span, 1)?;
        let b = self.b;
        Ok(match &e.kind {
            ExprKind::Num(x) if !x.is_finite() => {
                return Err(Diag::new(
                    e.span,
                    "this number is too large for a 64-bit float",
                    "a number of magnitude below 1.8e308",
                ));
            }
            ExprKind::Num(x) => Value::Num(b.constant(*x)),
            ExprKind::Str(_) => {
                return Err(Diag::new(
                    e.span,
                    "a string is not a value",
                    "a number (strings are only arguments of `csv`)",
                ));
            }
            ExprKind::Var(id) => match self.lookup(&id.name) {
                Some(v) => v.clone(),
                None => match self.read_outer(id, &[]) {
                    Some(v) => v?,
                    None => return Err(self.unknown_name(id)),
                },
            },
            ExprKind::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    let v = self.expr(it)?;
                    if let Value::Unit = v {
                        return Err(Diag::new(
                            it.span,
                            "an array element has no value",
                            "a number or an array",
                        ));
                    }
                    out.push(v);
                }
                self.array(out, e.span)?
            }
            ExprKind::Comprehension(c) => {
                let Comprehension { body, var, lo, hi } = &**c;
                let lo = self.const_int(lo, "the start of the range")?;
                let hi = self.const_int(hi, "the end of the range")?;
                self.refuse_long_loop(lo, hi, 2, e.span)?;
                let mut out = Vec::new();
                for i in lo..hi {
                    self.tick(e.span, 1)?;
                    let mut scope = Map::default();
                    scope.insert(var.name.clone(), Value::Num(b.constant(i as f64)));
                    self.frame.push(scope);
                    self.loop_suffix.push(i);
                    let v = self.expr(body);
                    self.loop_suffix.pop();
                    self.frame.pop();
                    out.push(v?);
                }
                self.array(out, e.span)?
            }
            ExprKind::Index { .. } => self.index_chain(e)?,
            ExprKind::Call(c) => self.call(&c.name, &c.args, e.span)?,
            ExprKind::Neg(x) => {
                let v = self.expr(x)?;
                Value::Num(-self.num(v, x.span)?)
            }
            ExprKind::Binary { .. } => self.binary_chain(e)?,
            ExprKind::Cmp { .. } | ExprKind::And(..) | ExprKind::Or(..) | ExprKind::Not(_) => {
                return Err(Diag::new(
                    e.span,
                    "a condition is not a number",
                    "a number here; a condition goes in `if` (write `if c { 1 } else { 0 }` for its indicator)",
                ));
            }
            ExprKind::If(i) => self.lower_if(&i.cond, &i.then_, i.else_.as_ref(), true, e.span)?,
            ExprKind::Sample(smp) => {
                self.sample(&smp.dist, &smp.args, smp.fixed, &smp.init, e.span)?
            }
        })
    }

    /// A condition: comparisons combined with `&&`, `||`, `!`.
    pub(super) fn cond(&mut self, e: &Expr) -> Result<Cond<'b>, Diag> {
        self.tick(e.span, 1)?;
        match &e.kind {
            ExprKind::And(..) | ExprKind::Or(..) => self.logic_chain(e),
            ExprKind::Not(x) => Ok(self.cond(x)?.not()),
            ExprKind::Cmp { op, lhs, rhs } => {
                let l = self.expr(lhs)?;
                let l = self.num(l, lhs.span)?;
                let r = self.expr(rhs)?;
                let r = self.num(r, rhs.span)?;
                if self.in_body()
                    && ((self.constrained.contains_key(&l.id()) && self.row_dependent(r))
                        || (self.constrained.contains_key(&r.id()) && self.row_dependent(l)))
                {
                    return Err(self.refuse(
                        "compares a constrained latent with data (unrolled, the comparison is \
                         moved onto the unconstrained latent)",
                        e.span,
                    ));
                }
                if let Some(c) = self.constrained_comparison(*op, l, r) {
                    return Ok(c);
                }
                if let (Some(x), Some(y)) = (l.as_const(), r.as_const()) {
                    return Ok(Cond::Const(match op {
                        CmpOp::Lt => x < y,
                        CmpOp::Le => x <= y,
                        CmpOp::Gt => x > y,
                        CmpOp::Ge => x >= y,
                        CmpOp::Eq => x == y,
                        CmpOp::Ne => x != y,
                    }));
                }
                // `a < b` holds when `a - b < 0`; `a >= b` is its negation, so that the
                // crisp meaning of each comparison is exact (it matters for constants).
                let c = match op {
                    CmpOp::Lt => Cond::guard(l - r, false),
                    CmpOp::Ge => Cond::guard(l - r, true),
                    CmpOp::Gt => Cond::guard(r - l, false),
                    CmpOp::Le => Cond::guard(r - l, true),
                    CmpOp::Eq | CmpOp::Ne => {
                        return Err(Diag::new(
                            e.span,
                            "`==` and `!=` compare compile-time constants only",
                            "`<`, `<=`, `>` or `>=` for values that depend on latents or parameters",
                        ));
                    }
                };
                if self.in_body() {
                    return self.rows_condition(c, e.span);
                }
                Ok(c)
            }
            _ => Err(Diag::new(
                e.span,
                "this is not a condition",
                "a comparison such as `x < 0`, possibly combined with `&&`, `||` and `!`",
            )),
        }
    }

    /// A chain of arithmetic such as `a + b - c * d`, lowered along its left spine in a loop:
    /// the parser makes left-associative chains as deep as they are long, and a million-term
    /// sum must not take a million stack frames. `e` itself was already counted as a step.
    fn binary_chain(&mut self, e: &Expr) -> Result<Value<'b>, Diag> {
        let mut spine = Vec::new();
        let mut leaf = e;
        while let ExprKind::Binary { op, lhs, rhs } = &leaf.kind {
            spine.push((leaf.span, *op, &**rhs));
            leaf = lhs;
        }
        let v = self.expr(leaf)?;
        let mut acc = self.num(v, leaf.span)?;
        let b = self.b;
        for (k, (span, op, rhs)) in spine.into_iter().enumerate().rev() {
            if k > 0 {
                self.tick(span, 1)?;
            }
            let r = self.expr(rhs)?;
            let r = self.num(r, rhs.span)?;
            acc = match op {
                BinOp::Add => acc + r,
                BinOp::Sub => acc - r,
                BinOp::Mul => acc * r,
                BinOp::Div => acc / r,
                BinOp::Pow => b.pow(acc, r),
            };
        }
        Ok(Value::Num(acc))
    }

    /// `a[i][j]...`, lowered along its left spine in a loop (see [`Self::binary_chain`]).
    fn index_chain(&mut self, e: &Expr) -> Result<Value<'b>, Diag> {
        let mut spine = Vec::new();
        let mut leaf = e;
        while let ExprKind::Index { base, index } = &leaf.kind {
            spine.push((leaf.span, &**index, &**base));
            leaf = base;
        }
        if self.in_body() {
            return self.body_index_chain(leaf, spine);
        }
        let mut arr = self.expr(leaf)?;
        let mut base_span = leaf.span;
        // The indices taken so far, for messages.
        let mut taken = Vec::new();
        for (k, (span, index, base)) in spine.into_iter().enumerate().rev() {
            if k > 0 {
                self.tick(span, 1)?;
            }
            let i = self.const_int(index, "an array index")?;
            let Some(len) = arr.len() else {
                return Err(Diag::new(
                    base_span,
                    format!("cannot index into {}", arr.describe()),
                    "an array before `[`",
                ));
            };
            let k = self
                .check_index(i, len, index.span)
                .map_err(|d| self.name_data_in(d, base, &taken, i, len))?;
            arr = arr.element(self.b, k).unwrap_or(Value::Unit);
            taken.push(i);
            base_span = span;
        }
        Ok(arr)
    }

    /// An index chain in a plate's body, where an index may depend on the loop variable
    /// (each row then reads its own element). An array from outside the loop is indexed
    /// there, so that only the elements read come into the body.
    fn body_index_chain(
        &mut self,
        leaf: &Expr,
        spine: Vec<(Span, &Expr, &Expr)>,
    ) -> Result<Value<'b>, Diag> {
        let mut steps = Vec::with_capacity(spine.len());
        for (k, (span, index, _)) in spine.iter().enumerate().rev() {
            if k + 1 < spine.len() {
                self.tick(*span, 1)?;
            }
            steps.push(self.body_index(index)?);
        }
        if let ExprKind::Var(id) = &leaf.kind
            && self.lookup(&id.name).is_none()
            && let Some(v) = self.read_outer(id, &steps)
        {
            return v;
        }
        let arr = self.expr(leaf)?;
        match super::row_values::pick(arr, &steps) {
            Ok(super::row_values::Picked::One(v)) => Ok(v),
            Ok(super::row_values::Picked::Rows(vals)) => self.collapse_rows(&vals, leaf.span),
            Ok(super::row_values::Picked::Number(x)) => Ok(Value::Num(self.b.constant(x))),
            Ok(super::row_values::Picked::Column(c)) => {
                self.tick(leaf.span, super::plate::cost_steps(c.len() as u64))?;
                Ok(Value::Num(self.b.column("row[..]", c)))
            }
            Err((why, at)) => Err(self.refuse(why, at.unwrap_or(leaf.span))),
        }
    }

    /// In a plate's body, a guard that reads only data (and the loop variable): constant
    /// when every row takes the same branch, as each unrolled row's would be; otherwise
    /// the plate is refused.
    fn rows_condition(&mut self, c: Cond<'b>, span: Span) -> Result<Cond<'b>, Diag> {
        let Cond::Guard { g, negate } = c else {
            return Ok(c);
        };
        if !self.row_dependent(g) {
            return Ok(c);
        }
        let rows = self.b.row_values(g).unwrap_or_default();
        self.tick(span, rows.len() / super::plate::VALUES_PER_STEP)?;
        let taken = |g: f64| (g < 0.0) != negate;
        if rows.iter().all(|&g| taken(g)) {
            Ok(Cond::Const(true))
        } else if rows.iter().all(|&g| !taken(g)) {
            Ok(Cond::Const(false))
        } else {
            Err(self.refuse(
                "a condition that reads only data takes different branches in different rows",
                span,
            ))
        }
    }

    /// A chain of `&&` and `||`, lowered along its left spine in a loop (see
    /// [`Self::binary_chain`]).
    fn logic_chain(&mut self, e: &Expr) -> Result<Cond<'b>, Diag> {
        let mut spine = Vec::new();
        let mut leaf = e;
        loop {
            let (x, y, and) = match &leaf.kind {
                ExprKind::And(x, y) => (x, y, true),
                ExprKind::Or(x, y) => (x, y, false),
                _ => break,
            };
            spine.push((leaf.span, and, &**y));
            leaf = x;
        }
        let mut acc = self.cond(leaf)?;
        for (k, (span, and, rhs)) in spine.into_iter().enumerate().rev() {
            if k > 0 {
                self.tick(span, 1)?;
            }
            let c = self.cond(rhs)?;
            acc = if and { acc.and(c) } else { acc.or(c) };
        }
        Ok(acc)
    }

    /// A comparison of a constrained latent `z = T(u)` with a constant `c`, rewritten as the
    /// same comparison of `u` with `T^{-1}(c)` (exact: `T` is strictly increasing). The guard
    /// is then affine in the program's latent, so LYY18 still applies; a constant outside the
    /// support decides the comparison at compile time. `None` for any other comparison.
    fn constrained_comparison(&self, op: CmpOp, l: Var<'b>, r: Var<'b>) -> Option<Cond<'b>> {
        let (u, t, c, op) = match (self.constrained.get(&l.id()), r.as_const()) {
            (Some(&(u, t)), Some(c)) => (u, t, c, op),
            _ => match (l.as_const(), self.constrained.get(&r.id())) {
                // `c < z` is `z > c`, and so on.
                (Some(c), Some(&(u, t))) => (
                    u,
                    t,
                    c,
                    match op {
                        CmpOp::Lt => CmpOp::Gt,
                        CmpOp::Gt => CmpOp::Lt,
                        CmpOp::Le => CmpOp::Ge,
                        CmpOp::Ge => CmpOp::Le,
                        other => other,
                    },
                ),
                _ => return None,
            },
        };
        let uc = t.to_unconstrained(c);
        if uc.is_nan() {
            return None;
        }
        // `z < c`: never when c is at or below the support, always when at or above it.
        let below = |negate: bool| {
            if uc.is_infinite() {
                Cond::Const((uc > 0.0) != negate)
            } else {
                Cond::guard(u - uc, negate)
            }
        };
        // `z > c`: always when c is at or below the support, never when at or above it.
        let above = |negate: bool| {
            if uc.is_infinite() {
                Cond::Const((uc < 0.0) != negate)
            } else {
                Cond::guard(uc - u, negate)
            }
        };
        match op {
            CmpOp::Lt => Some(below(false)),
            CmpOp::Ge => Some(below(true)),
            CmpOp::Gt => Some(above(false)),
            CmpOp::Le => Some(above(true)),
            CmpOp::Eq | CmpOp::Ne => None,
        }
    }

    pub(super) fn num(&self, v: Value<'b>, span: Span) -> Result<Var<'b>, Diag> {
        match v {
            Value::Num(x) => Ok(x),
            other => Err(Diag::new(
                span,
                format!("expected a number, found {}", other.describe()),
                "a number",
            )),
        }
    }

    pub(super) fn num_args(&mut self, args: &[Expr]) -> Result<Vec<Var<'b>>, Diag> {
        let mut out = Vec::with_capacity(args.len());
        for a in args {
            let v = self.expr(a)?;
            out.push(self.num(v, a.span)?);
        }
        Ok(out)
    }

    /// A number known at compile time.
    pub(super) fn const_number(&mut self, e: &Expr, what: &str) -> Result<f64, Diag> {
        let v = self.expr(e)?;
        let v = self.num(v, e.span)?;
        v.as_const().ok_or_else(|| {
            Diag::new(
                e.span,
                format!("{what} must be known at compile time"),
                "a number that depends on no latent or parameter (a literal, `const`, `data` or loop variable)",
            )
        })
    }

    pub(super) fn const_int(&mut self, e: &Expr, what: &str) -> Result<i64, Diag> {
        let x = self.const_number(e, what)?;
        if x != x.trunc() {
            return Err(Diag::new(
                e.span,
                format!("{what} is {x}, not an integer"),
                "an integer",
            ));
        }
        if x.abs() > MAX_INT {
            return Err(Diag::new(
                e.span,
                format!("{what} is {x:e}, beyond the largest loop bound or index (1e15)"),
                "an integer of magnitude at most 1e15",
            ));
        }
        Ok(x as i64)
    }

    /// An index error into `data` names the data, the indices taken before (`x[1]`, the
    /// row whose element is missing) and the file its value came from; a ragged data array
    /// says so (shapes of run-time data are checked where they are used). A loop kept as a
    /// plate that would read past a data column gives the same message.
    pub(super) fn name_data_in(
        &self,
        d: Diag,
        base: &Expr,
        taken: &[i64],
        i: i64,
        len: usize,
    ) -> Diag {
        let mut root = base;
        while let ExprKind::Index { base, .. } = &root.kind {
            root = base;
        }
        let ExprKind::Var(id) = &root.kind else {
            return d;
        };
        let path: String = taken.iter().map(|k| format!("[{k}]")).collect();
        let local = self.frame.iter().any(|s| s.contains_key(&id.name));
        match self.globals.get(&id.name) {
            Some(g) if !local && g.kind == "data" => {
                let bound = self.data.get(&id.name);
                let from = match bound {
                    Some(_) => format!(" (from {})", self.data.origin()),
                    None => String::new(),
                };
                let d = Diag::new(
                    d.span,
                    format!(
                        "index {i} is out of range for data `{}{path}`{from}, which has {len} \
                         element(s)",
                        id.name
                    ),
                    format!("an index from 0 to {}", len as i64 - 1),
                );
                match bound.and_then(|v| ragged_note(&id.name, v, taken)) {
                    Some(note) => d.with_note(note),
                    None => d,
                }
            }
            _ => d,
        }
    }

    pub(super) fn check_index(&self, i: i64, len: usize, span: Span) -> Result<usize, Diag> {
        if i < 0 || i as usize >= len {
            return Err(Diag::new(
                span,
                format!("index {i} is out of range for an array of {len} element(s)"),
                format!("an index from 0 to {}", len as i64 - 1),
            ));
        }
        Ok(i as usize)
    }

    pub(super) fn unknown_name(&self, id: &Ident) -> Diag {
        let d = Diag::new(
            id.span,
            format!("unknown name `{}`", id.name),
            "a variable, `const`, `data`, `param` or loop variable defined before this point",
        );
        if self.fns.contains_key(&id.name) || BUILTINS.contains(&id.name.as_str()) {
            d.with_note(format!(
                "`{}` is a function: call it as `{}(...)`",
                id.name, id.name
            ))
        } else {
            d
        }
    }

    /// An array value, refused if it would nest deeper than [`MAX_ARRAY_DEPTH`] or hold more
    /// numbers (counted with repetition, packed data numbers left out) than the step limit.
    pub(super) fn array(&self, items: Vec<Value<'b>>, span: Span) -> Result<Value<'b>, Diag> {
        let depth = 1 + items.iter().map(Value::depth).max().unwrap_or(0);
        if usize::from(depth) > MAX_ARRAY_DEPTH {
            return Err(Diag::new(
                span,
                format!("arrays nest deeper than {MAX_ARRAY_DEPTH} levels"),
                "arrays of numbers, of arrays of numbers, ... at most that deep",
            ));
        }
        let size = items
            .iter()
            .fold(0u64, |acc, v| acc.saturating_add(v.size()));
        let packed = items
            .iter()
            .fold(0u64, |acc, v| acc.saturating_add(v.packed_size()));
        // Packed data numbers cost nothing until read (and then a node each, which the node
        // limit counts): only the others are bounded here.
        let unpacked = size - packed;
        if unpacked > self.opts.step_limit as u64 {
            return Err(Diag::new(
                span,
                format!("this array would hold {unpacked} numbers, more than the step limit"),
                "a smaller array",
            )
            .with_note(super::STEP_LIMIT_NOTE));
        }
        let constant = items.iter().all(Value::is_constant);
        Ok(Value::Array(
            Rc::new(items),
            Shape {
                depth,
                size,
                packed,
                constant,
            },
        ))
    }
}

/// Says that a data array is ragged when an index into one of its rows failed: the rows'
/// lengths, the first few.
fn ragged_note(name: &str, value: &DataValue, taken: &[i64]) -> Option<String> {
    let mut v = value;
    for &k in taken.iter().take(taken.len().saturating_sub(1)) {
        match v {
            DataValue::Array(items) => v = items.get(usize::try_from(k).ok()?)?,
            _ => return None,
        }
    }
    let lengths = v.ragged_lengths()?;
    if taken.is_empty() {
        return None;
    }
    const SHOWN: usize = 8;
    let shown: Vec<String> = lengths
        .iter()
        .take(SHOWN)
        .map(|l| l.map_or("a number".to_string(), |l| l.to_string()))
        .collect();
    let more = if lengths.len() > SHOWN { ", ..." } else { "" };
    Some(format!(
        "the rows of `{name}` have different lengths ({}{more}): a ragged array",
        shown.join(", ")
    ))
}

//! Lowering of expressions: arithmetic, arrays, calls (built-in and inlined), conditions
//! and `sample`.

use super::Map;
use std::rc::Rc;

use super::super::ast::{BinOp, Block, CmpOp, Comprehension, Expr, ExprKind, Ident, InitKey};
use super::super::bind::DataValue;
use super::super::data;
use super::super::diagnostic::Diag;
use super::value::{Cond, Numbers, Shape};
use super::{BUILTINS, Lowerer, PendingKind, PendingLatent, Value};
use crate::ir::{Dist, LatentKind, Span, TermKind, Transform, Var};
use crate::special::softplus;

/// Deepest nesting of arrays (a matrix is 2).
pub(crate) const MAX_ARRAY_DEPTH: usize = 64;

/// Packed numbers that `sum` and `mean` add per compilation step (a step is about a
/// microsecond of lowering work; adding a number is about a nanosecond).
const NUMBERS_PER_STEP: usize = 256;

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
        match super::plate::pick(arr, &steps) {
            Ok(super::plate::Picked::One(v)) => Ok(v),
            Ok(super::plate::Picked::Rows(vals)) => self.collapse_rows(&vals, leaf.span),
            Ok(super::plate::Picked::Number(x)) => Ok(Value::Num(self.b.constant(x))),
            Ok(super::plate::Picked::Column(c)) => {
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

    fn call(&mut self, name: &Ident, args: &[Expr], span: Span) -> Result<Value<'b>, Diag> {
        let b = self.b;
        let n = name.name.as_str();
        if let Some(f) = self.fns.get(n).cloned() {
            if args.len() != f.params.len() {
                return Err(Diag::new(
                    name.span,
                    format!(
                        "function `{n}` takes {} argument(s), but {} were given",
                        f.params.len(),
                        args.len()
                    ),
                    format!(
                        "`{n}({})`",
                        f.params
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            let mut scope = Map::default();
            for (p, a) in f.params.iter().zip(args) {
                let v = self.expr(a)?;
                scope.insert(p.name.clone(), v);
            }
            if self.call_depth >= self.opts.max_call_depth {
                return Err(Diag::new(
                    span,
                    format!("function calls nest deeper than {} levels", self.opts.max_call_depth),
                    "recursion that ends at compile time (a condition on constants that stops it)",
                )
                .with_note(
                    "an `if` whose condition depends on a latent or parameter does not stop recursion: both branches are compiled",
                ));
            }
            self.call_depth += 1;
            let frame = std::mem::replace(&mut self.frame, vec![scope]);
            let hint = self.name_hint.take();
            // A function sees the globals, not the caller's variables.
            let visible = self
                .body
                .as_mut()
                .map(|b| std::mem::replace(&mut b.frames_visible, false));
            let r = self.block(&f.body, gives_value(&f.body));
            if let (Some(body), Some(v)) = (self.body.as_mut(), visible) {
                body.frames_visible = v;
            }
            self.name_hint = hint;
            self.frame = frame;
            self.call_depth -= 1;
            return r;
        }
        match n {
            "len" => {
                let [a] = args else {
                    return Err(arity(name, "1", args.len()));
                };
                match self.expr(a)? {
                    v @ (Value::Array(..) | Value::Numbers(_)) => {
                        Ok(Value::Num(b.constant(v.len().unwrap_or(0) as f64)))
                    }
                    v => Err(Diag::new(
                        a.span,
                        format!("`len` needs an array, found {}", v.describe()),
                        "an array",
                    )),
                }
            }
            "csv" => self.csv(name, args, span),
            "sum" | "mean" if args.len() == 1 => {
                let v = self.expr(&args[0])?;
                if let Value::Numbers(numbers) = &v
                    && numbers.dims().len() == 1
                {
                    return self.sum_numbers(n, numbers, &args[0], span);
                }
                let items = match v {
                    Value::Array(items, _) => items,
                    Value::Numbers(_) => v.elements(b).unwrap_or_default(),
                    Value::Num(x) => Rc::new(vec![Value::Num(x)]),
                    Value::Unit => {
                        return Err(Diag::new(
                            args[0].span,
                            "this has no value",
                            "a number or an array of numbers",
                        ));
                    }
                };
                // The sum reads every element: its work is the array's length, however
                // often it is called (a sum in a loop must not escape the step limit).
                self.tick(span, items.len())?;
                let mut xs = Vec::with_capacity(items.len());
                for it in items.iter() {
                    xs.push(self.num(it.clone(), args[0].span)?);
                }
                if xs.is_empty() {
                    return Err(Diag::new(
                        args[0].span,
                        format!("`{n}` of an empty array"),
                        "an array with elements",
                    ));
                }
                b.set_span(Some(span));
                b.apply(n, &xs)
                    .map(Value::Num)
                    .map_err(|e| Diag::new(name.span, e.to_string(), "valid arguments"))
            }
            _ if BUILTINS.contains(&n) => {
                let xs = self.num_args(args)?;
                b.set_span(Some(span));
                b.apply(n, &xs).map(Value::Num).map_err(|e| match e {
                    crate::ir::IrError::Arity {
                        expected, found, ..
                    } => arity(name, &expected, found),
                    other => Diag::new(name.span, other.to_string(), "valid arguments"),
                })
            }
            _ if Dist::from_name(n).is_some() || n == "Flat" => Err(Diag::new(
                name.span,
                format!("`{n}` is a distribution, not a function"),
                format!("`sample {n}(..)` or `observe x ~ {n}(..)`"),
            )),
            _ => Err(Diag::new(
                name.span,
                format!("unknown function `{n}`"),
                "a built-in function or a `fn` defined in this file",
            )
            .with_note(format!("built-ins: {}, len, csv", BUILTINS.join(", ")))),
        }
    }

    /// `sum(x)` or `mean(x)` of a packed data column: one constant, folded without a node
    /// per number (see [`folded_sum`]).
    fn sum_numbers(
        &mut self,
        f: &str,
        numbers: &Numbers,
        arg: &Expr,
        span: Span,
    ) -> Result<Value<'b>, Diag> {
        let xs = numbers.as_slice();
        self.tick(span, xs.len() / NUMBERS_PER_STEP)?;
        if xs.is_empty() {
            return Err(Diag::new(
                arg.span,
                format!("`{f}` of an empty array"),
                "an array with elements",
            ));
        }
        Ok(Value::Num(self.b.constant(folded_sum(f, xs))))
    }

    /// `csv("file.csv", "column")`: a column of a CSV file beside the model.
    fn csv(&mut self, name: &Ident, args: &[Expr], span: Span) -> Result<Value<'b>, Diag> {
        let strings: Vec<&str> = args
            .iter()
            .map(|a| match &a.kind {
                ExprKind::Str(s) => Ok(s.as_str()),
                _ => Err(Diag::new(
                    a.span,
                    "`csv` takes strings",
                    "a string in double quotes",
                )),
            })
            .collect::<Result<_, _>>()?;
        let [path, column] = strings[..] else {
            return Err(arity(
                name,
                "2 (`csv(\"file.csv\", \"column\")`)",
                args.len(),
            ));
        };
        let to_diag = |msg: data::DataError| {
            let arg = if msg.missing_column {
                args[1].span
            } else {
                args[0].span
            };
            Diag::new(arg, msg.message, msg.expected)
        };
        // A file is read once per compilation and a column parsed once, however often the
        // model names them; reading and parsing count their bytes against the step limit.
        let text = match self.data_files.get(path) {
            Some(text) => text.clone(),
            None => {
                let text: Rc<str> = data::read_data_file(self.resolver, path)
                    .map_err(to_diag)?
                    .into();
                self.tick(args[0].span, text.len() / data::BYTES_PER_STEP)?;
                self.data_files.insert(path.to_string(), text.clone());
                text
            }
        };
        let key = (path.to_string(), column.to_string());
        let values = match self.data_columns.get(&key) {
            Some(values) => values.clone(),
            None => {
                self.tick(args[1].span, text.len() / data::BYTES_PER_STEP)?;
                let values: std::sync::Arc<[f64]> = data::parse_column(&text, path, column)
                    .map_err(to_diag)?
                    .into();
                self.data_columns.insert(key, values.clone());
                values
            }
        };
        if let Some(k) = values.iter().position(|x| !x.is_finite()) {
            return Err(Diag::new(
                args[0].span,
                format!(
                    "`{path}`, row {} of column `{column}`: {} is not a finite number",
                    k + 2,
                    values[k]
                ),
                "finite numbers in every row of the column",
            ));
        }
        self.tick(span, 1)?;
        Ok(Value::Numbers(Numbers::column(values)))
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

    fn sample(
        &mut self,
        dist: &Ident,
        args: &[Expr],
        fixed: Option<Span>,
        init: &[(InitKey, Span, Expr)],
        span: Span,
    ) -> Result<Value<'b>, Diag> {
        let d = self.sample_distribution(dist, args.len())?;
        let a = self.num_args(args)?;
        if self.in_body() {
            if self.objective && fixed.is_none() {
                return Err(self.refuse("samples a latent in an objective program", span));
            }
            if let Some(k) = a.iter().position(|v| self.row_dependent(*v)) {
                return Err(self.refuse(
                    "a latent's distribution reads data (its guide would start differently \
                     in each row)",
                    args[k].span,
                ));
            }
        }
        if let Some(d) = d {
            self.check_constant_arguments(d, &a, args)?;
        }
        let name = self.latent_name();
        let guide = self.guide_settings(init)?;
        let kind = if let Some(fixed_span) = fixed {
            fixed_kind(d, &a, init, fixed_span)?
        } else if self.objective {
            objective_kind(d, dist, &a, init)?
        } else {
            return self.guided_latent(d, dist, &a, guide, name, span);
        };
        let z = self.b.latent(&name);
        self.latents.push(PendingLatent { name, kind, span });
        Ok(Value::Num(z))
    }

    /// The distribution of a `sample` (`None` for `Flat()`); a discrete one is refused.
    fn sample_distribution(&self, dist: &Ident, n_args: usize) -> Result<Option<Dist>, Diag> {
        if dist.name == "Flat" {
            if n_args != 0 {
                return Err(Diag::new(
                    dist.span,
                    "`Flat` takes no arguments",
                    "`sample Flat()`",
                ));
            }
            return Ok(None);
        }
        let d = self.distribution(dist, n_args)?;
        if d.is_discrete() {
            return Err(Diag::new(
                dist.span,
                format!("a latent cannot be drawn from `{d}`: it is discrete"),
                "a continuous distribution after `sample`",
            )
            .with_note(format!(
                "a discrete quantity is observed data (`observe k ~ {d}(..)`); for an unknown \
                 one, write the mixture out: sum its values' weights with `factor` (or use a \
                 continuous relaxation)"
            )));
        }
        Ok(Some(d))
    }

    /// Refuses constant arguments the distribution cannot take (a scale of 0, `Uniform(1, 0)`).
    pub(super) fn check_constant_arguments(
        &self,
        d: Dist,
        a: &[Var<'b>],
        args: &[Expr],
    ) -> Result<(), Diag> {
        // Over the node limit, the builder hands out stand-ins: report the limit, not
        // what the stand-ins look like.
        let first = args.first().map_or(Span::default(), |e| e.span);
        self.check_node_limit(first)?;
        let consts: Vec<Option<f64>> = a.iter().map(|v| v.as_const()).collect();
        d.check_arguments(&consts).map_err(|p| {
            let at = p
                .argument
                .and_then(|k| args.get(k))
                .map_or(Span::default(), |e| e.span);
            Diag::new(at, p.message, p.expected)
        })
    }

    /// The `init(mean = .., std = .. | rho = ..)` of a `sample`: the mean (with its span) and
    /// the standard deviation, each if given.
    fn guide_settings(&mut self, init: &[(InitKey, Span, Expr)]) -> Result<GuideInit, Diag> {
        let mut guide = GuideInit::default();
        for (key, key_span, value) in init {
            let x = self.const_number(value, "a guide setting")?;
            let given = match key {
                InitKey::Mean => guide.mean.is_some(),
                InitKey::Std | InitKey::Rho => guide.std.is_some(),
            };
            if given {
                return Err(Diag::new(
                    *key_span,
                    "this guide setting is given twice",
                    "each of `mean` and `std`/`rho` at most once",
                ));
            }
            let x = if *key == InitKey::Rho { softplus(x) } else { x };
            if *key != InitKey::Mean && !(x > 0.0 && x.is_finite()) {
                return Err(Diag::new(
                    value.span,
                    format!("the guide's standard deviation would be {x}"),
                    "a positive std",
                ));
            }
            if *key == InitKey::Mean {
                guide.mean = Some((x, value.span));
            } else {
                guide.std = Some(x);
            }
        }
        Ok(guide)
    }

    /// A latent of a variational program: on the transform its support needs, with a
    /// Gaussian guide on the unconstrained `u` and `log p(z) + log |T'(u)|` added to `log p`.
    fn guided_latent(
        &mut self,
        d: Option<Dist>,
        dist: &Ident,
        a: &[Var<'b>],
        guide: GuideInit,
        name: String,
        span: Span,
    ) -> Result<Value<'b>, Diag> {
        let b = self.b;
        let consts: Vec<Option<f64>> = a.iter().map(|v| v.as_const()).collect();
        let transform = match d {
            None => Transform::Identity,
            Some(d) => d.latent_transform(&consts).map_err(|why| {
                Diag::new(
                    dist.span,
                    format!("a latent cannot be drawn from `{d}` here: {why}"),
                    "constant bounds, e.g. `sample Uniform(0, 1)`",
                )
            })?,
        };
        let init_mean = match guide.mean {
            Some((m, at)) => {
                let u = transform.to_unconstrained(m);
                if !u.is_finite() {
                    let (lo, hi) = transform.support();
                    return Err(Diag::new(
                        at,
                        format!("the guide's initial mean {m} is outside the latent's support"),
                        format!("a mean strictly between {lo} and {hi}"),
                    ));
                }
                u
            }
            None => d.map_or(0.0, |d| default_init_mean(d, &consts, transform)),
        };
        let kind = LatentKind::Guided {
            init_mean,
            init_std: guide.std.unwrap_or(1.0),
        };
        b.set_span(Some(span));
        let z = match d {
            None => b.latent(&name),
            Some(d) => {
                let s = b
                    .sample_latent(&name, d, a)
                    .map_err(|e| Diag::new(dist.span, e.to_string(), "matching arguments"))?;
                let inputs: Vec<_> = std::iter::once(s.latent.z)
                    .chain(a.iter().copied())
                    .collect();
                b.record_term(TermKind::Sample(d), span, s.log_density, &inputs);
                self.terms.push(s.log_density);
                if transform != Transform::Identity {
                    self.constrained
                        .insert(s.latent.z.id(), (s.latent.u, transform));
                }
                s.latent.z
            }
        };
        self.latents.push(PendingLatent {
            name,
            kind: PendingKind::Done(kind),
            span,
        });
        Ok(Value::Num(z))
    }
}

/// The guide settings written in `init(..)`.
#[derive(Copy, Clone, Debug, Default)]
struct GuideInit {
    /// The mean in the latent's own units, and where it was written.
    mean: Option<(f64, Span)>,
    /// The standard deviation of the guide on the unconstrained scale.
    std: Option<f64>,
}

/// A `fixed` latent: `Normal` with constant arguments, no guide.
fn fixed_kind<'b>(
    d: Option<Dist>,
    a: &[Var<'b>],
    init: &[(InitKey, Span, Expr)],
    fixed_span: Span,
) -> Result<PendingKind<'b>, Diag> {
    let consts: Option<Vec<f64>> = a.iter().map(|v| v.as_const()).collect();
    match (d, consts.as_deref()) {
        (Some(Dist::Normal), Some(&[loc, scale])) if scale > 0.0 => {
            if !init.is_empty() {
                return Err(Diag::new(
                    init[0].1,
                    "a fixed latent has no guide to initialise",
                    "no `init(..)` after `fixed`",
                ));
            }
            Ok(PendingKind::Done(LatentKind::Fixed { loc, scale }))
        }
        _ => Err(Diag::new(
            fixed_span,
            "only `Normal` latents with constant arguments can be `fixed`",
            "`sample Normal(loc, scale) fixed` with constant loc and positive scale",
        )),
    }
}

/// A latent of an objective program: `Normal(loc, scale)`, reparameterised.
fn objective_kind<'b>(
    d: Option<Dist>,
    dist: &Ident,
    a: &[Var<'b>],
    init: &[(InitKey, Span, Expr)],
) -> Result<PendingKind<'b>, Diag> {
    match d {
        Some(Dist::Normal) if init.is_empty() => Ok(PendingKind::Family {
            loc: a[0],
            scale: a[1],
        }),
        Some(Dist::Normal) => Err(Diag::new(
            init[0].1,
            "`init` sets a variational guide, but this is an objective program",
            "no `init(..)`: the family is what `sample` says",
        )),
        _ => Err(Diag::new(
            dist.span,
            format!(
                "latents of an objective program must be `Normal`, not `{}`",
                dist.name
            ),
            "`Normal(loc, scale)` (latents are reparameterised location-scale)",
        )),
    }
}

/// Where the guide of `u` starts when `init` does not say: a typical value of the prior when
/// its arguments are constants (its location, scale, or mean on the transformed scale),
/// else the middle of the unconstrained line.
fn default_init_mean(d: Dist, consts: &[Option<f64>], transform: Transform) -> f64 {
    let typical = match (d, consts) {
        (Dist::Normal | Dist::Logistic | Dist::Cauchy, [Some(loc), _]) => Some(*loc),
        (Dist::StudentT, [_, Some(loc), _]) => Some(*loc),
        (Dist::Exponential, [Some(rate)]) => Some(1.0 / rate),
        (Dist::HalfNormal | Dist::HalfCauchy, [Some(scale)]) => Some(*scale),
        (Dist::Gamma, [Some(shape), Some(rate)]) => Some(shape / rate),
        (Dist::Beta, [Some(a), Some(b)]) => Some(a / (a + b)),
        (Dist::LogNormal, [Some(mu), _]) => Some(crate::elementary::exp(*mu)),
        _ => None,
    };
    typical
        .map(|z| transform.to_unconstrained(z))
        .filter(|u| u.is_finite())
        .unwrap_or(0.0)
}

/// Whether a block ends in an expression that has a value: a function whose body ends in
/// an if-statement without values is called for its effects.
fn gives_value(b: &Block) -> bool {
    match b.tail.as_deref() {
        None => false,
        Some(Expr {
            kind: ExprKind::If(i),
            ..
        }) => gives_value(&i.then_) && i.else_.as_ref().is_some_and(gives_value),
        Some(_) => true,
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

/// `sum` or `mean` of packed numbers, as the builder folds a sum of constants: added left
/// to right from 0 (then divided by the count for `mean`), so the result is the constant
/// the unpacked array would give, without a node per number.
fn folded_sum(f: &str, xs: &[f64]) -> f64 {
    let total = xs.iter().fold(0.0, |acc, &x| acc + x);
    if f == "mean" {
        total / xs.len() as f64
    } else {
        total
    }
}

fn arity(name: &Ident, expected: &str, found: usize) -> Diag {
    Diag::new(
        name.span,
        format!(
            "`{}` takes {expected} argument(s), but {found} were given",
            name.name
        ),
        format!("{expected} argument(s)"),
    )
}

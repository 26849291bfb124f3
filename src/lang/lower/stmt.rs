//! Lowering of statements: bindings, declarations, log-density and objective terms, loops.

use super::Map;
use std::rc::Rc;

use super::super::ast::{Expr, Ident, Stmt, StmtKind};
use super::super::bind::DataValue;
use super::super::diagnostic::Diag;
use super::plate;
use super::value::Numbers;
use super::{Global, Lowerer, Value};
use crate::ir::{Dist, ParamSpec, Span, TermKind, Var};

impl<'b, 'r> Lowerer<'b, 'r> {
    pub(super) fn stmt(&mut self, s: &Stmt) -> Result<(), Diag> {
        self.tick(s.span, 1)?;
        match &s.kind {
            StmtKind::Let { name, value } => {
                let v = self.bound_value(name, value)?;
                self.frame
                    .last_mut()
                    .expect("a frame always has a scope")
                    .insert(name.name.clone(), v);
            }
            StmtKind::Assign {
                name,
                indices,
                value,
            } => self.assign(name, indices, value)?,
            StmtKind::Const { .. } | StmtKind::Data { .. } | StmtKind::Param { .. }
                if self.in_body() =>
            {
                return Err(self.refuse("declares a `const`, `data` or `param`", s.span));
            }
            StmtKind::Const { name, value } => {
                let v = self.constant_value(name, value, "const")?;
                self.declare(name, v, "const")?;
            }
            StmtKind::Data { name, value } => {
                let v = match (self.data.get(&name.name), value) {
                    (Some(bound), _) => self.bound_data(bound, name.span)?,
                    (None, Some(value)) => self.constant_value(name, value, "data")?,
                    (None, None) => return Err(self.missing_data(name)),
                };
                self.declare(name, v, "data")?;
            }
            StmtKind::Param { name, init } => {
                let v = self.const_number(init, "the initial value of a parameter")?;
                let var = self.b.param(&name.name);
                self.params.push(ParamSpec {
                    name: name.name.clone(),
                    init: v,
                });
                self.declare(name, Value::Num(var), "param")?;
            }
            StmtKind::Fn(_) => {}
            StmtKind::Observe { value, dist, args } => {
                if self.objective {
                    return Err(objective_only(s.span, "observe"));
                }
                let x = self.expr(value)?;
                let x = self.num(x, value.span)?;
                let d = self.distribution(dist, args.len())?;
                let a = self.num_args(args)?;
                self.check_constant_arguments(d, &a, args)?;
                self.check_rows(d, x, &a, value.span, dist.span)?;
                if let Some(c) = x.as_const() {
                    let consts: Vec<Option<f64>> = a.iter().map(|v| v.as_const()).collect();
                    d.check_value(c, &consts)
                        .map_err(|p| Diag::new(value.span, p.message, p.expected))?;
                }
                self.b.set_span(Some(s.span));
                let lp = self
                    .observed_log_density(d, x, &a)
                    .map_err(|e| Diag::new(dist.span, e.to_string(), "matching arguments"))?;
                let inputs: Vec<_> = std::iter::once(x).chain(a.iter().copied()).collect();
                self.b
                    .record_term(TermKind::Observe(d), s.span, lp, &inputs);
                self.terms.push(lp);
            }
            StmtKind::Factor(e) => {
                if self.objective {
                    return Err(objective_only(s.span, "factor"));
                }
                let v = self.expr(e)?;
                let v = self.num(v, e.span)?;
                self.b.record_term(TermKind::Factor, s.span, v, &[]);
                self.terms.push(v);
            }
            StmtKind::Maximize(e) | StmtKind::Minimize(e) => {
                let minimize = matches!(s.kind, StmtKind::Minimize(_));
                if self.minimize.is_some_and(|m| m != minimize) {
                    return Err(Diag::new(
                        s.span,
                        "a program cannot both maximize and minimize",
                        "only `maximize` statements or only `minimize` statements (their terms are added)",
                    ));
                }
                self.minimize = Some(minimize);
                let v = self.expr(e)?;
                let v = self.num(v, e.span)?;
                self.b.record_term(TermKind::Objective, s.span, v, &[]);
                self.terms.push(v);
            }
            StmtKind::For { var, lo, hi, body } => {
                let lo_v = self.const_int(lo, "the start of the loop range")?;
                let hi_v = self.const_int(hi, "the end of the loop range")?;
                // Every iteration costs a step and one per statement of the body: a loop that
                // cannot fit in the steps left is refused before its first iteration.
                if self.lower_for(var, lo_v, hi_v, body, s.span)? {
                    return Ok(());
                }
                let per_iteration = 1 + body.stmts.len() + usize::from(body.tail.is_some());
                self.refuse_long_loop(lo_v, hi_v, per_iteration, s.span)?;
                for i in lo_v..hi_v {
                    self.tick(s.span, 1)?;
                    let mut scope = Map::default();
                    scope.insert(var.name.clone(), Value::Num(self.b.constant(i as f64)));
                    self.frame.push(scope);
                    self.loop_suffix.push(i);
                    let r = self.block(body, false);
                    self.loop_suffix.pop();
                    self.frame.pop();
                    r?;
                }
            }
            StmtKind::Expr(e) => self.effect(e)?,
        }
        Ok(())
    }

    /// The value of a `const` or `data` declaration, which must be known at compile time.
    fn constant_value(
        &mut self,
        name: &Ident,
        value: &Expr,
        kind: &str,
    ) -> Result<Value<'b>, Diag> {
        let v = self.expr(value)?;
        self.tick(
            value.span,
            usize::try_from(v.unpacked_size()).unwrap_or(usize::MAX),
        )?;
        if !v.is_constant() {
            return Err(Diag::new(
                value.span,
                format!(
                    "the value of {kind} `{}` is not known at compile time",
                    name.name
                ),
                "numbers, arrays of numbers, or expressions of other constants",
            ));
        }
        Ok(v)
    }

    /// A value from the run-time data set: a number as a constant, a rectangular array
    /// packed (no node until the model reads a number of it).
    fn bound_data(&mut self, value: &DataValue, span: Span) -> Result<Value<'b>, Diag> {
        self.tick(span, 1)?;
        match value {
            DataValue::Num(x) => Ok(Value::Num(self.b.constant(*x))),
            DataValue::Numbers(p) => Ok(Value::Numbers(Numbers::of(p))),
            DataValue::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    out.push(self.bound_data(it, span)?);
                }
                self.array(out, span)
            }
        }
    }

    /// `data y;` with no value in the model and none in the run-time data.
    fn missing_data(&self, name: &Ident) -> Diag {
        let given = if self.data.is_empty() && self.data.origin().is_empty() {
            "no data was given".to_string()
        } else {
            format!("`{}` has none", self.data.origin())
        };
        Diag::new(
            name.span,
            format!("data `{}` has no value: {given}", name.name),
            format!(
                "a value for `{}` in the data file (`--data file.json`), or `data {} = ..;`",
                name.name, name.name
            ),
        )
    }

    /// The value of `let name = value`, with `name` as the name of any latent sampled there.
    fn bound_value(&mut self, name: &Ident, value: &Expr) -> Result<Value<'b>, Diag> {
        let saved = self.name_hint.replace(name.name.clone());
        let v = self.expr(value);
        self.name_hint = saved;
        let v = v?;
        if let Value::Unit = v {
            return Err(Diag::new(
                value.span,
                format!("`{}` would be bound to no value", name.name),
                "an expression with a value",
            ));
        }
        Ok(v)
    }

    fn declare(&mut self, name: &Ident, value: Value<'b>, kind: &'static str) -> Result<(), Diag> {
        if let Some(g) = self.globals.get(&name.name) {
            return Err(Diag::new(
                name.span,
                format!(
                    "`{}` is already defined (as {} `{}`)",
                    name.name, g.kind, name.name
                ),
                "a new name",
            ));
        }
        self.globals
            .insert(name.name.clone(), Global { value, kind });
        Ok(())
    }

    fn assign(&mut self, name: &Ident, indices: &[Expr], value: &Expr) -> Result<(), Diag> {
        let depth = self.frame.iter().rposition(|s| s.contains_key(&name.name));
        if depth.is_none()
            && let Some(body) = self.body.as_ref()
            && body.outer.declared(&name.name, body.frames_visible) == Some(true)
        {
            let why = if indices.is_empty() {
                format!("assigns `{}`, declared outside the loop", name.name)
            } else {
                format!(
                    "assigns an element of `{}`, declared outside the loop",
                    name.name
                )
            };
            return Err(self.refuse(why, name.span));
        }
        let Some(depth) = depth else {
            if let Some(g) = self.globals.get(&name.name) {
                return Err(Diag::new(
                    name.span,
                    format!("cannot assign to {} `{}`", g.kind, name.name),
                    "a variable introduced with `let`",
                ));
            }
            return Err(Diag::new(
                name.span,
                format!("unknown variable `{}`", name.name),
                "a variable introduced with `let` before this assignment",
            ));
        };
        let mut path = Vec::with_capacity(indices.len());
        for ix in indices {
            path.push((self.const_int(ix, "an array index")?, ix.span));
        }
        let v = self.bound_value(name, value)?;
        let old = self.frame[depth][&name.name].clone();
        let new = self.replace_at(old, &path, v, name)?;
        self.frame[depth].insert(name.name.clone(), new);
        Ok(())
    }

    /// `old` with the element at `path` replaced by `v`.
    fn replace_at(
        &mut self,
        old: Value<'b>,
        path: &[(i64, Span)],
        v: Value<'b>,
        name: &Ident,
    ) -> Result<Value<'b>, Diag> {
        let Some(&(i, span)) = path.first() else {
            return Ok(v);
        };
        let Some(items) = old.elements(self.b) else {
            return Err(Diag::new(
                span,
                format!("cannot index into {}", old.describe()),
                format!("`{}` to be an array at this depth", name.name),
            ));
        };
        let k = self.check_index(i, items.len(), span)?;
        self.tick(span, items.len())?;
        let mut items = Rc::unwrap_or_clone(items);
        let inner = std::mem::replace(&mut items[k], Value::Unit);
        items[k] = self.replace_at(inner, &path[1..], v, name)?;
        self.array(items, span)
    }

    pub(super) fn distribution(&self, dist: &Ident, n_args: usize) -> Result<Dist, Diag> {
        let d = Dist::from_name(&dist.name).ok_or_else(|| {
            let names: Vec<&str> = Dist::ALL.iter().map(|d| d.name()).collect();
            Diag::new(
                dist.span,
                format!("unknown distribution `{}`", dist.name),
                format!("one of {}", names.join(", ")),
            )
        })?;
        if n_args != d.arity() {
            return Err(Diag::new(
                dist.span,
                format!(
                    "`{}` takes {} argument(s), but {} were given",
                    d.name(),
                    d.arity(),
                    n_args
                ),
                format!("`{}({})`", d.name(), d.parameter_names().join(", ")),
            ));
        }
        Ok(d)
    }
}

impl<'b, 'r> Lowerer<'b, 'r> {
    /// In a plate's body, the checks unrolling makes of an observed value and arguments that
    /// are constants, made row by row where they are read from data: a row that fails refuses
    /// the plate (the unrolled loop then reports it).
    fn check_rows(
        &mut self,
        d: Dist,
        x: Var<'b>,
        a: &[Var<'b>],
        value_span: Span,
        dist_span: Span,
    ) -> Result<(), Diag> {
        if !self.row_dependent(x) && !a.iter().any(|v| self.row_dependent(*v)) {
            return Ok(());
        }
        let b = self.b;
        let per_row = |v: Var<'b>| b.row_values(v);
        let xs = per_row(x);
        let args: Vec<Option<Vec<f64>>> = a.iter().map(|v| per_row(*v)).collect();
        let rows = xs
            .as_ref()
            .map(Vec::len)
            .or_else(|| args.iter().flatten().map(Vec::len).next())
            .unwrap_or(0);
        self.tick(value_span, rows * (1 + a.len()) / plate::VALUES_PER_STEP)?;
        for r in 0..rows {
            let consts: Vec<Option<f64>> = args.iter().map(|c| c.as_ref().map(|c| c[r])).collect();
            let problem = d
                .check_arguments(&consts)
                .err()
                .map(|p| (p.message, dist_span))
                .or_else(|| {
                    let x = xs.as_ref()?[r];
                    d.check_value(x, &consts)
                        .err()
                        .map(|p| (p.message, value_span))
                });
            if let Some((message, at)) = problem {
                return Err(self.refuse(format!("in row {r}: {message}"), at));
            }
        }
        Ok(())
    }
}

fn objective_only(span: Span, what: &str) -> Diag {
    Diag::new(
        span,
        format!("`{what}` is not allowed in a program with `param`, `maximize` or `minimize`"),
        "`maximize`/`minimize` terms (objective programs) or no `param` (variational programs)",
    )
}

//! Lowering of calls: the built-in functions (`sum`, `mean`, `csv`, the elementwise
//! functions) and the inlining of the model's own functions, with their arity checks.

use super::super::ast::{Block, Expr, ExprKind, Ident};
use super::super::data;
use super::super::diagnostic::Diag;
use super::Map;
use super::value::Numbers;
use super::{BUILTINS, Lowerer, Value};
use crate::ir::{Dist, Span};
use std::rc::Rc;

/// Packed numbers that `sum` and `mean` add per compilation step (a step is about a
/// microsecond of lowering work; adding a number is about a nanosecond).
const NUMBERS_PER_STEP: usize = 256;

impl<'b, 'r> Lowerer<'b, 'r> {
    pub(super) fn call(
        &mut self,
        name: &Ident,
        args: &[Expr],
        span: Span,
    ) -> Result<Value<'b>, Diag> {
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

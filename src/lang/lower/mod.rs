//! Lowering: a syntax tree to one straight-line IR program. Loops are unrolled, functions
//! inlined, constants evaluated, and variables assigned in branches become if-expressions
//! (if-conversion). Log-density terms are collected per branch, so a `sample`, `observe` or
//! `factor` inside a branch counts only in that branch.
//!
//! Work is bounded: every statement, expression and array element costs a step, and both
//! the step count and the builder's node count are checked as lowering proceeds, so a
//! runaway loop or recursion stops early with an error instead of exhausting memory.

mod call;
mod expr;
mod lift;
mod plate;
mod row_values;
mod sample;
mod stmt;
mod value;

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::CompileOptions;
use super::ast::{self, Block, Expr, ExprKind, FnDef, StmtKind};
use super::bind::DataSet;
use super::data::Resolver;
use super::diagnostic::Diag;
use crate::ir::{
    Builder, LatentKind, LatentSpec, Mode, Model, Node, NodeId, ParamSpec, Span, Transform, Var,
};
pub use value::Value;

/// The lowering's tables (scopes, names): keyed by short names and node ids that the
/// program itself makes, so the fast hasher serves; a variable is looked up for every use.
pub(crate) type Map<K, V> = HashMap<K, V, crate::ir::FastBuild>;
use value::{Cond, merge};

/// How a latent is distributed, before the program is finished (family expressions are
/// builder handles until then).
pub(super) enum PendingKind<'b> {
    Done(LatentKind),
    Family { loc: Var<'b>, scale: Var<'b> },
}

pub(super) struct PendingLatent<'b> {
    name: String,
    kind: PendingKind<'b>,
    span: Span,
}

/// A name bound at the top level with `const`, `data` or `param`.
pub(super) struct Global<'b> {
    value: Value<'b>,
    kind: &'static str,
}

pub(crate) struct Lowerer<'b, 'r> {
    b: &'b Builder,
    resolver: &'r dyn Resolver,
    /// Values for `data` declarations supplied at run time (they replace the model's).
    data: &'r DataSet,
    opts: &'r CompileOptions,
    globals: Map<String, Global<'b>>,
    fns: Map<String, Rc<FnDef>>,
    /// The scopes of the function being lowered (the top level is a function too).
    frame: Vec<Map<String, Value<'b>>>,
    /// Log-density terms (variational) or objective terms of the current branch.
    terms: Vec<Var<'b>>,
    objective: bool,
    /// `Some(true)` after `minimize`, `Some(false)` after `maximize`.
    minimize: Option<bool>,
    latents: Vec<PendingLatent<'b>>,
    params: Vec<ParamSpec>,
    call_depth: usize,
    steps: usize,
    /// Values of the enclosing loop variables, for latent names such as `t[3]`.
    loop_suffix: Vec<i64>,
    /// The variable a `sample` is being bound to, for its name.
    name_hint: Option<String>,
    used_names: Map<String, usize>,
    /// The value `z = T(u)` of each constrained latent, by its node, with `u` and `T`: a
    /// comparison of `z` with a constant becomes one of `u`, so its guard stays affine.
    constrained: Map<NodeId, (Var<'b>, Transform)>,
    /// The data files read so far, by the path the model wrote: each is read once.
    data_files: BTreeMap<String, Rc<str>>,
    /// The columns parsed so far, by (path, column).
    data_columns: BTreeMap<(String, String), std::sync::Arc<[f64]>>,
    /// Set while lowering a plate's body (see `plate.rs`).
    body: Option<plate::BodyCtx<'r, 'b>>,
    /// The plates made so far, and what became of each loop.
    plates: Vec<crate::ir::Plate>,
    loops: Vec<crate::ir::LoopNote>,
    /// How many if-statements on latents or parameters enclose the code being lowered: their
    /// terms count in one branch only, so no loop inside them is a plate.
    branch_depth: usize,
}

/// Lowers a parsed program to a model.
pub(crate) fn lower(
    program: &ast::Program,
    name: &str,
    resolver: &dyn Resolver,
    data: &DataSet,
    opts: &CompileOptions,
) -> Result<Model, Diag> {
    let b = Builder::with_node_limit(opts.node_limit);
    let mut l = Lowerer {
        b: &b,
        resolver,
        data,
        opts,
        globals: Map::default(),
        fns: Map::default(),
        frame: vec![Map::default()],
        terms: Vec::new(),
        objective: program.stmts.iter().any(|s| mentions_objective(&s.kind)),
        minimize: None,
        latents: Vec::new(),
        params: Vec::new(),
        call_depth: 0,
        steps: 0,
        loop_suffix: Vec::new(),
        name_hint: None,
        used_names: Map::default(),
        constrained: Map::default(),
        data_files: BTreeMap::new(),
        data_columns: BTreeMap::new(),
        body: None,
        plates: Vec::new(),
        loops: Vec::new(),
        branch_depth: 0,
    };
    l.collect_functions(program)?;
    for s in &program.stmts {
        l.stmt(s)?;
    }
    l.finish(program, name)
}

/// Whether a statement (or any statement nested in it) makes the program an objective one.
fn mentions_objective(s: &StmtKind) -> bool {
    fn block(b: &Block) -> bool {
        b.stmts.iter().any(|s| mentions_objective(&s.kind)) || b.tail.as_deref().is_some_and(expr)
    }
    fn expr(e: &Expr) -> bool {
        match &e.kind {
            ExprKind::If(i) => block(&i.then_) || i.else_.as_ref().is_some_and(block),
            _ => false,
        }
    }
    match s {
        _ if s.is_objective_marker() => true,
        StmtKind::Fn(f) => block(&f.body),
        StmtKind::For { body, .. } => block(body),
        StmtKind::Expr(e) => expr(e),
        _ => false,
    }
}

/// How to raise the node limit (the error names it).
pub(crate) const NODE_LIMIT_NOTE: &str =
    "raise the limit with `--max-nodes N` on the command line (`CompileOptions::node_limit`)";
/// How to raise the step limit.
pub(crate) const STEP_LIMIT_NOTE: &str =
    "raise the limit with `--max-steps N` on the command line (`CompileOptions::step_limit`)";

/// Names of the built-in functions (besides `len` and `csv`): those of the IR's table.
pub(crate) static BUILTINS: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(|| crate::ir::Function::all().map(|f| f.name).collect());

impl<'b, 'r> Lowerer<'b, 'r> {
    fn collect_functions(&mut self, program: &ast::Program) -> Result<(), Diag> {
        for s in &program.stmts {
            if let StmtKind::Fn(f) = &s.kind {
                let n = &f.name.name;
                if BUILTINS.contains(&n.as_str()) || n == "len" || n == "csv" {
                    return Err(Diag::new(
                        f.name.span,
                        format!("`{n}` is a built-in function and cannot be redefined"),
                        "another function name",
                    ));
                }
                if self.fns.insert(n.clone(), f.clone()).is_some() {
                    return Err(Diag::new(
                        f.name.span,
                        format!("function `{n}` is defined twice"),
                        "a new name",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Stops when the builder has gone over the node limit (its nodes are then stand-ins).
    fn check_node_limit(&self, span: Span) -> Result<(), Diag> {
        if self.b.overflowed() {
            return Err(Diag::new(
                span,
                format!(
                    "the unrolled program would have more than {} nodes",
                    self.opts.node_limit
                ),
                "a program that unrolls to fewer nodes (smaller loop bounds or recursion depth)",
            )
            .with_note(NODE_LIMIT_NOTE));
        }
        Ok(())
    }

    /// Counts one step of work and stops when a limit is reached.
    fn tick(&mut self, span: Span, cost: usize) -> Result<(), Diag> {
        self.steps = self.steps.saturating_add(cost);
        if self.body.is_some() {
            // What a plate's body computed row by row (folding data-only if-statements).
            let rows = self.b.take_row_work(plate::VALUES_PER_STEP as u64);
            self.steps = self
                .steps
                .saturating_add(usize::try_from(rows).unwrap_or(usize::MAX));
        }
        if self.opts.cancelled() {
            return Err(Diag::new(
                span,
                "compiling was cancelled",
                "no cancellation (the caller's flag rose)",
            ));
        }
        self.check_node_limit(span)?;
        if self.steps > self.opts.step_limit {
            return Err(Diag::new(
                span,
                format!(
                    "compiling the program takes more than {} steps",
                    self.opts.step_limit
                ),
                "a program that unrolls in fewer steps (smaller loop bounds or recursion depth)",
            )
            .with_note(STEP_LIMIT_NOTE));
        }
        Ok(())
    }

    /// Refuses a loop of `lo..hi` whose iterations, at `per_iteration` steps or more each,
    /// cannot fit in the steps left (so that `for i in 0..1000000000 { }` is refused at
    /// once, not after minutes).
    fn refuse_long_loop(
        &self,
        lo: i64,
        hi: i64,
        per_iteration: usize,
        span: Span,
    ) -> Result<(), Diag> {
        let iterations = u64::try_from(hi.saturating_sub(lo)).unwrap_or(0);
        let need = iterations.saturating_mul(per_iteration as u64);
        let left = self.opts.step_limit.saturating_sub(self.steps) as u64;
        if need > left {
            return Err(Diag::new(
                span,
                format!(
                    "this loop runs {iterations} times: compiling the program takes more than \
                     {} steps",
                    self.opts.step_limit
                ),
                "a program that unrolls in fewer steps (smaller loop bounds)",
            )
            .with_note(STEP_LIMIT_NOTE));
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<&Value<'b>> {
        self.frame
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .or_else(|| self.globals.get(name).map(|g| &g.value))
    }

    /// A name for a new latent: the variable it is bound to, the enclosing loop indices,
    /// and a counter if the name is taken.
    fn latent_name(&mut self) -> String {
        let hint = self.name_hint.clone().unwrap_or_else(|| "_".to_string());
        if let Some(body) = self.body.as_mut() {
            // Named per row when the plate is made (see `plate.rs`).
            body.names.push((hint.clone(), self.loop_suffix.clone()));
            return hint;
        }
        let suffix = std::mem::take(&mut self.loop_suffix);
        let name = self.unique_name(&hint, &suffix);
        self.loop_suffix = suffix;
        name
    }

    /// `hint[i][j]..` for the loop indices `suffix`, with `#2`, `#3`, .. if taken.
    fn unique_name(&mut self, hint: &str, suffix: &[i64]) -> String {
        let mut base = hint.to_string();
        for i in suffix {
            base.push_str(&format!("[{i}]"));
        }
        let n = self.used_names.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 { base } else { format!("{base}#{n}") }
    }

    /// Runs a block in a new scope; returns its final value when `need_value`.
    fn block(&mut self, blk: &Block, need_value: bool) -> Result<Value<'b>, Diag> {
        self.frame.push(Map::default());
        let r = self.block_inner(blk, need_value);
        self.frame.pop();
        r
    }

    fn block_inner(&mut self, blk: &Block, need_value: bool) -> Result<Value<'b>, Diag> {
        for s in &blk.stmts {
            self.stmt(s)?;
        }
        match (&blk.tail, need_value) {
            (Some(e), true) => self.expr(e),
            (Some(e), false) => {
                self.effect(e)?;
                Ok(Value::Unit)
            }
            (None, true) => {
                let end = Span {
                    start: blk.span.end.saturating_sub(1),
                    end: blk.span.end,
                };
                Err(Diag::new(
                    end,
                    "this block gives no value",
                    "an expression before the `}` (without `;`)",
                ))
            }
            (None, false) => Ok(Value::Unit),
        }
    }

    /// Evaluates an expression for its effects only.
    fn effect(&mut self, e: &Expr) -> Result<(), Diag> {
        match &e.kind {
            ExprKind::If(i) => {
                self.lower_if(&i.cond, &i.then_, i.else_.as_ref(), false, e.span)?;
            }
            _ => {
                self.expr(e)?;
            }
        }
        Ok(())
    }

    /// An if-statement or if-expression. A condition known at compile time lowers only the
    /// branch it takes (this is what makes bounded recursion terminate). Otherwise both
    /// branches run from the same state; their log-density terms and the variables they
    /// assign are merged by if-statements on the condition.
    fn lower_if(
        &mut self,
        cond: &Expr,
        then_: &Block,
        else_: Option<&Block>,
        need_value: bool,
        span: Span,
    ) -> Result<Value<'b>, Diag> {
        let c = self.cond(cond)?;
        if let Cond::Const(taken) = c {
            return match (taken, else_) {
                (true, _) => self.block(then_, need_value),
                (false, Some(e)) => self.block(e, need_value),
                (false, None) if need_value => Err(Diag::new(
                    span,
                    "this if-expression has no `else` branch",
                    "`else { .. }` giving a value",
                )),
                (false, None) => Ok(Value::Unit),
            };
        }
        self.tick(span, self.frame.iter().map(Map::len).sum::<usize>() + 1)?;
        let before = self.frame.clone();
        let outer_terms = std::mem::take(&mut self.terms);
        self.branch_depth += 1;
        let vt = self.block(then_, need_value)?;
        let frame_t = std::mem::replace(&mut self.frame, before);
        let terms_t = std::mem::take(&mut self.terms);
        let ve = match else_ {
            Some(e) => self.block(e, need_value)?,
            None if need_value => {
                return Err(Diag::new(
                    span,
                    "this if-expression has no `else` branch",
                    "`else { .. }` giving a value",
                ));
            }
            None => Value::Unit,
        };
        self.branch_depth -= 1;
        let terms_e = std::mem::replace(&mut self.terms, outer_terms);
        self.b.set_span(Some(span));
        if !terms_t.is_empty() || !terms_e.is_empty() {
            let (lt, le) = (self.b.sum(&terms_t), self.b.sum(&terms_e));
            let lp = c.select(self.b, lt, le);
            self.terms.push(lp);
        }
        // Merging compares values element by element: its cost is the size of the values
        // that are not trivially the same.
        let cost: u64 = frame_t
            .iter()
            .zip(&self.frame)
            .flat_map(|(t, e)| {
                t.iter()
                    .filter_map(|(name, vt)| e.get(name).map(|ve| (vt, ve)))
            })
            .filter(|(vt, ve)| !vt.same_handle(ve))
            .map(|(vt, _)| vt.size())
            .fold(vt.size(), u64::saturating_add);
        self.tick(span, usize::try_from(cost).unwrap_or(usize::MAX))?;
        let b = self.b;
        for (scope, scope_t) in self.frame.iter_mut().zip(frame_t) {
            // A fixed order (by name), so that the if-statements are numbered the same in
            // every run: hash-map order differs from process to process.
            let mut assigned: Vec<(String, Value<'b>)> = scope_t.into_iter().collect();
            assigned.sort_by(|x, y| x.0.cmp(&y.0));
            for (name, vt) in assigned {
                let Some(ve) = scope.get(&name) else { continue };
                let merged = merge(b, &c, &vt, ve).map_err(|m| {
                    Diag::new(
                        span,
                        format!(
                            "`{name}` is {} after the then-branch but {} after the else-branch",
                            m.then_, m.else_
                        ),
                        "a variable to keep its shape (number or array length) in both branches",
                    )
                })?;
                scope.insert(name, merged);
            }
        }
        if need_value {
            return merge(b, &c, &vt, &ve).map_err(|m| {
                Diag::new(
                    span,
                    format!(
                        "the then-branch gives {} but the else-branch gives {}",
                        m.then_, m.else_
                    ),
                    "both branches to give values of the same shape",
                )
            });
        }
        Ok(Value::Unit)
    }

    fn finish(self, program: &ast::Program, name: &str) -> Result<Model, Diag> {
        let b = self.b;
        let end = Span { start: 0, end: 0 };
        let mut out = b.sum_hoisting_constants(&self.terms);
        if self.objective {
            if self.minimize.is_none() {
                let at = program
                    .stmts
                    .iter()
                    .find(|s| s.kind.is_objective_marker())
                    .map_or(end, |s| s.span);
                return Err(Diag::new(
                    at,
                    "this program has parameters but no objective",
                    "a `maximize E;` or `minimize E;` statement",
                ));
            }
            if self.minimize == Some(true) {
                out = -out;
            }
        }
        let mut outputs = vec![out];
        for l in &self.latents {
            if let PendingKind::Family { loc, scale } = l.kind {
                outputs.push(loc);
                outputs.push(scale);
            }
        }
        if b.overflowed() {
            return Err(Diag::new(
                end,
                format!(
                    "the unrolled program would have more than {} nodes",
                    self.opts.node_limit
                ),
                "a smaller program",
            )
            .with_note(NODE_LIMIT_NOTE));
        }
        let program_ir = b
            .finish(&outputs)
            .map_err(|e| Diag::new(end, e.to_string(), "a smaller program"))?;
        let depends_on_latent = latent_dependence(program_ir.nodes());
        let mut k = 1;
        let mut latents = Vec::with_capacity(self.latents.len());
        for l in self.latents {
            let kind = match l.kind {
                PendingKind::Done(kind) => kind,
                PendingKind::Family { .. } => {
                    let (loc, scale) = (program_ir.outputs()[k], program_ir.outputs()[k + 1]);
                    k += 2;
                    if depends_on_latent[loc.index()] || depends_on_latent[scale.index()] {
                        return Err(Diag::new(
                            l.span,
                            "the distribution of this latent depends on another latent",
                            "location and scale that depend on parameters only (reparameterised family)",
                        ));
                    }
                    LatentKind::Family { loc, scale }
                }
            };
            latents.push(LatentSpec {
                name: l.name,
                kind,
                span: Some(l.span),
            });
        }
        let mode = if self.objective {
            Mode::Objective {
                minimize: self.minimize == Some(true),
            }
        } else {
            Mode::Variational
        };
        Ok(Model {
            name: name.to_string(),
            mode,
            program: std::sync::Arc::new(program_ir),
            latents,
            params: self.params,
            plates: self.plates,
            loops: self.loops,
        })
    }
}

fn latent_dependence(nodes: &[Node]) -> Vec<bool> {
    let mut d = Vec::with_capacity(nodes.len());
    for n in nodes {
        let x = matches!(n, Node::Latent(_)) || n.operands().any(|o: NodeId| d[o.index()]);
        d.push(x);
    }
    d
}

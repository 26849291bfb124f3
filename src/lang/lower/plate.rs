//! Plates: a `for` loop whose iterations are independent, lowered once into a body program
//! run over the rows instead of being unrolled.
//!
//! Detection is done by lowering: the body is lowered once, on a builder of its own
//! ([`Builder::for_rows`]), by a lowerer in *body mode*, which refuses (with the rule and
//! its place) whatever would make the rows depend on each other or make one body differ
//! from the unrolled iterations:
//! - assigning a variable declared outside the loop (an accumulation such as
//!   `total = total + ..`, a latent handed to the next iteration, an outer array written);
//! - `const`, `data` or `param` inside the loop;
//! - a `sample` in an objective program (its family would need per-row outputs), or whose
//!   distribution reads data (its guide's start and transform would differ by row);
//! - an index that depends on a latent or parameter, or that picks latents or parameters
//!   out of an outer array by row;
//! - a condition that reads only data but takes different branches in different rows (the
//!   unrolled rows would have different shapes), an exponent read from data, a constrained
//!   latent compared with data;
//! - anything the body cannot compile once (the unrolled loop then reports it, row by row).
//!
//! What the body reads from outside is re-expressed in it: outer parameters and latents
//! become the body's parameters ([`Shared`]), values computed from them are copied, and data
//! read by row (`x[i]`, `x[2 * i + 1]`, `x[g[i]]`: any index that depends only on the loop
//! variable, data and constants, evaluated per row) become columns. Latents sampled in the
//! body are the model's latents, numbered and named as unrolling would number and name
//! them. A row's latents are local to its iteration, so no other iteration and nothing after
//! the loop can read them.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::super::ast::{Block, Ident};
use super::super::diagnostic::Diag;
use super::row_values::{Picked, Refusal, Step, collapse, pick};
use super::{Global, Lowerer, Map, PendingKind, PendingLatent, Value};
use crate::ir::{
    Builder, FastBuild, LoopNote, LoopOutcome, Node, NodeId, ParamSpec, Plate, RowLatents, Shared,
    Span, Transform, Var,
};
use crate::lang::{PLATE_MIN_ROWS, PlatePolicy};

/// A loop's rows cost one lowering step per this many values extracted or latents declared:
/// 256 bytes of columns a step, so that the step limit bounds their memory as it bounds an
/// unrolled program's (about 100 bytes a step).
pub(crate) const VALUES_PER_STEP: usize = 32;

/// What a body reads from outside its loop.
pub(super) trait Outer<'c> {
    /// Whether `name` is a variable (`let`) of the enclosing code (visible only when the body
    /// is not inside a function call), and whether it is known at all.
    fn declared(&self, name: &str, frames_visible: bool) -> Option<bool>;
    /// The outer value `name` indexed by `steps`, as a value of the body.
    fn read(
        &mut self,
        name: &str,
        frames_visible: bool,
        steps: &[Step],
        b: &'c Builder,
    ) -> Result<Value<'c>, Refusal>;
    /// The constrained latents (`z = T(u)`) copied since the last call: body `z`, body `u`.
    fn take_constrained(&mut self) -> Vec<(NodeId, NodeId, Transform)>;
}

/// The body-mode state of a lowerer.
pub(super) struct BodyCtx<'r, 'c> {
    pub(super) outer: &'r mut (dyn Outer<'c> + 'r),
    /// False inside a function called from the body (it sees only globals).
    pub(super) frames_visible: bool,
    /// The first rule the body failed.
    pub(super) refusal: Option<Refusal>,
    /// Each sampled latent's name hint and loop indices, in order.
    pub(super) names: Vec<(String, Vec<i64>)>,
}

/// The outer side of a body: the enclosing scopes, and what has been copied from them.
struct Env<'o, 'b> {
    frames: &'o [Map<String, Value<'b>>],
    globals: &'o Map<String, Global<'b>>,
    from: &'b Builder,
    constrained: &'o Map<NodeId, (Var<'b>, Transform)>,
    latent_names: &'o [PendingLatent<'b>],
    params: &'o [ParamSpec],
    copied: HashMap<NodeId, NodeId, FastBuild>,
    shared: Vec<Shared>,
    new_constrained: Vec<(NodeId, NodeId, Transform)>,
}

impl<'o, 'b> Env<'o, 'b> {
    fn lookup(&self, name: &str, frames_visible: bool) -> Option<&'o Value<'b>> {
        let local = if frames_visible {
            self.frames.iter().rev().find_map(|s| s.get(name))
        } else {
            None
        };
        local.or_else(|| self.globals.get(name).map(|g| &g.value))
    }

    /// An outer number as a body number: its cone copied, its inputs the body's parameters.
    fn import<'c>(&mut self, v: Var<'b>, b: &'c Builder) -> Var<'c> {
        if let Some(c) = v.as_const() {
            return b.constant(c);
        }
        let shared = &mut self.shared;
        let (latents, params) = (self.latent_names, self.params);
        let mut input = |node: Node| {
            let (s, name) = match node {
                Node::Param(k) => (
                    Shared::Param(k),
                    params.get(k as usize).map_or("theta", |p| p.name.as_str()),
                ),
                Node::Latent(i) => (
                    Shared::Latent(i),
                    latents.get(i as usize).map_or("z", |l| l.name.as_str()),
                ),
                _ => unreachable!("only inputs are handed over"),
            };
            let k = match shared.iter().position(|x| *x == s) {
                Some(k) => k,
                None => {
                    shared.push(s);
                    b.param(name);
                    shared.len() - 1
                }
            };
            b.param_at(k).expect("declared above").id()
        };
        let id = b.import(self.from, v.id(), &mut self.copied, &mut input);
        if let Some(&(u, t)) = self.constrained.get(&v.id()) {
            let u_body = b.import(self.from, u.id(), &mut self.copied, &mut input);
            self.new_constrained.push((id, u_body, t));
        }
        b.handle(id)
    }

    /// A whole outer value in the body.
    fn import_value<'c>(&mut self, v: &Value<'b>, b: &'c Builder) -> Value<'c> {
        match v {
            Value::Num(x) => Value::Num(self.import(*x, b)),
            Value::Unit => Value::Unit,
            Value::Array(items, shape) => {
                let items = items.iter().map(|it| self.import_value(it, b)).collect();
                Value::Array(Rc::new(items), *shape)
            }
            // Packed data holds no node: the same view serves the body.
            Value::Numbers(n) => Value::Numbers(n.clone()),
        }
    }
}

impl<'o, 'b, 'c> Outer<'c> for Env<'o, 'b> {
    fn declared(&self, name: &str, frames_visible: bool) -> Option<bool> {
        if frames_visible && self.frames.iter().any(|s| s.contains_key(name)) {
            return Some(true);
        }
        self.globals.contains_key(name).then_some(false)
    }

    fn read(
        &mut self,
        name: &str,
        frames_visible: bool,
        steps: &[Step],
        b: &'c Builder,
    ) -> Result<Value<'c>, Refusal> {
        let v = self
            .lookup(name, frames_visible)
            .ok_or_else(|| (format!("unknown name `{name}`"), None))?;
        match pick(v.clone(), steps)? {
            Picked::One(v) => Ok(self.import_value(&v, b)),
            Picked::Number(x) => Ok(Value::Num(b.constant(x))),
            Picked::Column(c) => Ok(Value::Num(b.column(&format!("{name}[..]"), c))),
            Picked::Rows(vals) => collapse(&vals, name, b, &mut |nums| {
                if nums.iter().all(|x| x.id() == nums[0].id()) {
                    return Ok(self.import(nums[0], b));
                }
                Err("picks latents or parameters out of an outer array by row".to_string())
            }),
        }
    }

    fn take_constrained(&mut self) -> Vec<(NodeId, NodeId, Transform)> {
        std::mem::take(&mut self.new_constrained)
    }
}

impl<'b, 'r> Lowerer<'b, 'r> {
    /// Refuses the plate being lowered for `why` at `span` (the error only unwinds the body's
    /// lowering; the loop is then unrolled).
    pub(super) fn refuse(&mut self, why: impl Into<String>, span: Span) -> Diag {
        let why = why.into();
        if let Some(body) = self.body.as_mut() {
            body.refusal.get_or_insert((why.clone(), Some(span)));
        }
        Diag::new(span, why, "a loop whose iterations are independent")
    }

    /// Whether this lowerer is lowering a plate's body.
    pub(super) fn in_body(&self) -> bool {
        self.body.is_some()
    }

    /// A number in a body that is the same for every sample but may differ by row (it reads
    /// columns and constants only), and not a constant.
    pub(super) fn row_dependent(&self, v: Var<'b>) -> bool {
        self.in_body() && v.as_const().is_none() && self.b.is_row_constant(v)
    }

    /// A name not declared in the body, read from outside the loop.
    pub(super) fn read_outer(
        &mut self,
        id: &Ident,
        steps: &[Step],
    ) -> Option<Result<Value<'b>, Diag>> {
        let b = self.b;
        let body = self.body.as_mut()?;
        body.outer.declared(&id.name, body.frames_visible)?;
        let r = body.outer.read(&id.name, body.frames_visible, steps, b);
        for (z, u, t) in body.outer.take_constrained() {
            self.constrained.insert(z, (b.handle(u), t));
        }
        let cost = r.as_ref().map_or(0, |v| v.size());
        Some(match r {
            Ok(v) => self.tick(id.span, cost_steps(cost)).map(|()| v),
            Err((why, at)) => Err(self.refuse(why, at.unwrap_or(id.span))),
        })
    }

    /// The index steps of a chain whose indices may depend on the loop variable.
    pub(super) fn body_index(&mut self, index: &super::super::ast::Expr) -> Result<Step, Diag> {
        let v = self.expr(index)?;
        let v = self.num(v, index.span)?;
        if v.as_const().is_some() {
            let i = self.const_int(index, "an array index")?;
            return Ok(Step::At(i, index.span));
        }
        let Some(rows) = self.b.row_values(v) else {
            return Err(self.refuse("an index depends on a latent or parameter", index.span));
        };
        self.tick(index.span, cost_steps(rows.len() as u64))?;
        let ix: Option<Rc<[i64]>> = rows
            .iter()
            .map(|&x| (x == x.trunc() && x.abs() <= 1e15).then_some(x as i64))
            .collect();
        match ix {
            Some(ix) => Ok(Step::Rows(ix, index.span)),
            None => Err(self.refuse("an index is not an integer in some row", index.span)),
        }
    }

    /// Per-row body values as one value (an array of the body indexed by row).
    pub(super) fn collapse_rows(
        &mut self,
        vals: &[Value<'b>],
        span: Span,
    ) -> Result<Value<'b>, Diag> {
        let b = self.b;
        let r = collapse(vals, "row", b, &mut |nums| {
            if nums.iter().all(|x| x.id() == nums[0].id()) {
                Ok(nums[0])
            } else {
                Err("picks latents or parameters out of an array by row".to_string())
            }
        });
        match r {
            Ok(v) => {
                self.tick(span, cost_steps(v.size().saturating_mul(vals.len() as u64)))?;
                Ok(v)
            }
            Err((why, at)) => Err(self.refuse(why, at.unwrap_or(span))),
        }
    }

    /// A `for` loop: a plate when the policy asks for one and the loop qualifies, else
    /// unrolled (the note says which and why).
    pub(super) fn lower_for(
        &mut self,
        var: &Ident,
        lo: i64,
        hi: i64,
        body: &Block,
        span: Span,
    ) -> Result<bool, Diag> {
        let rows = usize::try_from(hi.saturating_sub(lo)).unwrap_or(0);
        if self.in_body() {
            // A loop inside a plate's body is unrolled within the body.
            return Ok(false);
        }
        let policy_refusal = match self.opts.plates {
            PlatePolicy::Off => Some("plates are off (`--plates off`)".to_string()),
            PlatePolicy::Auto if rows < PLATE_MIN_ROWS => Some(format!(
                "{rows} iterations, fewer than {PLATE_MIN_ROWS} (`--plates auto`)"
            )),
            _ if rows == 0 => Some("no iterations".to_string()),
            _ if self.branch_depth > 0 => Some(
                "inside an if-statement on a latent or parameter (the loop's terms count in \
                 one branch only)"
                    .to_string(),
            ),
            _ => None,
        };
        let seen = self.loops.iter().any(|n| n.span == Some(span));
        let outcome = match policy_refusal {
            // Too short for `auto`: whether it would qualify is still worth saying (once
            // per loop of the source; the program is the unrolled one either way).
            Some(why)
                if self.opts.plates == PlatePolicy::Auto
                    && rows > 0
                    && self.branch_depth == 0
                    && !seen =>
            {
                match self.try_plate(var, lo, hi, body, span, false)? {
                    Ok(_) => Err((format!("it qualifies, but has {why}"), None)),
                    Err(refusal) => Err(refusal),
                }
            }
            Some(why) => Err((why, None)),
            None => self.try_plate(var, lo, hi, body, span, true)?,
        };
        let outcome = outcome.and_then(|p| p.ok_or_else(|| ("it qualifies".to_string(), None)));
        match outcome {
            Ok(plate) => {
                self.loops.push(LoopNote {
                    var: var.name.clone(),
                    span: Some(span),
                    rows,
                    outcome: LoopOutcome::Plate {
                        index: self.plates.len(),
                    },
                });
                self.plates.push(plate);
                Ok(true)
            }
            Err((reason, at)) => {
                if !self.loops.iter().any(|n| n.span == Some(span)) {
                    self.loops.push(LoopNote {
                        var: var.name.clone(),
                        span: Some(span),
                        rows,
                        outcome: LoopOutcome::Unrolled { reason, at },
                    });
                }
                Ok(false)
            }
        }
    }

    /// Lowers the loop's body once as a plate; `Ok(Err(..))` when it does not qualify (the
    /// lowerer's state is then as before). An `Err` is a real error (a cancelled compile).
    fn try_plate(
        &mut self,
        var: &Ident,
        lo: i64,
        hi: i64,
        body: &Block,
        span: Span,
        commit: bool,
    ) -> Result<Result<Option<Plate>, Refusal>, Diag> {
        let rows = usize::try_from(hi - lo).unwrap_or(0);
        let steps_before = self.steps;
        if cost_steps(rows as u64) > self.opts.step_limit.saturating_sub(self.steps) {
            // Its columns alone would pass the step limit: unrolling reports the limit.
            return Ok(Err((
                format!("{rows} rows: their columns would pass the step limit"),
                None,
            )));
        }
        self.tick(span, cost_steps(rows as u64))?;
        let bb = Builder::for_rows(self.opts.node_limit, rows);
        let index: Arc<[f64]> = (lo..hi).map(|i| i as f64).collect();
        let mut env = Env {
            frames: &self.frame,
            globals: &self.globals,
            from: self.b,
            constrained: &self.constrained,
            latent_names: &self.latents,
            params: &self.params,
            copied: HashMap::default(),
            shared: Vec::new(),
            new_constrained: Vec::new(),
        };
        let mut scope = Map::default();
        scope.insert(
            var.name.clone(),
            Value::Num(bb.column(&var.name, index.clone())),
        );
        let mut suffix = self.loop_suffix.clone();
        suffix.push(lo);
        let plate_pos = self.loop_suffix.len();
        let mut l = Lowerer {
            b: &bb,
            resolver: self.resolver,
            data: self.data,
            opts: self.opts,
            globals: Map::default(),
            fns: self.fns.clone(),
            frame: vec![scope],
            terms: Vec::new(),
            objective: self.objective,
            minimize: self.minimize,
            latents: Vec::new(),
            params: Vec::new(),
            call_depth: self.call_depth,
            steps: self.steps,
            loop_suffix: suffix,
            name_hint: None,
            used_names: Map::default(),
            constrained: Map::default(),
            data_files: self.data_files.clone(),
            data_columns: self.data_columns.clone(),
            body: Some(BodyCtx {
                outer: &mut env,
                frames_visible: true,
                refusal: None,
                names: Vec::new(),
            }),
            plates: Vec::new(),
            loops: Vec::new(),
            branch_depth: 0,
        };
        let lowered = l.block(body, false);
        let ctx = l.body.take().expect("body mode");
        let refusal = match (ctx.refusal, lowered) {
            (Some(r), _) => Some(r),
            (None, Err(d)) if d.message.contains("compiling was cancelled") => return Err(d),
            (None, Err(d)) => Some((
                format!("its body does not compile once for all rows: {}", d.message),
                Some(d.span),
            )),
            (None, Ok(_)) => bb.row_problem(),
        };
        if let Some(r) = refusal {
            self.steps = steps_before;
            return Ok(Err(r));
        }
        let mut out = bb.sum_hoisting_constants(&l.terms);
        if l.minimize == Some(true) {
            out = -out;
        }
        let (minimize, body_steps, names) = (l.minimize, l.steps, ctx.names);
        let mut kinds = Vec::with_capacity(l.latents.len());
        for p in l.latents {
            match p.kind {
                PendingKind::Done(k) => kinds.push((k, p.span)),
                PendingKind::Family { .. } => {
                    self.steps = steps_before;
                    return Ok(Err((
                        "samples a latent in an objective program".to_string(),
                        Some(p.span),
                    )));
                }
            }
        }
        let columns = bb.columns();
        let shared = std::mem::take(&mut env.shared);
        let mut program = match bb.finish(&[out]) {
            Ok(p) => p,
            Err(e) => {
                self.steps = steps_before;
                return Ok(Err((format!("its body does not build: {e}"), None)));
            }
        };
        if !commit {
            // It qualifies; the loop is unrolled all the same.
            self.steps = steps_before;
            return Ok(Ok(None));
        }
        // The body's latents: the columns it reads, then the row latents, in order.
        let read = program.latents_read();
        let is_column = |k: u32| columns.iter().any(|c| c.0 == k);
        let mut order: Vec<u32> = columns
            .iter()
            .filter(|c| read[c.0 as usize])
            .map(|c| c.0)
            .collect();
        let kept_columns: Vec<Arc<[f64]>> = columns
            .iter()
            .filter(|c| read[c.0 as usize])
            .map(|c| c.1.clone())
            .collect();
        order.extend((0..program.latent_count() as u32).filter(|&k| !is_column(k)));
        program.renumber_latents(&order);
        let stride = kinds.len();
        debug_assert_eq!(order.len(), kept_columns.len() + stride);
        self.minimize = minimize;
        self.steps = body_steps;
        // A row latent is a latent of the model (its name, spec and guide): a step each,
        // as an unrolled `sample` costs.
        self.tick(span, rows.saturating_mul(stride))?;
        // The row latents, named and numbered as unrolling would.
        let first = self.b.latent_count() as u32;
        for r in 0..rows {
            for (q, (kind, at)) in kinds.iter().enumerate() {
                let (hint, suffix) = &names[q];
                let mut suffix = suffix.clone();
                suffix[plate_pos] = lo + r as i64;
                let name = self.unique_name(hint, &suffix);
                self.b
                    .declare_latent(&name, program.latent_transform(kept_columns.len() + q));
                self.latents.push(PendingLatent {
                    name,
                    kind: PendingKind::Done(*kind),
                    span: *at,
                });
            }
        }
        Ok(Ok(Some(Plate {
            var: var.name.clone(),
            span: Some(span),
            rows,
            body: Arc::new(program),
            shared,
            columns: kept_columns,
            row_latents: (0..stride as u32)
                .map(|q| RowLatents {
                    first: first + q,
                    stride: stride as u32,
                })
                .collect(),
        })))
    }
}

/// Lowering steps for `values` values handled row by row.
pub(super) fn cost_steps(values: u64) -> usize {
    usize::try_from(values / VALUES_PER_STEP as u64).unwrap_or(usize::MAX)
}

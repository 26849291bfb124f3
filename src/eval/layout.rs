//! Where each slot's lanes live in a workspace, so that a large tape's sweeps touch little
//! memory: slots share places when their lives do not overlap.
//!
//! A slot must keep its own place when something reads it after the forward sweep: a
//! constant (written once per workspace), a value the same in every lane (computed once per
//! call), the output, and every value the reverse sweeps read. These are *pinned*, numbered
//! first and placed alike in every layout. Every other value is read only by later forward
//! steps, so in the *compact* layout it gets a place from a linear scan over the forward
//! steps (a place is free again after the last step that reads it). A *held* layout
//! ([`hold`]) is the compact one with some more values moved to places of their own, which
//! LYY18's forced sweeps read after the sweep that computed them (`forced_plan.rs` chooses
//! which). Adjoints are placed by the same scan over each reverse plan (an adjoint lives from
//! its first contribution to its step), those of the latents and parameters, read after the
//! sweep, pinned.
//!
//! A pure change of places: every step computes the same lanes from the same values, so
//! results keep their bits in any layout.
//!
//! Not here: the plans (`plan.rs`) and how a workspace picks its layout (`tape.rs`).

use super::instr::{NONE, Op, Plan, Step, each_read, reverse_reads};

/// The forward steps of one layout and the places their values need.
#[derive(Clone, Debug, Default)]
pub(super) struct Layout {
    /// The lane steps, each slot its place in this layout.
    pub steps: Vec<Step>,
    /// The sum-chain terms (parallel to [`Plan::chain_targets`]).
    pub chains: Vec<(u32, bool)>,
    /// Value places a workspace needs.
    pub values: usize,
    /// Places `0..pinned` are the pinned ones (alike in every layout): each holds one value
    /// (or constant) for good. The others are shared by values whose lives do not overlap,
    /// unless a held layout gave them to one value.
    pub pinned: usize,
    /// The pinned places that hold a constant, and its value, where the tape writes them
    /// into every workspace before a sweep (`Tape::prepare`): what the compiled code may
    /// take as known. Empty where nobody said (nothing is then taken as known).
    pub constants: Vec<(u32, f64)>,
    /// Which of its tape's layouts this is.
    pub kind: LayoutKind,
}

/// Which of a tape's layouts: a tape has at most one of each, and a workspace keeps a build
/// choice (`Workspace::choice_for`), and the tape compiled code (`Tape::forward_code`), per
/// kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum LayoutKind {
    /// The compact layout (`place`).
    #[default]
    Compact,
    /// The forced sweeps' layout ([`hold`]).
    Held,
    /// The crisp forward-only plan's (`crisp.rs`).
    ForwardOnly,
    /// The checked layout (`checked.rs`).
    Checked,
}

impl LayoutKind {
    /// How many kinds there are.
    pub const COUNT: usize = 4;
}

/// A compiled tape's slots before placing: every slot numbered in topological order.
pub(super) struct Logical<'a> {
    /// Number of slots.
    pub slots: usize,
    /// Per slot, whether it is constant or the same in every lane (never shared).
    pub uniform: &'a [bool],
    pub uniform_steps: &'a mut Vec<Step>,
    pub steps: Vec<Step>,
    pub chains: Vec<(u32, bool)>,
    /// Adjoint index of each slot (`NONE` where it has none).
    pub adj: &'a [u32],
    pub output: u32,
    pub consts: &'a mut Vec<(u32, f64)>,
    /// The slot of each latent (left as it is: the forced sweeps find latents by step).
    pub latent_slots: &'a [Option<u32>],
    pub param_slots: &'a mut Vec<Option<u32>>,
}

/// What placing gives besides the rewritten inputs.
pub(super) struct Placed {
    pub compact: Layout,
    pub output: u32,
    /// Adjoint places a workspace needs.
    pub adjoints: usize,
    pub out_adj: u32,
    /// The adjoint place of each latent and parameter (`NONE` where it has none).
    pub latent_adj: Vec<u32>,
    pub param_adj: Vec<u32>,
    /// The place of each pinned slot (alike in every layout), `u32::MAX` for the others.
    pub pinned_place: Vec<u32>,
}

/// Rewrites every slot step `st` names (written or read) through `place`.
pub(super) fn rename(st: &mut Step, place: impl Fn(u32) -> u32) {
    st.out = place(st.out);
    match &mut st.op {
        Op::Param { .. } | Op::Latent { .. } => {}
        Op::Unary { a, .. } | Op::StandIn { a, .. } => *a = place(*a),
        Op::Binary { a, b, .. } => (*a, *b) = (place(*a), place(*b)),
        Op::NormalSquare { x, m, s, .. } => (*x, *m, *s) = (place(*x), place(*m), place(*s)),
        Op::SquareDiff { x, m, .. } => (*x, *m) = (place(*x), place(*m)),
        Op::Square { x, s, .. } => {
            *x = place(*x);
            if *s != NONE {
                *s = place(*s);
            }
        }
        Op::PoissonTerm { r, .. } => *r = place(*r),
        Op::SumChain { base, .. } => *base = place(*base),
        Op::If { g, t, e, .. } | Op::Select { g, t, e } | Op::SelectNeg { g, a: t, e } => {
            (*g, *t, *e) = (place(*g), place(*t), place(*e))
        }
        Op::SelectLess { a, b, t, e } | Op::SelectSum { a, b, t, e } => {
            (*a, *b, *t, *e) = (place(*a), place(*b), place(*t), place(*e))
        }
        Op::SelectChain { base, t, e, .. } => {
            (*base, *t, *e) = (place(*base), place(*t), place(*e))
        }
        Op::SelectLatent { t, e, .. } => (*t, *e) = (place(*t), place(*e)),
        Op::SquareDiffSub { x, m, k, .. } => (*x, *m, *k) = (place(*x), place(*m), place(*k)),
        Op::SquareSub { x, k, .. } => (*x, *k) = (place(*x), place(*k)),
        Op::SelectLessLatent { b, t, e, .. } => (*b, *t, *e) = (place(*b), place(*t), place(*e)),
    }
}

/// Places of their own from `next` on, handed out again once given back, the lowest free
/// one first. A loop in the model then gives each iteration's values and adjoints the same
/// places, or places moving by the same amount, which the compiled code can run as a loop
/// (`jit/repeat.rs`). Handed out most recently freed first (for the cache), the
/// 10,000-student survey's places drifted through the free list in no pattern: 83 % of its
/// forward steps and almost none of its reverse ones could loop, against 93 % and most now.
/// The small sets of places a sweep keeps reusing stay in cache either way: the built-in
/// models' DSGD samples ran within 3 % of before.
struct Places {
    next: u32,
    free: std::collections::BinaryHeap<std::cmp::Reverse<u32>>,
}

impl Places {
    fn with_free(next: u32, free: Vec<u32>) -> Places {
        Places {
            next,
            free: free.into_iter().map(std::cmp::Reverse).collect(),
        }
    }

    fn take(&mut self) -> u32 {
        match self.free.pop() {
            Some(std::cmp::Reverse(p)) => p,
            None => {
                self.next += 1;
                self.next - 1
            }
        }
    }

    fn give_back(&mut self, p: u32) {
        self.free.push(std::cmp::Reverse(p));
    }
}

/// Places the slots and adjoints of a compiled tape (see the module doc), rewriting the
/// uniform steps, constants, plans and input slots in place.
pub(super) fn place(l: Logical, plans: [&mut Plan; 2]) -> Placed {
    let n = l.slots;
    let mut pinned = l.uniform.to_vec();
    pinned[l.output as usize] = true;
    for (plan, smooth) in plans.iter().zip([true, false]) {
        for rs in &plan.steps {
            let (reads, k) = reverse_reads(rs, smooth);
            reads[..k].iter().for_each(|&s| pinned[s as usize] = true);
        }
    }
    // Pinned slots first, in slot order.
    let mut pinned_place = vec![u32::MAX; n];
    let mut pinned_count = 0u32;
    for (s, f) in pinned_place.iter_mut().enumerate() {
        if pinned[s] {
            *f = pinned_count;
            pinned_count += 1;
        }
    }
    let (compact, compact_values) = scan_places(
        &l.steps,
        &l.chains,
        &pinned,
        &pinned_place,
        pinned_count,
        Vec::new(),
    );
    let mut steps = l.steps;
    steps
        .iter_mut()
        .for_each(|st| rename(st, |s| compact[s as usize]));
    let chains = l
        .chains
        .iter()
        .map(|&(t, r)| (compact[t as usize], r))
        .collect();
    let compact_layout = Layout {
        steps,
        chains,
        values: compact_values,
        pinned: pinned_count as usize,
        constants: Vec::new(),
        kind: LayoutKind::Compact,
    };

    // Adjoints: those of the latents and parameters (read after the sweep) and of the output
    // (set before it) pinned, first; the others placed per plan.
    let active = l.adj.iter().filter(|&&a| a != NONE).count();
    let input_adj = |slots: &[Option<u32>]| -> Vec<u32> {
        slots
            .iter()
            .map(|s| s.map_or(NONE, |s| l.adj[s as usize]))
            .collect()
    };
    let mut latent_adj = input_adj(l.latent_slots);
    let mut param_adj = input_adj(&l.param_slots[..]);
    let mut out_adj = l.adj[l.output as usize];
    let mut adj_place = vec![u32::MAX; active];
    let mut adj_pinned = 0u32;
    for a in latent_adj.iter().chain(&param_adj).chain([&out_adj]) {
        if *a != NONE && adj_place[*a as usize] == u32::MAX {
            adj_place[*a as usize] = adj_pinned;
            adj_pinned += 1;
        }
    }
    let mut adjoints = adj_pinned as usize;
    for plan in plans {
        adjoints = adjoints.max(place_adjoints(plan, &adj_place, adj_pinned));
        for rs in &mut plan.steps {
            rename(&mut rs.step, |s| compact[s as usize]);
        }
    }
    for a in latent_adj
        .iter_mut()
        .chain(&mut param_adj)
        .chain([&mut out_adj])
    {
        if *a != NONE {
            *a = adj_place[*a as usize];
        }
    }

    l.uniform_steps
        .iter_mut()
        .for_each(|st| rename(st, |s| pinned_place[s as usize]));
    l.consts
        .iter_mut()
        .for_each(|(s, _)| *s = pinned_place[*s as usize]);
    for s in l.param_slots.iter_mut() {
        *s = s.map(|s| pinned_place[s as usize]);
    }
    Placed {
        compact: compact_layout,
        output: pinned_place[l.output as usize],
        adjoints,
        out_adj,
        latent_adj,
        param_adj,
        pinned_place,
    }
}

/// The place of every slot (pinned ones as in `pinned_place`) and the number of places: a
/// linear scan over the lane steps, in which a slot's place is free again after the last step
/// that reads it. Places come from `free` and those given back (the lowest first), then from
/// `first` on. A slot no step writes (fused away) gets place 0; nothing reads it. The compact
/// layout's scan, and the crisp forward-only plan's (`crisp.rs`).
pub(super) fn scan_places(
    steps: &[Step],
    chains: &[(u32, bool)],
    pinned: &[bool],
    pinned_place: &[u32],
    first: u32,
    free: Vec<u32>,
) -> (Vec<u32>, usize) {
    let n = pinned.len();
    let mut last_read = vec![0usize; n];
    for (i, st) in steps.iter().enumerate() {
        each_read(st, chains, |o| last_read[o as usize] = i);
    }
    let mut place: Vec<u32> = (0..n)
        .map(|s| if pinned[s] { pinned_place[s] } else { 0 })
        .collect();
    let mut live = vec![false; n];
    let mut places = Places::with_free(first, free);
    for (i, st) in steps.iter().enumerate() {
        // Operands read here for the last time give their places back first, so the result
        // may take one of them: a step reads all its operands before it writes.
        each_read(st, chains, |o| {
            let o = o as usize;
            if live[o] && last_read[o] == i {
                places.give_back(place[o]);
                live[o] = false;
            }
        });
        let out = st.out as usize;
        if !pinned[out] {
            place[out] = places.take();
            // A result nobody reads (none in a compiled tape) frees its place at once.
            live[out] = last_read[out] > i;
            if !live[out] {
                places.give_back(place[out]);
            }
        }
    }
    (place, places.next as usize)
}

/// Places the adjoints of `plan` not already placed in `pinned` (those from `first` on) by a
/// linear scan over its steps: an adjoint lives from its first contribution to its last use
/// (its own step's read). A step's own adjoint never shares a place with one of its targets,
/// as births are placed before deaths at each step. Rewrites the plan's adjoint indices;
/// returns the number of places.
fn place_adjoints(plan: &mut Plan, pinned: &[u32], first: u32) -> usize {
    let active = pinned.len();
    let mut birth = vec![usize::MAX; active];
    let mut death = vec![0usize; active];
    let each = |plan: &Plan, i: usize, f: &mut dyn FnMut(u32)| {
        let rs = &plan.steps[i];
        f(rs.ad);
        rs.to
            .iter()
            .filter(|t| t.adj != NONE)
            .for_each(|t| f(t.adj));
        if let Op::SumChain { from, to, .. } = rs.step.op {
            plan.chain_targets[from as usize..to as usize]
                .iter()
                .filter(|t| t.adj != NONE)
                .for_each(|t| f(t.adj));
        }
    };
    for i in 0..plan.steps.len() {
        each(plan, i, &mut |a| {
            let a = a as usize;
            birth[a] = birth[a].min(i);
            death[a] = i;
        });
    }
    let mut place = pinned.to_vec();
    let mut places = Places::with_free(first, Vec::new());
    let mut involved = Vec::new();
    for i in 0..plan.steps.len() {
        involved.clear();
        each(plan, i, &mut |a| involved.push(a as usize));
        for &a in &involved {
            if place[a] == u32::MAX && birth[a] == i {
                place[a] = places.take();
            }
        }
        for &a in &involved {
            if pinned[a] == u32::MAX && death[a] == i && birth[a] != usize::MAX {
                places.give_back(place[a]);
                birth[a] = usize::MAX; // given back once, though named twice
            }
        }
    }
    let at = |a: u32| if a == NONE { NONE } else { place[a as usize] };
    for rs in &mut plan.steps {
        rs.ad = at(rs.ad);
        for t in &mut rs.to {
            t.adj = at(t.adj);
        }
    }
    for t in &mut plan.chain_targets {
        t.adj = at(t.adj);
    }
    for z in &mut plan.zero {
        *z = at(*z);
    }
    places.next as usize
}

/// `compact` with the value of every step `i` with `held[i]` moved to a place of its own
/// (numbered from `compact.values` on) unless it is pinned already: such a value stays in
/// its place after the sweep that computed it, for LYY18's forced sweeps to read. The place
/// it leaves stays unused while the value would have lived there, so no other value moves.
pub(super) fn hold(compact: &Layout, held: &[bool]) -> Layout {
    // Per compact place, the own place of the value it holds at this point of the sweep
    // (`NONE`: the value is where the compact layout put it).
    let mut own = vec![NONE; compact.values];
    let mut next = compact.values as u32;
    let mut steps = Vec::with_capacity(compact.steps.len());
    let mut chains = compact.chains.clone();
    for (i, st) in compact.steps.iter().enumerate() {
        let out = st.out;
        let at = |p: u32| match own[p as usize] {
            NONE => p,
            q => q,
        };
        let mut st = *st;
        rename(&mut st, at);
        if let Op::SumChain { from, to, .. } = st.op {
            for (t, _) in &mut chains[from as usize..to as usize] {
                *t = at(*t);
            }
        }
        st.out = if held[i] && out as usize >= compact.pinned {
            next += 1;
            next - 1
        } else {
            out
        };
        own[out as usize] = if st.out == out { NONE } else { st.out };
        steps.push(st);
    }
    Layout {
        steps,
        chains,
        values: next as usize,
        pinned: compact.pinned,
        constants: compact.constants.clone(),
        kind: LayoutKind::Held,
    }
}

//! What LYY18's forced sweeps know about a tape beyond its compact layout: which step computes
//! each value a step reads and which steps read each value (the dependency graph over the
//! lane steps), where each if-statement and latent is computed, and the *forced layout*:
//! which values keep a place of their own after a sweep. Built the first time a forced sweep
//! runs on the tape, so that other estimators pay nothing for it.
//!
//! A forced sweep right after a crisp sweep of the same chunk redoes the steps downstream of
//! what changed (a moved latent, a forced if-statement: their *cone*) and reads every other
//! value it needs from the workspace. A value in a place of its own is still there; a value
//! whose place the compact layout shared has been overwritten, so the sweep computes it again
//! (with whatever it reads in turn). Which values to hold is a trade of memory against work:
//! holding every value (a place per slot) streams the whole program through the caches at
//! every forced sweep, holding none makes a cone's inputs cost their whole history. The
//! forced layout holds values so that no step waits for more than [`RECOMPUTE_STEPS`] steps
//! to compute again what it reads (those values and, in turn, what they read that is not
//! held): scanning the steps in order, a step whose operands would cost more holds the
//! costliest of them until they do not. So a forced sweep costs at most a few times what its
//! cone computes, and the layout holds only the values that are costly to recompute or read
//! in numbers (the terms of a long sum). A tape small enough for its every value to stay in
//! cache ([`HOLD_ALL_PLACES`]) holds every value.
//!
//! Not here: the forced sweeps themselves (`forced.rs`), the layouts' places (`layout.rs`).

use super::instr::{NONE, Op, each_read};
use super::layout::{self, Layout};

/// The most steps a step of a forced sweep may need to recompute for its operands (see the
/// module doc).
pub(super) const RECOMPUTE_STEPS: u32 = 4;

/// A tape whose values all fit in this many places (128 bytes each: 512 KB, the L2 cache
/// of a core of the development machine) holds every value in the forced layout.
pub(super) const HOLD_ALL_PLACES: usize = 4096;

/// The dependency graph of a tape's lane steps and its forced layout (see the module doc).
/// Steps are numbered as in the compact layout; the forced layout's steps are in the same
/// order.
#[derive(Debug)]
pub(super) struct ForcedPlan {
    /// The lane steps with the held values in places of their own.
    pub layout: Layout,
    /// Per step, the steps whose values it reads (`deps[deps_at[i]..deps_at[i + 1]]`);
    /// values no lane step computes (constants, uniform values) are left out.
    deps_at: Vec<u32>,
    deps: Vec<u32>,
    /// Per step, the steps that read its value, in increasing order (`readers_at` as
    /// `deps_at`).
    readers_at: Vec<u32>,
    readers: Vec<u32>,
    /// Per step, whether its value keeps its place after a sweep (a bit set).
    held: Vec<u64>,
    /// The step of each if-statement and each latent (`NONE`: none among the lane steps).
    pub if_step: Vec<u32>,
    pub latent_step: Vec<u32>,
    /// Values held beyond those every layout pins (for tests and benchmark reports).
    pub extra_held: usize,
    /// Whether every value is held: a forced sweep then never recomputes what it reads.
    pub holds_all: bool,
}

impl ForcedPlan {
    /// The forced plan of a tape with lane steps `compact` (its compact layout), `if_count`
    /// if-statements and `latent_count` latents.
    pub fn new(compact: &Layout, if_count: usize, latent_count: usize) -> ForcedPlan {
        let n = compact.steps.len();
        // Who computed the value a place holds at each point of the sweep.
        let mut writer = vec![NONE; compact.values];
        let mut deps_at = Vec::with_capacity(n + 1);
        let mut deps = Vec::with_capacity(2 * n);
        let mut if_step = vec![NONE; if_count];
        let mut latent_step = vec![NONE; latent_count];
        deps_at.push(0);
        for (i, st) in compact.steps.iter().enumerate() {
            each_read(st, &compact.chains, |p| {
                let w = writer[p as usize];
                if w != NONE {
                    deps.push(w);
                }
            });
            deps_at.push(deps.len() as u32);
            writer[st.out as usize] = i as u32;
            match st.op {
                Op::If { index, .. } => if_step[index as usize] = i as u32,
                Op::Latent { i: j } => latent_step[j as usize] = i as u32,
                _ => {}
            }
        }
        let (readers_at, readers) = transpose(&deps_at, &deps);
        let pinned = |i: usize| (compact.steps[i].out as usize) < compact.pinned;
        let hold_all = compact.pinned + (0..n).filter(|&i| !pinned(i)).count() <= HOLD_ALL_PLACES;
        let mut held: Vec<bool> = (0..n).map(|i| hold_all || pinned(i)).collect();
        // Steps to compute a value again: itself and what it reads that is not held. A step
        // whose operands would cost more than `RECOMPUTE_STEPS` holds the costliest of them
        // until they do not, so no step of a cone waits for more than that.
        let mut cost = vec![0u32; n];
        let mut open = Vec::new();
        for i in 0..n {
            open.clear();
            open.extend(
                deps[deps_at[i] as usize..deps_at[i + 1] as usize]
                    .iter()
                    .filter(|&&d| !held[d as usize])
                    .map(|&d| (cost[d as usize], d)),
            );
            open.sort_unstable();
            open.dedup_by_key(|&mut (_, d)| d);
            let mut total: u32 = open.iter().map(|&(c, _)| c).sum();
            while total > RECOMPUTE_STEPS {
                let (c, d) = open.pop().expect("a positive total has a term");
                held[d as usize] = true;
                total -= c;
            }
            cost[i] = 1 + total;
        }
        let extra_held = (0..n).filter(|&i| held[i] && !pinned(i)).count();
        let holds_all = held.iter().all(|&h| h);
        let layout = layout::hold(compact, &held);
        let mut bits = vec![0u64; n.div_ceil(64)];
        for (i, _) in held.iter().enumerate().filter(|(_, h)| **h) {
            bits[i / 64] |= 1 << (i % 64);
        }
        ForcedPlan {
            layout,
            deps_at,
            deps,
            readers_at,
            readers,
            held: bits,
            if_step,
            latent_step,
            extra_held,
            holds_all,
        }
    }

    /// Number of lane steps.
    pub fn len(&self) -> usize {
        self.layout.steps.len()
    }

    /// The steps whose values step `i` reads.
    #[inline]
    pub fn deps(&self, i: usize) -> &[u32] {
        &self.deps[self.deps_at[i] as usize..self.deps_at[i + 1] as usize]
    }

    /// The steps that read step `i`'s value.
    #[inline]
    pub fn readers(&self, i: usize) -> &[u32] {
        &self.readers[self.readers_at[i] as usize..self.readers_at[i + 1] as usize]
    }

    /// Whether step `i`'s value keeps its place after a sweep in the forced layout.
    #[inline]
    pub fn held(&self, i: usize) -> bool {
        self.held[i / 64] >> (i % 64) & 1 == 1
    }
}

/// The reverse of a graph given as adjacency lists (`at`, `to`): for each node, the nodes
/// whose lists name it, in increasing order.
fn transpose(at: &[u32], to: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = at.len() - 1;
    let mut count = vec![0u32; n + 1];
    for &d in to {
        count[d as usize + 1] += 1;
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let mut fill = count.clone();
    let mut from = vec![0u32; to.len()];
    for i in 0..n {
        for &d in &to[at[i] as usize..at[i + 1] as usize] {
            from[fill[d as usize] as usize] = i as u32;
            fill[d as usize] += 1;
        }
    }
    (count, from)
}

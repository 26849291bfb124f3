//! Every sample of a large batch, its gradients and values kept, computed in parts so that
//! only a part's buffers are held and a cancel is read between parts (Python's
//! `gradients(n)` and `fit`'s per-sample answers).

use std::sync::atomic::{AtomicBool, Ordering};

use super::super::StreamKey;
use super::Engine;
use crate::eval::CHUNK;
use crate::family::FamilyError;

/// Node evaluations per part of [`Engine::sample_all`] (see [`Engine::block_lanes`]).
const BLOCK_WORK: usize = 1 << 22;

/// Most lanes per part of [`Engine::sample_all`], for the smallest programs.
const BLOCK_MAX_LANES: usize = 1 << 16;

/// The samples of [`Engine::sample_all`].
#[derive(Clone, Debug, PartialEq)]
pub struct AllSamples {
    /// Per-sample gradients, sample-major (`[l * dim + p]`).
    pub gradients: Vec<f64>,
    /// `f` per sample under the estimator's semantics.
    pub values: Vec<f64>,
}

impl Engine {
    /// Every sample of a batch of `n` at `theta` (its gradients sample-major, `[l * dim +
    /// p]`, and its values), the same bits as [`Engine::evaluate`] of the whole batch, computed
    /// in parts of about `block` lanes (whole chunks) so that only a part's buffers are held
    /// and `cancel` is read between parts: `Ok(None)` once it has risen. `block` does not
    /// change the result; [`Engine::block_lanes`] is a good one.
    pub fn sample_all(
        &mut self,
        theta: &[f64],
        key: StreamKey,
        n: usize,
        block: usize,
        cancel: &AtomicBool,
    ) -> Result<Option<AllSamples>, FamilyError> {
        let d = self.problem.dim();
        let chunks_per_block = block.div_ceil(CHUNK).max(1);
        let mut out = AllSamples {
            gradients: Vec::new(),
            values: Vec::new(),
        };
        // Sized at once when the memory is there (callers check `n` against the machine's
        // memory first); otherwise grown part by part, never an abort here.
        let _ = out.gradients.try_reserve_exact(n.saturating_mul(d));
        let _ = out.values.try_reserve_exact(n);
        let chunks = n.div_ceil(CHUNK);
        let mut first_chunk = 0;
        while first_chunk < chunks {
            if cancel.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let first = first_chunk * CHUNK;
            let lanes = (chunks_per_block * CHUNK).min(n - first);
            self.evaluate_part(theta, key, first_chunk, lanes, false)?;
            out.gradients.extend(
                (0..lanes)
                    .flat_map(|l| (0..d).map(move |p| (l, p)))
                    .map(|(l, p)| self.sample_gradient(l, p)),
            );
            out.values.extend_from_slice(self.values());
            first_chunk += chunks_per_block;
        }
        Ok(Some(out))
    }

    /// Lanes per part of [`Engine::sample_all`] for this problem: about `BLOCK_WORK`
    /// node evaluations (about 10 ms of temperature's samples on two cores: the longest a
    /// cancel waits), and at least a chunk per thread of the pool. Parts this size cost
    /// nothing measurable against one batch (`tests/perf_engine.rs` checks the bits).
    pub fn block_lanes(&self) -> usize {
        let nodes = self.problem.program().node_count().max(1);
        let least = CHUNK * rayon::current_num_threads().max(1);
        (BLOCK_WORK / nodes).clamp(least, BLOCK_MAX_LANES.max(least))
    }
}

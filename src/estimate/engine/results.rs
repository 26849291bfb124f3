//! What an engine's last batch left: the mean gradient, each sample's
//! gradient by component or by sample, their spread (variances and norms), the smooth and
//! crisp values, and the first non-finite number.

use super::super::column_sums::{Summand, add_rows};
use super::{Engine, NonFinite};
use crate::eval::CHUNK;
#[cfg(doc)]
use crate::eval::Values;

impl Engine {
    /// The batch-mean gradient of the last [`Engine::evaluate`].
    pub fn mean_gradient(&self) -> &[f64] {
        &self.mean
    }

    /// The last batch's gradient samples chunk by chunk: each chunk's width `w` and its block,
    /// component-major (`block[p * w + l]`, see `Estimator::chunk`).
    /// Doubles per chunk in [`Engine::sums`]: the dimension rounded up to a cache line
    /// (at least one, so that a chunk of a problem without parameters still has a row).
    pub(super) fn sums_stride(&self) -> usize {
        self.problem.dim().max(1).next_multiple_of(8)
    }

    fn blocks(&self) -> impl Iterator<Item = (usize, &[f64])> + Clone + '_ {
        let batch = self.batch;
        self.grads[..batch * self.problem.dim()]
            .chunks(CHUNK * self.problem.dim().max(1))
            .enumerate()
            .map(move |(c, block)| ((batch - c * CHUNK).min(CHUNK), block))
    }

    /// Component `p` of sample `l`'s gradient in the last batch.
    pub fn sample_gradient(&self, l: usize, p: usize) -> f64 {
        // Chunk `c`'s block starts after `c` full chunks (see `Engine::blocks`).
        let c = l / CHUNK;
        let w = (self.batch - c * CHUNK).min(CHUNK);
        self.grads[c * CHUNK * self.problem.dim() + p * w + l % CHUNK]
    }

    /// Component `p` of every sample's gradient in the last batch, in lane order.
    pub fn component(&self, p: usize) -> impl Iterator<Item = f64> + Clone + '_ {
        self.blocks()
            .flat_map(move |(w, block)| block[p * w..(p + 1) * w].iter().copied())
    }

    /// The spread of the last batch's gradient samples: per component the sample variance
    /// (ddof 1, from the mean by a second pass) into `var`, per sample the Euclidean norm
    /// into `norms`.
    ///
    /// The same numbers as [`Engine::component`] summed one component after another (lane
    /// order within a component, component order within a sample's squared norm), but
    /// several components' sums advance together (`column_sums.rs`): a sum over a thousand
    /// samples is a chain of dependent additions, and a measurement of a model with many
    /// parameters spent most of its statistics waiting on them.
    pub fn gradient_spread(&self, var: &mut Vec<f64>, norms: &mut Vec<f64>) {
        let d = self.problem.dim();
        let n = self.batch;
        var.clear();
        var.resize(d, 0.0);
        norms.clear();
        norms.resize(n, 0.0);
        let mut sum = vec![0.0; d];
        for (c, (w, block)) in self.blocks().enumerate() {
            let sq = &mut norms[c * CHUNK..c * CHUNK + w];
            for row in block.chunks_exact(w) {
                for (q, &x) in sq.iter_mut().zip(row) {
                    *q += x * x;
                }
            }
            add_rows(&mut sum, block, w, Summand::Value);
        }
        for q in norms.iter_mut() {
            *q = q.sqrt();
        }
        if n < 2 {
            return;
        }
        let mean: Vec<f64> = sum.iter().map(|s| s / n as f64).collect();
        for (w, block) in self.blocks() {
            add_rows(var, block, w, Summand::SquaredDeviation(&mean));
        }
        for v in var.iter_mut() {
            *v /= (n - 1) as f64;
        }
    }

    /// The per-sample gradients of the last batch, sample-major (`[l * dim + p]`), copied
    /// out (for tests and diagnostics; runs read [`Engine::component`] and
    /// [`Engine::gradient_spread`]).
    pub fn sample_gradients(&self) -> Vec<f64> {
        let d = self.problem.dim();
        (0..self.batch)
            .flat_map(|l| (0..d).map(move |p| (l, p)))
            .map(|(l, p)| self.sample_gradient(l, p))
            .collect()
    }

    /// `f` per sample under the estimator's semantics: after [`Engine::step`], only checked
    /// ([`Values::Checked`]: finite exactly where `f` is, not `f` itself).
    pub fn values(&self) -> &[f64] {
        &self.values[..self.batch]
    }

    /// Crisp `f` per sample (empty unless asked for).
    pub fn crisp_values(&self) -> &[f64] {
        if self.want_crisp {
            &self.crisp[..self.batch]
        } else {
            &[]
        }
    }

    /// The first non-finite value or mean-gradient component of the last batch.
    pub fn first_non_finite(&self) -> Option<NonFinite> {
        if let Some((lane, &value)) = self
            .values()
            .iter()
            .enumerate()
            .find(|(_, v)| !v.is_finite())
        {
            return Some(NonFinite::Value { lane, value });
        }
        if let Some(touched) = self.touched() {
            // A sparse step's mean is zero elsewhere.
            return touched
                .iter()
                .map(|&p| (p as usize, self.mean[p as usize]))
                .find(|(_, v)| !v.is_finite())
                .map(|(component, value)| NonFinite::Gradient { component, value });
        }
        self.mean
            .iter()
            .enumerate()
            .find(|(_, v)| !v.is_finite())
            .map(|(component, &value)| NonFinite::Gradient { component, value })
    }
}

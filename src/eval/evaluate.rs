//! Running a tape over a batch: the values of its output, and values with per-sample
//! gradients, chunk by chunk.
//!
//! Not here: the sweeps over one chunk (`sweep.rs`) and LYY18's per-sample forcing
//! (`forced.rs`).

use crate::ir::Semantics;

use super::instr::{CHUNK, NONE};
use super::sweep;
use super::tape::Tape;
use super::workspace::Workspace;

/// Per-sample results of [`Tape::gradient`]: the value and its gradient with respect to every
/// latent and every parameter. Latent-major: `latents[i * batch + lane]`.
#[derive(Clone, Debug, Default)]
pub struct BatchGradient {
    pub batch: usize,
    pub value: Vec<f64>,
    pub latents: Vec<f64>,
    pub params: Vec<f64>,
    /// The tape and batch size for which the rows of latents and parameters without an
    /// adjoint hold zeros: [`Tape::gradient`] writes them once, not at every call (for a
    /// survey with tens of thousands of fixed latents, that was megabytes per chunk).
    zero_rows: Option<(u64, usize)>,
}

impl BatchGradient {
    /// Storage for `batch` samples of `tape`'s program.
    pub fn new(tape: &Tape, batch: usize) -> BatchGradient {
        let mut g = BatchGradient::default();
        g.resize(tape, batch);
        g
    }

    /// Resizes for `batch` samples (allocates only when growing).
    pub fn resize(&mut self, tape: &Tape, batch: usize) {
        if self.zero_rows != Some((tape.id, batch)) {
            self.zero_rows = None;
        }
        self.batch = batch;
        self.value.resize(batch, 0.0);
        self.latents.resize(tape.latent_count() * batch, 0.0);
        self.params.resize(tape.param_count() * batch, 0.0);
    }

    /// d value / d z_i for sample `lane`.
    pub fn latent(&self, i: usize, lane: usize) -> f64 {
        self.latents[i * self.batch + lane]
    }

    /// d value / d theta_k for sample `lane`.
    pub fn param(&self, k: usize, lane: usize) -> f64 {
        self.params[k * self.batch + lane]
    }
}

impl Tape {
    /// Values of the output for `batch` samples. `latents` is latent-major
    /// (`latents[i * batch + lane]`), `out` has `batch` entries.
    pub fn forward(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: &[f64],
        out: &mut [f64],
    ) {
        let batch = out.len();
        self.check_inputs(ws, params, latents, batch);
        let output = self.output as usize;
        self.forward_chunks(ws, semantics, params, latents, batch, |ws, start, w| {
            out[start..start + w].copy_from_slice(&ws.values[output][..w]);
        });
        ws.note_sweep(semantics, batch);
    }

    /// Values and per-sample gradients for `grad.batch` samples. The rows of latents and
    /// parameters the output does not depend on (or that `compile_active` left out) are
    /// zero: written at the first call for this tape and batch size, then left as they are.
    pub fn gradient(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: &[f64],
        grad: &mut BatchGradient,
    ) {
        let batch = grad.batch;
        self.check_inputs(ws, params, latents, batch);
        assert_eq!(
            grad.latents.len(),
            self.latent_count() * batch,
            "gradient buffer size"
        );
        assert_eq!(
            grad.params.len(),
            self.param_count() * batch,
            "gradient buffer size"
        );
        let zero_rows = grad.zero_rows == Some((self.id, batch));
        self.forward_chunks(ws, semantics, params, latents, batch, |ws, start, w| {
            sweep::reverse_chunk(self, ws, semantics);
            ws.note_sweep(semantics, batch);
            grad.value[start..start + w].copy_from_slice(&ws.values[self.output as usize][..w]);
            for (places, dest) in [
                (&self.latent_adj, &mut grad.latents),
                (&self.param_adj, &mut grad.params),
            ] {
                for (i, &a) in places.iter().enumerate() {
                    let d = &mut dest[i * batch + start..i * batch + start + w];
                    if a != NONE {
                        d.copy_from_slice(&ws.adjoints[a as usize][..w]);
                    } else if !zero_rows {
                        d.fill(0.0);
                    }
                }
            }
        });
        grad.zero_rows = Some((self.id, batch));
    }

    /// Prepares the workspace, evaluates what is the same in every lane once, then sweeps
    /// forward chunk by chunk, handing each chunk's first lane and width to `after_chunk`
    /// (which reads the chunk's values, or sweeps it back).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn forward_chunks(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: &[f64],
        batch: usize,
        mut after_chunk: impl FnMut(&mut Workspace, usize, usize),
    ) {
        self.prepare(ws);
        sweep::uniform_pass(self, ws, semantics, params);
        let mut start = 0;
        while start < batch {
            let w = CHUNK.min(batch - start);
            let input = sweep::Input {
                params,
                latents,
                batch,
                start,
                w,
                force: None,
            };
            sweep::forward_chunk(self, ws, semantics, &input);
            after_chunk(ws, start, w);
            start += w;
        }
    }
}

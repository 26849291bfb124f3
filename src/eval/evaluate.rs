//! Running a tape over a batch: the values of its output, and values with per-sample
//! gradients, chunk by chunk.
//!
//! Not here: the sweeps over one chunk (`sweep.rs`) and LYY18's per-sample forcing
//! (`forced.rs`).

use crate::ir::Semantics;

use crate::aligned::F64Buf;

use super::input::Latents;
use super::instr::{CHUNK, NONE};
use super::tape::{Tape, Values};
use super::workspace::Workspace;
use super::{reverse, sweep};

/// Per-sample results of [`Tape::gradient`]: the value and its gradient with respect to
/// the latents and every parameter. Latent-major: row `r` of `latents` is
/// `latents[r * batch..(r + 1) * batch]`, the gradient with respect to latent `r` unless the
/// buffer was made for some latents only ([`BatchGradient::for_latents`]).
#[derive(Clone, Debug, Default)]
pub struct BatchGradient {
    pub batch: usize,
    pub value: F64Buf,
    pub latents: F64Buf,
    pub params: F64Buf,
    /// The latent of each row, when not every latent has one.
    rows: Option<Vec<u32>>,
    /// The tape and batch size for which the rows of latents and parameters without an
    /// adjoint hold zeros: [`Tape::gradient`] writes them once, not at every call (for a
    /// survey with tens of thousands of fixed latents, that was megabytes per chunk).
    zero_rows: Option<(u64, usize)>,
    /// The rows with an adjoint in the tape of this id, with the adjoint's place: once the
    /// others hold zeros, a sweep writes these alone (a plate's row latents, which the
    /// outer tape never reads, are then not visited at every call).
    adjoint_rows: Option<(u64, Vec<(u32, u32)>)>,
}

impl BatchGradient {
    /// Storage for `batch` samples of `tape`'s program.
    pub fn new(tape: &Tape, batch: usize) -> BatchGradient {
        let mut g = BatchGradient::default();
        g.resize(tape, batch);
        g
    }

    /// Storage for `batch` samples of `tape`'s program with a row for each latent in
    /// `latents` only (increasing indices), in that order: a survey's tens of thousands of
    /// fixed latents, whose gradient nobody reads, then take no memory and no time.
    pub fn for_latents(tape: &Tape, batch: usize, latents: Vec<u32>) -> BatchGradient {
        assert!(
            latents.windows(2).all(|p| p[0] < p[1])
                && latents
                    .last()
                    .is_none_or(|&i| (i as usize) < tape.latent_count()),
            "latents of the tape in increasing order"
        );
        let mut g = BatchGradient {
            rows: Some(latents),
            ..BatchGradient::default()
        };
        g.resize(tape, batch);
        g
    }

    /// Resizes for `batch` samples (allocates only when growing).
    pub fn resize(&mut self, tape: &Tape, batch: usize) {
        if self.zero_rows != Some((tape.id, batch)) {
            self.zero_rows = None;
        }
        self.batch = batch;
        self.value.resize(batch);
        let rows = self.rows.as_ref().map_or(tape.latent_count(), Vec::len);
        self.latents.resize(rows * batch);
        self.params.resize(tape.param_count() * batch);
    }

    /// d value / d z_i for sample `lane`: zero for a latent without a row.
    pub fn latent(&self, i: usize, lane: usize) -> f64 {
        let row = match &self.rows {
            None => Some(i),
            Some(rows) => rows.binary_search(&(i as u32)).ok(),
        };
        row.map_or(0.0, |r| self.latents[r * self.batch + lane])
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
        self.forward_latents(ws, semantics, params, Latents::Values(latents), out);
    }

    /// [`Tape::forward`] with the latents given as values or as reparameterised noise.
    pub fn forward_latents(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: Latents<'_>,
        out: &mut [f64],
    ) {
        let batch = out.len();
        self.check_inputs(ws, params, &latents, batch);
        let output = self.output as usize;
        self.forward_chunks(
            ws,
            semantics,
            (false, Values::Exact),
            params,
            latents,
            batch,
            |ws, start, w| {
                out[start..start + w].copy_from_slice(&ws.values[output][..w]);
            },
        );
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
        self.gradient_latents(
            ws,
            semantics,
            params,
            Latents::Values(latents),
            grad,
            Values::Exact,
        );
    }

    /// [`Tape::gradient`] with the latents given as values or as reparameterised noise, and
    /// the values in `grad.value` exact or only checked (see [`Values`]).
    pub fn gradient_latents(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        params: &[f64],
        latents: Latents<'_>,
        grad: &mut BatchGradient,
        values: Values,
    ) {
        let batch = grad.batch;
        self.check_inputs(ws, params, &latents, batch);
        let rows = grad.rows.as_ref().map_or(self.latent_count(), Vec::len);
        assert_eq!(grad.latents.len(), rows * batch, "gradient buffer size");
        assert_eq!(
            grad.params.len(),
            self.param_count() * batch,
            "gradient buffer size"
        );
        let zero_rows = grad.zero_rows == Some((self.id, batch));
        if grad
            .adjoint_rows
            .as_ref()
            .is_none_or(|(id, _)| *id != self.id)
        {
            let rows: Vec<(u32, u32)> = match &grad.rows {
                None => (0..self.latent_count() as u32)
                    .map(|i| (i, self.latent_adj[i as usize]))
                    .filter(|&(_, a)| a != NONE)
                    .collect(),
                Some(rows) => rows
                    .iter()
                    .enumerate()
                    .map(|(r, &i)| (r as u32, self.latent_adj[i as usize]))
                    .filter(|&(_, a)| a != NONE)
                    .collect(),
            };
            grad.adjoint_rows = Some((self.id, rows));
        }
        let adjoint_rows = grad.adjoint_rows.take();
        self.forward_chunks(
            ws,
            semantics,
            (true, values),
            params,
            latents,
            batch,
            |ws, start, w| {
                reverse::reverse_chunk(self, ws, semantics);
                ws.note_sweep(semantics, batch);
                grad.value[start..start + w].copy_from_slice(&ws.values[self.output as usize][..w]);
                // Row `r` of `dest` from adjoint place `a`, or zeros where there is none.
                let put = |dest: &mut [f64], r: usize, a: u32| {
                    let d = &mut dest[r * batch + start..r * batch + start + w];
                    if a != NONE {
                        // A full chunk's row as one fixed-size copy: inline moves, not a call
                        // to `memmove` per row.
                        match <&mut [f64; CHUNK]>::try_from(&mut *d) {
                            Ok(d) => *d = ws.adjoints[a as usize],
                            Err(_) => d.copy_from_slice(&ws.adjoints[a as usize][..w]),
                        }
                    } else if !zero_rows {
                        d.fill(0.0);
                    }
                };
                match (&grad.rows, &adjoint_rows) {
                    // The rows without an adjoint hold zeros already: the others alone.
                    (_, Some((_, written))) if zero_rows => {
                        for &(r, a) in written {
                            put(&mut grad.latents, r as usize, a);
                        }
                    }
                    (None, _) => {
                        for (r, &a) in self.latent_adj.iter().enumerate() {
                            put(&mut grad.latents, r, a);
                        }
                    }
                    (Some(rows), _) => {
                        for (r, &i) in rows.iter().enumerate() {
                            put(&mut grad.latents, r, self.latent_adj[i as usize]);
                        }
                    }
                }
                for (k, &a) in self.param_adj.iter().enumerate() {
                    put(&mut grad.params, k, a);
                }
            },
        );
        grad.adjoint_rows = adjoint_rows;
        grad.zero_rows = Some((self.id, batch));
    }

    /// Prepares the workspace, evaluates what is the same in every lane once, then sweeps
    /// forward chunk by chunk, handing each chunk's first lane and width to `after_chunk`
    /// (which reads the chunk's values, or, with `reverse`, sweeps it back; `values` says
    /// which the sweep must give).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn forward_chunks(
        &self,
        ws: &mut Workspace,
        semantics: Semantics,
        (reverse, values): (bool, Values),
        params: &[f64],
        latents: Latents<'_>,
        batch: usize,
        mut after_chunk: impl FnMut(&mut Workspace, usize, usize),
    ) {
        self.prepare(ws);
        sweep::uniform_pass(self, ws, semantics, params);
        let layout = self.forward_layout(ws, semantics, reverse, values);
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
                plain_weights: self.plain_weights,
            };
            sweep::forward_chunk(self, layout, ws, semantics, &input);
            after_chunk(ws, start, w);
            start += w;
        }
    }
}

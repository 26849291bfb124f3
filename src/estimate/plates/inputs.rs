//! A call's rows and inputs: which positions of the row sequence a call of a tape runs, the
//! columns of every full-data call laid out once as the calls read them, and the inputs of
//! a call that reads others (drawn rows, or row latents, which change at every sweep).

use crate::eval::CHUNK;

use super::rows::{Outer, Rows};
use super::{BLOCK_ROWS, GROUP_ROWS, PlateRun, PlateScratch};

/// A call's rows: positions `start..start + lanes * per` of the row sequence, `per` to a
/// lane of a tape of `per` rows.
#[derive(Clone, Copy)]
pub(super) struct Call {
    pub(super) start: usize,
    pub(super) lanes: usize,
    pub(super) per: usize,
}

impl Call {
    /// The lanes a call runs: whole chunks, so that the compiled sweeps run (they take whole
    /// chunks only; the interpreter's sweep of a repeated body costs several times theirs).
    pub(super) fn padded(self) -> usize {
        self.lanes.next_multiple_of(CHUNK)
    }

    /// The position in the row sequence of lane `g`'s row `t` (a padding lane's is the last
    /// lane's).
    #[inline(always)]
    pub(super) fn position(self, g: usize, t: usize) -> usize {
        self.start + g.min(self.lanes - 1) * self.per + t
    }
}

impl PlateRun {
    /// Every full-data call's columns laid out as its inputs, in call order (the row
    /// latents' places left at zero).
    pub(super) fn lay_out_columns(&self) -> Vec<f64> {
        let inputs = self.plate.body.latent_count();
        let calls = Self::calls(self.plate.rows);
        let len = calls.map(|c| inputs * c.per * c.padded()).sum();
        let mut laid = vec![0.0; len];
        let mut at = 0;
        for call in Self::calls(self.plate.rows) {
            let size = inputs * call.per * call.padded();
            self.fill_columns(&mut laid[at..at + size], call, Rows::All);
            at += size;
        }
        laid
    }

    /// The calls that cover `count` rows: blocks through the group tape, then the rows left
    /// one to a lane.
    pub(super) fn calls(count: usize) -> impl Iterator<Item = Call> {
        let grouped = count - count % GROUP_ROWS;
        let blocks = (0..grouped).step_by(BLOCK_ROWS).map(move |start| Call {
            start,
            lanes: (BLOCK_ROWS.min(grouped - start)) / GROUP_ROWS,
            per: GROUP_ROWS,
        });
        blocks.chain((grouped < count).then_some(Call {
            start: grouped,
            lanes: count - grouped,
            per: 1,
        }))
    }

    /// Makes a call's inputs ready: `Some(at)` where every lane reads them from
    /// `self.laid[at..]` (a full-data call of a plate without row latents, `at` being the
    /// call's place there), else `None`, each lane reading its buffer of `ps.inputs`.
    pub(super) fn call_inputs(
        &self,
        ps: &mut PlateScratch,
        o: &Outer<'_>,
        call: Call,
        rows: Rows<'_>,
        at: usize,
    ) -> Option<usize> {
        let len = self.plate.body.latent_count() * call.per * call.padded();
        match rows {
            Rows::All if self.plate.row_latents.is_empty() => return Some(at),
            Rows::All => ps.inputs[0][..len].copy_from_slice(&self.laid[at..at + len]),
            Rows::Drawn { .. } => self.fill_columns(&mut ps.inputs[0], call, rows),
        }
        self.fill_row_latents(ps, o, call, rows);
        None
    }

    /// Writes the call's columns: input `t * inputs + j` of lane `g` is column `j` at the
    /// row of position `start + g * per + t`; the padding lanes up to a whole chunk repeat
    /// the last lane.
    fn fill_columns(&self, buf: &mut [f64], call: Call, rows: Rows<'_>) {
        let inputs = self.plate.body.latent_count();
        let nb = call.padded();
        for (j, col) in self.plate.columns.iter().enumerate() {
            for t in 0..call.per {
                let dest = &mut buf[(t * inputs + j) * nb..(t * inputs + j + 1) * nb];
                for (g, x) in dest.iter_mut().enumerate() {
                    *x = col[rows.at(call.position(g, t))];
                }
            }
        }
    }

    /// Writes the call's row latents of every lane (the columns, in lane 0's buffer, copied
    /// to the others first): a row's latent index, location and scale are found once, and
    /// its noise of all lanes is contiguous.
    fn fill_row_latents(&self, ps: &mut PlateScratch, o: &Outer<'_>, call: Call, rows: Rows<'_>) {
        if self.plate.row_latents.is_empty() {
            return;
        }
        let inputs = self.plate.body.latent_count();
        let c = self.plate.columns.len();
        let nb = call.padded();
        let len = inputs * call.per * nb;
        let (first, others) = ps.inputs.split_at_mut(1);
        for buf in &mut others[..o.w - 1] {
            buf[..len].copy_from_slice(&first[0][..len]);
        }
        let w = o.w;
        for (q, rl) in self.plate.row_latents.iter().enumerate() {
            for t in 0..call.per {
                let j = t * inputs + c + q;
                for g in 0..nb {
                    let i = rl.of_row(rows.at(call.position(g, t))) as usize;
                    let (lo, sc) = (o.state.loc(i), o.state.scale(i));
                    let noise = &o.s[i * w..(i + 1) * w];
                    for (buf, &sn) in ps.inputs.iter_mut().zip(noise) {
                        buf[j * nb + g] = lo + sc * sn;
                    }
                }
            }
        }
    }
}

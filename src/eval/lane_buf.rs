//! Arrays of chunk lanes that start on a 64-byte boundary, so that no lane array straddles
//! more cache lines than it must.
//!
//! Why: a `Vec<Lanes>` is only 8-byte aligned, and where the allocator happened to put it
//! decided the speed of a whole run. Measured on AMD Zen 4 (one core, DSGD, batch 16), a
//! workspace 16 bytes off a 64-byte boundary made the sweeps 1.35x slower on textmsg and
//! 1.24x on cheating (32 bytes off: 1.10x on textmsg), because vector loads and stores then
//! split across cache lines; two engines in one process could differ by that much.

use std::ops::{Deref, DerefMut};

use super::instr::{CHUNK, Lanes};

/// One chunk's lanes on a 64-byte boundary (the layout of `Lanes`, with a stricter
/// alignment: 128 bytes, so an array of them has no padding).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
struct Aligned(Lanes);

/// A fixed-length array of [`Lanes`] starting on a 64-byte boundary; used as a `[Lanes]`.
#[derive(Clone, Debug, Default)]
pub(super) struct LaneBuf(Vec<Aligned>);

impl LaneBuf {
    /// `n` chunks of zeros.
    pub(super) fn zeroed(n: usize) -> LaneBuf {
        LaneBuf(vec![Aligned([0.0; CHUNK]); n])
    }

    /// Grows or shrinks to `n` chunks, new ones zero.
    pub(super) fn resize(&mut self, n: usize) {
        self.0.resize(n, Aligned([0.0; CHUNK]));
    }
}

impl Deref for LaneBuf {
    type Target = [Lanes];

    fn deref(&self) -> &[Lanes] {
        // SAFETY: `Aligned` is `repr(C)` with `Lanes` as its only field and no padding (its
        // size, 128 bytes, is a multiple of its alignment), so `n` of them are `n` `Lanes`
        // laid end to end, and `Lanes` needs less alignment than they have.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast::<Lanes>(), self.0.len()) }
    }
}

impl DerefMut for LaneBuf {
    fn deref_mut(&mut self) -> &mut [Lanes] {
        // SAFETY: as in `deref`, through the unique borrow of the vector.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<Lanes>(), self.0.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_start_on_a_64_byte_boundary_and_keep_their_values() {
        const _: () = assert!(std::mem::size_of::<Aligned>() == std::mem::size_of::<Lanes>());
        for n in [1, 3, 17, 1000] {
            let mut b = LaneBuf::zeroed(n);
            assert_eq!(b.as_ptr() as usize % 64, 0, "{n}");
            assert_eq!(b.len(), n);
            b[n - 1][CHUNK - 1] = 2.5;
            b.resize(n + 5);
            assert_eq!(b.as_ptr() as usize % 64, 0, "{n} grown");
            assert_eq!(b[n - 1][CHUNK - 1], 2.5);
            assert_eq!(b[n + 4], [0.0; CHUNK]);
            assert!(b.iter().flatten().filter(|&&x| x != 0.0).count() == 1);
        }
    }
}

//! Buffers of `f64` that start on a 64-byte (cache-line) boundary.
//!
//! Why: a `Vec<f64>` or a `Vec<[f64; 16]>` is only 8-byte aligned, and where the allocator
//! happened to put one decided the speed of a whole run. Measured on AMD Zen 4 (one core,
//! DSGD, batch 16), a tape workspace 16 bytes off a 64-byte boundary made the sweeps 1.35x
//! slower on textmsg and 1.24x on cheating (32 bytes off: 1.10x on textmsg): vector loads and
//! stores then split across cache lines. With two threads, a gradient block that does not
//! start on a line shares its first and last lines with the chunks beside it, which the other
//! thread writes (the per-thread time of one loop differed 2.5x).

use std::ops::{Deref, DerefMut};

/// `N` numbers on a 64-byte boundary (`N` a multiple of 8, so an array of them has no
/// padding).
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug)]
struct Block<const N: usize>([f64; N]);

impl<const N: usize> Block<N> {
    const ZERO: Block<N> = {
        assert!(
            N > 0 && N.is_multiple_of(8),
            "a block fills whole cache lines"
        );
        Block([0.0; N])
    };
}

/// A fixed-length array of `[f64; N]` (`N` a multiple of 8) starting on a 64-byte
/// boundary; used as a `[[f64; N]]`.
#[derive(Clone, Debug, Default)]
pub struct ArrayBuf<const N: usize>(Vec<Block<N>>);

impl<const N: usize> ArrayBuf<N> {
    /// `n` arrays of zeros.
    pub fn zeroed(n: usize) -> Self {
        ArrayBuf(vec![Block::ZERO; n])
    }

    /// Grows or shrinks to `n` arrays, new ones zero.
    pub fn resize(&mut self, n: usize) {
        self.0.resize(n, Block::ZERO);
    }
}

impl<const N: usize> Deref for ArrayBuf<N> {
    type Target = [[f64; N]];

    fn deref(&self) -> &[[f64; N]] {
        // SAFETY: `Block<N>` is `repr(C)` with `[f64; N]` as its only field and no padding
        // (its size, `8 N` bytes, is a multiple of its alignment, 64), so `n` of them are
        // `n` arrays laid end to end, and an array needs less alignment than a block has.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().cast::<[f64; N]>(), self.0.len()) }
    }
}

impl<const N: usize> DerefMut for ArrayBuf<N> {
    fn deref_mut(&mut self) -> &mut [[f64; N]] {
        // SAFETY: as in `deref`, through the unique borrow of the vector.
        unsafe {
            std::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<[f64; N]>(), self.0.len())
        }
    }
}

/// A `[f64]` of any length starting on a 64-byte boundary, resized like a `Vec<f64>`
/// filled with zeros.
#[derive(Clone, Debug, Default)]
pub struct F64Buf {
    lines: ArrayBuf<8>,
    len: usize,
}

impl F64Buf {
    /// Grows or shrinks to `len` numbers; new ones are zero.
    pub fn resize(&mut self, len: usize) {
        self.lines.resize(len.div_ceil(8));
        let old = self.len.min(len);
        self.len = len;
        self[old..].fill(0.0);
    }
}

impl Deref for F64Buf {
    type Target = [f64];

    fn deref(&self) -> &[f64] {
        &self.lines.as_flattened()[..self.len]
    }
}

impl DerefMut for F64Buf {
    fn deref_mut(&mut self) -> &mut [f64] {
        &mut self.lines.as_flattened_mut()[..self.len]
    }
}

impl<'a> IntoIterator for &'a F64Buf {
    type Item = &'a f64;
    type IntoIter = std::slice::Iter<'a, f64>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut F64Buf {
    type Item = &'a mut f64;
    type IntoIter = std::slice::IterMut<'a, f64>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_start_on_a_64_byte_boundary_and_keep_their_values() {
        for n in [1, 3, 17, 1000] {
            let mut b = ArrayBuf::<16>::zeroed(n);
            assert_eq!(b.as_ptr() as usize % 64, 0, "{n}");
            assert_eq!(b.len(), n);
            b[n - 1][15] = 2.5;
            b.resize(n + 5);
            assert_eq!(b.as_ptr() as usize % 64, 0, "{n} grown");
            assert_eq!(b[n - 1][15], 2.5);
            assert_eq!(b[n + 4], [0.0; 16]);
            assert_eq!(b.iter().flatten().filter(|&&x| x != 0.0).count(), 1);
        }
    }

    #[test]
    fn numbers_resize_like_a_vector_of_zeros() {
        let mut b = F64Buf::default();
        let mut v: Vec<f64> = Vec::new();
        for (len, fill) in [(5, 1.0), (3, 2.0), (21, 3.0), (8, 4.0), (0, 5.0), (13, 6.0)] {
            b.resize(len);
            v.resize(len, 0.0);
            assert_eq!(&b[..], &v[..], "resized to {len}");
            assert!(
                len == 0 || (b.as_ptr() as usize).is_multiple_of(64),
                "{len}"
            );
            b.iter_mut().step_by(2).for_each(|x| *x = fill);
            v.iter_mut().step_by(2).for_each(|x| *x = fill);
        }
    }
}

//! A batch's chunks shared out to the threads of the pool from one counter, in runs that
//! shrink as the batch drains ("guided" scheduling).
//!
//! Why not a parallel iterator over the chunks: rayon splits a range in halves up front and
//! then runs each piece it kept without splitting it again unless a piece is stolen, so near
//! the end of a batch one thread can be left alone with several chunks while the other waits.
//! With batches of 1,000 samples (63 chunks) on two cores, textmsg's threads each stood idle
//! about 5 microseconds of a 67-microsecond batch that way. Here a thread that runs out of
//! chunks takes the next run from the counter, and the last runs are one chunk each, so the
//! threads finish at most one chunk apart; a thread that starts late takes a smaller first
//! run instead of waiting for work to be split for it.
//!
//! Which thread works on which chunk changes nothing in the results: a chunk's outputs are
//! its own rows, and the engine adds the chunks' sums in chunk order.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `K` slices, each cut into `rows` rows of its own width (the last row of a slice ends
/// where the slice does, so it may be short or empty).
pub struct Rows<'a, const K: usize> {
    starts: [*mut f64; K],
    lens: [usize; K],
    widths: [usize; K],
    rows: usize,
    _lent: PhantomData<&'a mut [f64]>,
}

// SAFETY: `Rows` hands out each row once (see `row`'s callers), so the slices it lends on
// different threads never overlap; it only holds pointers from unique borrows of `f64`s.
unsafe impl<const K: usize> Sync for Rows<'_, K> {}

impl<'a, const K: usize> Rows<'a, K> {
    /// `slices[k]` in rows of `widths[k]` numbers; `rows` rows in all.
    pub fn new(slices: [&'a mut [f64]; K], widths: [usize; K], rows: usize) -> Self {
        let lens = slices.each_ref().map(|s| s.len());
        Rows {
            starts: slices.map(|s| s.as_mut_ptr()),
            lens,
            widths,
            rows,
            _lent: PhantomData,
        }
    }

    /// Row `r` of every slice.
    ///
    /// # Safety
    /// Each `r` at most once while the borrow `'a` lasts.
    unsafe fn row(&self, r: usize) -> [&'a mut [f64]; K] {
        std::array::from_fn(|k| {
            let start = (r * self.widths[k]).min(self.lens[k]);
            let end = ((r + 1) * self.widths[k]).min(self.lens[k]);
            // SAFETY: `start..end` lies within slice `k`, which `'a` borrows uniquely, and
            // no other call gets row `r` (the caller's promise), so no two rows overlap.
            unsafe { std::slice::from_raw_parts_mut(self.starts[k].add(start), end - start) }
        })
    }
}

/// Calls `work(r, rows)` once for every row `r` of `rows`, on as many threads of the current
/// rayon pool as there are (or rows, or cores, if fewer), each thread taking runs of rows
/// from a shared counter until none are left.
///
/// Why no more threads than cores: a pool may have more (`--threads` allows a few per core),
/// and then the threads of one batch take turns on the cores and wait for each other at its
/// end. On two cores, a batch of 10,000 on eight threads took 3 % more CPU time than on two,
/// with seven times the context switches.
pub fn for_each_row<const K: usize>(
    rows: Rows<'_, K>,
    work: impl Fn(usize, [&mut [f64]; K]) + Sync,
) {
    let threads = rayon::current_num_threads()
        .min(cores())
        .clamp(1, rows.rows.max(1));
    let next = AtomicUsize::new(0);
    let take_runs = || {
        while let Some(run) = claim(&next, rows.rows, threads) {
            for r in run {
                // SAFETY: `claim` hands out every row at most once.
                work(r, unsafe { rows.row(r) });
            }
        }
    };
    on_threads(threads, &take_runs);
}

/// The cores this process may run on (asked once: the answer reads system files).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The next run of rows, or `None` when all `n` are taken: an `threads`-th of half of what is
/// left (at least one), so that the threads' last runs are single rows.
fn claim(next: &AtomicUsize, n: usize, threads: usize) -> Option<std::ops::Range<usize>> {
    let mut start = next.load(Ordering::Relaxed);
    loop {
        if start >= n {
            return None;
        }
        let end = start + ((n - start) / (2 * threads)).max(1);
        // Relaxed: the counter orders nothing but itself; the rows' contents reach the
        // caller through the joins of `on_threads`.
        match next.compare_exchange_weak(start, end, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(start..end),
            Err(now) => start = now,
        }
    }
}

/// `f()` on `threads` threads of the pool (or fewer: a call not taken by another thread by
/// the time its caller is done runs on the caller, where it finds nothing left to do).
fn on_threads(threads: usize, f: &(impl Fn() + Sync)) {
    if threads <= 1 {
        f();
    } else {
        let half = threads / 2;
        rayon::join(|| on_threads(threads - half, f), || on_threads(half, f));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row is handed out once, whatever the pool's size, and each slice's rows tile it
    /// (the last short where the slice is).
    #[test]
    fn every_row_is_worked_once_with_its_own_numbers() {
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for rows in [0usize, 1, 2, 5, 63, 200] {
                let mut a = vec![0.0; rows * 3];
                let mut b = vec![0.0; (rows * 2).saturating_sub(1)];
                pool.install(|| {
                    for_each_row(Rows::new([&mut a, &mut b], [3, 2], rows), |r, [x, y]| {
                        assert_eq!(x.len(), 3);
                        assert_eq!(y.len(), if r + 1 == rows { 1 } else { 2 });
                        for v in x.iter_mut().chain(y.iter_mut()) {
                            *v += r as f64 + 1.0;
                        }
                    })
                });
                let expect = |i: usize, w: usize| (i / w) as f64 + 1.0;
                assert!(a.iter().enumerate().all(|(i, &v)| v == expect(i, 3)));
                assert!(b.iter().enumerate().all(|(i, &v)| v == expect(i, 2)));
            }
        }
    }

    /// A batch uses at most as many threads as it has rows (or as there are cores), and a
    /// batch of one row runs on the calling thread alone: a pool's idle threads take no part
    /// (nor wake up) in it.
    #[test]
    fn no_more_threads_than_rows_and_one_row_stays_on_the_caller() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        pool.install(|| {
            let caller = rayon::current_thread_index();
            for rows in [1usize, 2, 3] {
                let ran = std::sync::Mutex::new(std::collections::HashSet::new());
                let mut a = vec![0.0; rows];
                for_each_row(Rows::new([&mut a], [1], rows), |_, _| {
                    // Long enough that an idle thread given a share would take a row.
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    ran.lock().unwrap().insert(rayon::current_thread_index());
                });
                let ran = ran.into_inner().unwrap();
                assert!(ran.len() <= rows, "{rows} rows on {} threads", ran.len());
                assert!(
                    ran.len() <= cores(),
                    "{} threads on {} cores",
                    ran.len(),
                    cores()
                );
                if rows == 1 {
                    assert_eq!(ran, [caller].into(), "one row ran off the caller");
                }
            }
        });
    }

    /// Runs shrink to single rows and cover `0..n` in order without gaps.
    #[test]
    fn runs_shrink_to_single_rows_and_cover_the_range() {
        let next = AtomicUsize::new(0);
        let runs: Vec<_> = std::iter::from_fn(|| claim(&next, 63, 2)).collect();
        assert_eq!(runs[0], 0..15);
        assert!(runs.windows(2).all(|w| w[0].end == w[1].start));
        assert!(runs.windows(2).all(|w| w[0].len() >= w[1].len()));
        assert_eq!(runs.last().unwrap().end, 63);
        assert_eq!(runs.iter().rev().take(4).map(|r| r.len()).sum::<usize>(), 4);
    }
}

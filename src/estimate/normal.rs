//! Exact bulk standard normals: the numbers `rand_distr::StandardNormal` draws from
//! `ChaCha8Rng`, bit for bit, in about 60 % of the time (measured: 1.4-2x faster per draw).
//!
//! `StandardNormal` is a ZIGNOR ziggurat: one 64-bit word gives a box `i` (its low byte) and
//! `u` in `[-1, 1)` (its top 52 bits); `x = u * X[i]` is returned when `|x| < X[i + 1]`,
//! and otherwise a slower test (or, for `i == 0`, the tail) reads more words. Here the
//! keystream comes in bulk from [`super::chacha`], the common case runs as a short inline
//! loop over it, and every word that fails the quick test is handed back to
//! `StandardNormal` itself through an adapter reading the same keystream, so the rare cases
//! and the words they consume are the crate's own. The crate keeps the `X` table private, so
//! it is read back at first use by feeding `StandardNormal` crafted words (see
//! [`Ziggurat::probe`]), and the whole path is compared with the plain one before it is
//! trusted; if anything disagrees (a changed dependency), [`table`] is `None` and callers
//! use the plain generator. A group of up to 16 streams gets its blocks in shared vector
//! calls and advances `WINDOW` draws at a time, so the latent-major stores stay in a few
//! cache lines. This file knows nothing of keys, purposes or samples.

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use rand::rngs::ChaCha8Rng;
use rand::{SeedableRng, TryRng};
use rand_distr::{Distribution, StandardNormal};

use super::chacha::{self, BLOCK_WORDS, Job, SLOTS};

/// The ziggurat's abscissae `X[0..=256]` as `StandardNormal` uses them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ziggurat {
    x: [f64; 257],
}

/// Up to this many blocks, one at a time beats a vector call for all `SLOTS`.
const FEW_BLOCKS: usize = 2;

/// How many draws each stream of a group makes before the next stream's turn.
const WINDOW: usize = 32;

/// The exponent bits that turn a 52-bit fraction into a float in `[2, 4)`.
const EXP_TWO: u64 = 1024 << 52;

/// A word whose quick draw is `u = -2^-51` in box `i`: `x = -X[i] / 2^51` exactly.
fn tiny_word(i: usize) -> u64 {
    (((1u64 << 51) - 1) << 12) | i as u64
}

/// The validated table, or `None` when the fast path must not be used in this process.
pub(crate) fn table() -> Option<&'static Ziggurat> {
    static TABLE: OnceLock<Option<Ziggurat>> = OnceLock::new();
    TABLE
        .get_or_init(|| Ziggurat::probe().filter(|z| z.agrees_with_plain()))
        .as_ref()
}

impl Ziggurat {
    /// Reads the table back through `StandardNormal`. A word with `u = -2^-51` passes the
    /// quick test in every box but the last and returns `-X[i] / 2^51`, a power-of-two
    /// scaling, so `X[i]` comes out exactly. Box 255 fails the quick test (`X[256] = 0`);
    /// a second word of all ones then makes the slow test accept, since `pdf(x) = 1` there.
    /// `X[256]` itself only enters as "the quick test never passes in box 255", which the
    /// probe with `u = 0` confirms. Returns `None` if any answer is not what that algorithm
    /// gives (words consumed, signs, order).
    pub(crate) fn probe() -> Option<Ziggurat> {
        let scale = (51f64).exp2();
        let mut x = [0.0; 257];
        for (i, xi) in x.iter_mut().enumerate().take(256) {
            let want_words = if i == 255 { 2 } else { 1 };
            let v = Scripted::run(&[tiny_word(i), u64::MAX], want_words)?;
            *xi = -v * scale;
        }
        // u = 0 in box 255: only the slow test can accept, so X[256] <= 0.
        let zero_u = Scripted::run(&[(1u64 << 63) | 255, u64::MAX], 2)?;
        let ordered = x[..256].windows(2).all(|p| p[0] > p[1]) && x[255] > 0.0;
        let sane = x.iter().all(|v| v.is_finite()) && zero_u == 0.0;
        (ordered && sane).then_some(Ziggurat { x })
    }

    /// `X[i]` (for tests that recheck the probe another way).
    #[cfg(test)]
    fn x(&self, i: usize) -> f64 {
        self.x[i]
    }

    /// The quick test of `StandardNormal` on one word: the draw, or `None` when the crate
    /// would go on to its slow test or tail.
    #[inline(always)]
    pub(crate) fn quick(&self, word: u64) -> Option<f64> {
        let i = (word & 0xff) as usize;
        let u = f64::from_bits(EXP_TWO | (word >> 12)) - 3.0;
        let x = u * self.x[i];
        (x.abs() < self.x[i + 1]).then_some(x)
    }

    /// Normals of `w` consecutive streams `first..first + w` of `key`, latent-major:
    /// `s[k * w + l]` is the `k`-th draw (of `n`) from stream `first + l`.
    pub(crate) fn fill_streams(
        &self,
        key: &[u32; 8],
        first: u64,
        w: usize,
        n: usize,
        s: &mut [f64],
    ) {
        assert!(s.len() >= n * w, "output too short for {w} x {n} normals");
        let mut bufs = [EMPTY; SLOTS];
        let mut g = 0;
        while g < w {
            let gw = (w - g).min(SLOTS);
            let mut stream = first.wrapping_add(g as u64);
            let mut lanes = bufs.each_mut().map(|buf| {
                stream = stream.wrapping_add(1);
                LaneWords::new(key, stream.wrapping_sub(1), buf)
            });
            let mut done = [0usize; SLOTS];
            while self.refill_group(&mut lanes[..gw], &done[..gw], n) {
                // The streams advance together a few draws at a time, so the stores of a
                // window land on the same few cache lines of the latent-major output.
                let mut end = done[..gw].iter().min().copied().unwrap_or(n);
                loop {
                    end += WINDOW;
                    let mut busy = false;
                    for j in 0..gw {
                        if done[j] < n && lanes[j].pos + 2 <= lanes[j].len {
                            busy = true;
                            self.run(&mut lanes[j], s, w, g + j, &mut done[j], end.min(n));
                        }
                    }
                    if !busy {
                        break;
                    }
                }
            }
            g += gw;
        }
    }

    /// Gives every unfinished stream the blocks it will likely need (about one word per
    /// normal still owed, at most a buffer's worth), several streams per vector call.
    /// Returns whether any stream was unfinished.
    fn refill_group(&self, lanes: &mut [LaneWords<'_>], done: &[usize], n: usize) -> bool {
        let mut jobs = [Job::default(); SLOTS];
        let mut owner = [0usize; SLOTS];
        let mut queued = 0;
        let mut any = false;
        let mut out = [[0u32; BLOCK_WORDS]; SLOTS];
        for j in 0..lanes.len() {
            if done[j] >= n {
                continue;
            }
            any = true;
            lanes[j].compact();
            // A block holds eight 64-bit words, one quick draw each.
            let want = (n - done[j]).div_ceil(BLOCK_WORDS / 2).min(SLOTS);
            let (stream, base) = (lanes[j].stream, lanes[j].next_block);
            lanes[j].next_block = base.wrapping_add(want as u64);
            for b in 0..want as u64 {
                jobs[queued] = Job {
                    stream,
                    block: base.wrapping_add(b),
                };
                owner[queued] = j;
                queued += 1;
                if queued == SLOTS {
                    chacha::blocks(lanes[j].key, &jobs, &mut out);
                    for t in 0..SLOTS {
                        lanes[owner[t]].append(&out[t]);
                    }
                    queued = 0;
                }
            }
        }
        if queued > 0 {
            let key = lanes[owner[0]].key;
            if queued <= FEW_BLOCKS {
                chacha::blocks_portable(key, &jobs[..queued], &mut out[..queued]);
            } else {
                chacha::blocks(key, &jobs, &mut out);
            }
            for t in 0..queued {
                lanes[owner[t]].append(&out[t]);
            }
        }
        any
    }

    /// Draws into `s[k * stride + lane]` for `k = *done..upto` while the buffer lasts: quick
    /// draws inline, anything else by `StandardNormal` from the same word on.
    #[inline(never)]
    fn run(
        &self,
        lw: &mut LaneWords<'_>,
        s: &mut [f64],
        stride: usize,
        lane: usize,
        done: &mut usize,
        upto: usize,
    ) {
        let n = upto;
        while *done < n {
            let (k, p) = (*done, lw.pos);
            let words = lw.words().get(p..).unwrap_or_default();
            let m = (n - k).min(words.len() / 2);
            let outs = &mut s[k * stride + lane..];
            if m == 0 || outs.len() <= (m - 1) * stride {
                return;
            }
            // The common case, on locals and with the bounds checked once, so the loop
            // stays short.
            let mut took = 0;
            let pairs = words[..2 * m].chunks_exact(2);
            for (o, pair) in outs.iter_mut().step_by(stride).zip(pairs) {
                let word = pair_word(pair);
                let Some(x) = self.quick(word) else { break };
                *o = x;
                took += 1;
            }
            lw.pos = p + 2 * took;
            *done = k + took;
            if *done == n || lw.pos + 2 > lw.len {
                return;
            }
            // `words[lw.pos..]` failed the quick test: the crate draws from that word on.
            s[*done * stride + lane] = slow(lw);
            *done += 1;
        }
    }

    /// Compares the bulk path with `StandardNormal` on `ChaCha8Rng` for a few thousand draws
    /// (enough that the slow test and the rejections occur), across group sizes.
    fn agrees_with_plain(&self) -> bool {
        let seed: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(29) ^ 0x5a);
        let key = chacha::key_words(&seed);
        let cases: [(u64, usize, usize); 4] =
            [(0, 9, 301), (1 << 40, 1, 37), (5, 3, 3), (77, 16, 1)];
        cases.iter().all(|&(first, w, n)| {
            let mut fast = vec![0.0; w * n];
            self.fill_streams(&key, first, w, n, &mut fast);
            (0..w).all(|l| {
                let mut rng = ChaCha8Rng::from_seed(seed);
                rng.set_stream(first + l as u64);
                (0..n).all(|k| {
                    let want: f64 = StandardNormal.sample(&mut rng);
                    want.to_bits() == fast[k * w + l].to_bits()
                })
            })
        })
    }
}

/// The 64-bit draw made of two consecutive keystream words, low first.
#[inline(always)]
fn pair_word(pair: &[u32]) -> u64 {
    #[cfg(target_endian = "little")]
    {
        assert!(pair.len() == 2);
        // SAFETY: `pair` is two u32s, eight readable bytes; on a little-endian machine the
        // low word comes first, so one load gives the draw.
        unsafe { pair.as_ptr().cast::<u64>().read_unaligned() }
    }
    #[cfg(not(target_endian = "little"))]
    {
        u64::from(pair[0]) | (u64::from(pair[1]) << 32)
    }
}

/// A draw whose first word failed the quick test, by `StandardNormal` itself.
#[cold]
#[inline(never)]
fn slow(lw: &mut LaneWords<'_>) -> f64 {
    StandardNormal.sample(lw)
}

/// One stream's keystream words, bought block by block, with a cursor. As an RNG it reads
/// the words in order exactly as `ChaCha8Rng` does (a 64-bit draw is two consecutive words,
/// low first; a byte fill uses whole words), fetching more blocks on its own when a slow
/// draw runs past the buffer.
pub(crate) struct LaneWords<'k> {
    key: &'k [u32; 8],
    stream: u64,
    next_block: u64,
    pos: usize,
    len: usize,
    /// Borrowed, so that a group of streams is set up without copying buffers around;
    /// `buf[..len]` is initialised, the rest need not be.
    buf: &'k mut Buffer,
}

/// One word left over plus one full refill.
type Buffer = [MaybeUninit<u32>; 2 + SLOTS * BLOCK_WORDS];

/// An uninitialised buffer (costs nothing to make).
const EMPTY: Buffer = [MaybeUninit::uninit(); 2 + SLOTS * BLOCK_WORDS];

impl<'k> LaneWords<'k> {
    pub(crate) fn new(key: &'k [u32; 8], stream: u64, buf: &'k mut Buffer) -> LaneWords<'k> {
        LaneWords {
            key,
            stream,
            next_block: 0,
            pos: 0,
            len: 0,
            buf,
        }
    }

    /// Moves the unread words to the front.
    fn compact(&mut self) {
        self.buf.copy_within(self.pos..self.len, 0);
        self.len -= self.pos;
        self.pos = 0;
    }

    fn append(&mut self, block: &[u32; BLOCK_WORDS]) {
        for (d, w) in self.buf[self.len..self.len + BLOCK_WORDS]
            .iter_mut()
            .zip(block)
        {
            d.write(*w);
        }
        self.len += BLOCK_WORDS;
    }

    /// The words bought so far (read or not).
    fn words(&self) -> &[u32] {
        // SAFETY: `buf[..len]` is initialised: `append` writes every word below `len`, and
        // `compact` only moves initialised words down.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr().cast::<u32>(), self.len) }
    }

    /// The next word, fetching the next block of this stream when empty (a slow draw
    /// rarely needs more than a few words).
    fn word(&mut self) -> u32 {
        if self.pos == self.len {
            self.compact();
            let job = Job {
                stream: self.stream,
                block: self.next_block,
            };
            self.next_block = self.next_block.wrapping_add(1);
            let mut out = [[0u32; BLOCK_WORDS]; 1];
            chacha::blocks_portable(self.key, &[job], &mut out);
            self.append(&out[0]);
        }
        let w = self.words()[self.pos];
        self.pos += 1;
        w
    }
}

impl TryRng for LaneWords<'_> {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok(self.word())
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let lo = self.word();
        let hi = self.word();
        Ok(u64::from(lo) | (u64::from(hi) << 32))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for chunk in dst.chunks_mut(4) {
            let bytes = self.word().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// An RNG that returns chosen 64-bit words, for reading the table back.
struct Scripted<'a> {
    words: &'a [u64],
    used: usize,
}

impl Scripted<'_> {
    /// `StandardNormal` on `words`, if it consumed exactly `want` of them and no 32-bit or
    /// byte draws.
    fn run(words: &[u64], want: usize) -> Option<f64> {
        let mut rng = Scripted { words, used: 0 };
        let v: f64 = StandardNormal.sample(&mut rng);
        (rng.used == want).then_some(v)
    }
}

impl TryRng for Scripted<'_> {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        // Not how the probed algorithm draws: spoil the count.
        self.used = usize::MAX / 2;
        Ok(0)
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let w = self.words.get(self.used).copied();
        self.used = self.used.saturating_add(1);
        // Past the script, answer with an accepted quick draw so any sampler stops.
        Ok(w.unwrap_or(tiny_word(1)))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        self.used = usize::MAX / 2;
        dst.fill(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// The word whose quick draw in box `i` has the 52-bit fraction `f`.
    fn word(f: u64, i: usize) -> u64 {
        (f << 12) | i as u64
    }

    /// `StandardNormal` on one word, if that word alone decides the draw.
    fn crate_quick(w: u64) -> Option<f64> {
        let mut rng = Scripted {
            words: &[w, u64::MAX],
            used: 0,
        };
        let v: f64 = StandardNormal.sample(&mut rng);
        (rng.used == 1).then_some(v)
    }

    #[test]
    fn the_probed_table_is_doorniks_and_passes_its_self_check() {
        let z = table().expect("the fast path should be usable with rand_distr 0.6");
        // R for 256 boxes, and X[0] = V / f(R) with V the area of each box.
        let r = 3.654_152_885_361_009;
        assert!((z.x(1) - r).abs() < 1e-12, "{}", z.x(1));
        let v = 0.004_928_673_233_99;
        assert!(
            (z.x(0) - v / (-r * r / 2.0).exp()).abs() < 1e-8,
            "{}",
            z.x(0)
        );
        assert_eq!(z.x(256), 0.0);
    }

    #[test]
    fn the_quick_test_decides_like_the_crate_at_every_box_boundary() {
        // Independent of how the table was read: in every box, the words whose |x| lies
        // just below and just above X[i + 1] (the threshold), and the extremes of u.
        let z = table().unwrap();
        let mut checked = 0;
        for i in 0..256 {
            let ratio = z.x(i + 1) / z.x(i);
            // u = 2 (1 + f / 2^52) - 3, so |u| = ratio at f = 2^51 (1 +- ratio).
            let scale = (51f64).exp2();
            let centre = [scale * (1.0 + ratio), scale * (1.0 - ratio)];
            for c in centre {
                let c = c.round() as i64;
                for d in -3i64..=3 {
                    let f = (c + d).clamp(0, (1 << 52) - 1) as u64;
                    let w = word(f, i);
                    assert_eq!(z.quick(w), crate_quick(w), "box {i}, fraction {f}");
                    checked += 1;
                }
            }
            for f in [0, 1, 1 << 51, (1 << 52) - 1] {
                let w = word(f, i);
                assert_eq!(z.quick(w), crate_quick(w), "box {i}, fraction {f}");
            }
        }
        assert_eq!(checked, 256 * 14);
    }

    #[test]
    fn the_quick_test_decides_like_the_crate_on_arbitrary_words() {
        let z = table().unwrap();
        let mut rng = ChaCha8Rng::from_seed([7; 32]);
        let (mut quick, mut slow) = (0, 0);
        for _ in 0..200_000 {
            let w = rng.next_u64();
            let got = z.quick(w);
            assert_eq!(
                got.map(f64::to_bits),
                crate_quick(w).map(f64::to_bits),
                "{w:#x}"
            );
            if got.is_some() {
                quick += 1;
            } else {
                slow += 1;
            }
        }
        // About 1.2 % of ZIGNOR's draws leave the quick test.
        assert!(quick > 190_000 && slow > 1_000, "{quick} {slow}");
    }
}

//! Which build of the forward sweep a workspace runs on a CPU with AVX-512 (or with AVX2 and
//! FMA, where the machine-code generator is built: the interpreter's AVX2 build or the AVX2
//! machine code): the one that ran this tape faster, timed on its first chunks.
//!
//! Why time instead of always taking the wider build: with the values of a chunk in memory,
//! the AVX-512 build halves the instructions of throughput-bound steps (the smoothed
//! if-statements' weights, `exp`, `ln`), but it is slower on tapes whose steps form long
//! dependency chains (a random walk, an epidemic recursion). Measured on an AMD Zen 4, the
//! forward-sweep build alone moved a whole DSGD sample by 0.90x (influenza) to 1.16x
//! (cheating), and no count of the tape's steps told the two groups apart. Both builds
//! run the same operations in the same order, so the choice never shows in a result: only
//! the time depends on it. (The reverse sweep has no AVX-512 build: it was slower on every
//! model measured.)
//!
//! A choice is made per semantics (a smoothed sweep and a crisp one run different steps),
//! after [`WARM_UP`] untimed sweeps (the first touch of a workspace's memory is slow) and
//! [`TRIALS`] timed sweeps of each build, alternating, by the smaller minimum: the minimum,
//! because an interrupt only ever lengthens a sweep. A sweep takes microseconds, so the
//! timing costs a few dozen of them once per workspace.

use std::time::{Duration, Instant};

use crate::ir::Semantics;

use super::vmath::KernelSet;

/// Untimed sweeps before the timing starts.
pub(super) const WARM_UP: u32 = 4;

/// Sweeps of each build before choosing: [`ROUNDS`] blocks of [`BLOCK`] in a row, each
/// block's first untimed.
pub(super) const TRIALS: u32 = ROUNDS * BLOCK;

/// Turns of the builds.
const ROUNDS: u32 = 4;

/// Sweeps of one build in a row. Why in a row: the interpreter's dispatch leans on the
/// branch predictor, which sweeps of other builds in between leave untrained; timed right
/// after them, the interpreter looked 10 % slower than in a long run on textmsg, and the
/// compiled code (straight-line) was chosen where it ran 2-7 % slower.
const BLOCK: u32 = 4;

/// The builds timed with AVX-512, in turn: the interpreter's AVX2 and AVX-512 builds, and
/// the sweep compiled to machine code (`jit`) where the crate is built with it.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
pub(super) const BUILDS: &[KernelSet] = &[KernelSet::Avx2, KernelSet::Avx512, KernelSet::Jit];
/// The builds timed with AVX-512, in turn: the interpreter's AVX2 and AVX-512 builds (the
/// crate is built without the machine-code generator).
#[cfg(not(all(feature = "jit", target_arch = "x86_64")))]
pub(super) const BUILDS: &[KernelSet] = &[KernelSet::Avx2, KernelSet::Avx512];

/// The builds timed with AVX2 and FMA but not AVX-512: the interpreter's AVX2 build and the
/// sweep compiled to AVX2 machine code (measured per tape as AVX-512's are: see
/// `docs/performance.md`).
pub(super) const AVX2_BUILDS: &[KernelSet] = &[KernelSet::Avx2, KernelSet::Avx2Jit];

/// The most builds a choice times.
const MAX_BUILDS: usize = 3;

/// The builds this process chooses between: [`BUILDS`] with AVX-512, [`AVX2_BUILDS`] with
/// AVX2 and FMA where the crate is built with the machine-code generator, none (the one
/// widest build runs) elsewhere.
pub(super) fn builds() -> &'static [KernelSet] {
    if crate::cpu::avx512() {
        BUILDS
    } else if cfg!(all(feature = "jit", target_arch = "x86_64")) && crate::cpu::avx2_fma() {
        AVX2_BUILDS
    } else {
        &[]
    }
}

/// Whether this process times builds of the forward sweep to choose one (AVX-512, or AVX2
/// and FMA with the machine-code generator), rather than running the one widest build.
pub fn chooses_forward_build() -> bool {
    !builds().is_empty()
}

/// Sweeps of one semantics a workspace runs before its choice is made (at most): a timing
/// of the engine's steady state (`experiment::cost`) warms up for at least this many chunks,
/// so that no timed batch runs a build being tried.
pub const CHOICE_SWEEPS: u32 = WARM_UP + MAX_BUILDS as u32 * TRIALS;

/// The choice for one semantics, made or being made.
#[derive(Clone, Copy, Debug)]
enum Trial {
    /// Timing: `runs` sweeps so far (after the warm-up, [`BLOCK`] of each of [`BUILDS`] in
    /// turn), and the shortest timed sweep of each build.
    Timing {
        runs: u32,
        best: [Duration; MAX_BUILDS],
    },
    /// The fastest build, and the faster of the interpreter's two builds.
    Chosen {
        set: KernelSet,
        interpreter: KernelSet,
    },
}

/// The forward sweep's build per semantics (smoothed, crisp, forced), among `builds`.
#[derive(Clone, Copy, Debug)]
pub(super) struct ForwardChoice {
    builds: &'static [KernelSet],
    trials: [Trial; 3],
}

impl Default for ForwardChoice {
    fn default() -> Self {
        ForwardChoice::among(builds())
    }
}

impl ForwardChoice {
    /// A choice among `builds` (at most [`MAX_BUILDS`], the interpreter's AVX2 build first).
    pub(super) fn among(builds: &'static [KernelSet]) -> Self {
        debug_assert!(builds.len() <= MAX_BUILDS);
        let timing = Trial::Timing {
            runs: 0,
            best: [Duration::MAX; MAX_BUILDS],
        };
        ForwardChoice {
            builds,
            trials: [timing; 3],
        }
    }

    /// Runs `sweep` in the build chosen for `semantics`, or, while choosing, in the next
    /// build to time (and times it).
    pub(super) fn run(&mut self, semantics: Semantics, mut sweep: impl FnMut(KernelSet)) {
        let builds = self.builds;
        let trial = &mut self.trials[slot(semantics)];
        match trial {
            Trial::Chosen { set, .. } => sweep(*set),
            Trial::Timing { runs, .. } if *runs < WARM_UP => {
                sweep(KernelSet::Avx2);
                *runs += 1;
            }
            Trial::Timing { runs, best } => {
                let n = *runs - WARM_UP;
                let k = ((n / BLOCK) as usize) % builds.len();
                let start = Instant::now();
                sweep(builds[k]);
                if !n.is_multiple_of(BLOCK) {
                    best[k] = best[k].min(handicap(builds[k], start.elapsed()));
                }
                *runs += 1;
                if *runs == WARM_UP + builds.len() as u32 * TRIALS {
                    // The first of the fastest: ties keep the simpler build.
                    let fastest =
                        (0..builds.len()).fold(0, |f, k| if best[k] < best[f] { k } else { f });
                    // The faster interpreter build (the compiled ones come last).
                    let interpreted =
                        |k: usize| !matches!(builds[k], KernelSet::Jit | KernelSet::Avx2Jit);
                    let interpreter = (0..builds.len())
                        .filter(|&k| interpreted(k))
                        .fold(0, |f, k| if best[k] < best[f] { k } else { f });
                    *trial = Trial::Chosen {
                        set: builds[fastest],
                        interpreter: builds[interpreter],
                    };
                }
            }
        }
    }

    /// The build chosen for `semantics`, if the timing is over.
    pub(super) fn chosen(&self, semantics: Semantics) -> Option<KernelSet> {
        match self.trials[slot(semantics)] {
            Trial::Chosen { set, .. } => Some(set),
            Trial::Timing { .. } => None,
        }
    }

    /// The faster of the interpreter's builds (AVX2 or AVX-512) on `semantics`' sweeps, if
    /// the timing is over: what runs parts of such a sweep (LYY18's incremental forced
    /// sweeps, which the compiled code cannot run).
    pub(super) fn interpreter(&self, semantics: Semantics) -> Option<KernelSet> {
        match self.trials[slot(semantics)] {
            Trial::Chosen { interpreter, .. } => Some(interpreter),
            Trial::Timing { .. } => None,
        }
    }
}

/// A trial time of `set` as the choice weighs it: the AVX2 machine code's 5 % longer. Why:
/// its best trial sweep won where the whole sample then ran slower (temperature's Score, crisp:
/// 6 % slower, CPU time on a Zen 5 guest), and where it pays it pays more (cheating, 11-19 %).
fn handicap(set: KernelSet, t: Duration) -> Duration {
    if set == KernelSet::Avx2Jit {
        t.mul_f64(AVX2_JIT_HANDICAP)
    } else {
        t
    }
}

/// The factor on the AVX2 machine code's trial times ([`handicap`]).
const AVX2_JIT_HANDICAP: f64 = 1.05;

fn slot(semantics: Semantics) -> usize {
    match semantics {
        Semantics::Smoothed { .. } => 0,
        Semantics::Crisp => 1,
        Semantics::Forced { .. } => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `choice` under `semantics` until it has chosen, with sweeps that take no time in
    /// the build `fast` and a while in every other; returns the builds it ran, in order.
    fn choose(choice: &mut ForwardChoice, semantics: Semantics, fast: KernelSet) -> Vec<KernelSet> {
        let mut ran = Vec::new();
        while choice.chosen(semantics).is_none() {
            choice.run(semantics, |set| {
                ran.push(set);
                if set != fast {
                    std::thread::sleep(Duration::from_micros(300));
                }
            });
        }
        ran
    }

    #[test]
    fn the_faster_build_is_chosen_after_the_warm_up_and_the_trials() {
        for (builds, fast) in BUILDS
            .iter()
            .map(|&fast| (BUILDS, fast))
            .chain(AVX2_BUILDS.iter().map(|&fast| (AVX2_BUILDS, fast)))
        {
            let mut choice = ForwardChoice::among(builds);
            let smoothed = Semantics::Smoothed { eta: 0.1 };
            let ran = choose(&mut choice, smoothed, fast);
            assert_eq!(ran.len(), WARM_UP as usize + builds.len() * TRIALS as usize);
            assert!(
                ran[..WARM_UP as usize]
                    .iter()
                    .all(|&s| s == KernelSet::Avx2)
            );
            let timed = &ran[WARM_UP as usize..];
            // In blocks of one build.
            let block = BLOCK as usize;
            assert!((0..timed.len()).all(|i| timed[i] == timed[i - i % block]));
            for &build in builds {
                assert_eq!(
                    timed.iter().filter(|&&s| s == build).count(),
                    TRIALS as usize
                );
            }
            assert_eq!(choice.chosen(smoothed), Some(fast));
            // The faster interpreter build is known too (the compiled one being fastest,
            // both interpreter builds took as long).
            if fast != KernelSet::Jit && fast != KernelSet::Avx2Jit {
                assert_eq!(choice.interpreter(smoothed), Some(fast));
            } else if builds == AVX2_BUILDS {
                assert_eq!(choice.interpreter(smoothed), Some(KernelSet::Avx2));
            }
            assert_eq!(choice.interpreter(Semantics::Crisp), None);
            // Chosen for good, and for this semantics only.
            let mut after = Vec::new();
            choice.run(smoothed, |set| after.push(set));
            assert_eq!(after, [fast]);
            assert_eq!(choice.chosen(Semantics::Crisp), None);
        }
    }
}

//! Which build of the forward sweep a workspace runs on a CPU with AVX-512: the one that ran
//! this tape faster, timed on its first chunks.
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

/// The builds timed, in turn: the interpreter's AVX2 and AVX-512 builds, and the sweep
/// compiled to machine code (`jit`) where the crate is built with it.
#[cfg(all(feature = "jit", target_arch = "x86_64"))]
pub(super) const BUILDS: [KernelSet; 3] = [KernelSet::Avx2, KernelSet::Avx512, KernelSet::Jit];
/// The builds timed, in turn: the interpreter's AVX2 and AVX-512 builds (the crate is built
/// without the machine-code generator).
#[cfg(not(all(feature = "jit", target_arch = "x86_64")))]
pub(super) const BUILDS: [KernelSet; 2] = [KernelSet::Avx2, KernelSet::Avx512];

/// Sweeps of one semantics a workspace runs before its choice is made: a timing of the
/// engine's steady state (`experiment::cost`) warms up for at least this many chunks, so
/// that no timed batch runs a build being tried.
pub const CHOICE_SWEEPS: u32 = WARM_UP + BUILDS.len() as u32 * TRIALS;

/// The choice for one semantics, made or being made.
#[derive(Clone, Copy, Debug)]
enum Trial {
    /// Timing: `runs` sweeps so far (after the warm-up, [`BLOCK`] of each of [`BUILDS`] in
    /// turn), and the shortest timed sweep of each build.
    Timing {
        runs: u32,
        best: [Duration; BUILDS.len()],
    },
    /// The fastest build, and the faster of the interpreter's two builds.
    Chosen {
        set: KernelSet,
        interpreter: KernelSet,
    },
}

/// The forward sweep's build per semantics (smoothed, crisp, forced).
#[derive(Clone, Copy, Debug)]
pub(super) struct ForwardChoice([Trial; 3]);

impl Default for ForwardChoice {
    fn default() -> Self {
        let timing = Trial::Timing {
            runs: 0,
            best: [Duration::MAX; BUILDS.len()],
        };
        ForwardChoice([timing; 3])
    }
}

impl ForwardChoice {
    /// Runs `sweep` in the build chosen for `semantics`, or, while choosing, in the next
    /// build to time (and times it).
    pub(super) fn run(&mut self, semantics: Semantics, mut sweep: impl FnMut(KernelSet)) {
        let trial = &mut self.0[slot(semantics)];
        match trial {
            Trial::Chosen { set, .. } => sweep(*set),
            Trial::Timing { runs, .. } if *runs < WARM_UP => {
                sweep(KernelSet::Avx2);
                *runs += 1;
            }
            Trial::Timing { runs, best } => {
                let n = *runs - WARM_UP;
                let k = ((n / BLOCK) as usize) % BUILDS.len();
                let start = Instant::now();
                sweep(BUILDS[k]);
                if !n.is_multiple_of(BLOCK) {
                    best[k] = best[k].min(start.elapsed());
                }
                *runs += 1;
                if *runs == CHOICE_SWEEPS {
                    // The first of the fastest: ties keep the simpler build.
                    let fastest =
                        (0..BUILDS.len()).fold(0, |f, k| if best[k] < best[f] { k } else { f });
                    let interpreter = if best[1] < best[0] {
                        BUILDS[1]
                    } else {
                        BUILDS[0]
                    };
                    *trial = Trial::Chosen {
                        set: BUILDS[fastest],
                        interpreter,
                    };
                }
            }
        }
    }

    /// The build chosen for `semantics`, if the timing is over.
    pub(super) fn chosen(&self, semantics: Semantics) -> Option<KernelSet> {
        match self.0[slot(semantics)] {
            Trial::Chosen { set, .. } => Some(set),
            Trial::Timing { .. } => None,
        }
    }

    /// The faster of the interpreter's builds (AVX2 or AVX-512) on `semantics`' sweeps, if
    /// the timing is over: what runs parts of such a sweep (LYY18's incremental forced
    /// sweeps, which the compiled code cannot run).
    pub(super) fn interpreter(&self, semantics: Semantics) -> Option<KernelSet> {
        match self.0[slot(semantics)] {
            Trial::Chosen { interpreter, .. } => Some(interpreter),
            Trial::Timing { .. } => None,
        }
    }
}

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
        for fast in BUILDS {
            let mut choice = ForwardChoice::default();
            let smoothed = Semantics::Smoothed { eta: 0.1 };
            let ran = choose(&mut choice, smoothed, fast);
            assert_eq!(ran.len(), WARM_UP as usize + BUILDS.len() * TRIALS as usize);
            assert!(
                ran[..WARM_UP as usize]
                    .iter()
                    .all(|&s| s == KernelSet::Avx2)
            );
            let timed = &ran[WARM_UP as usize..];
            // In blocks of one build.
            let block = BLOCK as usize;
            assert!((0..timed.len()).all(|i| timed[i] == timed[i - i % block]));
            for build in BUILDS {
                assert_eq!(
                    timed.iter().filter(|&&s| s == build).count(),
                    TRIALS as usize
                );
            }
            assert_eq!(choice.chosen(smoothed), Some(fast));
            // The faster interpreter build is known too (the compiled one being fastest,
            // both interpreter builds took as long).
            if fast != KernelSet::Jit {
                assert_eq!(choice.interpreter(smoothed), Some(fast));
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

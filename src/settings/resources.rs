//! Whether a setting fits the machine, asked before anything of its size is allocated: the
//! memory a batch, a measurement, a trajectory, draws or gradient samples take (in `u128`,
//! so no product overflows), and the worker threads allowed. The command line and the
//! Python package both ask here.

use super::error::SettingError;
use crate::ir::Model;

/// The absolute cap on worker threads.
pub const THREAD_CAP: usize = 256;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The most worker threads accepted: four per core this machine has, and never more than
/// [`THREAD_CAP`]. More threads than that only cost memory (each holds a workspace) and the
/// time to start them.
pub fn max_threads() -> usize {
    cores().saturating_mul(4).min(THREAD_CAP)
}

/// The worker threads a run uses when none are asked for: one per core.
pub fn default_threads() -> usize {
    cores()
}

/// A thread count of at least 1 and at most [`max_threads`].
pub fn check_threads(n: usize) -> Result<usize, SettingError> {
    let max = max_threads();
    if n == 0 {
        return Err(SettingError::invalid(
            "threads",
            "must be a whole number of at least 1, got 0",
        ));
    }
    if n > max {
        return Err(SettingError::invalid(
            "threads",
            format!(
                "must be at most {max} (4 per core of the {} here, never more than \
                 {THREAD_CAP}), got {n}",
                cores()
            ),
        ));
    }
    Ok(n)
}

/// Memory a setting may take: this machine's physical memory (`MemTotal` of
/// `/proc/meminfo`), or 16 GiB where that cannot be read.
pub fn memory_limit() -> u64 {
    let from_proc = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb.saturating_mul(1024))
    });
    from_proc.unwrap_or(16 << 30)
}

/// Refuses `bytes` beyond [`memory_limit`], naming `options` (with their values), the
/// estimate and the limit.
pub fn check_memory(options: Vec<(&'static str, String)>, bytes: u128) -> Result<(), SettingError> {
    let limit = memory_limit();
    if bytes > u128::from(limit) {
        return Err(SettingError::memory(
            options,
            format!(
                "would need about {} of memory, more than the {} this machine has; use a \
                 smaller value",
                human_bytes(bytes),
                human_bytes(u128::from(limit))
            ),
        ));
    }
    Ok(())
}

/// `1.5 GB`, `230 MB`, ...
pub fn human_bytes(b: u128) -> String {
    let x = b as f64;
    if x >= 1e12 {
        format!("{x:.3e} bytes")
    } else if x >= 1e9 {
        format!("{:.1} GB", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.0} MB", x / 1e6)
    } else {
        format!("{b} bytes")
    }
}

/// What a model's size costs in memory, for estimating a setting's needs before it runs.
#[derive(Clone, Copy, Debug)]
pub struct Footprint {
    /// Gradient components (model parameters and two per latent, an upper bound).
    pub dim: usize,
    /// Latent variables.
    pub latents: usize,
    /// Nodes of the program.
    pub nodes: usize,
}

impl Footprint {
    /// The footprint of `model`.
    pub fn of(model: &Model) -> Footprint {
        let latents = model.latents.len();
        Footprint {
            dim: model.params.len() + 2 * latents,
            latents,
            nodes: model.program.node_count(),
        }
    }

    /// Bytes a run keeps per gradient sample of a batch: the sample's gradient, its noise
    /// (twice: the next iteration's is drawn ahead), its value and crisp value.
    pub fn per_sample(&self) -> u128 {
        8 * (self.dim as u128 + 2 * self.latents as u128 + 2)
    }

    /// A tape workspace of one thread, at most: a few chunk-wide (16-lane) arrays per node.
    /// An upper bound known before compiling: the tape shares places between values by
    /// liveness, so most workspaces are far smaller; LYY18's forced sweeps keep every value.
    pub fn workspace(&self) -> u128 {
        self.nodes as u128 * 16 * 8 * 4
    }

    /// One run's working memory: its batch and its measurement's samples, and a workspace
    /// per thread for each of the two engines.
    pub fn run_bytes(&self, batch: usize, log_samples: usize, threads: usize) -> u128 {
        (batch as u128 + log_samples as u128) * self.per_sample()
            + 2 * threads as u128 * self.workspace()
    }

    /// A finished run's report: one trajectory row per measurement (its parameters and
    /// guide, and a few numbers).
    pub fn report_bytes(&self, iterations: u64, log_every: u64) -> u128 {
        let rows = u128::from(iterations / log_every.max(1)) + 2;
        rows * (128 + 8 * self.dim as u128)
    }

    /// `n` gradient samples at one point, and the array they are handed out as.
    pub fn gradient_bytes(&self, n: u64) -> u128 {
        u128::from(n) * (self.per_sample() + 8 * self.dim as u128)
    }

    /// `n` draws of every latent, and the array they are handed out as.
    pub fn draw_bytes(&self, n: u64) -> u128 {
        u128::from(n) * 2 * 8 * self.latents as u128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_capped_and_counted_from_one() {
        assert_eq!(check_threads(1), Ok(1));
        assert!(check_threads(0).is_err());
        let e = check_threads(5000).unwrap_err().to_string();
        assert!(e.starts_with("threads must be at most"), "{e}");
        assert!(max_threads() <= THREAD_CAP && max_threads() >= 1);
    }

    #[test]
    fn sizes_beyond_the_machine_are_refused_without_overflow() {
        let f = Footprint {
            dim: 3,
            latents: 1,
            nodes: 10,
        };
        assert!(check_memory(vec![], f.run_bytes(16, 1000, 2)).is_ok());
        let e = check_memory(
            vec![("batch", usize::MAX.to_string())],
            f.run_bytes(usize::MAX, usize::MAX, usize::MAX),
        )
        .unwrap_err();
        assert_eq!(e.kind, super::super::SettingKind::Memory);
        assert!(e.to_string().contains("would need about"), "{e}");
        assert!(check_memory(vec![], f.report_bytes(u64::MAX, 1)).is_err());
        assert!(check_memory(vec![], f.draw_bytes(u64::MAX)).is_err());
        assert!(check_memory(vec![], f.gradient_bytes(1 << 62)).is_err());
        assert!(check_memory(vec![], f.report_bytes(10_000, 100)).is_ok());
    }
}

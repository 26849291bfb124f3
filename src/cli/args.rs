//! Value parsers shared by the subcommands' options, so that every command refuses a bad
//! number with the same words.

/// A finite number greater than zero (`--eta`, `--lr`, ...).
pub fn positive(s: &str) -> Result<f64, String> {
    let x: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if x > 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(format!("must be positive and finite, got {s}"))
    }
}

/// A finite number at least zero (`--eta-decay`, `--sgd-power`).
pub fn non_negative(s: &str) -> Result<f64, String> {
    let x: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if x >= 0.0 && x.is_finite() {
        Ok(x)
    } else {
        Err(format!("must be non-negative and finite, got {s}"))
    }
}

/// A whole number at least `N` (`--batch`, `--repeats`, `--max-nodes`). Whether a count fits
/// in memory is checked later, against the model ([`check_memory`]), before anything of
/// that size is allocated.
pub fn count<const N: usize>(s: &str) -> Result<usize, String> {
    let x: usize = s
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number (of at most {})", usize::MAX))?;
    if x >= N {
        Ok(x)
    } else {
        Err(format!("must be at least {N}, got {s}"))
    }
}

/// The most worker threads accepted: four per core this machine has, and never more than
/// [`THREAD_CAP`]. More threads than that only cost memory (each holds a workspace).
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.saturating_mul(4).min(THREAD_CAP)
}

/// The absolute cap on `--threads`.
pub const THREAD_CAP: usize = 256;

/// `--threads`: at least 1 and at most [`max_threads`].
pub fn threads(s: &str) -> Result<usize, String> {
    let n = count::<1>(s)?;
    let max = max_threads();
    if n > max {
        return Err(format!(
            "at most {max} threads (4 per core of the {} here, never more than {THREAD_CAP}), \
             got {s}",
            std::thread::available_parallelism().map_or(1, usize::from)
        ));
    }
    Ok(n)
}

/// A mistake in the command line found after clap parsed it (a setting that cannot fit, a
/// flag that does not apply): `main` exits with status 2 for it, like clap's own errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

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

/// What a model's size costs in memory, for estimating a setting's needs before it runs.
#[derive(Clone, Copy, Debug)]
pub struct Footprint {
    /// Gradient components (model parameters and two per latent, an upper bound).
    pub dim: usize,
    pub latents: usize,
    pub nodes: usize,
}

impl Footprint {
    pub fn of(model: &dsgd::ir::Model) -> Footprint {
        let latents = model.latents.len();
        Footprint {
            dim: model.params.len() + 2 * latents,
            latents,
            nodes: model.program.node_count(),
        }
    }

    /// Numbers (8 bytes each) a run keeps per gradient sample of a batch: the sample's
    /// gradient, its noise (twice: the next iteration's is drawn ahead), its value and crisp
    /// value.
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

    /// A finished run's report: one trajectory row per measurement.
    pub fn report_bytes(&self, iterations: u64, log_every: u64) -> u128 {
        let rows = u128::from(iterations / log_every.max(1)) + 2;
        rows * (128 + 8 * self.dim as u128)
    }
}

/// The worker threads a command uses when `--threads` is not given.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Refuses a setting whose estimated memory (`bytes`) exceeds [`memory_limit`], naming the
/// flag(s) that set it, the estimate and the limit.
pub fn check_memory(flags: &str, bytes: u128) -> Result<(), UsageError> {
    let limit = memory_limit();
    if bytes > u128::from(limit) {
        return Err(UsageError(format!(
            "{flags} would need about {} of memory, more than the {} this machine has; \
             use a smaller value",
            human_bytes(bytes),
            human_bytes(u128::from(limit))
        )));
    }
    Ok(())
}

/// `1.5 GB`, `230 MB`, ...
pub fn human_bytes(b: u128) -> String {
    let x = b as f64;
    if x >= 1e12 {
        format!("{:.3e} bytes", x)
    } else if x >= 1e9 {
        format!("{:.1} GB", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.0} MB", x / 1e6)
    } else {
        format!("{b} bytes")
    }
}

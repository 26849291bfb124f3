//! The progress bar of a sweep of runs (runs done, time left), drawn on stderr only when it
//! is a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar over `total` runs, or nothing when stderr is not a terminal.
pub struct SweepProgress {
    bar: Option<ProgressBar>,
}

impl SweepProgress {
    pub fn new(what: &str) -> SweepProgress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(&format!(
                "{{bar:40}} {{pos}}/{{len}} {what} runs  {{elapsed}} elapsed, about {{eta}} left"
            )) {
                bar.set_style(style);
            }
            bar
        });
        SweepProgress { bar }
    }

    /// The callback for the library's sweep: `(done, total)`.
    pub fn update(&self, done: usize, total: usize) {
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

//! `dsgd-report`: the paper's evaluation reproduced with the `dsgd` library — the sweep of
//! runs over the built-in models, the figures, the tables and REPORT.md (`dsgd reproduce`),
//! and the comparison figure of `dsgd compare`.
//!
//! Everything that draws lives here, so that the core library needs no plotting crate and no
//! font: figures are rendered with plotters (SVG and PNG, text in the DejaVu Sans font embedded
//! in the binary) and a PDF writer of our own; REPORT.md's prose is a minijinja template. The
//! numbers come from the core's public `experiment` API (runs, sweeps, aggregation, tables);
//! nothing here changes a result, it only runs, draws and writes.

#![warn(missing_docs)]
// Every `unsafe` block says why it is sound, next to it (none here today).
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod claims;
pub mod compare_figure;
pub mod fidelity_md;
pub mod figure1a;
pub mod plot;
pub mod report_md;
pub mod reproduce;

//! Experiments: runs, logging, sweeps, comparisons, tables and the numbers of the paper's
//! reproduction; the figures and REPORT.md that show them are drawn by the `dsgd-report`
//! crate.
//!
//! Only this layer (and the front ends) touches the file system; estimators and optimisers
//! report through the [`observe::Observer`] hooks and return values.

pub mod advise;
pub mod atomic;
#[doc(hidden)]
pub mod bias;
pub mod check;
pub mod compare;
#[doc(hidden)]
pub mod convergence;
pub mod cost;
#[doc(hidden)]
pub mod culprit;
pub mod diagnose;
pub mod draws;
pub mod observe;
pub mod outdir;
pub mod outfiles;
pub mod paper;
pub mod precise;
pub mod protocol;
pub mod report;
pub mod reproduction;
pub mod run;
#[doc(hidden)]
pub mod stationarity;
pub mod summary;
pub mod sweep;
pub mod tables;

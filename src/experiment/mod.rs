//! Experiments: optimisation runs, their measurements and reports, gradient diagnostics.
//!
//! Only this layer (and the binary) touches the file system; estimators and optimisers
//! report through the [`observe::Observer`] hooks and return values.

pub mod diagnose;
pub mod observe;
pub mod report;
pub mod run;

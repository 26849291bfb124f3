//! Experiments: runs, logging, tables, figures and reports .
//!
//! Only this layer (and the binary) touches the file system; estimators and optimisers
//! report through the [`observe::Observer`] hooks and return values.

pub mod advise;
pub mod bias;
pub mod check;
pub mod claims;
pub mod compare;
pub mod convergence;
pub mod cost;
pub mod culprit;
pub mod diagnose;
pub mod draws;
pub mod fidelity_md;
pub mod figure1a;
pub mod observe;
pub mod outdir;
pub mod outfiles;
pub mod paper;
pub mod plot;
pub mod precise;
pub mod report;
pub mod report_md;
pub mod reproduce;
pub mod reproduction;
pub mod run;
pub mod stationarity;
pub mod summary;
pub mod sweep;
pub mod tables;

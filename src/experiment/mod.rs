//! Experiments: runs, reports and their serialisable outputs.

pub mod check;

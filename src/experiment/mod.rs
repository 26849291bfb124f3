//! Experiments: runs, logging, tables, figures and reports (DESIGN.md section 5).

pub mod check;
pub mod figure1a;
pub mod paper;
pub mod plot;

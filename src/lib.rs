//! `dsgd`: gradient-based optimisation and variational inference for programs that branch.
//!
//! [`cpu`] says which vector code paths this CPU runs. The layers, each depending only on those above it (see `ARCHITECTURE.md`):
//! [`ir`] (the DAG and its analyses), [`lang`] (text to IR), [`eval`] (the batched tape),
//! [`family`], [`estimate`], [`optim`] and [`experiment`].

pub mod cpu;
pub mod elementary;
pub mod estimate;
pub mod eval;
pub mod experiment;
pub mod family;
pub mod ir;
pub mod lang;
pub mod models;
pub mod optim;
pub mod special;

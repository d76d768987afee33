//! Workspace-level integration tests: one test binary (one link), a module
//! per subject.

mod conventions;

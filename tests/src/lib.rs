//! Workspace-level integration tests live in `tests/tests/it/` (one binary).
//!
//! The Rust examples of README.md and docs/backend.md are compiled and run
//! as doctests from here, so the documents cannot drift from the API.

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}

#[cfg(doctest)]
#[doc = include_str!("../../docs/backend.md")]
mod backend_guide {}

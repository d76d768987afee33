//! Workspace-level integration tests live in `tests/tests/it/` (one binary).
//!
//! The README's Rust examples are compiled and run as doctests from here, so
//! the README cannot drift from the API.

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}

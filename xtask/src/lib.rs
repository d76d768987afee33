//! The rtx fleet tool, as a library so that tests drive it in-process.
//!
//! Every command returns an [`Outcome`] (exit 0 or 1) or an error (exit 2);
//! [`cli::run`] maps them to exit codes and prints errors.

pub mod align_deps;
pub(crate) mod args;
pub(crate) mod ci;
pub mod cli;
pub(crate) mod diag;
pub(crate) mod edit;
pub mod fmt_check;
pub(crate) mod fsutil;
pub mod gpu_test;
pub mod policy;
pub(crate) mod rust_src;
pub(crate) mod text;
pub mod thiserror_src;
pub(crate) mod timing;
pub mod workspace;

/// What a command found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The workspace holds the policy (or everything was fixed / passed): exit 0.
    Holds,
    /// A policy violation or test failure was found: exit 1.
    Violations,
}

impl Outcome {
    /// The process exit code for this outcome.
    pub fn code(self) -> i32 {
        match self {
            Outcome::Holds => 0,
            Outcome::Violations => 1,
        }
    }
}

/// Exit code for "could not run": bad arguments, malformed input, missing tool.
pub const EXIT_ERROR: i32 = 2;

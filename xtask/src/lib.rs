//! The rtx fleet tool, as a library so that tests drive it in-process.
//!
//! Every command returns an [`Outcome`] (exit 0 or 1) or an error (exit 2);
//! [`cli::run`] maps them to exit codes and prints errors.

pub mod align_deps;
pub mod args;
pub mod ci;
pub mod cli;
pub mod diag;
pub mod edit;
pub mod fmt_check;
pub mod fsutil;
pub mod gpu_test;
pub mod policy;
pub mod rust_src;
pub mod text;
pub mod thiserror_src;
pub mod timing;
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

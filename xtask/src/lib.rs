//! The rtx fleet tool, as a library so that tests drive it in-process.
//!
//! Every command returns an [`Outcome`] (exit 0 or 1) or an error: exit 2,
//! nothing written, or, where files were written before the run failed
//! ([`Written`]), exit 3; [`cli::run`] maps them to exit codes and prints
//! errors.

// The docs are for the tool's developers: module maps link the private
// modules they describe (`cargo doc --document-private-items`).
#![allow(rustdoc::private_intra_doc_links)]

pub mod align_deps;
pub(crate) mod args;
pub mod child;
pub(crate) mod ci;
pub mod cli;
pub(crate) mod diag;
pub(crate) mod edit;
pub mod fmt_check;
pub(crate) mod fsutil;
pub mod gpu_test;
pub mod journal;
pub mod policy;
pub(crate) mod rust_src;
pub(crate) mod text;
pub mod thiserror_src;
pub(crate) mod timing;
pub mod toolchain_file;
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

/// Exit code for "files were written, but the run then failed": the report
/// of a fix could not be printed (stdout full, not a closed pipe), or a
/// rollback could not restore every file. Never used when nothing was written.
pub const EXIT_WRITTEN: i32 = 3;

/// An error after files were written (exit [`EXIT_WRITTEN`]): the message
/// says which files and what failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Written(pub String);

impl Written {
    /// The error of a fix that wrote `files` (relative paths) but whose
    /// report failed with `error`: [`Written`] when any file was written,
    /// else the plain error (exit 2: then nothing was).
    pub fn report_failed(command: &str, files: &[&str], error: std::io::Error) -> anyhow::Error {
        if files.is_empty() {
            return anyhow::Error::new(error).context("cannot print the report; nothing written");
        }
        let mut list = files
            .iter()
            .take(10)
            .copied()
            .collect::<Vec<_>>()
            .join(", ");
        if files.len() > 10 {
            list.push_str(&format!(" and {} more", files.len() - 10));
        }
        Written(format!(
            "{command} WROTE {} file(s), its fix is complete ({list}), but its report could not be printed: {error}",
            files.len()
        ))
        .into()
    }
}

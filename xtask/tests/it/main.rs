//! xtask's integration tests: one test binary (one link, one process start),
//! a module per command. Each drives `xtask::cli::run` in-process (or the
//! built binary, where a test needs a real process) on fixture workspaces
//! generated into temporary directories.

mod align_deps;
mod align_deps_sources;
mod child;
mod ci_wiring;
mod deep_nesting;
mod docs;
mod elsewhere;
mod field_safety;
mod field_safety_io;
mod field_trust;
mod fmt_check;
mod fmt_reach;
mod fmt_rustfmt;
mod gpu_probe;
mod gpu_test;
mod install;
mod large_fleets;
mod mid_migration;
mod migration;
mod phases;
mod policy_mistakes;
mod prefilter;
mod real_code;
mod renamed_thiserror;
mod stricter;
mod support;
mod thiserror_src;
mod xattrs;

//! `gpu-test --archive FILE`: the GPU tests as a cargo-nextest archive, for a
//! GPU host (or GPU CI runner) that has no Rust toolchain.
//!
//! One archive holds the whole matrix: `cargo nextest archive --release -p A
//! --features A/f -p B --features B/g ...`, so there is one file to ship, one
//! command to run and one `--partition` space to shard. The cost: the entries
//! are built in one cargo invocation, so their features unify across shared
//! dependencies, and a package may appear in only one entry (two feature sets
//! of one package cannot share an archive; that is exit 2). The cargo-nextest
//! binary that made the archive is copied beside it (`<dir>/cargo-nextest`):
//! the archive's runner travels with it.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::process::{self, Stdout, shell_quote};
use super::{Matrix, NEXTEST_INSTALL, build, describe, nextest_installed, select_args};
use crate::Outcome;
use crate::workspace::cargo_in;

/// The profile the archive is built in (as ../shared/GPU.md).
pub const PROFILE_ARGS: &[&str] = &["--release"];

/// Builds the archive for `matrix` at `file`, copies cargo-nextest beside it
/// and prints how to run it on the GPU host.
///
/// # Errors
/// cargo-nextest missing, `file` not ending in `.tar.zst`, a package in two
/// entries, or cargo / nextest failing for any reason but a compile error.
pub fn run(
    matrix: &Matrix,
    file: &Path,
    test_args: &[String],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    if !file.to_string_lossy().ends_with(".tar.zst") {
        bail!(
            "--archive {}: the archive name must end in .tar.zst (cargo-nextest's archive format)",
            file.display()
        );
    }
    for (i, e) in matrix.entries.iter().enumerate() {
        if matrix.entries[..i].iter().any(|p| p.package == e.package) {
            bail!(
                "{}: package `{}` has several [[gpu-test]] entries; one archive can hold only one feature set \
                 per package: archive them one at a time with a policy per entry (--policy FILE)",
                matrix.policy.display(),
                e.package
            );
        }
    }
    if !nextest_installed() {
        bail!("--archive needs cargo-nextest, which is not installed: {NEXTEST_INSTALL}");
    }
    let runner_src = find_nextest().with_context(|| {
        format!("cannot find the cargo-nextest executable in PATH or $CARGO_HOME/bin to ship beside the archive; {NEXTEST_INSTALL}")
    })?;
    let file = std::path::absolute(file)
        .with_context(|| format!("{}: cannot make the path absolute", file.display()))?;
    let dir = file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("{}: cannot create directory", dir.display()))?;

    let all: Vec<String> = matrix.entries.iter().map(describe).collect();
    writeln!(out, "gpu-test: archiving the tests of {}", all.join("; "))?;
    // Build first through cargo's JSON messages, so a compile error is told
    // apart from any other failure; the archive step then reuses the build.
    if !build(matrix, &matrix.entries, PROFILE_ARGS, out, err)? {
        writeln!(
            out,
            "gpu-test: build FAILED: the GPU tests do not compile (compiler output above)"
        )?;
        return Ok(Outcome::Violations);
    }
    let mut cmd = cargo_in(&matrix.manifest);
    cmd.args(["nextest", "archive", "--manifest-path"])
        .arg(&matrix.manifest)
        .args(PROFILE_ARGS)
        .args(select_args(&matrix.entries))
        .arg("--archive-file")
        .arg(&file);
    writeln!(out, "gpu-test: archive: {}", process::display(&cmd))?;
    out.flush()?;
    let c = process::run(&mut cmd, Stdout::Echo, out, err)?;
    if !c.status.success() {
        bail!(
            "`{}` failed ({}): see its message above",
            process::display(&cmd),
            c.status
        );
    }

    let runner = dir.join(runner_file_name());
    copy_executable(&runner_src, &runner)?;
    writeln!(
        out,
        "gpu-test: runner: {} (copied from {})",
        runner.display(),
        runner_src.display()
    )?;
    print_instructions(out, &matrix.root, &file, &runner, test_args)?;
    Ok(Outcome::Holds)
}

fn runner_file_name() -> String {
    format!("cargo-nextest{}", std::env::consts::EXE_SUFFIX)
}

/// Prints the command for the GPU host, run from the repository root, and how
/// to shard it.
fn print_instructions(
    out: &mut dyn Write,
    root: &Path,
    file: &Path,
    runner: &Path,
    test_args: &[String],
) -> anyhow::Result<()> {
    let show = |p: &Path| {
        let rel = PathBuf::from(crate::fsutil::rel(root, p));
        let s = rel.to_string_lossy().into_owned();
        // A bare relative name must not be looked up in PATH.
        let s = if rel.is_relative() && !s.contains('/') {
            format!("./{s}")
        } else {
            s
        };
        shell_quote(&s)
    };
    let filters = if test_args.is_empty() {
        String::new()
    } else {
        format!(
            " -- {}",
            test_args
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" ")
        )
    };
    let base = format!(
        "{} nextest run --archive-file {} --workspace-remap .",
        show(runner),
        show(file)
    );
    let inside = file.starts_with(root) && runner.starts_with(root);
    writeln!(
        out,
        "gpu-test: archive ready. On the GPU host (no Rust toolchain needed), from the root of a checkout of \
         this repository at the same commit{}, run:",
        if inside {
            ""
        } else {
            " with the archive and runner copied to the paths below"
        }
    )?;
    writeln!(out, "    {base}{filters}")?;
    writeln!(
        out,
        "gpu-test: to shard over N GPUs or hosts, run shard K of N (K = 1..N) on each, one GPU per shard \
         (count: splits evenly; hash:K/N keeps each test on the same shard as tests are added):"
    )?;
    writeln!(
        out,
        "    CUDA_VISIBLE_DEVICES=<K-1> {base} --partition count:<K>/<N>{filters}"
    )?;
    Ok(())
}

/// The cargo-nextest executable `cargo nextest` runs: PATH first, then
/// `$CARGO_HOME/bin` (cargo's own search order for subcommands).
pub fn find_nextest() -> Option<PathBuf> {
    let name = runner_file_name();
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(home).join("bin"));
    } else if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo").join("bin"));
    }
    dirs.into_iter()
        .map(|d| d.join(&name))
        .find(|p| p.is_file())
}

/// Copies `src` to `dest` with its permissions, through a temporary file and a
/// rename (so a runner being executed is never overwritten in place).
fn copy_executable(src: &Path, dest: &Path) -> anyhow::Result<()> {
    if let (Ok(a), Ok(b)) = (src.canonicalize(), dest.canonicalize())
        && a == b
    {
        return Ok(());
    }
    let bytes = std::fs::read(src).with_context(|| format!("{}: cannot read", src.display()))?;
    let perms = std::fs::metadata(src)
        .with_context(|| format!("{}: cannot stat", src.display()))?
        .permissions();
    crate::fsutil::stage_with_permissions(dest, &bytes, Some(perms))?
        .persist(dest)
        .map_err(|e| e.error)
        .with_context(|| format!("{}: cannot replace file", dest.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_use_paths_relative_to_the_root() {
        let mut out = Vec::new();
        let root = Path::new("/repo");
        print_instructions(
            &mut out,
            root,
            Path::new("/repo/.gpu/tests.tar.zst"),
            Path::new("/repo/.gpu/cargo-nextest"),
            &["gather".into(), "a b".into()],
        )
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains("\n    .gpu/cargo-nextest nextest run --archive-file .gpu/tests.tar.zst --workspace-remap . -- gather 'a b'\n"),
            "{out}"
        );
        assert!(out.contains("--partition count:<K>/<N> -- gather"), "{out}");
    }

    #[test]
    fn a_runner_in_the_root_is_not_looked_up_in_path() {
        let mut out = Vec::new();
        print_instructions(
            &mut out,
            Path::new("/r"),
            Path::new("/r/t.tar.zst"),
            Path::new("/r/cargo-nextest"),
            &[],
        )
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(
                "    ./cargo-nextest nextest run --archive-file ./t.tar.zst --workspace-remap .\n"
            ),
            "{out}"
        );
    }
}

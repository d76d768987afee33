//! The GPU probe cannot take xtask down: a driver library
//! whose `cuInit` segfaults or hangs, built here with the system `cc` and put
//! first on `LD_LIBRARY_PATH` as `libcuda.so.1`, gives the skip line (exit 0)
//! or, with `--require-device`, exit 2, naming what happened.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::write;

/// A directory holding `libcuda.so.1` whose `cuInit` runs `init_body` (C).
fn fake_driver(dir: &Path, init_body: &str) -> Option<PathBuf> {
    let src = dir.join("fake.c");
    std::fs::write(
        &src,
        format!(
            "#include <unistd.h>\n\
             int cuDriverGetVersion(int *v) {{ *v = 13000; return 0; }}\n\
             int cuInit(unsigned flags) {{ (void)flags; {init_body} return 0; }}\n\
             int cuDeviceGetCount(int *c) {{ *c = 1; return 0; }}\n"
        ),
    )
    .unwrap();
    let lib = dir.join("libcuda.so.1");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status();
    match st {
        Ok(s) if s.success() => Some(dir.to_path_buf()),
        _ => None, // no C compiler here
    }
}

fn workspace(root: &Path) {
    write(
        root,
        "Cargo.toml",
        "[workspace]\nresolver = \"2\"\nmembers = [\"gpu-crate\"]\n",
    );
    write(
        root,
        "gpu-crate/Cargo.toml",
        "[package]\nname = \"gpu-crate\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[features]\ngpu = []\n",
    );
    write(root, "gpu-crate/src/lib.rs", "#[test]\nfn cpu_only() {}\n");
    write(
        root,
        "policy/fleet.toml",
        "[[gpu-test]]\npackage = \"gpu-crate\"\nfeatures = [\"gpu\"]\n",
    );
}

fn gpu_test(
    root: &Path,
    driver_dir: &Path,
    extra: &[&str],
) -> (Option<i32>, String, String, Duration) {
    gpu_test_within(root, driver_dir, extra, "3")
}

/// [`gpu_test`] with `RTX_GPU_TEST_PROBE_TIMEOUT=limit`.
fn gpu_test_within(
    root: &Path,
    driver_dir: &Path,
    extra: &[&str],
    limit: &str,
) -> (Option<i32>, String, String, Duration) {
    let start = Instant::now();
    let out = crate::support::output_within(
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("gpu-test")
            .args(extra)
            .arg("--workspace")
            .arg(root)
            .env_remove("RTX_GPU_TEST_LIBCUDA")
            .env("LD_LIBRARY_PATH", driver_dir)
            .env("RTX_GPU_TEST_PROBE_TIMEOUT", limit)
            .env("CARGO_TARGET_DIR", root.join("target")),
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        start.elapsed(),
    )
}

fn case(init_body: &str, says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    workspace(&root);
    let drv = dir.path().join("driver");
    std::fs::create_dir_all(&drv).unwrap();
    let Some(drv) = fake_driver(&drv, init_body) else {
        eprintln!("skipped: no `cc`");
        return;
    };
    let (code, out, err, _) = gpu_test(&root, &drv, &[]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("gpu-test: skipped: the CUDA driver probe"),
        "{out}"
    );
    assert!(out.contains(says), "{out}");
    let (code, out, err, took) = gpu_test(&root, &drv, &["--require-device"]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(err.contains(says), "{err}");
    assert!(took < Duration::from_secs(60), "{took:?}");
}

#[test]
fn a_driver_whose_cuinit_segfaults_is_a_skip_reason() {
    case("*(volatile int *)0 = 1;", "killed by signal 11 (SIGSEGV)");
}

#[test]
fn a_driver_whose_cuinit_hangs_is_killed_after_the_time_limit() {
    case("for (;;) sleep(1);", "did not answer within 3 s");
}

/// The probe's limit is read as every limit is: a fraction of a second is
/// that limit (never the 60 s default), junk is exit 2 naming the variable.
#[test]
fn the_probe_limit_takes_fractions_and_refuses_junk() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    workspace(&root);
    let drv = dir.path().join("driver");
    std::fs::create_dir_all(&drv).unwrap();
    let Some(drv) = fake_driver(&drv, "for (;;) sleep(1);") else {
        eprintln!("skipped: no `cc`");
        return;
    };
    let (code, out, err, took) = gpu_test_within(&root, &drv, &[], "1.5");
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("did not answer within 1.5 s"), "{out}");
    assert!(took < Duration::from_secs(50), "{took:?}");
    for junk in ["abc", "0", "-1"] {
        let (code, out, err, _) = gpu_test_within(&root, &drv, &[], junk);
        assert_eq!(code, Some(2), "{junk}: {out}\n{err}");
        assert!(err.contains("RTX_GPU_TEST_PROBE_TIMEOUT="), "{err}");
    }
}

//! `cargo xtask gpu-test` on generated fixture workspaces (tiny crates, each
//! with its own target directory in a tempdir), and the driver probe against
//! fake `libcuda` libraries compiled here with rustc.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use xtask::gpu_test::probe::{self, NoDevice, REQUIRED_DRIVER_API};

/// Runs the xtask binary with extra environment: for what depends on the
/// environment (driver override, runner choice), which in-process tests
/// running in parallel must not change. The fixture named by `--workspace`
/// builds into its own `target/`, whatever `CARGO_TARGET_DIR` says: fixtures
/// share a package name (`gpu-crate`) and layout, so in one target
/// directory they would share cargo's fingerprints, and a fixture's build
/// could be taken for fresh from another's.
fn xtask_bin(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.args(args).envs(env.iter().copied());
    if let Some(ws) = args
        .iter()
        .position(|a| *a == "--workspace")
        .and_then(|k| args.get(k + 1))
    {
        cmd.env("CARGO_TARGET_DIR", Path::new(ws).join("target"));
    }
    let o = cmd.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

const GPU_TESTS: &str = r#"
#[test]
fn cpu_only() {}

#[cfg(feature = "gpu")]
mod gpu_tests {
    #[test]
    fn kernel_gathers() {}
    #[test]
    fn kernel_scatters() {}
    #[test]
    #[ignore = "slow"]
    fn kernel_huge() {}
}

#[cfg(feature = "gpu-fail")]
#[test]
fn kernel_fails() {
    panic!("device result differs from the host reference");
}
"#;

const BROKEN_GPU_CODE: &str = r#"
#[test]
fn cpu_only() {}

#[cfg(feature = "gpu")]
pub fn launch() -> u32 {
    "not a number"
}
"#;

/// A generated workspace: member `gpu-crate` with features `gpu` and
/// `gpu-fail`, `src/lib.rs` = `lib_rs`, and `policy/fleet.toml` = `policy`.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(lib_rs: &str, policy: &str) -> Fixture {
        Fixture::with_members(&[("gpu-crate", lib_rs)], policy)
    }

    /// Members named `name`, each with features `gpu` and `gpu-fail`.
    fn with_members(members: &[(&str, &str)], policy: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        let names: Vec<String> = members.iter().map(|(n, _)| format!("\"{n}\"")).collect();
        write(
            "Cargo.toml",
            &format!(
                "[workspace]\nresolver = \"2\"\nmembers = [{}]\n",
                names.join(", ")
            ),
        );
        for (name, lib_rs) in members {
            write(
                &format!("{name}/Cargo.toml"),
                &format!(
                    "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[features]\ngpu = []\ngpu-fail = []\n"
                ),
            );
            write(&format!("{name}/src/lib.rs"), lib_rs);
        }
        write("policy/fleet.toml", policy);
        Fixture { dir }
    }

    fn with_features(lib_rs: &str, features: &str) -> Fixture {
        Fixture::new(
            lib_rs,
            &format!("[[gpu-test]]\npackage = \"gpu-crate\"\nfeatures = [{features}]\n"),
        )
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn ws(&self) -> String {
        self.root().display().to_string()
    }
}

// ---------- the skip path, on this machine and with the driver overridden ----------

/// The driver override that makes every machine a machine without a GPU,
/// and the skip reason the probe gives for it: the skip path is tested
/// everywhere, not only where there happens to be no device.
const NO_DRIVER: (&str, &str) = ("RTX_GPU_TEST_LIBCUDA", "/nonexistent/libcuda.so.1");

fn no_driver_reason() -> NoDevice {
    probe::probe_libraries(&[PathBuf::from(NO_DRIVER.1)]).unwrap_err()
}

#[test]
fn no_device_skips_with_the_reason_and_exit_0() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &[NO_DRIVER]);
    let reason = no_driver_reason();
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("\ngpu-test: skipped: {reason}\n")),
        "{out}"
    );
    // it built the GPU tests before deciding to skip
    assert!(out.contains("--features gpu-crate/gpu"), "{out}");
    assert!(!out.contains("passed"), "{out}");
    // for GitHub Actions, the skip is also an annotation
    let (code, out, err) = xtask_bin(
        &["gpu-test", "--format", "github", "--workspace", &fx.ws()],
        &[NO_DRIVER],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("\n::notice title=gpu-test::skipped: {reason}\n")),
        "{out}"
    );
    let (code, _, err) = xtask_bin(
        &["gpu-test", "--format", "json", "--workspace", &fx.ws()],
        &[NO_DRIVER],
    );
    assert_eq!(code, 2);
    assert!(err.contains("--format json is not supported"), "{err}");
}

#[test]
fn require_device_without_one_is_exit_2_with_the_reason() {
    let reason = no_driver_reason();
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let (code, out, err) = xtask_bin(
        &["gpu-test", "--require-device", "--workspace", &fx.ws()],
        &[NO_DRIVER],
    );
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("--require-device") && err.contains(&reason.to_string()),
        "{err}"
    );
    assert!(!out.contains("skipped"), "{out}");
    let (code, out, err) = xtask_bin(
        &[
            "gpu-test",
            "--require-device",
            "--format",
            "github",
            "--workspace",
            &fx.ws(),
        ],
        &[NO_DRIVER],
    );
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        out.contains(
            "::error title=gpu-test::no usable CUDA device, and --require-device was given: "
        ),
        "{out}"
    );
}

/// An empty matrix never passes where GPU tests are required: with
/// --require-device or --archive it is exit 2 (and no archive is written);
/// a plain run says there is nothing to test and exits 0.
#[test]
fn empty_matrix_is_exit_2_with_require_device_or_archive() {
    let fx = Fixture::new(GPU_TESTS, "[fmt]\nexclude = []\n");
    let (code, out, _) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &[NO_DRIVER]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("gpu-test: nothing to test"), "{out}");
    let (code, out, err) = xtask_bin(
        &["gpu-test", "--require-device", "--workspace", &fx.ws()],
        &[NO_DRIVER],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("no [[gpu-test]] entries"), "{err}");
    assert!(err.contains("--require-device"), "{err}");
    let file = fx.root().join("gpu.tar.zst");
    let (code, out, err) = xtask_bin(
        &[
            "gpu-test",
            "--archive",
            file.to_str().unwrap(),
            "--workspace",
            &fx.ws(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("no [[gpu-test]] entries") && err.contains("--archive"),
        "{err}"
    );
    assert!(!file.exists());
}

#[test]
fn missing_driver_library_named_by_the_override_is_the_skip_reason() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let env = [("RTX_GPU_TEST_LIBCUDA", "/nonexistent/libcuda.so.1")];
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &env);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("gpu-test: skipped: no CUDA driver: cannot load /nonexistent/libcuda.so.1 (the NVIDIA driver is not installed"),
        "{out}"
    );
    let (code, _, err) = xtask_bin(
        &["gpu-test", "--require-device", "--workspace", &fx.ws()],
        &env,
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no CUDA driver: cannot load /nonexistent/libcuda.so.1"),
        "{err}"
    );
}

#[test]
fn driver_without_devices_is_exit_2_with_require_device() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let lib = fake_libcuda(FakeDriver {
        version: 13000,
        init: 100,
        count: 0,
    });
    let env = [("RTX_GPU_TEST_LIBCUDA", lib.to_str().unwrap())];
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &env);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("gpu-test: skipped: cuInit failed with CUDA_ERROR_NO_DEVICE (100)"),
        "{out}"
    );
    let (code, _, err) = xtask_bin(
        &["gpu-test", "--require-device", "--workspace", &fx.ws()],
        &env,
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CUDA_ERROR_NO_DEVICE"), "{err}");
}

// ---------- builds ----------

#[test]
fn gpu_code_that_does_not_compile_is_exit_1_with_the_compiler_output() {
    let fx = Fixture::with_features(BROKEN_GPU_CODE, "\"gpu\"");
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("error[E0308]: mismatched types"), "{err}");
    assert!(err.contains("gpu-crate/src/lib.rs:7"), "{err}");
    assert!(
        out.contains("gpu-test: build FAILED: gpu-crate with features gpu"),
        "{out}"
    );
    // a build failure is never reported as a skip, even with no device
    assert!(!out.contains("skipped"), "{out}");
}

#[test]
fn the_same_code_without_the_feature_compiles() {
    // The control for the test above: only the feature breaks the build.
    let fx = Fixture::with_features(BROKEN_GPU_CODE, "");
    let (code, out, err) = xtask_bin(
        &["gpu-test", "--workspace", &fx.ws()],
        &[("RTX_GPU_TEST_LIBCUDA", "/nonexistent/libcuda.so.1")],
    );
    assert_eq!(code, 0, "{out}\n{err}");
}

// ---------- the policy matrix ----------

#[test]
fn unknown_package_in_policy_is_exit_2_naming_it_and_the_policy() {
    let fx = Fixture::new(
        GPU_TESTS,
        "[fmt]\nexclude = []\n\n[[gpu-test]]\npackage = \"rtx-backend-cudaa\"\nfeatures = [\"gpu\"]\n",
    );
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &[]);
    assert_eq!(code, 2, "{out}\n{err}");
    let policy = fx.root().join("policy/fleet.toml");
    assert!(
        err.contains(&format!(
            "{}:5: [[gpu-test]] package `rtx-backend-cudaa` is not a member",
            policy.display()
        )),
        "{err}"
    );
    assert!(err.contains("members: gpu-crate"), "{err}");
    assert!(
        !out.contains("build"),
        "nothing is built before the matrix is valid: {out}"
    );
}

#[test]
fn unknown_feature_in_policy_is_exit_2_naming_it_and_the_policy() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\", \"cudaa\"");
    let (code, _, err) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &[]);
    assert_eq!(code, 2, "{err}");
    let policy = fx.root().join("policy/fleet.toml");
    assert!(
        err.contains(&format!(
            "{}:3: [[gpu-test]] feature `cudaa` is not a feature of package `gpu-crate`",
            policy.display()
        )),
        "{err}"
    );
    assert!(err.contains("its features: gpu, gpu-fail"), "{err}");
}

#[test]
fn policy_given_with_dash_dash_policy_is_used() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let other = fx.root().join("other.toml");
    std::fs::write(&other, "[[gpu-test]]\npackage = \"nope\"\n").unwrap();
    let (code, _, err) = xtask_bin(
        &[
            "gpu-test",
            "--workspace",
            &fx.ws(),
            "--policy",
            other.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{}:2:", other.display())), "{err}");
}

#[test]
fn empty_matrix_says_so() {
    let fx = Fixture::new(GPU_TESTS, "[fmt]\nexclude = []\n");
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("has no [[gpu-test]] entries"), "{out}");
}

#[test]
fn require_device_and_archive_conflict() {
    let (code, _, err) = xtask_bin(
        &["gpu-test", "--require-device", "--archive", "x.tar.zst"],
        &[],
    );
    assert_eq!(code, 2, "{err}");
}

// ---------- device present (a fake driver): runs, counts, exit codes ----------

fn run_with_fake_device(fx: &Fixture, runner: &str, extra: &[&str]) -> (i32, String, String) {
    let lib = fake_libcuda(FakeDriver {
        version: 13000,
        init: 0,
        count: 2,
    });
    let ws = fx.ws();
    let mut args = vec!["gpu-test", "--require-device", "--workspace", &ws];
    args.extend_from_slice(extra);
    xtask_bin(
        &args,
        &[
            ("RTX_GPU_TEST_LIBCUDA", lib.to_str().unwrap()),
            ("RTX_GPU_TEST_RUNNER", runner),
        ],
    )
}

#[test]
fn device_present_runs_the_tests_and_counts_them_with_nextest() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let (code, out, err) = run_with_fake_device(&fx, "nextest", &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("gpu-test: device: Fake GPU (2 devices), driver API 13000 (CUDA 13.0)"),
        "{out}"
    );
    assert!(
        out.contains("cargo nextest run") || out.contains(" nextest run "),
        "{out}"
    );
    assert!(
        out.ends_with("gpu-test: 3 passed, 0 failed, 1 skipped\n"),
        "{out}"
    );
}

#[test]
fn several_gpus_run_one_nextest_partition_each_and_merge_the_counts() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let lib = fake_libcuda(FakeDriver {
        version: 13000,
        init: 0,
        count: 3,
    });
    let ws = fx.ws();
    let run = |extra: &[(&str, &str)]| {
        let mut env = vec![
            ("RTX_GPU_TEST_LIBCUDA", lib.to_str().unwrap()),
            ("RTX_GPU_TEST_RUNNER", "nextest"),
        ];
        env.extend_from_slice(extra);
        xtask_bin(&["gpu-test", "--require-device", "--workspace", &ws], &env)
    };
    let (code, out, err) = run(&[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("gpu-test: 3 partitions in parallel, one per GPU"),
        "{out}"
    );
    for (i, gpu) in [(1, 0), (2, 1), (3, 2)] {
        assert!(
            out.contains(&format!("gpu-test: partition {i}/3 on GPU {gpu}: ")),
            "{out}"
        );
    }
    assert!(out.contains("--partition count:3/3"), "{out}");
    // three tests ran across the partitions, the ignored one is skipped once
    assert!(
        out.ends_with("gpu-test: 3 passed, 0 failed, 1 skipped\n"),
        "{out}"
    );
    // a cap of 1 is the plain run
    let (code, out, err) = run(&[("RTX_GPU_TEST_PARTITIONS", "1")]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("partition"), "{out}");
    assert!(
        out.ends_with("gpu-test: 3 passed, 0 failed, 1 skipped\n"),
        "{out}"
    );
}

#[test]
fn device_present_runs_the_tests_and_counts_them_with_cargo_test() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let (code, out, err) = run_with_fake_device(&fx, "cargo-test", &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("test gpu_tests::kernel_gathers ... ok"),
        "{out}"
    );
    assert!(
        out.ends_with("gpu-test: 3 passed, 0 failed, 1 skipped\n"),
        "{out}"
    );
}

#[test]
fn a_failing_gpu_test_is_exit_1() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\", \"gpu-fail\"");
    for runner in ["nextest", "cargo-test"] {
        let (code, out, err) = run_with_fake_device(&fx, runner, &[]);
        assert_eq!(code, 1, "{runner}: {out}\n{err}");
        assert!(
            out.contains("gpu-test: 3 passed, 1 failed, 1 skipped\n"),
            "{runner}: {out}"
        );
        assert!(
            format!("{out}{err}").contains("device result differs from the host reference"),
            "{runner}"
        );
    }
    let (code, out, err) = run_with_fake_device(&fx, "cargo-test", &["--format", "github"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("::error title=gpu-test::FAILED: 1 GPU test failed (see above)"),
        "{out}"
    );
}

#[test]
fn a_filter_that_matches_nothing_never_passes() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    for runner in ["nextest", "cargo-test"] {
        let (code, out, err) = run_with_fake_device(&fx, runner, &["--", "no_such_test"]);
        assert_eq!(code, 1, "{runner}: {out}\n{err}");
        assert!(
            out.contains("gpu-test: FAILED: no GPU test ran"),
            "{runner}: {out}"
        );
    }
}

#[test]
fn a_filter_selects_tests() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let (code, out, err) = run_with_fake_device(&fx, "cargo-test", &["--", "kernel_gathers"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("gpu-test: 1 passed, 0 failed, 3 skipped\n"),
        "{out}"
    );
}

// ---------- --archive ----------

#[test]
fn archive_is_produced_lists_the_gpu_tests_and_the_printed_command_runs_it() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let archive = fx.root().join(".gpu/tests.tar.zst");
    let (code, out, err) = xtask_bin(
        &[
            "gpu-test",
            "--workspace",
            &fx.ws(),
            "--archive",
            archive.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(archive.is_file(), "{out}");
    let runner = fx.root().join(".gpu/cargo-nextest");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&runner).unwrap().permissions().mode();
        assert!(mode & 0o111 != 0, "runner not executable: {mode:o}");
    }

    // The archive lists the GPU tests (with cargo nextest, as a user would).
    let list = Command::new(xtask::workspace::cargo())
        .args(["nextest", "list", "--archive-file"])
        .arg(&archive)
        .arg("--workspace-remap")
        .arg(fx.root())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.status.success(),
        "{listed}\n{}",
        String::from_utf8_lossy(&list.stderr)
    );
    assert!(
        listed.contains("gpu-crate gpu_tests::kernel_gathers"),
        "{listed}"
    );
    assert!(
        listed.contains("gpu-crate gpu_tests::kernel_scatters"),
        "{listed}"
    );

    // The printed command is exact: run it as the GPU host would, from the root,
    // with the shipped runner and no cargo on PATH.
    let expected = "    .gpu/cargo-nextest nextest run --archive-file .gpu/tests.tar.zst --workspace-remap .\n";
    assert!(out.contains(expected), "{out}");
    assert!(out.contains("--partition count:<K>/<N>"), "{out}");
    let run = Command::new("sh")
        .args(["-c", expected.trim()])
        .current_dir(fx.root())
        .env("PATH", "/usr/bin:/bin")
        .env_remove("CARGO")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains("3 tests run: 3 passed, 1 skipped"),
        "{stderr}"
    );

    // And sharded: the two halves together run every test once.
    let mut ran = 0;
    for k in 1..=2 {
        let cmd = format!("{} --partition count:{k}/2", expected.trim());
        let o = Command::new("sh")
            .args(["-c", &cmd])
            .current_dir(fx.root())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let s = String::from_utf8_lossy(&o.stderr);
        ran += s.matches("        PASS [").count();
    }
    assert_eq!(ran, 3);
}

/// A GPU test that reads the workspace manifest through the runtime
/// `CARGO_MANIFEST_DIR`, as `rtx-backend-cuda`'s abi test does.
const READS_THE_CHECKOUT: &str = r#"
#[cfg(feature = "gpu")]
#[test]
fn reads_the_workspace_manifest() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = std::path::Path::new(&dir).join("../Cargo.toml");
    let text = std::fs::read_to_string(&root).unwrap();
    assert!(text.contains("[workspace]"), "{}", root.display());
}
"#;

#[test]
fn an_archive_runs_from_a_checkout_at_another_path() {
    let fx = Fixture::with_features(READS_THE_CHECKOUT, "\"gpu\"");
    let archive = fx.root().join(".gpu/tests.tar.zst");
    let (code, out, err) = xtask_bin(
        &[
            "gpu-test",
            "--workspace",
            &fx.ws(),
            "--archive",
            archive.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    // the GPU host: a checkout of the same commit at another path, with
    // `.gpu/` copied there; the build's path is gone
    let host = tempfile::tempdir().unwrap();
    let checkout = host.path().join("runner/work/repo");
    std::fs::create_dir_all(checkout.parent().unwrap()).unwrap();
    std::fs::rename(fx.root(), &checkout).unwrap();
    let command =
        ".gpu/cargo-nextest nextest run --archive-file .gpu/tests.tar.zst --workspace-remap .";
    let run = Command::new("sh")
        .args(["-c", command])
        .current_dir(&checkout)
        .env("PATH", "/usr/bin:/bin")
        .env_remove("CARGO")
        .env_remove("CARGO_MANIFEST_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    std::fs::rename(&checkout, fx.root()).unwrap();
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("1 test run: 1 passed"), "{stderr}");
}

#[test]
fn each_fixture_builds_in_its_own_target_directory_whatever_cargo_target_dir_says() {
    let shared = tempfile::tempdir().unwrap();
    let shared_dir = shared.path().to_str().unwrap();
    let good = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let env = [NO_DRIVER, ("CARGO_TARGET_DIR", shared_dir)];
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &good.ws()], &env);
    assert_eq!(code, 0, "{out}\n{err}");
    // the same package at the same place in its workspace, with sources
    // older than the build above: only its own build can fail it
    let broken = Fixture::with_features(BROKEN_GPU_CODE, "\"gpu\"");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for rel in ["Cargo.toml", "gpu-crate/Cargo.toml", "gpu-crate/src/lib.rs"] {
        let f = std::fs::File::options()
            .write(true)
            .open(broken.root().join(rel))
            .unwrap();
        f.set_modified(old).unwrap();
    }
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &broken.ws()], &env);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("error[E0308]: mismatched types"), "{err}");
    assert!(good.root().join("target").is_dir() && broken.root().join("target").is_dir());
    let built_there: Vec<_> = std::fs::read_dir(shared.path()).unwrap().collect();
    assert!(built_there.is_empty(), "{built_there:?}");
}

#[test]
fn archive_of_code_that_does_not_compile_is_exit_1() {
    let fx = Fixture::with_features(BROKEN_GPU_CODE, "\"gpu\"");
    let archive = fx.root().join(".gpu/tests.tar.zst");
    let (code, out, err) = xtask_bin(
        &[
            "gpu-test",
            "--workspace",
            &fx.ws(),
            "--archive",
            archive.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("error[E0308]: mismatched types"), "{err}");
    assert!(!archive.exists());
}

#[test]
fn archive_name_must_be_tar_zst() {
    let fx = Fixture::with_features(GPU_TESTS, "\"gpu\"");
    let (code, _, err) = xtask_bin(
        &[
            "gpu-test",
            "--workspace",
            &fx.ws(),
            "--archive",
            "tests.tar",
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("must end in .tar.zst"), "{err}");
}

// ---------- the probe's reasons, against fake drivers ----------

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct FakeDriver {
    version: i32,
    init: i32,
    count: i32,
}

/// A fake `libcuda` exporting the entry points the probe calls, returning the
/// given values; compiled once per variant with rustc into the test tmpdir.
fn fake_libcuda(d: FakeDriver) -> PathBuf {
    static BUILT: Mutex<BTreeMap<FakeDriver, PathBuf>> = Mutex::new(BTreeMap::new());
    let mut map = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let key = d;
    if let Some(p) = map.get(&key) {
        return p.clone();
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu-test-fake-libcuda");
    std::fs::create_dir_all(&dir).unwrap();
    let stem = format!("fakecuda_{}_{}_{}", d.version, d.init, d.count);
    let src = dir.join(format!("{stem}.rs"));
    let lib = dir.join(format!("lib{stem}.so"));
    std::fs::write(
        &src,
        format!(
            r#"
use std::ffi::{{c_char, c_int, c_uint}};
#[no_mangle] pub unsafe extern "C" fn cuDriverGetVersion(v: *mut c_int) -> c_int {{ *v = {v}; 0 }}
#[no_mangle] pub extern "C" fn cuInit(_flags: c_uint) -> c_int {{ {init} }}
#[no_mangle] pub unsafe extern "C" fn cuDeviceGetCount(c: *mut c_int) -> c_int {{ *c = {count}; 0 }}
#[no_mangle] pub unsafe extern "C" fn cuDeviceGet(d: *mut c_int, ordinal: c_int) -> c_int {{ *d = ordinal; 0 }}
#[no_mangle] pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, _d: c_int) -> c_int {{
    let s = b"Fake GPU\0";
    if (len as usize) < s.len() {{ return 1; }}
    std::ptr::copy_nonoverlapping(s.as_ptr() as *const c_char, name, s.len());
    0
}}
"#,
            v = d.version,
            init = d.init,
            count = d.count
        ),
    )
    .unwrap();
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let o = Command::new(rustc)
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "cdylib",
            "--crate-name",
            &stem,
            "-o",
        ])
        .arg(&lib)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "cannot build the fake driver: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    map.insert(key, lib.clone());
    lib
}

#[test]
fn probe_finds_a_working_driver() {
    let lib = fake_libcuda(FakeDriver {
        version: 13000,
        init: 0,
        count: 2,
    });
    let info = probe::probe_libraries(std::slice::from_ref(&lib)).unwrap();
    assert_eq!(info.driver_api, 13000);
    assert_eq!(info.devices, 2);
    assert_eq!(info.name.as_deref(), Some("Fake GPU"));
    assert_eq!(info.library, lib);
}

#[test]
fn probe_tries_the_next_library_when_one_is_missing() {
    let lib = fake_libcuda(FakeDriver {
        version: 13000,
        init: 0,
        count: 2,
    });
    let info =
        probe::probe_libraries(&[PathBuf::from("/nonexistent/libcuda.so.1"), lib.clone()]).unwrap();
    assert_eq!(info.library, lib);
}

#[test]
fn probe_reports_a_driver_too_old_for_the_toolkit() {
    let lib = fake_libcuda(FakeDriver {
        version: 12040,
        init: 0,
        count: 1,
    });
    let e = probe::probe_libraries(&[lib]).unwrap_err();
    assert_eq!(
        e,
        NoDevice::DriverTooOld {
            found: 12040,
            required: REQUIRED_DRIVER_API
        }
    );
    assert!(
        e.to_string()
            .starts_with("the CUDA driver is too old: it supports CUDA 12.4"),
        "{e}"
    );
}

#[test]
fn probe_reports_cuinit_failures_with_their_name() {
    let lib = fake_libcuda(FakeDriver {
        version: 13000,
        init: 100,
        count: 0,
    });
    let e = probe::probe_libraries(&[lib]).unwrap_err();
    assert_eq!(
        e,
        NoDevice::DriverCall {
            call: "cuInit",
            code: 100
        }
    );
    assert!(
        e.to_string()
            .contains("CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"),
        "{e}"
    );
}

#[test]
fn probe_reports_zero_devices() {
    let lib = fake_libcuda(FakeDriver {
        version: 13000,
        init: 0,
        count: 0,
    });
    let e = probe::probe_libraries(&[lib]).unwrap_err();
    assert_eq!(e, NoDevice::ZeroDevices { driver_api: 13000 });
    assert!(e.to_string().contains("reports zero devices"), "{e}");
}

#[test]
fn probe_reports_a_missing_library_as_no_driver() {
    let e = probe::probe_libraries(&[PathBuf::from("/nonexistent/libcuda.so.1")]).unwrap_err();
    let NoDevice::NoDriver { tried, detail } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(tried, &[PathBuf::from("/nonexistent/libcuda.so.1")]);
    assert!(detail.contains("No such file"), "{detail}");
}

// ---------- several matrix entries ----------

const TWO_ENTRIES: &str = "[[gpu-test]]\npackage = \"gpu-crate\"\nfeatures = [\"gpu\"]\n\n\
                           [[gpu-test]]\npackage = \"gpu-crate\"\nfeatures = [\"gpu\", \"gpu-fail\"]\n";

#[test]
fn every_entry_is_built_and_run_and_the_counts_are_summed() {
    let fx = Fixture::new(GPU_TESTS, TWO_ENTRIES);
    for runner in ["nextest", "cargo-test"] {
        let (code, out, err) = run_with_fake_device(&fx, runner, &[]);
        assert_eq!(code, 1, "{runner}: {out}\n{err}");
        assert_eq!(out.matches("gpu-test: build: ").count(), 2, "{out}");
        assert_eq!(out.matches("gpu-test: run: ").count(), 2, "{out}");
        assert!(
            out.ends_with("gpu-test: 6 passed, 1 failed, 2 skipped\n"),
            "{runner}: {out}"
        );
    }
}

#[test]
fn one_entry_failing_to_compile_fails_the_build_but_the_others_are_built() {
    let broken_fail =
        "#[test]\nfn cpu_only() {}\n#[cfg(feature = \"gpu-fail\")]\npub fn f() -> u32 { \"x\" }\n";
    let fx = Fixture::new(broken_fail, TWO_ENTRIES);
    let (code, out, err) = xtask_bin(&["gpu-test", "--workspace", &fx.ws()], &[]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(out.matches("gpu-test: build: ").count(), 2, "{out}");
    assert!(
        out.contains(
            "gpu-test: FAILED: the GPU tests do not compile: gpu-crate with features gpu,gpu-fail\n"
        ),
        "{out}"
    );
}

#[test]
fn archive_refuses_two_feature_sets_of_one_package() {
    let fx = Fixture::new(GPU_TESTS, TWO_ENTRIES);
    let archive = fx.root().join(".gpu/t.tar.zst");
    let (code, _, err) = xtask_bin(
        &[
            "gpu-test",
            "--workspace",
            &fx.ws(),
            "--archive",
            archive.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("package `gpu-crate` has several [[gpu-test]] entries"),
        "{err}"
    );
}

#[test]
fn one_archive_holds_every_package_of_the_matrix() {
    let other = "#[cfg(feature = \"gpu-fail\")]\n#[test]\nfn other_kernel() {}\n#[cfg(feature = \"gpu\")]\n#[test]\nfn not_selected() {}\n";
    let policy = "[[gpu-test]]\npackage = \"gpu-crate\"\nfeatures = [\"gpu\"]\n\n\
                  [[gpu-test]]\npackage = \"other-crate\"\nfeatures = [\"gpu-fail\"]\n";
    let fx = Fixture::with_members(&[("gpu-crate", GPU_TESTS), ("other-crate", other)], policy);
    let archive = fx.root().join("out/gpu tests.tar.zst");
    let (code, out, err) = xtask_bin(
        &[
            "gpu-test",
            "--workspace",
            &fx.ws(),
            "--archive",
            archive.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("--features gpu-crate/gpu -p other-crate --features other-crate/gpu-fail"),
        "{out}"
    );
    // a path with a space is quoted in the printed command
    let expected = "    out/cargo-nextest nextest run --archive-file 'out/gpu tests.tar.zst' --workspace-remap .\n";
    assert!(out.contains(expected), "{out}");
    let o = Command::new("sh")
        .args(["-c", expected.trim()])
        .current_dir(fx.root())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // each package built with its own entry's features, and nothing else
    assert!(
        stderr.contains("PASS") && stderr.contains("other-crate other_kernel"),
        "{stderr}"
    );
    assert!(
        stderr.contains("gpu-crate gpu_tests::kernel_gathers"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("not_selected") && !stderr.contains("kernel_fails"),
        "{stderr}"
    );
    assert!(
        stderr.contains("4 tests run: 4 passed, 1 skipped"),
        "{stderr}"
    );
}

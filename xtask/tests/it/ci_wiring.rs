//! The CI wiring a team copies stays wired: the GitHub
//! workflow runs `.ci/run` on a CPU machine and the GPU tests on a
//! self-hosted GPU runner with `--require-device`, and `.ci/run` asks for
//! GitHub annotations under GitHub Actions. (The YAML itself is checked to
//! parse where Python's yaml module is installed.)

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn the_workflow_runs_the_cpu_checks_and_the_gpu_tests() {
    let wf = std::fs::read_to_string(repo().join(".github/workflows/ci.yml")).unwrap();
    for needed in [
        "runs-on: ubuntu-latest",
        "run: .ci/run",
        "runs-on: [self-hosted, gpu]",
        "run: cargo xtask gpu-test --require-device --format github",
    ] {
        assert!(wf.contains(needed), "ci.yml lacks `{needed}`");
    }
    let run = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        run.contains("cargo xtask ci --skip tests --format github"),
        ".ci/run does not ask for annotations under GitHub Actions"
    );
    // the YAML parses, where a YAML parser is at hand
    let parsed = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); assert set(d['jobs']) == {'cpu', 'gpu'}, d['jobs'].keys()",
        ])
        .arg(repo().join(".github/workflows/ci.yml"))
        .output();
    if let Ok(out) = parsed {
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.contains("No module named 'yaml'") {
            assert!(out.status.success(), "ci.yml: {stderr}");
        }
    }
}

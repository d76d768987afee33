//! The translation unit checked by a host C++ compiler against
//! `host_stub.h` (NVRTC's built-ins declared for the host): an edit that
//! breaks a kernel's C++ (a typo, a wrong type, a template that no longer
//! instantiates) fails here, without a device, instead of failing every
//! kernel's NVRTC compilation on the GPU host. What it cannot see: PTX in
//! `asm` statements, launch bounds, and anything NVRTC alone rejects.
//!
//! The compiler is `$CXX`, else the first of `c++`, `g++`, `clang++` on the
//! path. Without one the check says so and passes, unless
//! `RTX_REQUIRE_HOST_CXX` is set (CI sets it: `.ci/run` installs g++).

use std::path::PathBuf;
use std::process::Command;

use super::source::translation_unit;

const STUB: &str = include_str!("host_stub.h");

/// A C++ compiler that runs, if any.
fn cxx() -> Option<String> {
    let named = std::env::var("CXX").ok().filter(|c| !c.is_empty());
    named
        .into_iter()
        .chain(["c++", "g++", "clang++"].map(String::from))
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Checks `unit` with `cxx`: `Err(diagnostics)` when it is rejected.
fn check(cxx: &str, unit: &str, tag: &str) -> Result<(), String> {
    let path: PathBuf =
        std::env::temp_dir().join(format!("rtx-host-check-{}-{tag}.cpp", std::process::id()));
    std::fs::write(&path, format!("{STUB}\n{unit}")).expect("write the unit to the temp dir");
    let out = Command::new(cxx)
        .args(["-std=c++17", "-fsyntax-only", "-w", "-x", "c++"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("running {cxx}: {e}"));
    let _ = std::fs::remove_file(&path);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The compiler, or `None` after saying why the check is skipped.
fn compiler() -> Option<String> {
    let found = cxx();
    if found.is_none() {
        assert!(
            std::env::var_os("RTX_REQUIRE_HOST_CXX").is_none(),
            "RTX_REQUIRE_HOST_CXX is set but no C++ compiler runs \
             ($CXX, c++, g++, clang++): install g++"
        );
        eprintln!("skipped: no C++ compiler ($CXX, c++, g++, clang++)");
    }
    found
}

#[test]
fn the_kernels_compile_as_host_cpp() {
    let Some(cxx) = compiler() else { return };
    if let Err(diag) = check(&cxx, &translation_unit(), "unit") {
        let head: String = diag.lines().take(40).collect::<Vec<_>>().join("\n");
        panic!("{cxx} rejects the translation unit:\n{head}");
    }
}

/// The check can fail: a call to an undeclared function in a template
/// body, and a wrong argument count to an intrinsic, are each rejected.
#[test]
fn a_broken_kernel_is_rejected() {
    let Some(cxx) = compiler() else { return };
    let unit = translation_unit();
    let body = unit
        .find("matmul_level0(")
        .and_then(|i| unit[i..].find('{').map(|j| i + j + 1))
        .expect("the matmul's level-0 template");
    let undeclared = format!(
        "{} rtx_no_such_function(); {}",
        &unit[..body],
        &unit[body..]
    );
    assert!(check(&cxx, &undeclared, "undeclared").is_err());
    let call = "__fadd_rn(a, b)";
    assert!(unit.contains(call), "vadd's float add");
    let wrong = unit.replacen(call, "__fadd_rn(a, b, 1)", 1);
    assert!(check(&cxx, &wrong, "arity").is_err());
}

//! The kernel sources, embedded at build time, and the single translation
//! unit NVRTC compiles from them, with the kernels' instantiations written
//! from the table (`table.rs`). Plain text handling: no device needed.

use crate::kernels::table::Kernel;

/// `(file name, text)` of every file under `kernels/`, in translation-unit
/// order: each header (`.cuh`) before the files that include it. The model's
/// ops are three files by op family (`model.cu`, `dense.cu`, `segment.cu`)
/// sharing `model.cuh`; `train.cu` (the training ops) uses `model.cuh` and
/// `plan.cu`'s `splitmix64`.
pub const KERNEL_FILES: [(&str, &str); 11] = [
    ("common.cuh", include_str!("../../../../kernels/common.cuh")),
    ("index.cu", include_str!("../../../../kernels/index.cu")),
    ("permute.cu", include_str!("../../../../kernels/permute.cu")),
    (
        "permute_2byte.cu",
        include_str!("../../../../kernels/permute_2byte.cu"),
    ),
    ("model.cuh", include_str!("../../../../kernels/model.cuh")),
    ("model.cu", include_str!("../../../../kernels/model.cu")),
    ("dense.cu", include_str!("../../../../kernels/dense.cu")),
    ("segment.cu", include_str!("../../../../kernels/segment.cu")),
    ("plan.cu", include_str!("../../../../kernels/plan.cu")),
    ("sample.cu", include_str!("../../../../kernels/sample.cu")),
    ("train.cu", include_str!("../../../../kernels/train.cu")),
];

/// The file a line `#include "name"` of `KERNEL_FILES` names, if it is one.
fn included_kernel_file(line: &str) -> Option<&'static str> {
    let name = line
        .trim_start()
        .strip_prefix("#include")?
        .trim()
        .strip_prefix('"')?
        .strip_suffix('"')?;
    KERNEL_FILES.iter().map(|(n, _)| *n).find(|n| *n == name)
}

/// The macro a line `// @kernels MACRO` of a kernels file names: the place
/// of the invocations of that kernel-defining macro, written from the table.
pub(crate) fn kernels_marker(line: &str) -> Option<&str> {
    let name = line.trim().strip_prefix("// @kernels ")?.trim();
    let ident = name.starts_with("RTX_")
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    ident.then_some(name)
}

/// The invocation of its kernel-defining macro that instantiates `k`, e.g.
/// `RTX_SCATTER(scatter0_f32x4, float4, true, false)`; `None` for a kernel
/// written out in its file.
pub(crate) fn invocation(k: Kernel) -> Option<String> {
    let (mac, args) = k.instantiation()?;
    Some(format!("{mac}({}, {args})", k.name()))
}

/// The invocations of `mac`, one a line, in table order.
fn invocations_of(mac: &str) -> String {
    let mut out = String::new();
    for &k in Kernel::ALL {
        if k.instantiation().is_some_and(|(m, _)| m == mac)
            && let Some(line) = invocation(k)
        {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The files concatenated into one translation unit: first the `#define`s
/// of the constants shared with the host (`src/abi.rs`), then every file in
/// order, its `#include` lines of other kernel files and `#pragma once`
/// dropped (each header is in the unit once, before its users), and each
/// `// @kernels MACRO` line followed by the table's invocations of `MACRO`.
pub fn translation_unit() -> String {
    let mut out = crate::kernels::abi::defines_header();
    for (name, text) in KERNEL_FILES {
        out.push_str(&format!("// ---- kernels/{name} ----\n"));
        for line in text.lines() {
            let t = line.trim_start();
            if included_kernel_file(line).is_some() || t.starts_with("#pragma once") {
                out.push_str("// (inlined)\n");
            } else {
                out.push_str(line);
                out.push('\n');
                if let Some(mac) = kernels_marker(line) {
                    out.push_str(&invocations_of(mac));
                }
            }
        }
    }
    out
}

/// FNV-1a 64 over byte strings: a hash stable across Rust versions and
/// machines, for the on-disk kernel cache's file names.
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // separate the parts
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_inlined_once() {
        let tu = translation_unit();
        assert!(
            !tu.lines()
                .any(|l| l.trim_start().starts_with("#include \"common.cuh\""))
        );
        assert_eq!(tu.matches("typedef unsigned int u32;").count(), 1);
    }

    #[test]
    fn every_header_is_inlined_once_before_its_users() {
        let tu = translation_unit();
        assert!(
            !tu.lines().any(|l| included_kernel_file(l).is_some()),
            "an #include of a kernel file is left in the unit"
        );
        assert!(!tu.contains("#pragma once"));
        // model.cuh's helpers are defined once, before the three files using them
        let radd = "float radd(float a, float b)";
        assert_eq!(tu.matches(radd).count(), 1);
        let at = tu.find(radd).unwrap();
        for user in ["model.cu", "dense.cu", "segment.cu"] {
            let start = tu.find(&format!("// ---- kernels/{user} ----")).unwrap();
            assert!(at < start, "model.cuh after {user}");
        }
        // each header precedes every file that includes it
        for (i, (name, text)) in KERNEL_FILES.iter().enumerate() {
            for line in text.lines() {
                if let Some(h) = included_kernel_file(line) {
                    let j = KERNEL_FILES.iter().position(|(n, _)| *n == h).unwrap();
                    assert!(j < i, "{name} includes {h}, which comes after it");
                }
            }
        }
        assert_eq!(
            included_kernel_file(" #include \"model.cuh\""),
            Some("model.cuh")
        );
        assert_eq!(included_kernel_file("#include \"other.cuh\""), None);
        assert_eq!(included_kernel_file("// #include \"model.cuh\""), None);
    }

    #[test]
    fn every_file_in_kernels_is_in_the_unit() {
        // read at run time: a test archive runs from a checkout elsewhere
        let dir = std::path::PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
        )
        .join("../../kernels");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .expect("kernels/")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".cu") || n.ends_with(".cuh"))
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = KERNEL_FILES.iter().map(|(n, _)| n.to_string()).collect();
        listed.sort();
        assert_eq!(on_disk, listed, "kernels/ and KERNEL_FILES disagree");
        for (name, text) in KERNEL_FILES {
            let disk = std::fs::read_to_string(dir.join(name)).expect("readable");
            assert_eq!(disk, text, "{name}: embedded text is stale");
        }
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }

    #[test]
    fn markers_name_a_macro() {
        assert_eq!(
            kernels_marker("// @kernels RTX_SCATTER"),
            Some("RTX_SCATTER")
        );
        assert_eq!(kernels_marker("  // @kernels RTX_SUM0 "), Some("RTX_SUM0"));
        assert_eq!(kernels_marker("// @kernels rtx_scatter"), None);
        assert_eq!(kernels_marker("// kernels RTX_SCATTER"), None);
        assert_eq!(kernels_marker("RTX_SCATTER(a, b)"), None);
    }
}

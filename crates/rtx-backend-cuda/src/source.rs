//! The kernel sources, embedded at build time, and the single translation
//! unit NVRTC compiles from them. Plain text handling: no device needed.

/// `(file name, text)` of every file under `kernels/`, shared header first.
pub const KERNEL_FILES: [(&str, &str); 4] = [
    ("common.cuh", include_str!("../../../kernels/common.cuh")),
    ("index.cu", include_str!("../../../kernels/index.cu")),
    ("permute.cu", include_str!("../../../kernels/permute.cu")),
    ("model.cu", include_str!("../../../kernels/model.cu")),
];

/// Every kernel (`extern "C"` entry point) the backend launches.
pub const KERNEL_NAMES: &[&str] = &[
    "gather_b16",
    "gather_b8",
    "gather_b4",
    "scatter0_f32x4",
    "scatter0_f32x2",
    "scatter0_f32x1",
    "scatter0_f64x2",
    "scatter0_f64x1",
    "scatter0p_f32x4",
    "scatter0p_f32x2",
    "scatter0p_f32x1",
    "scatter0p_f64x2",
    "scatter0p_f64x1",
    "scatterN_f32x4",
    "scatterN_f32x2",
    "scatterN_f32x1",
    "scatterN_f64x2",
    "scatterN_f64x1",
    "scatterNp_f32x4",
    "scatterNp_f32x2",
    "scatterNp_f32x1",
    "scatterNp_f64x2",
    "scatterNp_f64x1",
    "transpose32x32_b4",
    "transpose64x64_b4",
    "transpose128x32_b4",
    "transpose32x128_b4",
    "transpose32x32_b8",
    "transpose64x64_b8",
    "transpose128x32_b8",
    "transpose32x128_b8",
    "transpose32x32_b16",
    "transpose_runs_b16",
    "transpose_runs_b8",
    "transpose_runs_b4",
    "permute_b16",
    "permute_b8",
    "permute_b4",
    "unary_f32",
    "unary_f64",
    "unary_bwd_f32",
    "unary_bwd_f64",
    "binary_f32",
    "binary_f64",
    "axpy_f32",
    "axpy_f64",
    "head_scale_f32",
    "head_scale_f64",
    "head_dot_f32",
    "head_dot_f64",
    "gather_head_dot_f32",
    "gather_head_dot_f64",
    "reduce_rows_f32",
    "reduce_rows_f64",
    "matmul_f32",
    "matmul_f64",
    "segmax0_f32",
    "segmax0_f64",
    "segmax_f32",
    "segmax_f64",
    "softmax_div_f32",
    "softmax_div_f64",
    "softmax_bwd_f32",
    "softmax_bwd_f64",
    "smx0_f32x4",
    "smx0_f32x2",
    "smx0_f32x1",
    "smx0_f64x2",
    "smx0_f64x1",
    "smb0_f32x4",
    "smb0_f32x2",
    "smb0_f32x1",
    "smb0_f64x2",
    "smb0_f64x1",
    "gss0_f32x4",
    "gss0_f32x2",
    "gss0_f32x1",
    "gss0_f64x2",
    "gss0_f64x1",
];

/// The files concatenated into one translation unit: the header once, its
/// `#include "common.cuh"` lines and `#pragma once` dropped.
pub fn translation_unit() -> String {
    let mut out = String::new();
    for (name, text) in KERNEL_FILES {
        out.push_str(&format!("// ---- kernels/{name} ----\n"));
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with("#include \"common.cuh\"") || t.starts_with("#pragma once") {
                out.push_str("// (inlined)\n");
            } else {
                out.push_str(line);
                out.push('\n');
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
    fn every_kernel_name_is_defined_once() {
        let tu = translation_unit();
        for name in KERNEL_NAMES {
            // defined through a macro invocation `RTX_xxx(name, ...)`, or for the
            // scatter family `RTX_SCATTER(scatter0_##SUFFIX, ...)` expanded per suffix
            let n = tu.matches(&format!("({name},")).count()
                + name.split_once('_').map_or(0, |(head, suffix)| {
                    usize::from(
                        tu.contains(&format!("({head}_##SUFFIX,"))
                            && tu.contains(&format!("RTX_SCATTER_ALL({suffix},")),
                    )
                });
            assert_eq!(n, 1, "kernel {name} defined {n} times in kernels/*.cu");
        }
        assert!(
            !tu.lines()
                .any(|l| l.trim_start().starts_with("#include \"common.cuh\""))
        );
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}

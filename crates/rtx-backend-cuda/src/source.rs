//! The kernel sources, embedded at build time, and the single translation
//! unit NVRTC compiles from them. Plain text handling: no device needed.

/// `(file name, text)` of every file under `kernels/`, shared header first.
pub const KERNEL_FILES: [(&str, &str); 6] = [
    ("common.cuh", include_str!("../../../kernels/common.cuh")),
    ("index.cu", include_str!("../../../kernels/index.cu")),
    ("permute.cu", include_str!("../../../kernels/permute.cu")),
    ("model.cu", include_str!("../../../kernels/model.cu")),
    ("plan.cu", include_str!("../../../kernels/plan.cu")),
    ("sample.cu", include_str!("../../../kernels/sample.cu")),
];

/// The files concatenated into one translation unit: first the `#define`s
/// of the constants shared with the host (`src/abi.rs`), then the header
/// once, its `#include "common.cuh"` lines and `#pragma once` dropped.
pub fn translation_unit() -> String {
    let mut out = crate::abi::defines_header();
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
    fn the_header_is_inlined_once() {
        let tu = translation_unit();
        assert!(
            !tu.lines()
                .any(|l| l.trim_start().starts_with("#include \"common.cuh\""))
        );
        assert_eq!(tu.matches("typedef unsigned int u32;").count(), 1);
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(fnv1a(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}

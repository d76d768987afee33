//! What the two sides of the Rust/CUDA boundary must agree on, defined once
//! here: the launch constants, the op codes, the driver API version.
//!
//! The kernels get every constant from [`defines`], as `#define` lines that
//! `source::translation_unit` puts before the sources; the .cu files
//! only check that each one is defined (`#ifndef ... #error` in
//! kernels/common.cuh). The tests of `table` parse kernels/*.cu and
//! fail when the two sides disagree.

use rtx_backend::{Binary, Unary};

/// The CUDA driver API version (`cuDriverGetVersion` form, 1000 * major + 10 * minor)
/// this build's cudarc bindings target: the root `Cargo.toml` selects cudarc's
/// `cuda-13000` feature (a test checks they agree).
pub const REQUIRED_DRIVER_VERSION: i32 = 13000;

/// Threads per block of the 1-D kernels (`RTX_BLOCK`).
pub(crate) const BLOCK: u32 = 256;
/// Rows each lane group copies per pass in `copy_rows` (`RTX_ROWS_PER_GROUP`).
pub(crate) const ROWS_PER_GROUP: u64 = 4;
/// Largest rank of the N-D permute kernel (`RTX_MAX_RANK`).
pub(crate) const MAX_RANK: usize = 8;
/// Bytes of the shared span of the span transpose kernels (`RTX_PERMUTE_SPAN_BYTES`).
pub(crate) const PERMUTE_SPAN_BYTES: u64 = 16384;
/// Input tiles in flight per block of the bulk-copy transpose of 4-byte
/// elements (`RTX_BULK_STAGES`; `transpose_bulk_b4`'s dynamic shared memory
/// is these and 2 output tiles of 64x64 f32, and one mbarrier per stage:
/// 96 KiB, two blocks per SM on the H200). `transpose_bulk_b2` has as many
/// stages of 128x128 2-byte tiles (192 KiB, one block per SM).
pub(crate) const BULK_STAGES: u32 = 4;
/// Largest edge of the output tile of one block of the matrix product
/// (`RTX_MATMUL_TILE`; tiles are 32 or 64 on a side, see `launch::MatmulTile`).
pub(crate) const MATMUL_TILE: usize = 64;
/// Most columns of a product that `matmul_dot_*` takes, a thread per output
/// row and chunk, instead of a tile (`RTX_MATMUL_DOT_N`).
pub(crate) const MATMUL_DOT_MAX_N: usize = 8;
/// Resident blocks per SM the fused level-0 kernels are built for
/// (`RTX_FUSED_MIN_BLOCKS`): 4, 64 registers. Measured on the H200 with the
/// windowed level 0's 4-value batches (docs/PERFORMANCE.md, "Kernel choices"):
/// the batch-8 HetGAT step 2.06 ms at 4 blocks, 2.14 at 3, 2.30 at 2.
pub(crate) const FUSED_MIN_BLOCKS: u32 = 4;
/// Positions per window of the windowed fused level 0 (`RTX_WIN`).
pub(crate) const WINDOW: u64 = 256;
/// Bytes of one entry's column slice the windowed fused level 0 stages (`RTX_SLICE_BYTES`).
pub(crate) const SLICE_BYTES: u64 = 64;
/// Terms of one block of the canonical order (`RTX_CANONICAL_BLOCK`).
pub(crate) const CANONICAL_BLOCK: usize = rtx_backend::order::CANONICAL_BLOCK;
/// Most parts one `sum_bias_relu` launch sums (`RTX_SUM_BIAS_PARTS`); more
/// take the composition.
pub(crate) const SUM_BIAS_PARTS: usize = 8;
/// Most levels one column-sum launch computes (`RTX_COL_SUM_LEVELS`): the
/// canonical sum of 2^64 rows has 8 (256^8 = 2^64).
pub(crate) const COL_SUM_LEVELS: usize = 8;
/// Counters of the device's column-sum climb (one per group of a level past
/// the first and column tile of a launch); a sum needing more computes its
/// first level alone, then sums that level's rows the same way.
pub(crate) const COL_SUM_COUNTERS: usize = 1 << 16;
/// Slot of a scatter chunk whose sum goes into its row (`RTX_FINAL`).
pub(crate) const FINAL: u32 = u32::MAX;

/// Largest digit of one pass of the device plan's radix sort, in bits
/// (`RTX_PLAN_DIGIT_BITS`): two passes sort the indices of up to 4M rows.
pub(crate) const PLAN_DIGIT_BITS: u32 = 11;
/// Items per thread of a tile of the device plan's sort and scans (`RTX_PLAN_ITEMS`).
pub(crate) const PLAN_ITEMS: u64 = 16;
/// Levels past level 0 the device plan has room for (`RTX_PLAN_HI_LEVELS`):
/// a list of fewer than 2^32 entries needs at most 3 (256^4 = 2^32).
pub(crate) const PLAN_HI_LEVELS: u32 = 4;

/// Op code of [`Unary::Relu`] (`RTX_UNARY_RELU`).
pub(crate) const UNARY_RELU: u32 = 0;
/// Op code of [`Unary::LeakyRelu`] (`RTX_UNARY_LEAKY_RELU`).
pub(crate) const UNARY_LEAKY_RELU: u32 = 1;
/// Op code of [`Unary::Exp`] (`RTX_UNARY_EXP`).
pub(crate) const UNARY_EXP: u32 = 2;
/// Op code of [`Unary::Scale`] (`RTX_UNARY_SCALE`).
pub(crate) const UNARY_SCALE: u32 = 3;
/// Op code of [`Binary::Add`] (`RTX_BINARY_ADD`).
pub(crate) const BINARY_ADD: u32 = 0;
/// Op code of [`Binary::Sub`] (`RTX_BINARY_SUB`).
pub(crate) const BINARY_SUB: u32 = 1;
/// Op code of [`Binary::Mul`] (`RTX_BINARY_MUL`).
pub(crate) const BINARY_MUL: u32 = 2;
/// Op code of [`Binary::Div`] (`RTX_BINARY_DIV`).
pub(crate) const BINARY_DIV: u32 = 3;

/// The kernel op code of `op` and its scalar parameter (0 when it has none).
pub(crate) fn unary_code(op: Unary) -> (u32, f64) {
    match op {
        Unary::Relu => (UNARY_RELU, 0.0),
        Unary::LeakyRelu(s) => (UNARY_LEAKY_RELU, s),
        Unary::Exp => (UNARY_EXP, 0.0),
        Unary::Scale(s) => (UNARY_SCALE, s),
    }
}

/// The kernel op code of `op`.
pub(crate) fn binary_code(op: Binary) -> u32 {
    match op {
        Binary::Add => BINARY_ADD,
        Binary::Sub => BINARY_SUB,
        Binary::Mul => BINARY_MUL,
        Binary::Div => BINARY_DIV,
    }
}

/// Every macro the kernels take from the Rust side, `(name, value)`, in the
/// order of the generated `#define` lines.
pub(crate) fn defines() -> Vec<(&'static str, String)> {
    vec![
        ("RTX_BLOCK", BLOCK.to_string()),
        ("RTX_ROWS_PER_GROUP", ROWS_PER_GROUP.to_string()),
        ("RTX_MAX_RANK", MAX_RANK.to_string()),
        ("RTX_PERMUTE_SPAN_BYTES", PERMUTE_SPAN_BYTES.to_string()),
        ("RTX_BULK_STAGES", BULK_STAGES.to_string()),
        ("RTX_MATMUL_TILE", MATMUL_TILE.to_string()),
        ("RTX_MATMUL_DOT_N", MATMUL_DOT_MAX_N.to_string()),
        ("RTX_FUSED_MIN_BLOCKS", FUSED_MIN_BLOCKS.to_string()),
        ("RTX_WIN", WINDOW.to_string()),
        ("RTX_SLICE_BYTES", SLICE_BYTES.to_string()),
        ("RTX_CANONICAL_BLOCK", CANONICAL_BLOCK.to_string()),
        ("RTX_COL_SUM_LEVELS", COL_SUM_LEVELS.to_string()),
        ("RTX_SUM_BIAS_PARTS", SUM_BIAS_PARTS.to_string()),
        ("RTX_FINAL", format!("{FINAL:#X}u").replace("0X", "0x")),
        ("RTX_PLAN_DIGIT_BITS", PLAN_DIGIT_BITS.to_string()),
        ("RTX_PLAN_ITEMS", PLAN_ITEMS.to_string()),
        ("RTX_PLAN_HI_LEVELS", PLAN_HI_LEVELS.to_string()),
        ("RTX_UNARY_RELU", UNARY_RELU.to_string()),
        ("RTX_UNARY_LEAKY_RELU", UNARY_LEAKY_RELU.to_string()),
        ("RTX_UNARY_EXP", UNARY_EXP.to_string()),
        ("RTX_UNARY_SCALE", UNARY_SCALE.to_string()),
        ("RTX_BINARY_ADD", BINARY_ADD.to_string()),
        ("RTX_BINARY_SUB", BINARY_SUB.to_string()),
        ("RTX_BINARY_MUL", BINARY_MUL.to_string()),
        ("RTX_BINARY_DIV", BINARY_DIV.to_string()),
    ]
}

/// The `#define` lines of [`defines`], one header for the translation unit.
pub(crate) fn defines_header() -> String {
    let mut out = String::from("// ---- defines (rtx-backend-cuda src/abi.rs) ----\n");
    for (name, value) in defines() {
        out.push_str(&format!("#define {name} {value}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_codes_are_distinct_per_family() {
        let unary = [
            Unary::Relu,
            Unary::LeakyRelu(0.5),
            Unary::Exp,
            Unary::Scale(2.0),
        ]
        .map(|u| unary_code(u).0);
        let binary = [Binary::Add, Binary::Sub, Binary::Mul, Binary::Div].map(binary_code);
        for codes in [unary, binary] {
            let mut s = codes.to_vec();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), codes.len(), "{codes:?}");
        }
        assert_eq!(unary_code(Unary::LeakyRelu(0.25)), (UNARY_LEAKY_RELU, 0.25));
        assert_eq!(unary_code(Unary::Scale(3.0)), (UNARY_SCALE, 3.0));
    }

    #[test]
    fn defines_are_unique_and_well_formed() {
        let d = defines();
        let mut names: Vec<&str> = d.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), d.len());
        assert!(
            d.iter()
                .all(|(n, v)| n.starts_with("RTX_") && !v.is_empty())
        );
        assert!(defines_header().contains("#define RTX_FINAL 0xFFFFFFFFu\n"));
        assert!(defines_header().contains("#define RTX_BLOCK 256\n"));
    }

    #[test]
    fn required_driver_version_matches_the_cudarc_feature() {
        // the checkout the test runs in, not the build machine's: cargo and
        // nextest set it at run time (nextest remaps it for an archive run
        // from another directory)
        let dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .expect("cargo and nextest set CARGO_MANIFEST_DIR when they run tests");
        let root = std::path::Path::new(&dir).join("../../Cargo.toml");
        let text =
            std::fs::read_to_string(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("cudarc ="))
            .expect("cudarc in [workspace.dependencies]");
        let want = format!("\"cuda-{REQUIRED_DRIVER_VERSION}\"");
        assert!(
            line.contains(&want),
            "{}: cudarc's features do not include {want}; \
             REQUIRED_DRIVER_VERSION (src/abi.rs) must be that version",
            root.display()
        );
    }
}

//! Launch geometry and typed launches: the grid of each kernel family, and
//! one typed launcher per signature of the kernel table (`table.rs`), its
//! arguments named fields of the types `args.rs` declares: a launch can push
//! neither another number of arguments nor another type nor another order
//! than the kernel's prototype (`table_sig_tests.rs` compares the table with
//! kernels/*.cu), and a launcher refuses a kernel of another signature or
//! element type.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use rtx_backend::{DType, Element};

use crate::error::{Error, Result};
pub(crate) use crate::kernels::abi::MATMUL_DOT_MAX_N;
use crate::kernels::abi::{BLOCK, CANONICAL_BLOCK, ROWS_PER_GROUP, SLICE_BYTES, WINDOW};
use crate::kernels::compile::Kernels;
use crate::kernels::table::{Kernel, MatmulTile, Signature, with_kernel_table};
use crate::permute::{LinesParams, SpanParams, TileParams};
use crate::runtime::args::{
    BiasParts, Elem, In, Level0Counts, Out, PermuteParams, PlanItem, RrClimb, TensorMap, Words,
};
use crate::runtime::context::Device;

/// Largest grid.x the driver accepts.
pub(crate) const MAX_GRID_X: u64 = (1 << 31) - 1;

/// The Rust type of a parameter of the table's vocabulary (`signature.rs`):
/// `T` and `V` pointers point to the launcher's element `T`, `A` pointers
/// and values are its accumulator `T::Acc` (f32 for the half types), `E`
/// pointers point to [`Words`].
macro_rules! arg_ty {
    (* const A) => { In<T::Acc> };
    (* mut A) => { Out<T::Acc> };
    (A) => { Elem<T::Acc> };
    (* const T) => { In<T> };
    (* mut T) => { Out<T> };
    (* const V) => { In<T> };
    (* mut V) => { Out<T> };
    (* const E) => { In<Words> };
    (* mut E) => { Out<Words> };
    (* const $e:ident) => { In<$e> };
    (* mut $e:ident) => { Out<$e> };
    (T) => { Elem<T> };
    ($t:ident) => { $t };
}

/// One typed launcher per signature of the table.
macro_rules! launchers {
    (
        signatures {
            $(
                $(#[$sm:meta])*
                $sig:ident [$($gen:ident)?] (
                    $($field:ident : $(* $q:ident)? $ty:ident),* $(,)?
                );
            )*
        }
        kernels { $($kernels:tt)* }
    ) => {
        $(launcher!($(#[$sm])* $sig [$($gen)?] ($($field : $(* $q)? $ty),*));)*
    };
}

/// The launcher of one signature: a struct of its parameters, generic over
/// the element for signatures of the letters `T` and `V`.
macro_rules! launcher {
    ($(#[$sm:meta])* $sig:ident [E] ($($body:tt)*)) => {
        launcher!($(#[$sm])* $sig [] ($($body)*));
    };
    ($(#[$sm:meta])* $sig:ident [] ($($field:ident : $(* $q:ident)? $ty:ident),*)) => {
        $(#[$sm])*
        #[allow(non_snake_case)]
        pub(crate) struct $sig {
            $(pub(crate) $field: arg_ty!($(* $q)? $ty),)*
        }

        impl $sig {
            /// Launches `kernel` (one of this signature's) with these
            /// arguments and `cfg` on `dev`'s stream.
            ///
            /// # Safety
            /// Every access the kernel makes with these arguments over the
            /// grid of `cfg` must be within live device memory that no other
            /// work uses meanwhile.
            pub(crate) unsafe fn launch(
                &self,
                dev: &Device,
                kernels: &Kernels,
                kernel: Kernel,
                cfg: LaunchConfig,
            ) -> Result<()> {
                check(kernel, Signature::$sig, None)?;
                let mut b = dev.stream.launch_builder(kernels.get(kernel));
                $(b.arg(&self.$field);)*
                // SAFETY: the arguments are the kernel's parameters in name,
                // type and order (table_tests.rs), the kernel one of this
                // signature (checked above); the accesses are the caller's
                // contract.
                unsafe { b.launch(cfg) }?;
                dev.activity.kernel();
                Ok(())
            }
        }
    };
    ($(#[$sm:meta])* $sig:ident [$gen:ident] ($($field:ident : $(* $q:ident)? $ty:ident),*)) => {
        $(#[$sm])*
        #[allow(non_snake_case)]
        pub(crate) struct $sig<T: Element> {
            $(pub(crate) $field: arg_ty!($(* $q)? $ty),)*
        }

        impl<T: Element> $sig<T> {
            /// Launches `kernel` (one of this signature's, of the element
            /// `T`) with these arguments and `cfg` on `dev`'s stream.
            ///
            /// # Safety
            /// Every access the kernel makes with these arguments over the
            /// grid of `cfg` must be within live device memory that no other
            /// work uses meanwhile.
            pub(crate) unsafe fn launch(
                &self,
                dev: &Device,
                kernels: &Kernels,
                kernel: Kernel,
                cfg: LaunchConfig,
            ) -> Result<()> {
                check(kernel, Signature::$sig, Some(T::DTYPE))?;
                let mut b = dev.stream.launch_builder(kernels.get(kernel));
                $(b.arg(&self.$field);)*
                // SAFETY: the arguments are the kernel's parameters in name,
                // type and order (table_tests.rs), the kernel one of this
                // signature for the element T (checked above); the accesses
                // are the caller's contract.
                unsafe { b.launch(cfg) }?;
                dev.activity.kernel();
                Ok(())
            }
        }
    };
}

with_kernel_table!(launchers);

/// `Ok` when `kernel` takes the signature `sig` with float elements `dtype`
/// (`None`: a signature whose pointers are not of float elements).
fn check(kernel: Kernel, sig: Signature, dtype: Option<DType>) -> Result<()> {
    if kernel.signature() == sig && kernel.dtype() == dtype {
        Ok(())
    } else {
        Err(Error::LaunchSignature {
            kernel: kernel.name(),
            launcher: sig.name(),
            element: dtype.map_or("none", DType::c_name),
        })
    }
}

/// log2 of the lanes per row group: the next power of two of `w`, at most 32.
pub(crate) fn lanes_log2(w: u64) -> u32 {
    w.max(1).next_power_of_two().min(32).trailing_zeros()
}

/// Blocks for `copy_rows` over `nrows` rows.
pub(crate) fn rows_grid(nrows: u64, lanes_log2: u32) -> u32 {
    let per_block = u64::from(BLOCK >> lanes_log2) * ROWS_PER_GROUP;
    nrows.div_ceil(per_block).clamp(1, MAX_GRID_X) as u32
}

/// Blocks for a level of `n` chunks, a group of `2^lanes_log2` lanes each.
pub(crate) fn chunks_grid(n: u64, lanes_log2: u32) -> u32 {
    let groups = u64::from(BLOCK >> lanes_log2);
    n.div_ceil(groups).clamp(1, MAX_GRID_X) as u32
}

/// Blocks for a fused level 0 of segment.cu (`fused_level0`) over a plan of
/// `entries` positions in `n` chunks, rows of `w` vectors of `vec_bytes`:
/// rows of at most 32 vectors take the windowed form (a block per window of
/// 256 positions and slice of 64 bytes of columns), wider rows a group of
/// lanes per chunk.
pub(crate) fn fused0_grid(entries: u64, n: u64, w: u64, vec_bytes: u64) -> u32 {
    if w <= 32 {
        let slices = w.div_ceil(SLICE_BYTES / vec_bytes);
        (entries.div_ceil(WINDOW) * slices).clamp(1, MAX_GRID_X) as u32
    } else {
        chunks_grid(n, lanes_log2(w))
    }
}

/// Bytes of the column tile of one block of dense.cu's column sums
/// (`reduce_rows_level`: `RR_COLS(A)` = 128 / sizeof(A) columns of the type
/// it computes in, [`acc_size`]).
const COL_SUM_TILE_BYTES: usize = 128;

/// Bytes of `T`'s accumulator `T::Acc` (4 for the half types): the element
/// the column sums keep in shared memory and in their levels' scratch.
pub(crate) fn acc_size<T: Element>() -> usize {
    <T::Acc as Element>::DTYPE.size()
}

/// Blocks for a level of dense.cu's column sums (`reduce_rows`,
/// `head_scale_rows`) over `rows` rows of `f` elements of `elem_bytes`: a
/// block per group of 256 rows and tile of 128 bytes of columns.
pub(crate) fn col_sums_grid(rows: usize, f: usize, elem_bytes: usize) -> u32 {
    let groups = rows.div_ceil(CANONICAL_BLOCK) as u64;
    groups
        .saturating_mul(col_sum_tiles(f, elem_bytes))
        .clamp(1, MAX_GRID_X) as u32
}

/// Column tiles of `f` columns of `elem_bytes` in dense.cu's column sums.
pub(crate) fn col_sum_tiles(f: usize, elem_bytes: usize) -> u64 {
    f.div_ceil(COL_SUM_TILE_BYTES / elem_bytes) as u64
}

/// Blocks of `matmul_dot_*` for an `m x n` product of `chunks` chunks: with
/// A read along its rows (`rows`), a block per chunk and group of [`BLOCK`]
/// rows; else a thread per output and chunk.
pub(crate) fn matmul_dot_grid(m: usize, n: usize, chunks: usize, rows: bool) -> u32 {
    if rows {
        (m.div_ceil(BLOCK as usize) as u64)
            .saturating_mul(chunks as u64)
            .clamp(1, MAX_GRID_X) as u32
    } else {
        grid_for(
            (m as u64)
                .saturating_mul(n as u64)
                .saturating_mul(chunks as u64),
        )
    }
}

/// The tile for an `m x n` product: a side of at most 32 takes a 32-wide
/// tile, so a product of 32 rows or columns (the layer-0 weight gradients)
/// leaves no half of its tiles idle. (32x32 tiles for products of few 64x64
/// units, to spread them over more SMs, measured no faster on the H200:
/// docs/PERFORMANCE.md, "Kernel choices".)
pub(crate) fn matmul_tile(m: usize, n: usize) -> MatmulTile {
    match (m <= 32, n <= 32) {
        (true, true) => MatmulTile::T32x32,
        (true, false) => MatmulTile::T32x64,
        (false, true) => MatmulTile::T64x32,
        (false, false) => MatmulTile::T64x64,
    }
}

/// The launch of an `m x n` product of `chunks` chunks with `tile`: a block
/// of the tile's threads per output tile and chunk.
pub(crate) fn matmul_config(tile: MatmulTile, m: usize, n: usize, chunks: usize) -> LaunchConfig {
    let tiles = (m.div_ceil(tile.tm() as usize) as u64)
        .saturating_mul(n.div_ceil(tile.tn() as usize) as u64)
        .saturating_mul(chunks as u64);
    LaunchConfig {
        grid_dim: (tiles.clamp(1, MAX_GRID_X) as u32, 1, 1),
        block_dim: (tile.threads(), 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Blocks for a grid-stride loop over `n` items, a thread each.
pub(crate) fn grid_for(n: u64) -> u32 {
    n.div_ceil(u64::from(BLOCK)).clamp(1, MAX_GRID_X) as u32
}

/// A 1-D launch of `grid` blocks of [`BLOCK`] threads.
pub(crate) fn cfg1(grid: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_stays_within_limits() {
        assert_eq!(lanes_log2(1), 0);
        assert_eq!(lanes_log2(3), 2);
        assert_eq!(lanes_log2(16), 4);
        assert_eq!(lanes_log2(1000), 5);
        assert_eq!(rows_grid(0, 0), 1);
        assert_eq!(rows_grid(u64::MAX / 2, 0), MAX_GRID_X as u32);
        assert_eq!(rows_grid(1024, 0), 1);
        assert_eq!(rows_grid(1025, 0), 2);
        assert_eq!(chunks_grid(0, 5), 1);
        assert_eq!(chunks_grid(9, 5), 2);
        assert_eq!(chunks_grid(u64::MAX, 0), MAX_GRID_X as u32);
        assert_eq!(grid_for(257), 2);
        // windows of 256 positions times 64-byte column slices
        assert_eq!(fused0_grid(20_000, 7_000, 16, 16), 79 * 4);
        assert_eq!(fused0_grid(20_000, 7_000, 1, 16), 79);
        assert_eq!(fused0_grid(1, 1, 4, 4), 1);
        assert_eq!(fused0_grid(256, 9, 32, 8), 4);
        assert_eq!(fused0_grid(1000, 100, 33, 16), chunks_grid(100, 5));
        // 8 halves per vector: their f32 values (32 bytes) in shared memory,
        // two vectors per 64-byte slice (the model's rows of 64 halves)
        assert_eq!(fused0_grid(20_000, 7_000, 8, 32), 79 * 4);
        assert_eq!(fused0_grid(20_000, 7_000, 33, 32), chunks_grid(7_000, 5));
        // groups of 256 rows times 128-byte column tiles
        assert_eq!(col_sums_grid(80_000, 64, 4), 313 * 2);
        assert_eq!(col_sums_grid(80_000, 64, 8), 313 * 4);
        assert_eq!(col_sums_grid(313, 4, 4), 2);
        assert_eq!(col_sums_grid(1, 1, 8), 1);
        assert_eq!(grid_for(u64::MAX), MAX_GRID_X as u32);
    }

    #[test]
    fn a_launcher_refuses_a_kernel_of_another_signature_or_element() {
        use crate::kernels::table::Signature;
        assert!(check(Kernel::GatherB4, Signature::Gather, None).is_ok());
        assert!(check(Kernel::UnaryF64, Signature::Unary, Some(DType::F64)).is_ok());
        assert!(
            check(
                Kernel::GatherScaleSum0F32x4,
                Signature::GatherScaleSum0,
                Some(DType::F32)
            )
            .is_ok()
        );
        let e = check(Kernel::UnaryF32, Signature::Unary, Some(DType::F64)).unwrap_err();
        assert!(
            matches!(
                e,
                Error::LaunchSignature {
                    kernel: "unary_f32",
                    launcher: "Unary",
                    element: "double"
                }
            ),
            "{e}"
        );
        assert!(check(Kernel::BinaryF32, Signature::Unary, Some(DType::F32)).is_err());
        assert!(check(Kernel::GatherB4, Signature::Permute, None).is_err());
        assert!(check(Kernel::Scatter0F32x4, Signature::Sum0, Some(DType::F32)).is_err());
    }

    #[test]
    fn col_sum_tiles_are_128_bytes() {
        assert_eq!(col_sum_tiles(64, 4), 2);
        assert_eq!(col_sum_tiles(17, 8), 2);
        assert_eq!(col_sum_tiles(1, 4), 1);
    }

    #[test]
    fn matmul_tiles_fit_the_product() {
        use MatmulTile::{T32x32, T32x64, T64x32, T64x64};
        // 64-wide sides, 32 where the side is at most 32
        assert_eq!(matmul_tile(80_000, 64), T64x64);
        assert_eq!(matmul_tile(80_000, 32), T64x32);
        assert_eq!(matmul_tile(20, 100_000), T32x64);
        assert_eq!(matmul_tile(80_000, 65), T64x64);
        assert_eq!(matmul_tile(32, 64), T32x64);
        assert_eq!(matmul_tile(33, 64), T64x64);
        assert_eq!(matmul_tile(1, 1), T32x32);
        // the shapes of tests/gnn.rs's bit-identity test take every tile
        // (and, with at most MATMUL_DOT_MAX_N columns, matmul_dot)
        assert_eq!(matmul_tile(37, 9), T64x32);
        assert_eq!(matmul_tile(20, 24), T32x32);
        assert_eq!(matmul_tile(70_001, 65), T64x64);
        assert_eq!(matmul_tile(17, 70_000), T32x64);
        const { assert!(9 > MATMUL_DOT_MAX_N && 24 > MATMUL_DOT_MAX_N) };
        for tile in [T32x32, T32x64, T64x32, T64x64] {
            assert_eq!(tile.threads() * 16, tile.tm() * tile.tn());
            assert!(tile.threads() <= BLOCK);
        }
        let blocks = |tile, m, n, c| matmul_config(tile, m, n, c).grid_dim.0;
        assert_eq!(matmul_config(T32x32, 1, 1, 1).block_dim.0, 64);
        assert_eq!(blocks(T64x64, 80_000, 64, 1), 1250);
        assert_eq!(blocks(T32x32, 64, 64, 313), 4 * 313);
        assert_eq!(blocks(T32x64, 33, 64, 2), 4);
        assert_eq!(blocks(T64x64, usize::MAX, usize::MAX, 2), MAX_GRID_X as u32);
        assert_eq!(matmul_dot_grid(80_000, 4, 1, true), 313);
        assert_eq!(matmul_dot_grid(64, 4, 313, true), 313);
        assert_eq!(matmul_dot_grid(257, 8, 2, true), 4);
        assert_eq!(matmul_dot_grid(usize::MAX, 1, 2, true), MAX_GRID_X as u32);
        assert_eq!(matmul_dot_grid(64, 4, 313, false), 313);
        assert_eq!(matmul_dot_grid(64, 4, 1, false), 1);
        assert_eq!(matmul_dot_grid(usize::MAX, 8, 2, false), MAX_GRID_X as u32);
    }
}

//! How the rooms cut work into rayon tasks: enough work per task to amortize
//! scheduling. Task sizes only decide which thread computes an element, never
//! how, so results are bit-identical for any thread count.

/// Rows per rayon task: enough work per task to amortize scheduling.
pub(crate) const MIN_ROWS_PER_TASK: usize = 64;

/// Elements per rayon task of elementwise ops.
pub(crate) const ELEMS_PER_TASK: usize = 16 * 1024;

//! The capabilities on the device (feature `cuda`), one file each:
//! `core` (`BackendCore`), `index` (`IndexOps`: gather, scatter-add,
//! segment max / sum), `layout` (`LayoutOps`: transpose and permute
//! launches), `dense` (`DenseOps`), `fused` (`FusedOps`), `train`
//! (`TrainOps`), `sample` (`SampleOps`), `convert` (f32 <-> bf16 / f16),
//! `lists` (the producers of [`CudaIndex`](crate::CudaIndex) lists),
//! `table` (the tensor table of a multi-tensor launch),
//! and `chain`, the one level-chain runner of every segment sum (and the
//! segment max).

pub(crate) mod chain;
mod convert;
mod core;
mod dense;
mod fused;
mod index;
mod layout;
mod lists;
mod sample;
mod table;
mod train;

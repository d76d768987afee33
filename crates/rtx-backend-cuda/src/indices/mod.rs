//! How an op's indices become device memory: a list on the device and its
//! scatter plan (the positions sorted by row and the canonical order's chunk
//! tables), built once and kept.
//!
//! * `levels`: an `IndexPlan` as chunk tables, one per level of the
//!   canonical block tree (the host reference of what the device builds).
//! * `layout`: the layout of a plan built on the device (its tables'
//!   offsets and bounds, shared with kernels/plan.cu).
//! * `hash`: the cache keys of host lists and plans.
//! * `sorted`: what a list's maker knows of its order (`Sorted`): a sorted
//!   list's plan skips the sort.
//! * `resolve` (feature): an op's `Indices` to a device list
//!   (`Resolver::gather_list`) or plan (`Resolver::scatter_plan`), in one
//!   place; the pins of `with_static_indices`.
//! * `cache` (feature): the backend's LRU of host lists and plans, and the pins.
//! * `entry` (feature): `ListEntry` and `PlanEntry`, the device copies.
//! * `lists` (feature): `CudaIndex`, device lists and their producers.
//! * `plan` (feature): `DevicePlan`, a plan's tables on the device.
//! * `build` (feature): a plan built on the device from a device list.

#[cfg(any(feature = "cuda", test))]
pub(crate) mod hash;
#[cfg(any(feature = "cuda", test))]
pub(crate) mod layout;
#[cfg(any(feature = "cuda", test))]
pub(crate) mod levels;
#[cfg(any(feature = "cuda", test))]
pub(crate) mod sorted;

#[cfg(feature = "cuda")]
pub(crate) mod batch;
#[cfg(feature = "cuda")]
pub(crate) mod build;
#[cfg(feature = "cuda")]
mod cache;
#[cfg(feature = "cuda")]
pub(crate) mod entry;
#[cfg(feature = "cuda")]
pub(crate) mod lists;
#[cfg(feature = "cuda")]
pub(crate) mod plan;
#[cfg(feature = "cuda")]
pub(crate) mod resolve;

#[cfg(feature = "cuda")]
pub(crate) use cache::IndexCache;
#[cfg(feature = "cuda")]
pub(crate) use entry::{Largest, ListEntry};
#[cfg(feature = "cuda")]
pub use lists::CudaIndex;
#[cfg(feature = "cuda")]
pub(crate) use resolve::Resolver;

//! Stand-ins for the device types when the `cuda` feature is off: the same
//! names and signatures, so downstream code compiles the same either way.
//! [`CudaBackend::new`] returns [`Error::FeatureDisabled`], so no value of
//! these types can exist and none of their methods can run.

use std::borrow::Cow;
use std::convert::Infallible;
use std::marker::PhantomData;

use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Result as BResult};

use crate::error::{Error, Result};
use crate::settings::{ColSums, MatmulTiles, ScatterForm, StreamActivity, TransposeTile};

/// Recorded work (uninhabited without the `cuda` feature).
#[derive(Debug)]
pub struct Recorded<R> {
    never: Infallible,
    _r: PhantomData<R>,
}

impl<R> Recorded<R> {
    /// Replays the recorded work.
    ///
    /// # Errors
    /// Never returns.
    pub fn replay(&mut self) -> Result<&R> {
        match self.never {}
    }

    /// The outputs of the last run.
    pub fn outputs(&self) -> &R {
        match self.never {}
    }
}

/// A device buffer (uninhabited without the `cuda` feature).
pub struct CudaBuffer<T> {
    never: Infallible,
    _t: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for CudaBuffer<T> {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.never {}
    }
}

impl<T> CudaBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self.never {}
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        match self.never {}
    }

    /// The device address.
    pub fn device_ptr(&self) -> u64 {
        match self.never {}
    }
}

/// A device-resident index list (uninhabited without the `cuda` feature).
#[derive(Debug, Clone)]
pub struct CudaIndex {
    never: Infallible,
}

impl CudaIndex {
    /// Number of indices.
    pub fn len(&self) -> usize {
        match self.never {}
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        match self.never {}
    }

    /// The largest index.
    pub fn max_index(&self) -> Option<u32> {
        match self.never {}
    }

    /// Host and device bytes held.
    pub fn bytes(&self) -> usize {
        match self.never {}
    }
}

/// The CUDA backend (uninhabited without the `cuda` feature: [`CudaBackend::new`] fails).
#[derive(Debug)]
pub struct CudaBackend {
    never: Infallible,
}

impl CudaBackend {
    /// Always [`Error::FeatureDisabled`]: this build has no device code.
    ///
    /// # Errors
    /// Always.
    pub fn new(_ordinal: usize) -> Result<CudaBackend> {
        Err(Error::FeatureDisabled)
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        match self.never {}
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        match self.never {}
    }

    /// The NVRTC target.
    pub fn arch(&self) -> &str {
        match self.never {}
    }

    /// The driver's CUDA version.
    pub fn driver_version(&self) -> i32 {
        match self.never {}
    }

    /// Loads the kernels now.
    ///
    /// # Errors
    /// Never returns.
    pub fn load_kernels(&self) -> Result<bool> {
        match self.never {}
    }

    /// Waits for all queued work.
    ///
    /// # Errors
    /// Never returns.
    pub fn synchronize(&self) -> Result<()> {
        match self.never {}
    }

    /// What this backend has put on its stream so far.
    pub fn activity(&self) -> StreamActivity {
        match self.never {}
    }

    /// Times `f` with CUDA events.
    ///
    /// # Errors
    /// Never returns.
    pub fn time_ms<R>(&self, _f: impl FnOnce() -> R) -> Result<(R, f32)> {
        match self.never {}
    }

    /// Records `f`'s work into a CUDA graph.
    ///
    /// # Errors
    /// Never returns.
    pub fn record<R, E: std::fmt::Display>(
        &self,
        _f: impl FnOnce(&Self) -> std::result::Result<R, E>,
    ) -> Result<Recorded<R>> {
        match self.never {}
    }

    /// Sets the pool's release threshold.
    ///
    /// # Errors
    /// Never returns.
    pub fn set_pool_release_threshold(&self, _bytes: u64) -> Result<()> {
        match self.never {}
    }

    /// Bytes of device memory in use.
    ///
    /// # Errors
    /// Never returns.
    pub fn memory_in_use(&self) -> Result<u64> {
        match self.never {}
    }

    /// A backend on the same device with a stream of its own.
    pub fn beside(&self) -> Result<CudaBackend> {
        match self.never {}
    }

    /// Orders this backend's later work after `other`'s queued work.
    pub fn wait_for(&self, _other: &CudaBackend) -> Result<()> {
        match self.never {}
    }

    /// Sets how many bytes of freed blocks the backend keeps for reuse.
    pub fn set_block_cache_limit(&self, _bytes: usize) -> Result<()> {
        match self.never {}
    }

    /// Sets the index cache's byte budget.
    pub fn set_index_cache_limit(&self, _bytes: usize) {
        match self.never {}
    }

    /// The index cache's byte budget.
    pub fn index_cache_limit(&self) -> usize {
        match self.never {}
    }

    /// Drops the cached index lists and plans.
    pub fn clear_index_cache(&self) {
        match self.never {}
    }

    /// `(entries, bytes)` of the index cache.
    pub fn index_cache_stats(&self) -> (usize, usize) {
        match self.never {}
    }

    /// Sets the tile of the 2-D transpose kernel.
    pub fn set_transpose_tile(&self, _tile: TransposeTile) {
        match self.never {}
    }

    /// The tile setting of the 2-D transpose kernel.
    pub fn transpose_tile(&self) -> TransposeTile {
        match self.never {}
    }

    /// Sets the output tiles of the matrix product.
    pub fn set_matmul_tiles(&self, _tiles: MatmulTiles) {
        match self.never {}
    }

    /// The tile setting of the matrix product.
    pub fn matmul_tiles(&self) -> MatmulTiles {
        match self.never {}
    }

    /// Sets the launches of the column sums.
    pub fn set_col_sums(&self, _form: ColSums) {
        match self.never {}
    }

    /// The launch setting of the column sums.
    pub fn col_sums(&self) -> ColSums {
        match self.never {}
    }

    /// Sets the form of the scatter chunk sums.
    pub fn set_scatter_form(&self, _form: ScatterForm) {
        match self.never {}
    }

    /// The form setting of the scatter chunk sums.
    pub fn scatter_form(&self) -> ScatterForm {
        match self.never {}
    }

    /// Keeps `idx` on the device.
    ///
    /// # Errors
    /// Never returns.
    pub fn index(&self, _idx: &[u32]) -> BResult<CudaIndex> {
        match self.never {}
    }

    /// `ln x` elementwise by the device's portable ln (for the tests).
    ///
    /// # Errors
    /// Never constructed without the feature.
    #[doc(hidden)]
    pub fn ln_elementwise<T: Element>(&self, _x: &BTensor<Self, T>) -> BResult<BTensor<Self, T>> {
        match self.never {}
    }

    /// `n` indices made on the device by the anchors' generator.
    ///
    /// # Errors
    /// Never returns.
    pub fn index_random(
        &self,
        _seed: u64,
        _start: u64,
        _n: usize,
        _rows: usize,
        _hub: bool,
    ) -> BResult<CudaIndex> {
        match self.never {}
    }

    /// `parents * times` indices `offset + i / times` made on the device.
    ///
    /// # Errors
    /// Never returns.
    pub fn index_repeat(&self, _parents: usize, _times: usize, _offset: u32) -> BResult<CudaIndex> {
        match self.never {}
    }

    /// The largest index of `index`.
    ///
    /// # Errors
    /// Never returns.
    pub fn index_max(&self, _index: &CudaIndex) -> BResult<Option<u32>> {
        match self.never {}
    }

    /// The entries of `index` on the host.
    ///
    /// # Errors
    /// Never returns.
    pub fn index_download<'a>(&self, _index: &'a CudaIndex) -> BResult<Cow<'a, [u32]>> {
        match self.never {}
    }

    /// The lists one after another, each shifted by its offset, on the device.
    ///
    /// # Errors
    /// Never returns.
    pub fn index_concat_device(&self, _parts: &[(&CudaIndex, u32)]) -> BResult<CudaIndex> {
        match self.never {}
    }

    /// Builds `index`'s scatter plan now.
    ///
    /// # Errors
    /// Never returns.
    pub fn prepare_scatter(&self, _index: &CudaIndex) -> BResult<()> {
        match self.never {}
    }
}

impl BackendCore for CudaBackend {
    type Buffer<T: Element> = CudaBuffer<T>;

    fn name(&self) -> String {
        match self.never {}
    }

    fn upload<T: Element>(&self, _data: &[T], _shape: &[usize]) -> BResult<BTensor<Self, T>> {
        match self.never {}
    }

    fn download<T: Element>(&self, _t: &BTensor<Self, T>) -> BResult<Vec<T>> {
        match self.never {}
    }

    fn zeros<T: Element>(&self, _shape: &[usize]) -> BResult<BTensor<Self, T>> {
        match self.never {}
    }
}

impl IndexOps for CudaBackend {
    type Index = CudaIndex;

    fn index_from_host(&self, _idx: &[u32]) -> BResult<CudaIndex> {
        match self.never {}
    }

    fn index_to_host<'a>(&self, _idx: &'a CudaIndex) -> BResult<Cow<'a, [u32]>> {
        match self.never {}
    }

    fn index_len(&self, _idx: &CudaIndex) -> usize {
        match self.never {}
    }
}

impl<'a> From<&'a CudaIndex> for rtx_backend::Indices<'a, CudaBackend> {
    fn from(list: &'a CudaIndex) -> Self {
        rtx_backend::Indices::held(list)
    }
}

impl LayoutOps for CudaBackend {}

impl DenseOps for CudaBackend {}

impl FusedOps for CudaBackend {}

impl TrainOps for CudaBackend {}

/// Sampling: the host defaults (every list op of the stub is an error).
impl rtx_backend::SampleOps for CudaBackend {}

//! [`LayoutOps`] on the device: `permute` (and through it `swap_dims` /
//! `transpose`) following rtx-tensor's plan: relabels share the buffer,
//! (batched) 2-D transposes and N-D permutes whose last dim moves use the
//! kernel the `permute` module picks (span kernels for small planes and narrow
//! sides, the pipelined tiled kernel otherwise), anything else the N-D
//! copy_rows permute kernel up to [`MAX_RANK`] (2-byte runs shorter than a
//! line: its blocked walk, [`permute::lines`]), a host round trip past
//! it; and `resize_rows`: one device-to-device copy of the kept rows and a
//! memset of the padded ones, no kernel.

use std::sync::Mutex;

use cudarc::driver::{LaunchConfig, sys};
use rtx_backend::implement::resize_rows_layout;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, Result as BResult};
use rtx_tensor::PermuteKind;

use crate::backend::{CudaBackend, ptr};
use crate::kernels::abi::{BULK_STAGES, MAX_RANK};
use crate::kernels::compile::Kernels;
use crate::kernels::table::{Family, Kernel, Tile, Word};
use crate::permute::{self, Choice, MapShape, TileParams};
use crate::runtime::args::{self, DevPtr, In, Out, TensorMap, Words};
use crate::runtime::launch::{
    MAX_GRID_X, Permute, PermuteLines, TransposeBulk, TransposeRuns, TransposeSpan, TransposeTiled,
    cfg1, lanes_log2, rows_grid,
};

impl LayoutOps for CudaBackend {
    /// f32 <-> bf16 / f16 and bf16 <-> f16 on the device (index.cu's
    /// `narrow_*` / `widen_*`), the same type a device copy, the pairs with
    /// f64 through the host (`convert.rs`).
    fn convert<T: Element, U: Element>(&self, x: &BTensor<Self, T>) -> BResult<BTensor<Self, U>> {
        self.convert_on_device(x)
    }

    /// f32 to and from bf16 / f16: one launch for all (`convert_all_on_device`).
    fn convert_all<T: Element, U: Element>(
        &self,
        xs: &[&BTensor<Self, T>],
    ) -> BResult<Vec<BTensor<Self, U>>> {
        self.convert_all_on_device(xs)
    }

    /// `rows == n`: a clone. Else a new tensor from the backend's
    /// allocator, the kept rows' bytes copied into it device to device and
    /// the padded rows' bytes zeroed, both on the backend's stream.
    fn resize_rows<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        rows: usize,
    ) -> BResult<BTensor<Self, T>> {
        let Some((layout, kept)) = resize_rows_layout(x.layout(), rows)? else {
            return Ok(x.clone());
        };
        let out = self.alloc_tensor::<T>(layout)?;
        // kept <= out.numel(), whose byte count alloc_tensor checked
        let kept = kept * T::DTYPE.size();
        self.copy_prefix(&out, x, kept)?;
        self.dev.zero_from(&out.storage().mem, kept)?;
        Ok(out)
    }

    /// Relabel: shares the buffer. Transpose: tiled kernel. Permute: N-D kernel.
    fn permute<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        perm: &[usize],
    ) -> BResult<BTensor<Self, T>> {
        let plan = t.layout().plan_permute(perm)?;
        match plan.kind {
            PermuteKind::Relabel => Ok(t.relabel(plan.output)),
            PermuteKind::Transpose {
                batch,
                rows,
                cols,
                inner,
            } => {
                let out = self.alloc_tensor::<T>(plan.output)?;
                self.transpose(t, &out, batch, rows, cols, inner)?;
                Ok(out)
            }
            PermuteKind::Permute { shape, perm: p } if shape.len() <= MAX_RANK => {
                let out = self.alloc_tensor::<T>(plan.output)?;
                let choice = permute::permute(&shape, &p, T::DTYPE.size() as u64, self.force32());
                if !self.launch_choice(t, &out, choice)? {
                    self.permute_nd(t, &out, &shape, &p)?;
                }
                Ok(out)
            }
            PermuteKind::Permute { .. } => {
                // Past the kernel's rank: the host round trip (correct, slow).
                let host = self.download(t)?;
                let out = rtx_tensor::permute_host(&host, t.shape(), perm)?;
                self.upload(&out, plan.output.shape())
            }
        }
    }
}

impl CudaBackend {
    /// Whether the benchmark knob asks for the classic 32x32 tile.
    fn force32(&self) -> bool {
        self.settings.transpose_tile().force32()
    }

    fn transpose<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        out: &BTensor<Self, T>,
        batch: usize,
        rows: usize,
        cols: usize,
        inner: usize,
    ) -> BResult<()> {
        let run_bytes = (inner * T::DTYPE.size()) as u64;
        let (batch, rows, cols) = (batch as u64, rows as u64, cols as u64);
        let choice = permute::transpose(batch, rows, cols, run_bytes, self.force32());
        if self.launch_choice(t, out, choice)? {
            return Ok(());
        }
        // runs of 2-byte elements shorter than a line: the permute
        // [0, 2, 1, 3] of [batch, rows, cols, run] in the lines walk
        let shape = [batch as usize, rows as usize, cols as usize, inner];
        if inner > 1 && self.permute_lines(t, out, &shape, &[0, 2, 1, 3])? {
            return Ok(());
        }
        let (i, o) = (words(t), words(out));
        let k = self.dev.kernels()?;
        let word = Word::dividing(run_bytes);
        let w = run_bytes / word.bytes();
        let lanes_log2 = lanes_log2(w);
        let nruns = batch * rows * cols;
        let cfg = cfg1(rows_grid(nruns, lanes_log2));
        let args = TransposeRuns {
            r#in: In::at(i),
            out: Out::at(o),
            nruns,
            W: w,
            lanes_log2,
            rows,
            cols,
        };
        // SAFETY: both tensors hold nruns runs of W words; the map sends run
        // (b, c, r) to (b, r, c), within range.
        unsafe { args.launch(&self.dev, &k, Kernel::of(Family::TransposeRuns(word)), cfg) }?;
        Ok(())
    }

    /// Launches a span or tiled kernel of `choice` from `t` into `out` (a
    /// pair kernel's `_b2` twin when a tensor is not 4-byte aligned);
    /// `false` (nothing launched) for [`Choice::Fallback`].
    fn launch_choice<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        out: &BTensor<Self, T>,
        choice: Choice,
    ) -> BResult<bool> {
        let (i, o) = (words(t), words(out));
        let k = self.dev.kernels()?;
        let choice = if i.addr().is_multiple_of(4) && o.addr().is_multiple_of(4) {
            choice
        } else {
            choice.unpaired()
        };
        let Some(kernel) = choice.kernel() else {
            return Ok(false);
        };
        if let Some((elem, tile, params)) = choice.tiled() {
            if !self.launch_bulk(t, out, elem, tile, params)? {
                self.launch_tiled(t, out, &k, kernel, *params)?;
            }
            return Ok(true);
        }
        let (Choice::Span(_, _, params) | Choice::SpanPairs(_, params)) = choice else {
            return Ok(false);
        };
        let cfg = cfg1(params.tiles.clamp(1, MAX_GRID_X) as u32);
        let args = TransposeSpan {
            r#in: In::at(i),
            out: Out::at(o),
            q: params,
        };
        // SAFETY: both tensors hold batch * rows * cols elements of the span
        // kernel's word (the plan's sizes), every tile stays within its
        // plane, and the 16-byte vectors read past a span's ends stay in the
        // same 16-byte block of the (256-byte aligned) allocation. A pair
        // kernel (`_p2`) has 4-byte aligned tensors (checked above) and even
        // rows and columns (the plan's rule), so its words are whole
        // elements of the planes.
        unsafe { args.launch(&self.dev, &k, kernel, cfg) }?;
        Ok(true)
    }

    /// The register-tiled transpose `kernel` (`transpose{TR}x{TC}_b*` or
    /// `_p2`) over `params`, about one wave of blocks.
    fn launch_tiled<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        out: &BTensor<Self, T>,
        k: &Kernels,
        kernel: Kernel,
        params: TileParams,
    ) -> BResult<()> {
        let wave = self.wave(k, kernel, 0).unwrap_or(u64::MAX);
        let cfg = LaunchConfig {
            grid_dim: (
                u64::from(params.tiles).min(wave).clamp(1, MAX_GRID_X) as u32,
                1,
                1,
            ),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        };
        let args = TransposeTiled {
            r#in: In::at(words(t)),
            out: Out::at(words(out)),
            p: params,
        };
        // SAFETY: the strides and dims of params describe the permutation
        // of the tensors' own element count (the permute module's tests check
        // every element is written once from within the input); tiles are
        // bounds-checked. A pair kernel (`_p2`) has 4-byte aligned tensors
        // (launch_choice checks) and even rows, columns, row and batch
        // strides (the plan's rule), so its words are aligned and whole; its
        // quad path (8-byte units) runs only when the kernel finds both
        // tensors 8-byte aligned and every side and stride a multiple of 4.
        unsafe { args.launch(&self.dev, k, kernel, cfg) }?;
        Ok(())
    }

    /// The tiled choice `p` (tile `tile`, elements `elem`) through Hopper's
    /// bulk tensor copies (`transpose_bulk_b4` / `_b2`, over the bulk
    /// form's own tiles and parameters), when the device has them (sm_90+),
    /// the knob allows them and [`permute::bulk`]'s maps describe the
    /// matrices at the tensors' addresses; `false` (nothing launched)
    /// otherwise.
    fn launch_bulk<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        out: &BTensor<Self, T>,
        elem: Word,
        tile: Tile,
        p: &TileParams,
    ) -> BResult<bool> {
        if self.dev.major < 9 || !self.settings.transpose_tile().bulk() {
            return Ok(false);
        }
        let Some(bulk) = permute::bulk(p, elem, tile) else {
            return Ok(false);
        };
        let (i, o) = (words(t), words(out));
        let (Some(min), Some(mout)) = (
            encode_map(i.addr(), bulk.elem, &bulk.input),
            encode_map(o.addr(), bulk.elem, &bulk.output),
        ) else {
            return Ok(false);
        };
        let (kernel, smem) = bulk_kernel(bulk.elem, bulk.tile);
        let p = &bulk.params;
        let k = self.dev.kernels()?;
        let Some(wave) = self.wave(&k, kernel, smem) else {
            return Ok(false);
        };
        let cfg = LaunchConfig {
            grid_dim: (
                u64::from(p.tiles).min(wave).clamp(1, MAX_GRID_X) as u32,
                1,
                1,
            ),
            block_dim: (32, 8, 1),
            shared_mem_bytes: smem,
        };
        let args = TransposeBulk {
            min: TensorMap(min),
            mout: TensorMap(mout),
            p: *p,
        };
        // SAFETY: the maps describe the tensors' matrices exactly
        // (the permute module's tests check every element is written once from
        // within the input) and the copies clip at their edges; `smem` is
        // the kernel's dynamic shared memory ((S + 2) tiles and S mbarriers),
        // allowed by `wave`; the device is sm_90+.
        unsafe { args.launch(&self.dev, &k, kernel, cfg) }?;
        Ok(true)
    }

    /// Resident blocks of `kernel` (32 x 8 threads, `smem` bytes of dynamic
    /// shared memory, which the kernel is first allowed when past the
    /// default 48 KiB) on the whole device: the grid of the pipelined tiled
    /// kernels (`u64::MAX`, one block per tile, when the driver cannot say).
    /// `None` when the kernel cannot have `smem`. Cached per device, kernel
    /// and size.
    fn wave(&self, k: &Kernels, kernel: Kernel, smem: u32) -> Option<u64> {
        type Key = (u64, Kernel, u32);
        static WAVES: Mutex<Vec<(Key, Option<u64>)>> = Mutex::new(Vec::new());
        let key = (self.dev.id, kernel, smem);
        let mut g = WAVES.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, w)) = g.iter().find(|(k, _)| *k == key) {
            return w;
        }
        let f = k.get(kernel);
        let allowed = smem <= 48 * 1024
            || f.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem as i32,
            )
            .is_ok();
        let w = allowed.then(|| {
            let sms = self
                .dev
                .ctx
                .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
            let per_sm = f.occupancy_max_active_blocks_per_multiprocessor(256, smem as usize, None);
            match (sms, per_sm) {
                (Ok(s), Ok(b)) if s > 0 && b > 0 => u64::from(s.unsigned_abs()) * u64::from(b),
                _ => u64::MAX,
            }
        });
        g.push((key, w));
        w
    }

    fn permute_nd<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        out: &BTensor<Self, T>,
        shape: &[usize],
        perm: &[usize],
    ) -> BResult<()> {
        if self.permute_lines(t, out, shape, perm)? {
            return Ok(());
        }
        let p = PermuteRuns::new(shape, perm);
        let run_bytes = (p.run * T::DTYPE.size()) as u64;
        let word = Word::dividing(run_bytes);
        let w = run_bytes / word.bytes();
        let lanes_log2 = lanes_log2(w);
        let nruns = (t.numel() / p.run) as u64;
        let (i, o) = (words(t), words(out));
        let params = p.params;
        let k = self.dev.kernels()?;
        let cfg = cfg1(rows_grid(nruns, lanes_log2));
        let args = Permute {
            r#in: In::at(i),
            out: Out::at(o),
            nruns,
            W: w,
            lanes_log2,
            p: params,
        };
        // SAFETY: out_dims multiply to nruns and the input strides of a
        // contiguous tensor of the same element count keep every read in
        // range; both tensors hold nruns runs of W words.
        unsafe { args.launch(&self.dev, &k, Kernel::of(Family::Permute(word)), cfg) }?;
        Ok(())
    }

    /// A permute of 2-byte elements that keeps the last dim, of runs shorter
    /// than a line, through `permute_lines_b16`'s blocked walk when
    /// [`permute::lines`] gives one and both tensors are 16-byte
    /// aligned; `false` (nothing launched) otherwise.
    fn permute_lines<T: Element>(
        &self,
        t: &BTensor<Self, T>,
        out: &BTensor<Self, T>,
        shape: &[usize],
        perm: &[usize],
    ) -> BResult<bool> {
        let (i, o) = (words(t), words(out));
        let Some(l) = permute::lines(shape, perm, T::DTYPE.size() as u64) else {
            return Ok(false);
        };
        if !(i.addr().is_multiple_of(16) && o.addr().is_multiple_of(16)) {
            return Ok(false);
        }
        let k = self.dev.kernels()?;
        let lanes_log2 = lanes_log2(l.w);
        let cfg = cfg1(rows_grid(l.nruns, lanes_log2));
        let args = PermuteLines {
            r#in: In::at(i),
            out: Out::at(o),
            nruns: l.nruns,
            W: l.w,
            lanes_log2,
            p: l.params,
        };
        // SAFETY: both tensors hold nruns runs of W 16-byte vectors at
        // 16-byte aligned addresses (checked above); the walk's dims
        // multiply to nruns and send each run once to an output run and
        // from an input run below nruns (the permute module's tests check it).
        unsafe { args.launch(&self.dev, &k, Kernel::PermuteLinesB16, cfg) }?;
        Ok(true)
    }
}

/// The bulk-copy kernel of `elem` (`B4` or `B2`, what [`permute::bulk`]
/// gives) and its dynamic shared memory: S + 2 tiles of `tile` (the bulk
/// form's) and S mbarriers, S = [`BULK_STAGES`] (kernels/permute.cu,
/// permute_2byte.cu).
fn bulk_kernel(elem: Word, tile: [u32; 2]) -> (Kernel, u32) {
    let kernel = match elem {
        Word::B2 => Kernel::TransposeBulkB2,
        _ => Kernel::TransposeBulkB4,
    };
    let tile = tile[0] * tile[1] * elem.bytes() as u32;
    (kernel, (BULK_STAGES + 2) * tile + BULK_STAGES * 8)
}

/// A tensor's elements as the words a copy kernel moves (layout ops move
/// bytes, whatever the element type).
fn words<T: Element>(t: &BTensor<CudaBackend, T>) -> DevPtr<Words> {
    ptr(t).cast()
}

/// The tiled tensor map `m` of `elem` elements (4 or 2 bytes) at `addr`;
/// `None` when the address is not 16-byte aligned or the driver refuses
/// the map.
fn encode_map(addr: u64, elem: Word, m: &MapShape) -> Option<sys::CUtensorMap> {
    if !addr.is_multiple_of(16) {
        return None;
    }
    let dtype = match elem {
        Word::B2 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16,
        _ => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT32,
    };
    let rank = m.dims.len();
    let mut bx = [1u32; 5];
    bx[..2].copy_from_slice(&m.boxd);
    let es = [1u32; 5];
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    // SAFETY: dims has `rank` (2..=5) entries, strides `rank - 1`, box and
    // element strides 5; the driver writes only `map`.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            dtype,
            rank as u32,
            addr as *mut std::ffi::c_void,
            m.dims.as_ptr(),
            m.strides.as_ptr(),
            bx.as_ptr(),
            es.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    (r == sys::CUresult::CUDA_SUCCESS).then_some(map)
}

/// Kernel parameters for permuting contiguous `shape` by `perm`, with the run
/// (contiguous trailing elements copied together) they imply.
#[derive(Debug)]
struct PermuteRuns {
    params: args::PermuteParams,
    run: usize,
}

impl PermuteRuns {
    /// `shape.len() <= MAX_RANK` (callers check).
    fn new(shape: &[usize], perm: &[usize]) -> PermuteRuns {
        let n = shape.len();
        let mut strides = vec![1usize; n];
        for d in (0..n.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        // The last dim stays last: copy its rows as runs; else element by element.
        let (run, out_rank) = if n > 0 && perm[n - 1] == n - 1 {
            (shape[n - 1], n - 1)
        } else {
            (1, n)
        };
        let mut params = args::PermuteParams {
            rank: out_rank as u64,
            out_dims: [1; MAX_RANK],
            in_strides: [0; MAX_RANK],
        };
        for i in 0..out_rank {
            params.out_dims[i] = shape[perm[i]] as u64;
            params.in_strides[i] = (strides[perm[i]] / run) as u64;
        }
        PermuteRuns { params, run }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_params_decode_with_output_shape() {
        // [2,3,4] -> perm [2,1,0]: the last dim moves, element-wise, out dims [4,3,2]
        let p = PermuteRuns::new(&[2, 3, 4], &[2, 1, 0]);
        assert_eq!(p.run, 1);
        assert_eq!(p.params.rank, 3);
        assert_eq!(&p.params.out_dims[..3], &[4, 3, 2]);
        assert_eq!(&p.params.in_strides[..3], &[1, 4, 12]);
        // 4-D swap02 with the last dim kept: runs of 32
        let p = PermuteRuns::new(&[64, 128, 256, 32], &[2, 1, 0, 3]);
        assert_eq!(p.run, 32);
        assert_eq!(p.params.rank, 3);
        assert_eq!(&p.params.out_dims[..3], &[256, 128, 64]);
        assert_eq!(&p.params.in_strides[..3], &[1, 256, 128 * 256]);
    }
}

//! `LayoutOps::convert` on the device: a tensor's elements converted to
//! another element type, rounding to nearest even once, exactly as
//! `rtx_backend::reference::convert` (the host's `half` crate, Rust's `as`). Between f32 and bf16 / f16 (and between the two
//! half types, through exact f32) on the device, with index.cu's `narrow_*`
//! and `widen_*` kernels, whose integer bit operations are `half`'s
//! conversions; the pairs with f64 through the host.

use cudarc::driver::result;
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, DType, Element, Result as BResult, ops};

use crate::backend::{CudaBackend, ptr, unique_ptr};
use crate::error::Error;
use crate::kernels::table::{Family, Half, Kernel};
use crate::ops::table::TensorTable;
use crate::runtime::args::{DevPtr, In, Out};
use crate::runtime::launch::{AxpyMixed, ConvertAll, Narrow, Widen, cfg1, grid_for};

/// Elements one block of `convert_all` converts (16 per thread).
const CONVERT_CHUNK: u64 = 4096;

/// How a conversion between two different element types runs on the device.
enum Pair {
    /// f32 rounded to a half type.
    Narrow(Half),
    /// A half type widened to f32.
    Widen(Half),
    /// One half type to the other, through f32 (exact).
    Halves(Half, Half),
    /// A pair with f64: through the host.
    Host,
}

impl Pair {
    fn of(from: DType, to: DType) -> Pair {
        match (Half::of(from), Half::of(to)) {
            (None, Some(h)) if from == DType::F32 => Pair::Narrow(h),
            (Some(h), None) if to == DType::F32 => Pair::Widen(h),
            (Some(a), Some(b)) => Pair::Halves(a, b),
            _ => Pair::Host,
        }
    }
}

impl CudaBackend {
    /// `x` converted element by element to `U`, the bits of
    /// `rtx_backend::reference::convert`: one rounding to nearest even for a
    /// narrower `U` (NaN stays NaN, quieted as the `half` crate does it;
    /// overflow goes to infinity; f16 keeps subnormals); between the two half
    /// types through f32, which is exact. The same type copies the bits.
    ///
    /// # Errors
    /// Device errors; a failed host allocation (the pairs with f64).
    pub(crate) fn convert_on_device<T: Element, U: Element>(
        &self,
        x: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, U>> {
        let n = x.numel() as u64;
        let out = self.out::<U>(x.shape())?;
        if n == 0 {
            return Ok(out);
        }
        if T::DTYPE == U::DTYPE {
            // the same type: the bits, copied on the device
            self.dev.ctx.bind_to_thread().map_err(Error::from)?;
            let bytes = x.numel() * T::DTYPE.size();
            // SAFETY: both allocations hold numel elements of the one type
            // (`bytes` bytes) and do not overlap (out is fresh).
            unsafe {
                result::memcpy_dtod_async(
                    ptr(&out).addr(),
                    ptr(x).addr(),
                    bytes,
                    self.dev.stream.cu_stream(),
                )
            }
            .map_err(Error::from)?;
            self.dev.activity.copy();
            return Ok(out);
        }
        match Pair::of(T::DTYPE, U::DTYPE) {
            // (the f32 side's pointers cast: its type was just checked)
            Pair::Narrow(h) => {
                self.narrow::<U>(h, ptr(x).cast(), ptr(&out), n)?;
            }
            Pair::Widen(h) => {
                self.widen::<T>(h, ptr(x), ptr(&out).cast(), n)?;
            }
            Pair::Halves(a, b) => {
                let wide = self.out::<f32>(x.shape())?;
                self.widen::<T>(a, ptr(x), ptr(&wide), n)?;
                self.narrow::<U>(b, ptr(&wide), ptr(&out), n)?;
            }
            Pair::Host => {
                // the pairs with f64: through the host
                let host = self.download(x)?;
                return self.upload(&rtx_backend::reference::convert::<T, U>(&host), x.shape());
            }
        }
        Ok(out)
    }

    /// Every tensor of `xs` converted as [`convert_on_device`] converts it:
    /// between f32 and a half type in one launch over a table of the
    /// tensors (`narrow_all_*` / `widen_all_*`: per element the kernels of
    /// `narrow_*` / `widen_*`), every other pair tensor by tensor.
    ///
    /// [`convert_on_device`]: CudaBackend::convert_on_device
    ///
    /// # Errors
    /// As [`CudaBackend::convert_on_device`]; a table past one launch's grid.
    pub(crate) fn convert_all_on_device<T: Element, U: Element>(
        &self,
        xs: &[&BTensor<Self, T>],
    ) -> BResult<Vec<BTensor<Self, U>>> {
        let family = match Pair::of(T::DTYPE, U::DTYPE) {
            Pair::Narrow(h) => Family::NarrowAll(h),
            Pair::Widen(h) => Family::WidenAll(h),
            _ => return xs.iter().map(|x| self.convert_on_device(x)).collect(),
        };
        let outs = xs
            .iter()
            .map(|x| self.out::<U>(x.shape()))
            .collect::<BResult<Vec<_>>>()?;
        let mut table = TensorTable::new(xs.len(), 3);
        for (x, o) in xs.iter().zip(&outs) {
            if x.numel() > 0 {
                table.push(&[ptr(x).addr(), ptr(o).addr()], x.numel());
            }
        }
        let Some((_mem, tab, blocks, grid)) = table.upload(self, CONVERT_CHUNK, "convert_all")?
        else {
            return Ok(outs);
        };
        let args = ConvertAll {
            tab: In::at(tab),
            blocks: In::at(blocks),
            len: CONVERT_CHUNK,
        };
        let k = self.dev.kernels()?;
        // SAFETY: each table entry is an input tensor's buffer (numel
        // elements of T, read) and its fresh output's (numel elements of U,
        // written by the blocks of its own chunks only); the table memory
        // lives until after the launch is queued and is freed in stream order.
        unsafe { args.launch(&self.dev, &k, Kernel::of(family), cfg1(grid)) }?;
        Ok(outs)
    }

    /// `n` f32 at `src` rounded to the half type `H` (kind `h`) at `dst`.
    fn narrow<H: Element>(&self, h: Half, src: DevPtr<f32>, dst: DevPtr<H>, n: u64) -> BResult<()> {
        let args = Narrow::<H> {
            r#in: In::at(src),
            out: Out::at(dst),
            n,
        };
        let k = self.dev.kernels()?;
        // SAFETY: src holds n f32, dst n elements of H (both allocated for
        // the tensor's numel); the grid-stride loop touches nothing else.
        unsafe {
            args.launch(
                &self.dev,
                &k,
                Kernel::of(Family::Narrow(h)),
                cfg1(grid_for(n)),
            )
        }?;
        Ok(())
    }

    /// `n` elements of the half type `H` (kind `h`) at `src` widened to f32 at `dst`.
    fn widen<H: Element>(&self, h: Half, src: DevPtr<H>, dst: DevPtr<f32>, n: u64) -> BResult<()> {
        let args = Widen::<H> {
            r#in: In::at(src),
            out: Out::at(dst),
            n,
        };
        let k = self.dev.kernels()?;
        // SAFETY: src holds n elements of H, dst n f32; the grid-stride loop
        // touches nothing else.
        unsafe {
            args.launch(
                &self.dev,
                &k,
                Kernel::of(Family::Widen(h)),
                cfg1(grid_for(n)),
            )
        }?;
        Ok(())
    }

    /// `t` widened to f32 on the device (exact): how a bf16 / f16 op without
    /// kernels of its own runs its f32 op, as the trait defaults define it
    /// (the f32 op on the widened inputs, rounded once per output).
    pub(crate) fn widen_dev<T: Element>(
        &self,
        t: &BTensor<Self, T>,
    ) -> BResult<BTensor<Self, f32>> {
        self.convert_on_device(t)
    }

    /// The f32 result `t` rounded once per element to `T` (see [`Self::widen_dev`]).
    pub(crate) fn round_dev<T: Element>(
        &self,
        t: BResult<BTensor<Self, f32>>,
    ) -> BResult<BTensor<Self, T>> {
        self.convert_on_device(&t?)
    }

    /// [`DenseOps::axpy_mixed`] on the device: one `axpy_mixed_*` pass
    /// (index.cu) for the half types; for f32 and f64, `axpy` on the
    /// converted `x` and `low` a converted copy, the definition itself.
    pub(crate) fn axpy_mixed_dev<H: Element>(
        &self,
        master: &mut BTensor<Self, H::Acc>,
        alpha: f64,
        x: &BTensor<Self, H>,
        low: &mut BTensor<Self, H>,
    ) -> BResult<()> {
        ops::check_same("axpy_mixed", master.shape(), x.shape())?;
        ops::check_same("axpy_mixed", master.shape(), low.shape())?;
        let Some(h) = Half::of(H::DTYPE) else {
            self.axpy(master, alpha, &self.convert::<H, H::Acc>(x)?)?;
            *low = self.convert::<H::Acc, H>(master)?;
            return Ok(());
        };
        let n = x.numel() as u64;
        if n == 0 {
            return Ok(());
        }
        // master holds H::Acc, f32 for the half types
        let y = unique_ptr(self, master)?.cast();
        let low_p = unique_ptr(self, low)?;
        let args = AxpyMixed::<H> {
            y: Out::at(y),
            x: In::at(ptr(x)),
            low: Out::at(low_p),
            n,
            alpha: f32::from_f64(alpha),
        };
        let k = self.dev.kernels()?;
        // SAFETY: master holds n f32 (H::Acc is f32 for the half types), x
        // and low n elements of H (equal shapes, checked); master and low
        // are unique (no other tensor sees the writes) and distinct buffers
        // of distinct tensors.
        unsafe {
            args.launch(
                &self.dev,
                &k,
                Kernel::of(Family::AxpyMixed(h)),
                cfg1(grid_for(n)),
            )
        }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pair_takes_its_path() {
        use DType::{BF16, F16, F32, F64};
        let name = |p: Pair| match p {
            Pair::Narrow(h) => format!("narrow {h:?}"),
            Pair::Widen(h) => format!("widen {h:?}"),
            Pair::Halves(a, b) => format!("halves {a:?} {b:?}"),
            Pair::Host => "host".into(),
        };
        assert_eq!(name(Pair::of(F32, BF16)), "narrow Bf16");
        assert_eq!(name(Pair::of(F32, F16)), "narrow F16");
        assert_eq!(name(Pair::of(F16, F32)), "widen F16");
        assert_eq!(name(Pair::of(BF16, F16)), "halves Bf16 F16");
        for (a, b) in [(F64, BF16), (F16, F64), (F64, F32), (F32, F64)] {
            assert_eq!(name(Pair::of(a, b)), "host", "{a:?} -> {b:?}");
        }
    }
}

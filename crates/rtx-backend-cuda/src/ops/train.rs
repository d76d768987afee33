//! [`TrainOps`] on the device (kernels/train.cu): dropout, the losses and the
//! multi-tensor optimizer steps, each the [`rtx_backend::ops::train`]
//! reference operation for operation (explicit round-to-nearest intrinsics,
//! the portable exp and ln), so the bits are the CPU backend's. Every check
//! runs before any work; an optimizer step is one upload of its tensor table
//! and one launch.

use rtx_backend::ops::train::{self as t, AdamStep, RegressionLoss, SgdStep};
use rtx_backend::prelude::*;
use rtx_backend::{BTensor, Element, LossGrad, Result as BResult};

use crate::backend::{CudaBackend, ptr, unique_ptr};
use crate::indices::lists::CudaIndex;
use crate::kernels::table::{Family, Float, Kernel, Train};
use crate::ops::table::TensorTable;
use crate::runtime::args::{DevPtr, Elem, In, Out};
use crate::runtime::launch::{
    Adam, CrossEntropy, Dropout, LnProbe, Regression, Sgd, cfg1, grid_for,
};

/// Elements one block of an optimizer step updates (16 per thread).
const STEP_CHUNK: u64 = 4096;

/// Words per tensor of an optimizer step's table: the addresses of p, g,
/// m / buf and v, then n (kernels/train.cu's `RTX_TRAIN_ENTRY`).
const STEP_WORDS: usize = 5;

impl TrainOps for CudaBackend {
    fn dropout<T: Element>(
        &self,
        x: &BTensor<Self, T>,
        p: f64,
        seed: u64,
    ) -> BResult<BTensor<Self, T>> {
        t::check_dropout(p)?;
        if p == 0.0 {
            // a copy, bits and all (x * 1 would canonicalize a NaN's payload)
            let mut out = x.clone();
            self.make_unique(&mut out)?;
            return Ok(out);
        }
        let out = self.out::<T>(x.shape())?;
        let n = x.numel() as u64;
        if n == 0 {
            return Ok(out);
        }
        let args = Dropout::<T> {
            x: In::at(ptr(x)),
            out: Out::at(ptr(&out)),
            n,
            p,
            seed,
            s: Elem(t::dropout_scale::<T::Acc>(p)),
        };
        let k = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Train(Train::Dropout, Float::of(T::DTYPE)));
        // SAFETY: x and out hold n elements of T; out is fresh.
        unsafe { args.launch(&self.dev, &k, kernel, cfg1(grid_for(n))) }?;
        Ok(out)
    }

    fn cross_entropy<T: Element>(
        &self,
        logits: &BTensor<Self, T>,
        labels: &CudaIndex,
        scale: f64,
    ) -> BResult<LossGrad<Self, T>> {
        self.check_own(labels)?;
        let (m, c) = t::check_cross_entropy_shape(logits.shape(), labels.len())?;
        // every label below c: the first one that is not, by position and value
        labels.entry.check_below(&self.dev, c)?;
        let loss = self.out::<T::Acc>(&[m, 1])?;
        let grad = self.out::<T>(&[m, c])?;
        if m == 0 {
            return Ok((loss, grad));
        }
        let args = CrossEntropy::<T> {
            z: In::at(ptr(logits)),
            labels: In::at(labels.entry.dev_list(&self.dev)?),
            loss: Out::at(ptr(&loss)),
            grad: Out::at(ptr(&grad)),
            m: m as u64,
            c: c as u64,
            scale: Elem(T::Acc::from_f64(scale)),
        };
        let k = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Train(Train::CrossEntropy, Float::of(T::DTYPE)));
        // SAFETY: logits and grad hold m * c elements of T, labels m u32 each
        // below c (checked), loss m of T::Acc; loss and grad are fresh.
        unsafe { args.launch(&self.dev, &k, kernel, cfg1(grid_for(m as u64))) }?;
        Ok((loss, grad))
    }

    fn regression_loss<T: Element>(
        &self,
        kind: RegressionLoss,
        y: &BTensor<Self, T>,
        target: &BTensor<Self, T::Acc>,
        scale: f64,
    ) -> BResult<LossGrad<Self, T>> {
        let (m, d) = t::check_regression(y.shape(), target.shape())?;
        let loss = self.out::<T::Acc>(&[m, 1])?;
        let grad = self.out::<T>(&[m, d])?;
        if m == 0 {
            return Ok((loss, grad));
        }
        let args = Regression::<T> {
            y: In::at(ptr(y)),
            t: In::at(ptr(target)),
            loss: Out::at(ptr(&loss)),
            grad: Out::at(ptr(&grad)),
            m: m as u64,
            d: d as u64,
            l1: u32::from(kind == RegressionLoss::L1),
            scale: Elem(T::Acc::from_f64(scale)),
        };
        let k = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Train(Train::Regression, Float::of(T::DTYPE)));
        // SAFETY: y and grad hold m * d elements of T, target m * d of T::Acc
        // (equal shapes, checked), loss m of T::Acc; loss and grad are fresh.
        unsafe { args.launch(&self.dev, &k, kernel, cfg1(grid_for(m as u64))) }?;
        Ok((loss, grad))
    }

    fn adam_step<T: Element>(
        &self,
        h: &AdamStep,
        params: &mut [&mut BTensor<Self, T>],
        grads: &[&BTensor<Self, T>],
        m: &mut [&mut BTensor<Self, T>],
        v: &mut [&mut BTensor<Self, T>],
    ) -> BResult<()> {
        let s = t::adam_checked::<T::Acc, _>(h, params, grads, m, v)?;
        let mut table = TensorTable::new(params.len(), STEP_WORDS);
        for i in 0..params.len() {
            let n = params[i].numel();
            if n == 0 {
                continue;
            }
            let pp = unique_ptr(self, params[i])?;
            let pm = unique_ptr(self, m[i])?;
            let pv = unique_ptr(self, v[i])?;
            table.push(&[pp.addr(), ptr(grads[i]).addr(), pm.addr(), pv.addr()], n);
        }
        let Some((_mem, tab, blocks, grid)) = table.upload(self, STEP_CHUNK, "adam_step")? else {
            return Ok(());
        };
        let args = Adam::<T> {
            tab: In::at(tab),
            blocks: In::at(blocks),
            len: STEP_CHUNK,
            gs: Elem(s.grad_scale),
            wd: Elem(s.weight_decay),
            omb1: Elem(s.one_minus_beta1),
            beta2: Elem(s.beta2),
            omb2: Elem(s.one_minus_beta2),
            decay: Elem(s.decay),
            step_size: Elem(s.step_size),
            bc2_sqrt: Elem(s.bc2_sqrt),
            eps: Elem(s.eps),
            flags: u32::from(s.decay_grad) | (u32::from(s.decay_param) << 1),
        };
        let k = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Train(Train::Adam, Float::of(T::DTYPE)));
        // SAFETY: the table's entries are the unique buffers of params, m and
        // v (each written by the blocks of its own chunks only) and the grads
        // (read), each of the n elements of T its entry says (equal shapes,
        // checked); the table memory lives until after the launch is queued
        // and is freed in stream order.
        unsafe { args.launch(&self.dev, &k, kernel, cfg1(grid)) }?;
        Ok(())
    }

    fn sgd_step<T: Element>(
        &self,
        h: &SgdStep,
        params: &mut [&mut BTensor<Self, T>],
        grads: &[&BTensor<Self, T>],
        bufs: &mut [&mut BTensor<Self, T>],
    ) -> BResult<()> {
        let s = t::sgd_checked::<T::Acc, _>(h, params, grads, bufs)?;
        let mut table = TensorTable::new(params.len(), STEP_WORDS);
        for i in 0..params.len() {
            let n = params[i].numel();
            if n == 0 {
                continue;
            }
            let pp = unique_ptr(self, params[i])?;
            let pb = if s.has_momentum {
                unique_ptr(self, bufs[i])?
            } else {
                DevPtr::NULL
            };
            table.push(&[pp.addr(), ptr(grads[i]).addr(), pb.addr(), 0], n);
        }
        let Some((_mem, tab, blocks, grid)) = table.upload(self, STEP_CHUNK, "sgd_step")? else {
            return Ok(());
        };
        let flags = u32::from(s.decay)
            | (u32::from(s.has_momentum) << 1)
            | (u32::from(s.nesterov) << 2)
            | (u32::from(s.first) << 3);
        let args = Sgd::<T> {
            tab: In::at(tab),
            blocks: In::at(blocks),
            len: STEP_CHUNK,
            gs: Elem(s.grad_scale),
            wd: Elem(s.weight_decay),
            momentum: Elem(s.momentum),
            omd: Elem(s.one_minus_dampening),
            lr: Elem(s.lr),
            flags,
        };
        let k = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Train(Train::Sgd, Float::of(T::DTYPE)));
        // SAFETY: as adam_step's (the buffers only with momentum).
        unsafe { args.launch(&self.dev, &k, kernel, cfg1(grid)) }?;
        Ok(())
    }
}

impl CudaBackend {
    /// `ln x` elementwise by the device's portable ln (kernels/model.cuh's
    /// `rln`): the bits of [`rtx_backend::exp::ln64`] / [`rtx_backend::exp::ln32`]
    /// (`Element::ln`). For the tests that compare the two.
    ///
    /// # Errors
    /// Device errors.
    #[doc(hidden)]
    pub fn ln_elementwise<T: Element>(&self, x: &BTensor<Self, T>) -> BResult<BTensor<Self, T>> {
        let out = self.out::<T>(x.shape())?;
        let n = x.numel() as u64;
        if n == 0 {
            return Ok(out);
        }
        let args = LnProbe::<T> {
            x: In::at(ptr(x)),
            out: Out::at(ptr(&out)),
            n,
        };
        let k = self.dev.kernels()?;
        let kernel = Kernel::of(Family::Train(Train::Ln, Float::of(T::DTYPE)));
        // SAFETY: x and out hold n elements of T; out is fresh.
        unsafe { args.launch(&self.dev, &k, kernel, cfg1(grid_for(n))) }?;
        Ok(out)
    }
}

//! GPU tests of the native bf16 / f16 segment ops (feature `cuda`; run on a
//! machine with a device): segment sum and max, the segment softmax and its
//! backward, and gather_scale_scatter, whose half kernels read half storage,
//! compute in f32 and round each output once. Each is checked against two
//! independent routes of the same definition (the f32 op on the exactly
//! widened inputs, each output rounded once): the device's f32 op on inputs
//! widened by the device's conversion and its output rounded by it, and
//! `CpuBackend::reference()`. The shapes take every kernel of the families:
//! vectors of 8, 4, 2 and 1 halves (a head's channel count limits
//! gather_scale_scatter's), the windowed and the grouped level 0 (rows of at
//! most and of more than 32 vectors), chains of one, two and three levels,
//! both chunk-sum forms.
//!
//! Without a device every test here FAILS with a message saying so.
#![cfg(feature = "cuda")]

use rtx_backend::Indices;
use std::sync::OnceLock;

use rtx_backend::prelude::*;
use rtx_backend::workload::{indices, splitmix64, values};
use rtx_backend::{BTensor, Element, IndexPlan, bf16, f16};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::{CudaBackend, ScatterForm};

fn shared() -> &'static CudaBackend {
    static B: OnceLock<CudaBackend> = OnceLock::new();
    B.get_or_init(|| {
        CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
    })
}

/// Equal bits, or both NaN (device float arithmetic makes its own NaN
/// payloads).
fn same<T: Element>(a: T, b: T) -> bool {
    a.to_bits_u64() == b.to_bits_u64() || (a.is_nan() && b.is_nan())
}

fn assert_same<T: Element>(case: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| !same(got[i], want[i])) {
        panic!("{case}: element {i}: got {:?}, want {:?}", got[i], want[i]);
    }
}

/// `n` values of the anchors' generator times `scale`, every 17th replaced
/// by a special (when `specials`): -0.0, +-inf, a value that rounds to a
/// subnormal of f16, a NaN.
fn data<T: Element>(seed: u64, n: usize, scale: f64, specials: bool) -> Vec<T> {
    let v: Vec<f32> = values(seed, n);
    v.iter()
        .enumerate()
        .map(|(i, &x)| {
            let k = splitmix64(seed ^ 0x77, i as u64) % 5;
            let x = match (specials && i % 17 == 3, k) {
                (true, 0) => -0.0,
                (true, 1) => f64::INFINITY,
                (true, 2) => f64::NEG_INFINITY,
                (true, 3) => 3.0e-6,
                (true, _) => f64::NAN,
                (false, _) => f64::from(x) * scale,
            };
            T::from_f64(x)
        })
        .collect()
}

/// The device's widen route: `T` widened to f32 on the device.
fn wide<T: Element>(t: &BTensor<CudaBackend, T>) -> BTensor<CudaBackend, f32> {
    shared().convert::<T, f32>(t).unwrap()
}

/// The device's widen route: an f32 result rounded to `T` on the device.
fn round<T: Element>(t: &BTensor<CudaBackend, f32>) -> Vec<T> {
    let g = shared();
    g.download(&g.convert::<f32, T>(t).unwrap()).unwrap()
}

fn forms() -> [ScatterForm; 2] {
    [ScatterForm::Batched, ScatterForm::Pipelined]
}

fn segment_case<T: Element>(rows: usize, e: usize, f: usize, seed: u64) {
    let (g, cpu) = (shared(), CpuBackend::reference());
    let idx = indices(seed, e, rows, true);
    let plan = IndexPlan::new(&idx, rows).unwrap();
    let x: Vec<T> = data(seed + 1, e * f, 4.0, true);
    let (xg, xc) = (
        g.upload(&x, &[e, f]).unwrap(),
        cpu.upload(&x, &[e, f]).unwrap(),
    );
    let case = format!("{:?} {rows}x{e}x{f}", T::DTYPE);
    let sum_w: Vec<T> = round(&g.segment_sum(&wide(&xg), &plan).unwrap());
    let sum_c = cpu.download(&cpu.segment_sum(&xc, &plan).unwrap()).unwrap();
    assert_same(&format!("segment_sum {case}: CPU"), &sum_c, &sum_w);
    let max_w: Vec<T> = round(&g.segment_max(&wide(&xg), &plan).unwrap());
    let max_c = cpu.download(&cpu.segment_max(&xc, &plan).unwrap()).unwrap();
    assert_same(&format!("segment_max {case}: CPU"), &max_c, &max_w);
    let list = g.index_from_host(&idx).unwrap();
    for form in forms() {
        g.set_scatter_form(form);
        let c = format!("{case} {form:?}");
        let s = g.download(&g.segment_sum(&xg, &plan).unwrap()).unwrap();
        assert_same(&format!("segment_sum {c}"), &s, &sum_w);
        let s = g
            .segment_sum(&xg, Indices::held(&list).with_rows(rows))
            .unwrap();
        assert_same(
            &format!("segment_sum, backend list {c}"),
            &g.download(&s).unwrap(),
            &sum_w,
        );
        let m = g.download(&g.segment_max(&xg, &plan).unwrap()).unwrap();
        assert_same(&format!("segment_max {c}"), &m, &max_w);
        let m = g
            .segment_max(&xg, Indices::held(&list).with_rows(rows))
            .unwrap();
        assert_same(
            &format!("segment_max, backend list {c}"),
            &g.download(&m).unwrap(),
            &max_w,
        );
    }
    g.set_scatter_form(ScatterForm::Auto);
}

#[test]
fn half_segment_sums_and_maxima_are_the_f32_ops_rounded_once() {
    for (rows, e, f) in [
        (7, 40, 1),
        (50, 3000, 3),
        (100, 20_000, 4),  // a hub row of two levels
        (20, 300_000, 2),  // three levels
        (300, 6000, 6),    // vectors of 2
        (200, 8000, 16),   // of 8
        (100, 20_000, 64), // the model's rows, two levels
        (40, 4000, 130),   // 65 vectors of 2: the grouped level 0
        (60, 3000, 264),   // 33 vectors of 8: the grouped level 0
    ] {
        segment_case::<bf16>(rows, e, f, 5);
        segment_case::<f16>(rows, e, f, 6);
    }
}

fn softmax_case<T: Element>(rows: usize, e: usize, f: usize, seed: u64) {
    let (g, cpu) = (shared(), CpuBackend::reference());
    let idx = indices(seed, e, rows, true);
    let plan = IndexPlan::new(&idx, rows).unwrap();
    // mostly finite logits (a few specials), gradients of both signs
    let x: Vec<T> = data(seed + 1, e * f, 8.0, e % 2 == 1);
    let gr: Vec<T> = data(seed + 2, e * f, 1.0, false);
    let (xg, gg) = (
        g.upload(&x, &[e, f]).unwrap(),
        g.upload(&gr, &[e, f]).unwrap(),
    );
    let (xc, gc) = (
        cpu.upload(&x, &[e, f]).unwrap(),
        cpu.upload(&gr, &[e, f]).unwrap(),
    );
    let case = format!("{:?} {rows}x{e}x{f}", T::DTYPE);
    let alpha_w: Vec<T> = round(&g.segment_softmax(&wide(&xg), &plan).unwrap());
    let alpha_c = cpu
        .download(&cpu.segment_softmax(&xc, &plan).unwrap())
        .unwrap();
    assert_same(&format!("segment_softmax {case}: CPU"), &alpha_c, &alpha_w);
    // the backward of the stored (rounded) alpha
    let ag = g.upload(&alpha_w, &[e, f]).unwrap();
    let ac = cpu.upload(&alpha_w, &[e, f]).unwrap();
    let back_w: Vec<T> = round(
        &g.segment_softmax_backward(&wide(&ag), &wide(&gg), &plan)
            .unwrap(),
    );
    let back_c = cpu
        .download(&cpu.segment_softmax_backward(&ac, &gc, &plan).unwrap())
        .unwrap();
    assert_same(&format!("softmax backward {case}: CPU"), &back_c, &back_w);
    let list = g.index_from_host(&idx).unwrap();
    for form in forms() {
        g.set_scatter_form(form);
        let c = format!("{case} {form:?}");
        let a = g.download(&g.segment_softmax(&xg, &plan).unwrap()).unwrap();
        assert_same(&format!("segment_softmax {c}"), &a, &alpha_w);
        let a = g
            .segment_softmax(&xg, Indices::held(&list).with_rows(rows))
            .unwrap();
        assert_same(
            &format!("segment_softmax, backend list {c}"),
            &g.download(&a).unwrap(),
            &alpha_w,
        );
        let d = g.segment_softmax_backward(&ag, &gg, &plan).unwrap();
        assert_same(
            &format!("softmax backward {c}"),
            &g.download(&d).unwrap(),
            &back_w,
        );
        let d = g
            .segment_softmax_backward(&ag, &gg, Indices::held(&list).with_rows(rows))
            .unwrap();
        assert_same(
            &format!("softmax backward, backend list {c}"),
            &g.download(&d).unwrap(),
            &back_w,
        );
    }
    g.set_scatter_form(ScatterForm::Auto);
}

#[test]
fn half_segment_softmax_and_backward_are_the_f32_ops_rounded_once() {
    for (rows, e, f) in [
        (7, 41, 1),
        (50, 2000, 4),    // the model's heads
        (100, 20_001, 4), // two levels, a few specials
        (20, 200_000, 2), // three levels
        (300, 6000, 3),   // vectors of 1
        (200, 8001, 8),   // of 8
        (60, 3000, 264),  // the grouped level 0
    ] {
        softmax_case::<bf16>(rows, e, f, 15);
        softmax_case::<f16>(rows, e, f, 16);
    }
}

fn gss_case<T: Element>(n: usize, rows: usize, e: usize, heads: usize, c: usize, seed: u64) {
    let (g, cpu) = (shared(), CpuBackend::reference());
    let f = heads * c;
    let gather = indices(seed, e, n, false);
    let scatter = indices(seed + 1, e, rows, true);
    let plan = IndexPlan::new(&scatter, rows).unwrap();
    let x: Vec<T> = data(seed + 2, n * f, 2.0, true);
    let w: Vec<T> = data(seed + 3, e * heads, 1.0, false);
    let (xg, wg) = (
        g.upload(&x, &[n, f]).unwrap(),
        g.upload(&w, &[e, heads]).unwrap(),
    );
    let (xc, wc) = (
        cpu.upload(&x, &[n, f]).unwrap(),
        cpu.upload(&w, &[e, heads]).unwrap(),
    );
    let case = format!(
        "{:?} gather_scale_scatter {n}->{rows} e={e} {heads}x{c}",
        T::DTYPE
    );
    let want: Vec<T> = round(
        &g.gather_scale_scatter(&wide(&xg), &gather, &wide(&wg), &plan)
            .unwrap(),
    );
    let on_cpu = cpu
        .download(&cpu.gather_scale_scatter(&xc, &gather, &wc, &plan).unwrap())
        .unwrap();
    assert_same(&format!("{case}: CPU"), &on_cpu, &want);
    let (gl, sl) = (
        g.index_from_host(&gather).unwrap(),
        g.index_from_host(&scatter).unwrap(),
    );
    for form in forms() {
        g.set_scatter_form(form);
        let got = g.gather_scale_scatter(&xg, &gather, &wg, &plan).unwrap();
        assert_same(
            &format!("{case} {form:?}"),
            &g.download(&got).unwrap(),
            &want,
        );
        let got = g
            .gather_scale_scatter(
                &xg,
                Indices::held(&gl),
                &wg,
                Indices::held(&sl).with_rows(rows),
            )
            .unwrap();
        assert_same(
            &format!("{case}, backend list {form:?}"),
            &g.download(&got).unwrap(),
            &want,
        );
    }
    g.set_scatter_form(ScatterForm::Auto);
}

#[test]
fn half_gather_scale_scatter_is_the_f32_op_rounded_once() {
    for (n, rows, e, heads, c) in [
        (40, 30, 3000, 4, 5),      // vectors of 1
        (500, 100, 20_000, 4, 16), // the model's heads: vectors of 8, two per head
        (300, 20, 200_000, 4, 16), // three levels
        (200, 50, 5000, 2, 12),    // heads of 12: vectors of 4
        (200, 50, 5000, 3, 6),     // heads of 6: vectors of 2
        (100, 40, 4000, 1, 264),   // 33 vectors of 8: the grouped level 0
        (100, 40, 4000, 33, 4),    // 33 vectors of 4, a head each
    ] {
        gss_case::<bf16>(n, rows, e, heads, c, 25);
        gss_case::<f16>(n, rows, e, heads, c, 26);
    }
}

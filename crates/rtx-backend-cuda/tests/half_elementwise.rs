//! GPU tests of model.cu's elementwise kernels in every element type, the
//! native bf16 / f16 ones above all (feature `cuda`; run on a machine with a
//! device): unary, unary_backward, binary (broadcast or not), axpy,
//! head_scale, add_head_scale and sum_bias_relu, on shapes that take each
//! kernel's 16-byte vector path (8 halves, 4 floats, 2 doubles a thread),
//! its tail of single elements, and its scalar path, with specials (NaN,
//! infinities, -0.0, subnormals, values past f16's range) among the values.
//!
//! Each result is compared with the host reference (`CpuBackend::reference()`,
//! equal bits or both NaN: device arithmetic makes its own NaN payloads) and,
//! for the half types, with the device's own f32 op on the widened inputs
//! rounded once on the host (the definition of a half op; the bits of the
//! widen route the native kernels replace).
//!
//! Without a device every test here FAILS with a message saying so.
#![cfg(feature = "cuda")]

use std::sync::OnceLock;

use rtx_backend::prelude::*;
use rtx_backend::workload::{splitmix64, values};
use rtx_backend::{BTensor, Backend, Binary, Element, Unary, bf16, f16, round_f32, widen_f32};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::CudaBackend;

fn shared() -> &'static CudaBackend {
    static B: OnceLock<CudaBackend> = OnceLock::new();
    B.get_or_init(|| {
        CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
    })
}

/// Equal bits, or both NaN.
fn same<T: Element>(a: T, b: T) -> bool {
    a.to_bits_u64() == b.to_bits_u64() || (a.is_nan() && b.is_nan())
}

fn assert_same<T: Element>(case: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| !same(got[i], want[i])) {
        panic!(
            "{case} ({}): element {i} of {}: got {:?}, want {:?}",
            T::DTYPE,
            got.len(),
            got[i],
            want[i]
        );
    }
}

/// `n` values of `T` (the anchors' generator times `scale`, rounded once),
/// every 11th replaced by a special.
fn mixed<T: Element>(seed: u64, n: usize, scale: f32) -> Vec<T> {
    let specials = [
        -0.0f32,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3.0e-41,
        6.0e-8,
        1.0e30,
        f32::from_bits(0x7fc0_1234),
    ];
    values::<f32>(seed, n)
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if i % 11 == 7 {
                let k = (splitmix64(seed ^ 0x3c, i as u64) % specials.len() as u64) as usize;
                T::from_f32(specials[k])
            } else {
                T::from_f32(v * scale)
            }
        })
        .collect()
}

fn up<B: Backend, T: Element>(b: &B, v: &[T], shape: &[usize]) -> BTensor<B, T> {
    b.upload(v, shape).expect("upload")
}

fn down<B: Backend, T: Element>(b: &B, t: &BTensor<B, T>) -> Vec<T> {
    b.download(t).expect("download")
}

/// `t` widened to an f32 tensor on the device (exact for the half types).
fn wide<T: Element>(t: &BTensor<CudaBackend, T>) -> BTensor<CudaBackend, f32> {
    let g = shared();
    let shape = t.shape().to_vec();
    up(g, &widen_f32(&down(g, t)), &shape)
}

/// For a half type: `got` is `f32_out` rounded once to `T`.
fn assert_rounded<T: Element>(case: &str, got: &BTensor<CudaBackend, T>, f32_out: &[f32]) {
    if T::DTYPE.is_half() {
        let want: Vec<T> = round_f32(f32_out);
        assert_same(
            &format!("{case} vs its f32 op, rounded once"),
            &down(shared(), got),
            &want,
        );
    }
}

/// Element counts around the vector of every type: tails of 1 to 7 past
/// whole vectors, fewer elements than one vector, and a long run of blocks.
const COUNTS: [usize; 6] = [1, 7, 8, 301, 4096 + 13, (1 << 20) + 5];

fn unary_case<T: Element>() {
    let (g, cpu) = (shared(), CpuBackend::reference());
    for (s, &n) in COUNTS.iter().enumerate() {
        let x: Vec<T> = mixed(100 + s as u64, n, 3.0);
        let d: Vec<T> = mixed(200 + s as u64, n, 1.0);
        let (xg, dg) = (up(g, &x, &[n]), up(g, &d, &[n]));
        let (xc, dc) = (up(&cpu, &x, &[n]), up(&cpu, &d, &[n]));
        let (xw, dw) = (wide(&xg), wide(&dg));
        for op in [
            Unary::Relu,
            Unary::LeakyRelu(0.2),
            Unary::Scale(-0.37),
            Unary::Exp,
        ] {
            let case = format!("{} of {n}", op.name());
            let got = g.unary(op, &xg).expect("unary");
            assert_rounded(&case, &got, &down(g, &g.unary(op, &xw).expect("f32")));
            if !matches!(op, Unary::Exp) {
                let want = down(&cpu, &cpu.unary(op, &xc).expect("cpu"));
                assert_same(&case, &down(g, &got), &want);
            }
            let case = format!("{case} backward");
            let got = g.unary_backward(op, &xg, &dg).expect("backward");
            let w32 = g.unary_backward(op, &xw, &dw).expect("f32");
            assert_rounded(&case, &got, &down(g, &w32));
            if !matches!(op, Unary::Exp) {
                let want = down(&cpu, &cpu.unary_backward(op, &xc, &dc).expect("cpu"));
                assert_same(&case, &down(g, &got), &want);
            }
        }
    }
}

#[test]
fn unary_and_backward_in_every_type_take_vectors_and_tails() {
    unary_case::<bf16>();
    unary_case::<f16>();
    unary_case::<f32>();
    unary_case::<f64>();
}

fn binary_case<T: Element>() {
    let (g, cpu) = (shared(), CpuBackend::reference());
    // rows of f: whole vectors of every type (8, 24), of floats but not of
    // halves (12), of none (7), single elements (1)
    for (s, (rows, f)) in [(43, 8), (37, 24), (64, 12), (41, 7), (9, 1), (4099, 16)]
        .into_iter()
        .enumerate()
    {
        let seed = 300 + 10 * s as u64;
        let a: Vec<T> = mixed(seed, rows * f, 2.0);
        let b: Vec<T> = mixed(seed + 1, rows * f, 2.0);
        let row: Vec<T> = mixed(seed + 2, f, 2.0);
        let ag = up(g, &a, &[rows, f]);
        let ac = up(&cpu, &a, &[rows, f]);
        for op in [Binary::Add, Binary::Sub, Binary::Mul, Binary::Div] {
            for (bv, shape) in [(&b, [rows, f]), (&row, [1, f])] {
                let case = format!("{} of {rows}x{f} by {shape:?}", op.name());
                let bg = up(g, bv, &shape);
                let got = g.binary(op, &ag, &bg).expect("binary");
                let w32 = g.binary(op, &wide(&ag), &wide(&bg)).expect("f32");
                assert_rounded(&case, &got, &down(g, &w32));
                let want = cpu.binary(op, &ac, &up(&cpu, bv, &shape)).expect("cpu");
                assert_same(&case, &down(g, &got), &down(&cpu, &want));
            }
        }
    }
}

#[test]
fn binary_in_every_type_with_and_without_a_broadcast_row() {
    binary_case::<bf16>();
    binary_case::<f16>();
    binary_case::<f32>();
    binary_case::<f64>();
}

fn axpy_case<T: Element>() {
    let (g, cpu) = (shared(), CpuBackend::reference());
    for (s, &n) in COUNTS.iter().enumerate() {
        let y: Vec<T> = mixed(400 + s as u64, n, 2.0);
        let x: Vec<T> = mixed(500 + s as u64, n, 2.0);
        let case = format!("axpy of {n}");
        let xg = up(g, &x, &[n]);
        // y shares its buffer with `keep`: axpy writes a copy, `keep` stays
        let keep = up(g, &y, &[n]);
        let mut yg = keep.clone();
        g.axpy(&mut yg, -0.1, &xg).expect("axpy");
        assert_same(&format!("{case}: the shared y"), &down(g, &keep), &y);
        let mut w32 = wide(&keep);
        g.axpy(&mut w32, -0.1, &wide(&xg)).expect("f32");
        assert_rounded(&case, &yg, &down(g, &w32));
        let mut yc = up(&cpu, &y, &[n]);
        cpu.axpy(&mut yc, -0.1, &up(&cpu, &x, &[n])).expect("cpu");
        assert_same(&case, &down(g, &yg), &down(&cpu, &yc));
        // in place on a unique y: the same bits
        let mut yu = up(g, &y, &[n]);
        g.axpy(&mut yu, -0.1, &xg).expect("axpy in place");
        assert_same(&format!("{case} in place"), &down(g, &yu), &down(&cpu, &yc));
    }
}

#[test]
fn axpy_in_every_type_rounds_y_once() {
    axpy_case::<bf16>();
    axpy_case::<f16>();
    axpy_case::<f32>();
    axpy_case::<f64>();
}

fn head_scale_case<T: Element>() {
    let (g, cpu) = (shared(), CpuBackend::reference());
    // channels per head: whole vectors of every type (8, 16), of floats only
    // (4), of none (3), one (1)
    for (s, (n, heads, c)) in [
        (33, 3, 8),
        (17, 2, 16),
        (29, 3, 4),
        (31, 4, 3),
        (7, 5, 1),
        (2053, 4, 16),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 600 + 10 * s as u64;
        let f = heads * c;
        let x: Vec<T> = mixed(seed, n * f, 2.0);
        let a: Vec<T> = mixed(seed + 1, n * f, 2.0);
        let a1: Vec<T> = mixed(seed + 2, f, 2.0);
        let sc: Vec<T> = mixed(seed + 3, n * heads, 2.0);
        let (xg, sg) = (up(g, &x, &[n, f]), up(g, &sc, &[n, heads]));
        let (xc, scc) = (up(&cpu, &x, &[n, f]), up(&cpu, &sc, &[n, heads]));
        for (av, rows) in [(&a, n), (&a1, 1)] {
            let case = format!("head_scale of {n}x{heads}x{c}, a of {rows} rows");
            let ag = up(g, av, &[rows, f]);
            let ac = up(&cpu, av, &[rows, f]);
            let got = g.head_scale(&ag, &sg).expect("head_scale");
            let w32 = g.head_scale(&wide(&ag), &wide(&sg)).expect("f32");
            assert_rounded(&case, &got, &down(g, &w32));
            let want = cpu.head_scale(&ac, &scc).expect("cpu");
            assert_same(&case, &down(g, &got), &down(&cpu, &want));
            let case = format!("add_{case}");
            let got = g.add_head_scale(&xg, &ag, &sg).expect("add_head_scale");
            let w32 = g
                .add_head_scale(&wide(&xg), &wide(&ag), &wide(&sg))
                .expect("f32");
            assert_rounded(&case, &got, &down(g, &w32));
            let want = cpu.add_head_scale(&xc, &ac, &scc).expect("cpu");
            assert_same(&case, &down(g, &got), &down(&cpu, &want));
        }
    }
}

#[test]
fn head_scale_and_add_head_scale_in_every_type_for_every_head_width() {
    head_scale_case::<bf16>();
    head_scale_case::<f16>();
    head_scale_case::<f32>();
    head_scale_case::<f64>();
}

fn sum_bias_relu_case<T: Element>() {
    let (g, cpu) = (shared(), CpuBackend::reference());
    // rows of whole vectors of every type (16), of none (5); 1 to 8 parts
    // (the kernel's room) and 9 (past it)
    for (n, f) in [(37, 16), (41, 5), (1031, 8)] {
        let xs: Vec<Vec<T>> = (0..9).map(|i| mixed(700 + i, n * f, 3.0)).collect();
        let bs: Vec<Vec<T>> = (0..9).map(|i| mixed(800 + i, f, 3.0)).collect();
        let xg: Vec<_> = xs.iter().map(|v| up(g, v, &[n, f])).collect();
        let bg: Vec<_> = bs.iter().map(|v| up(g, v, &[1, f])).collect();
        let xw: Vec<_> = xg.iter().map(wide).collect();
        let bw: Vec<_> = bg.iter().map(wide).collect();
        let xc: Vec<_> = xs.iter().map(|v| up(&cpu, v, &[n, f])).collect();
        let bc: Vec<_> = bs.iter().map(|v| up(&cpu, v, &[1, f])).collect();
        for k in 1..=9 {
            let case = format!("sum_bias_relu of {k} parts of {n}x{f}");
            let parts: Vec<_> = xg.iter().zip(&bg).take(k).collect();
            let got = g.sum_bias_relu(&parts).expect("sum_bias_relu");
            let parts: Vec<_> = xw.iter().zip(&bw).take(k).collect();
            let w32 = g.sum_bias_relu(&parts).expect("f32");
            assert_rounded(&case, &got, &down(g, &w32));
            let parts: Vec<_> = xc.iter().zip(&bc).take(k).collect();
            let want = cpu.sum_bias_relu(&parts).expect("cpu");
            assert_same(&case, &down(g, &got), &down(&cpu, &want));
        }
    }
}

#[test]
fn sum_bias_relu_in_every_type_for_every_part_count() {
    sum_bias_relu_case::<bf16>();
    sum_bias_relu_case::<f16>();
    sum_bias_relu_case::<f32>();
    sum_bias_relu_case::<f64>();
}

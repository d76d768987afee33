//! Property tests of the CPU backend against naive implementations.

use proptest::prelude::*;
use rtx_backend::prelude::*;
use rtx_backend_cpu::CpuBackend;

fn case() -> impl Strategy<Value = (usize, usize, Vec<u32>, u64)> {
    (1usize..40, 0usize..9).prop_flat_map(|(rows, f)| {
        (
            Just(rows),
            Just(f),
            proptest::collection::vec(0..rows as u32, 0..300),
            any::<u64>(),
        )
    })
}

proptest! {
    #[test]
    fn gather_is_naive_gather((rows, f, idx, seed) in case()) {
        let b = CpuBackend::new();
        let src: Vec<f64> = (0..rows * f).map(|i| (seed.wrapping_add(i as u64) % 1000) as f64).collect();
        let out = b.download(&b.index_select(&b.upload(&src, &[rows, f]).unwrap(), &idx).unwrap()).unwrap();
        let mut want = Vec::new();
        for &i in &idx { want.extend_from_slice(&src[i as usize * f..(i as usize + 1) * f]); }
        prop_assert_eq!(out, want);
    }

    #[test]
    fn scatter_is_naive_scatter_on_integers((rows, f, idx, seed) in case()) {
        // small integers: every order gives the exact sum, so a naive loop is the reference
        let b = CpuBackend::new();
        let src: Vec<f64> = (0..idx.len() * f).map(|i| ((seed ^ i as u64) % 19) as f64 - 9.0).collect();
        let dst0: Vec<f64> = (0..rows * f).map(|i| (i % 5) as f64).collect();
        let mut d = b.upload(&dst0, &[rows, f]).unwrap();
        b.index_add(&mut d, &idx, &b.upload(&src, &[idx.len(), f]).unwrap()).unwrap();
        let mut want = dst0.clone();
        for (p, &i) in idx.iter().enumerate() {
            for j in 0..f { want[i as usize * f + j] += src[p * f + j]; }
        }
        prop_assert_eq!(b.download(&d).unwrap(), want);
    }

    #[test]
    fn scatter_matches_reference_bits((rows, f, idx, seed) in case()) {
        let b = CpuBackend::new();
        let src: Vec<f32> = (0..idx.len() * f).map(|i| rtx_backend::workload::value(seed, i as u64)).collect();
        let mut d = b.zeros::<f32>(&[rows, f]).unwrap();
        b.index_add(&mut d, &idx, &b.upload(&src, &[idx.len(), f]).unwrap()).unwrap();
        let mut want = vec![0.0f32; rows * f];
        rtx_backend::reference::index_add(&mut want, f, &rtx_backend::IndexPlan::new(&idx, rows).unwrap(), &src).unwrap();
        prop_assert_eq!(b.download(&d).unwrap(), want);
    }

    #[test]
    fn swap_dims_is_naive_permute(shape in proptest::collection::vec(0usize..6, 1..6), a in 0usize..6, c in 0usize..6) {
        let (a, c) = (a % shape.len(), c % shape.len());
        let b = CpuBackend::new();
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|x| x as f32).collect();
        let t = b.swap_dims(&b.upload(&data, &shape).unwrap(), a, c).unwrap();
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        perm.swap(a, c);
        // naive: decode every output index with the output's contiguous strides
        let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        prop_assert_eq!(t.shape(), out_shape.as_slice());
        prop_assert!(t.layout().is_contiguous());
        let mut want = vec![0.0f32; n];
        for (o, w) in want.iter_mut().enumerate() {
            let mut rem = o;
            let mut in_idx = vec![0usize; shape.len()];
            for d in (0..shape.len()).rev() {
                in_idx[perm[d]] = rem % out_shape[d];
                rem /= out_shape[d];
            }
            let flat = in_idx.iter().zip(&shape).fold(0, |acc, (&i, &s)| acc * s + i);
            *w = data[flat];
        }
        prop_assert_eq!(b.download(&t).unwrap(), want);
    }
}

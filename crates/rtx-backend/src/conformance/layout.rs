//! The layout-op cases: `swap_dims` and `permute`.

use super::harness::{assert_bits, down, up};
use crate::workload::values;
use crate::{Backend, Error};

/// The field bug: `[2,3,4]` swap(0,2) gives `b[1][0][0] == 1.0`, every element checked.
pub fn swap_dims_2x3x4<B: Backend>(b: &B) {
    let a: Vec<f32> = (0..24).map(|x| x as f32).collect();
    let t = b
        .swap_dims(&up(b, &a, &[2, 3, 4]), 0, 2)
        .expect("swap_dims");
    assert_eq!(t.shape(), &[4, 3, 2]);
    assert_eq!(
        t.layout().strides(),
        &[6, 2, 1],
        "output strides must be contiguous for [4,3,2]"
    );
    assert!(t.layout().is_contiguous());
    let got = down(b, &t);
    assert_eq!(got[6], 1.0, "b[1][0][0]");
    for i in 0..4 {
        for j in 0..3 {
            for k in 0..2 {
                assert_eq!(
                    got[i * 6 + j * 2 + k],
                    a[k * 12 + j * 4 + i],
                    "b[{i}][{j}][{k}]"
                );
            }
        }
    }
}

/// `[N,1] <-> [1,N]` shares the buffer and relabels the shape.
pub fn vector_swap_shares_buffer<B: Backend>(b: &B) {
    let n = 1000;
    let a: Vec<f32> = values(4, n);
    for shape in [[n, 1], [1, n]] {
        let t = up(b, &a, &shape);
        let s = b.swap_dims(&t, 0, 1).expect("swap");
        assert_eq!(s.shape(), &[shape[1], shape[0]]);
        assert!(
            s.shares_storage_with(&t),
            "swap of {shape:?} must share the buffer"
        );
        assert!(s.layout().is_contiguous());
        assert_bits("vector swap", &down(b, &s), &a);
    }
}

/// Every permutation of a 4-D tensor (and some rank 5-6) against the naive host permute.
pub fn all_permutations<B: Backend>(b: &B) {
    fn perms(n: usize) -> Vec<Vec<usize>> {
        if n == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in perms(n - 1) {
            for pos in 0..n {
                let mut q = p.clone();
                q.insert(pos, n - 1);
                out.push(q);
            }
        }
        out
    }
    for shape in [vec![3usize, 5, 2, 7], vec![2, 1, 33, 4], vec![17, 3, 1, 65]] {
        let n: usize = shape.iter().product();
        let a: Vec<f32> = values(4, n);
        let t = up(b, &a, &shape);
        for p in perms(4) {
            let s = b.permute(&t, &p).expect("permute");
            let want = rtx_tensor::permute_host(&a, &shape, &p).expect("host permute");
            assert!(s.layout().is_contiguous());
            assert_bits(&format!("permute {shape:?} by {p:?}"), &down(b, &s), &want);
        }
    }
    let shape = [2usize, 3, 2, 4, 3, 2];
    let n: usize = shape.iter().product();
    let a: Vec<f64> = values(5, n);
    for p in [
        [5usize, 4, 3, 2, 1, 0],
        [1, 0, 3, 2, 5, 4],
        [0, 2, 4, 1, 3, 5],
    ] {
        let s = b.permute(&up(b, &a, &shape), &p).expect("permute rank 6");
        assert_bits(
            &format!("rank-6 permute {p:?}"),
            &down(b, &s),
            &rtx_tensor::permute_host(&a, &shape, &p).expect("host"),
        );
    }
}

/// Transposes whose sizes do not divide any tile, batched and wide-element ones.
pub fn odd_transposes<B: Backend>(b: &B) {
    for (shape, a0, b0) in [
        (vec![33usize, 65], 0usize, 1usize),
        (vec![1, 7], 0, 1),
        (vec![3, 31, 17], 1, 2),
        (vec![45, 19, 5], 0, 1),
        (vec![2, 40, 9, 3], 1, 2),
        (vec![0, 5], 0, 1),
    ] {
        let n: usize = shape.iter().product();
        let a: Vec<f32> = values(9, n);
        let s = b.swap_dims(&up(b, &a, &shape), a0, b0).expect("swap");
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        perm.swap(a0, b0);
        assert_bits(
            &format!("swap {shape:?} ({a0},{b0})"),
            &down(b, &s),
            &rtx_tensor::permute_host(&a, &shape, &perm).expect("host"),
        );
    }
    let t = up(b, &[1.0f32, 2.0], &[2]);
    assert!(
        matches!(b.swap_dims(&t, 0, 1), Err(Error::Layout(_))),
        "bad dim must be an error"
    );
}

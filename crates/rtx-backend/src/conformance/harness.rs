//! What the cases share: upload and download that panic on error, and the
//! bit-exact and tolerance comparisons.

use crate::{BTensor, Backend, Element};

pub(super) fn bits<T: Element>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits_u64()).collect()
}

pub(super) fn assert_bits<T: Element>(case: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits_u64() != want[i].to_bits_u64()) {
        panic!(
            "{case}: element {i}: got {:?}, want {:?} (bit-exact comparison)",
            got[i], want[i]
        );
    }
}

pub(super) fn up<B: Backend, T: Element>(b: &B, data: &[T], shape: &[usize]) -> BTensor<B, T> {
    b.upload(data, shape).expect("upload")
}

pub(super) fn down<B: Backend, T: Element>(b: &B, t: &BTensor<B, T>) -> Vec<T> {
    b.download(t).expect("download")
}

/// Every element of `got` within `rel` times the largest magnitude of `want` (at least 1).
pub(super) fn assert_close(case: &str, got: &[f64], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * scale,
            "{case}: element {i}: got {g}, want {w} (tolerance {rel} x {scale})"
        );
    }
}

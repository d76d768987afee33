//! An independent check of the canonical order: a three-level tree written
//! out by hand here, sharing no code with `rtx_backend::order` (no
//! `canonical_*`, no `reduce_blocks`, not even the block constant), compared
//! bit for bit with `canonical_sum` and with `reference::index_add`.

use rtx_backend::order::{CANONICAL_BLOCK, canonical_sum};
use rtx_backend::{IndexPlan, reference};

/// The block size the order is defined with, written down independently.
const B: usize = 256;

/// Values of very different magnitudes, so that any other association of the
/// additions gives other bits (checked below).
fn v(j: usize) -> f32 {
    let m = (j.wrapping_mul(2_654_435_761) >> 7) % 1_000_003;
    let mag = [1e-3f32, 1.0, 1e3, 3e5][(j * 7 + m) % 4];
    (m as f32 / 1_000_003.0 - 0.37) * mag
}

/// Left-to-right sum starting from the first value, as a plain loop.
fn left_to_right(xs: &[f32]) -> f32 {
    let mut s = xs[0];
    for &x in &xs[1..] {
        s += x;
    }
    s
}

#[test]
fn hand_written_three_level_tree() {
    assert_eq!(CANONICAL_BLOCK, B, "the order's block size changed");
    // 70,000 > 65,536 = B^2 values: 274 level-0 blocks (273 full, one of
    // 112), 2 level-1 blocks (256 and 18 block sums), 1 level-2 block.
    let k = 70_000;
    let vals: Vec<f32> = (0..k).map(v).collect();
    let level0: Vec<f32> = vals.chunks(B).map(left_to_right).collect();
    assert_eq!(level0.len(), 274);
    assert_eq!(vals.len() - 273 * B, 112);
    let level1 = [left_to_right(&level0[..256]), left_to_right(&level0[256..])];
    assert_eq!(level0[256..].len(), 18);
    let tree = level1[0] + level1[1];

    // the test can tell orders apart: a sequential loop, or a two-level tree,
    // gives other bits on these values
    assert_ne!(left_to_right(&vals).to_bits(), tree.to_bits());
    assert_ne!(left_to_right(&level0).to_bits(), tree.to_bits());

    let got = canonical_sum(k, |j| vals[j]).expect("k > 0");
    assert_eq!(
        got.to_bits(),
        tree.to_bits(),
        "canonical_sum: {got} vs {tree}"
    );

    // index_add: every entry into row 1 of 3, in two columns (the second
    // negated), onto a nonzero destination; rows 0 and 2 untouched
    let f = 2;
    let idx = vec![1u32; k];
    let plan = IndexPlan::new(&idx, 3).expect("plan");
    let src: Vec<f32> = vals.iter().flat_map(|&x| [x, -x]).collect();
    let dst0 = [0.25f32, -0.0, 7.5, 1e4, f32::NAN, 3.0];
    let mut dst = dst0.to_vec();
    reference::index_add(&mut dst, f, &plan, &src).expect("index_add");
    let want = [
        dst0[0],
        dst0[1],
        dst0[2] + tree,
        dst0[3] + -level1[0] + -level1[1],
        dst0[4],
        dst0[5],
    ];
    // the second column's tree is the negated first one: negation is exact
    assert_eq!((-level1[0] + -level1[1]).to_bits(), (-tree).to_bits());
    for (i, (g, w)) in dst.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "index_add element {i}: {g} vs {w}"
        );
    }
}

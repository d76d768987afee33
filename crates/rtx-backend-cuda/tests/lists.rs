//! GPU tests of device-resident index lists and scatter plans built on the
//! device (lists that change every step never pass through the host): every
//! result bit-identical to rtx-backend-cpu with the same list on the host. Without a device every test FAILS saying so.
#![cfg(feature = "cuda")]

use rtx_backend::Indices;
use rtx_backend::bf16;
use rtx_backend::prelude::*;
use rtx_backend::workload::{index, indices, values};
use rtx_backend::{Element, Error as BError, Unary};
use rtx_backend_cpu::CpuBackend;
use rtx_backend_cuda::{CudaBackend, ScatterForm};

fn backend() -> CudaBackend {
    CudaBackend::new(0).unwrap_or_else(|e| panic!("GPU test needs a CUDA device: {e}"))
}

fn same_bits<T: Element>(case: &str, got: &[T], want: &[T]) {
    assert_eq!(got.len(), want.len(), "{case}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits_u64() != want[i].to_bits_u64()) {
        panic!("{case}: element {i}: got {:?}, want {:?}", got[i], want[i]);
    }
}

#[test]
fn random_lists_are_the_host_generator_bit_for_bit() {
    let g = backend();
    for (seed, start, n, rows, hub) in [
        (1u64, 0u64, 100_000usize, 15_000usize, true),
        (11, 7, 50_000, 10_000, true),
        (2, 1 << 40, 30_000, 1_000_000, false),
        (3, 0, 1000, 1, true),
    ] {
        let l = g.index_random(seed, start, n, rows, hub).unwrap();
        let want: Vec<u32> = (0..n as u64)
            .map(|i| index(seed, start + i, rows, hub))
            .collect();
        assert_eq!(&*g.index_download(&l).unwrap(), &want[..], "seed {seed}");
        assert_eq!(g.index_max(&l).unwrap(), want.iter().copied().max());
    }
}

/// A fresh device list per case: scatter, gather and segment sum against
/// the CPU backend with the same list on the host.
fn fresh_case<T: Element>(g: &CudaBackend, rows: usize, e: usize, f: usize, hub: bool, seed: u64) {
    let case = format!("rows {rows} e {e} f {f} hub {hub}");
    let idx = indices(seed, e, rows, hub);
    let list = g.index_random(seed, 0, e, rows, hub).unwrap();
    against_cpu::<T>(g, &list, &idx, rows, f, seed, &case);
}

/// Scatter and gather by the device list `list` (whose entries are `idx`)
/// against the CPU backend with `idx` on the host.
fn against_cpu<T: Element>(
    g: &CudaBackend,
    list: &rtx_backend_cuda::CudaIndex,
    idx: &[u32],
    rows: usize,
    f: usize,
    seed: u64,
    case: &str,
) {
    let cpu = CpuBackend::reference();
    let e = idx.len();
    let list = list.clone();
    let msg: Vec<T> = values(seed + 1, e * f);
    let dst: Vec<T> = values(seed + 2, rows * f);
    let mut d = g.upload(&dst, &[rows, f]).unwrap();
    g.index_add(
        &mut d,
        Indices::held(&list),
        &g.upload(&msg, &[e, f]).unwrap(),
    )
    .unwrap();
    let mut c = cpu.upload(&dst, &[rows, f]).unwrap();
    cpu.index_add(&mut c, idx, &cpu.upload(&msg, &[e, f]).unwrap())
        .unwrap();
    same_bits(
        &format!("scatter {case}"),
        &g.download(&d).unwrap(),
        &cpu.download(&c).unwrap(),
    );
    let src = g.upload(&dst, &[rows, f]).unwrap();
    let gg = g.index_select(&src, Indices::held(&list)).unwrap();
    let cg = cpu
        .index_select(&cpu.upload(&dst, &[rows, f]).unwrap(), idx)
        .unwrap();
    same_bits(
        &format!("gather {case}"),
        &g.download(&gg).unwrap(),
        &cpu.download(&cg).unwrap(),
    );
}

#[test]
fn fresh_device_lists_scatter_bit_identical_to_cpu() {
    let g = backend();
    for (rows, e, f, hub) in [
        (1usize, 70_000usize, 2usize, true),
        (37, 9, 3, false),
        (1000, 50_000, 3, true),
        (70_000, 300_000, 5, false),
        (2048, 4096, 1, false),
        (2049, 100_000, 4, true),
        (1 << 22, 1 << 20, 2, false),
        ((1 << 22) + 1, 1 << 20, 2, true),
        (1_000_000, 2_000_000, 8, true),
        // a mini-batch's list: level 0's scan in one block (4 tiles of
        // rows), and one row more: three launches
        (16_384, 168_960, 4, false),
        (16_385, 168_960, 4, true),
        // the radix passes' short tiles, and the long ones from 2^20 entries
        (300_000, (1 << 20) - 1, 1, true),
        (300_000, 1 << 20, 1, false),
    ] {
        fresh_case::<f32>(&g, rows, e, f, hub, 5);
        fresh_case::<f64>(&g, rows, e, f, hub, 6);
    }
}

/// `prepare_plans` over fresh device lists (a mini-batch's, a hub's, one
/// row, an empty list, one of more than 2^20 entries sorted in two passes,
/// a host list whose largest entry is known, the same list twice), built
/// in one batch of launches: one wait for all of them, and each list's
/// scatter the CPU's bits; a list with an entry past its rows is the error
/// naming the first such position, and the others' plans stay usable.
#[test]
fn plans_prepared_together_wait_once_and_scatter_the_cpus_bits() {
    let g = backend();
    let shapes = [
        (16_384usize, 168_960usize, false),
        (16_385, 100_000, true),
        (37, 9, false),
        (1, 700, false),
        (70_000, 300_000, true),
        (5, 0, false),
        (1_000_000, 1_100_000, false),
        (3000, 2000, true),
    ];
    let host_made = shapes.len() - 1;
    let lists: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(i, &(rows, e, hub))| {
            let seed = 40 + i as u64;
            if i == host_made {
                g.index_from_host(&indices(seed, e, rows, hub)).unwrap()
            } else {
                g.index_random(seed, 0, e, rows, hub).unwrap()
            }
        })
        .collect();
    let mut all: Vec<Indices<'_, CudaBackend>> = lists
        .iter()
        .zip(&shapes)
        .map(|(l, &(rows, _, _))| Indices::held(l).with_rows(rows))
        .collect();
    all.push(Indices::held(&lists[0]).with_rows(shapes[0].0));
    let before = g.activity();
    g.prepare_plans(&all).unwrap();
    let spent = g.activity().since(&before);
    assert_eq!(spent.waits, 1, "one wait for every plan: {spent:?}");
    // one batch: the range check, two radix passes of 5 launches, 6 for
    // the level tables (7 lists built alone take 9-15 each)
    assert!(
        spent.launches <= 17,
        "the builds share their launches: {spent:?}"
    );
    for (i, (l, &(rows, e, hub))) in lists.iter().zip(&shapes).enumerate() {
        let idx = indices(40 + i as u64, e, rows, hub);
        let case = format!("prepared: rows {rows} e {e} hub {hub}");
        let before = g.activity();
        against_cpu::<f32>(&g, l, &idx, rows, 3, 50 + i as u64, &case);
        let used = g.activity().since(&before);
        assert_eq!(
            used.waits, 2,
            "{case}: only the two downloads wait: {used:?}"
        );
    }
    let (made_for, rows) = (1000usize, 500usize);
    let bad = g.index_random(60, 0, 20_000, made_for, false).unwrap();
    let host = indices(60, 20_000, made_for, false);
    let first = host.iter().position(|&i| i as usize >= rows).unwrap();
    let fine = g.index_random(61, 0, 5000, rows, false).unwrap();
    let e = g
        .prepare_plans(&[
            Indices::held(&fine).with_rows(rows),
            Indices::held(&bad).with_rows(rows),
        ])
        .unwrap_err();
    assert!(
        matches!(e, BError::IndexOutOfRange { position, bound, .. } if position == first && bound == rows),
        "{e}"
    );
    against_cpu::<f32>(
        &g,
        &fine,
        &indices(61, 5000, rows, false),
        rows,
        2,
        62,
        "after an error",
    );
}

/// Lists known to be sorted (repeats, their concatenations in order, a
/// sorted host list) skip the radix sort: a build of one takes at most 6
/// launches (a sorted pass alone takes 3 more), a batch of them as few,
/// and each scatter and gather is the CPU's bits, alone and in a batch
/// beside unsorted lists. The cases: a mini-batch's destinations, hub rows
/// of 100k entries (levels past 0), duplicates with gaps, one entry, more
/// than 2^20 entries, and a destination of far more rows than entries.
#[test]
fn sorted_lists_skip_the_sort_and_scatter_the_cpus_bits() {
    let g = backend();
    let sorted_host = |seed: u64, e: usize, rows: usize| {
        let mut v = indices(seed, e, rows, true);
        v.sort_unstable();
        v
    };
    type Make<'a> = Box<dyn Fn(&CudaBackend) -> rtx_backend_cuda::CudaIndex + 'a>;
    let cases: Vec<(&str, usize, Make<'_>)> = vec![
        (
            "mini-batch destinations",
            16_385,
            Box::new(|g| {
                let seeds = g.index_repeat(1024, 15, 0).unwrap();
                let hop = g.index_repeat(1024 * 15, 10, 1024).unwrap();
                g.index_concat(&[(&seeds, 0), (&hop, 0)]).unwrap()
            }),
        ),
        (
            "hub rows",
            20,
            Box::new(|g| g.index_repeat(3, 100_000, 7).unwrap()),
        ),
        (
            "sorted host list",
            70_000,
            Box::new(|g| g.index_from_host(&sorted_host(3, 200_000, 70_000)).unwrap()),
        ),
        (
            "one entry",
            6,
            Box::new(|g| g.index_repeat(1, 1, 5).unwrap()),
        ),
        (
            "2^20 and more",
            1 << 16,
            Box::new(|g| g.index_repeat(1 << 16, 20, 0).unwrap()),
        ),
        (
            "far more rows",
            4_000_000,
            Box::new(|g| g.index_from_host(&sorted_host(4, 1000, 4_000_000)).unwrap()),
        ),
    ];
    for (i, (case, rows, make)) in cases.iter().enumerate() {
        let list = make(&g);
        let idx = g.index_download(&list).unwrap().into_owned();
        assert!(idx.is_sorted(), "{case}");
        let before = g.activity();
        g.prepare_plans(&[Indices::held(&list).with_rows(*rows)])
            .unwrap();
        let spent = g.activity().since(&before);
        assert!(spent.launches <= 6, "{case}: no sort: {spent:?}");
        against_cpu::<f32>(&g, &list, &idx, *rows, 3, 70 + i as u64, case);
    }
    // a batch of sorted lists alone, then beside an unsorted one
    let lists: Vec<_> = cases.iter().map(|(_, _, make)| make(&g)).collect();
    let all: Vec<_> = lists
        .iter()
        .zip(&cases)
        .map(|(l, c)| Indices::held(l).with_rows(c.1))
        .collect();
    let before = g.activity();
    g.prepare_plans(&all).unwrap();
    let spent = g.activity().since(&before);
    assert!(spent.launches <= 6, "a batch of sorted lists: {spent:?}");
    let lists: Vec<_> = cases.iter().map(|(_, _, make)| make(&g)).collect();
    let unsorted = g.index_random(80, 0, 168_960, 16_384, true).unwrap();
    let mut all: Vec<_> = lists
        .iter()
        .zip(&cases)
        .map(|(l, c)| Indices::held(l).with_rows(c.1))
        .collect();
    all.push(Indices::held(&unsorted).with_rows(16_384));
    g.prepare_plans(&all).unwrap();
    for (i, (l, (case, rows, _))) in lists.iter().zip(&cases).enumerate() {
        let idx = g.index_download(l).unwrap().into_owned();
        let case = format!("batched: {case}");
        against_cpu::<f32>(&g, l, &idx, *rows, 2, 90 + i as u64, &case);
    }
    let idx = indices(80, 168_960, 16_384, true);
    against_cpu::<f32>(&g, &unsorted, &idx, 16_384, 2, 99, "batched: unsorted");
}

/// The windowed level 0 reads the window table the device build writes:
/// plans that end at, before and past a window's edge, one hub row of
/// several chunks, rows that straddle windows; f32 and bf16 into a
/// destination that is not zero, against the CPU backend.
#[test]
fn windowed_scatters_over_device_built_plans_bit_identical_to_cpu() {
    let g = backend();
    g.set_scatter_form(ScatterForm::Windowed);
    for (rows, e, f, hub) in [
        (1usize, 1usize, 4usize, false),
        (1, 256, 3, false),
        (1, 257, 1, false),
        (1, 1000, 8, false),
        (3, 511, 2, true),
        (3, 512, 2, true),
        (3, 513, 16, true),
        (100, 25_600, 64, true),
        (15_000, 42_955, 64, true),
        (5000, 70_001, 8, false),
    ] {
        fresh_case::<f32>(&g, rows, e, f, hub, 8);
        fresh_case::<bf16>(&g, rows, e, f, hub, 9);
    }
    g.set_scatter_form(ScatterForm::Auto);
}

#[test]
fn fresh_list_1m_16m_hub_f64_bit_identical_to_cpu() {
    fresh_case::<f64>(&backend(), 1_000_000, 16_000_000, 4, true, 7);
}

#[test]
fn all_indices_into_one_row_and_empty_lists() {
    let g = backend();
    let cpu = CpuBackend::reference();
    // one hub row of 300k entries among 50k rows (three levels)
    let idx = vec![49_999u32; 300_000];
    let list = g
        .index_concat(&[(&g.index_repeat(1, 300_000, 49_999).unwrap(), 0)])
        .unwrap();
    assert_eq!(&*g.index_download(&list).unwrap(), &idx[..]);
    let msg: Vec<f32> = values(9, 300_000 * 2);
    let mut d = g.zeros::<f32>(&[50_000, 2]).unwrap();
    g.index_add(
        &mut d,
        Indices::held(&list),
        &g.upload(&msg, &[300_000, 2]).unwrap(),
    )
    .unwrap();
    let mut c = cpu.zeros::<f32>(&[50_000, 2]).unwrap();
    cpu.index_add(&mut c, &idx, &cpu.upload(&msg, &[300_000, 2]).unwrap())
        .unwrap();
    same_bits(
        "one row",
        &g.download(&d).unwrap(),
        &cpu.download(&c).unwrap(),
    );
    // empty device lists
    let empty = g.index_random(1, 0, 0, 10, true).unwrap();
    let mut d = g.zeros::<f32>(&[10, 3]).unwrap();
    g.index_add(
        &mut d,
        Indices::held(&empty),
        &g.zeros::<f32>(&[0, 3]).unwrap(),
    )
    .unwrap();
    assert!(g.download(&d).unwrap().iter().all(|&x| x == 0.0));
    let s = g
        .segment_sum(
            &g.zeros::<f32>(&[0, 3]).unwrap(),
            Indices::held(&empty).with_rows(10),
        )
        .unwrap();
    assert_eq!(s.shape(), &[10, 3]);
    assert_eq!(g.index_max(&empty).unwrap(), None);
}

#[test]
fn out_of_range_indices_made_on_the_device_are_caught_there() {
    let g = backend();
    let (e, made_for, rows, f) = (200_000usize, 1000usize, 500usize, 3usize);
    let idx = indices(13, e, made_for, false);
    let first = idx.iter().position(|&i| i as usize >= rows).unwrap();
    let dst: Vec<f32> = values(14, rows * f);
    let msg = g.upload(&values::<f32>(15, e * f), &[e, f]).unwrap();
    // the scatter's first use of the list builds its plan: checked on the device
    let list = g.index_random(13, 0, e, made_for, false).unwrap();
    let mut d = g.upload(&dst, &[rows, f]).unwrap();
    let err = g.index_add(&mut d, Indices::held(&list), &msg).unwrap_err();
    assert!(
        matches!(err, BError::IndexOutOfRange { position, value, bound: 500 }
            if position == first && value == u64::from(idx[first])),
        "{err}"
    );
    same_bits("dst untouched", &g.download(&d).unwrap(), &dst);
    // a gather's first use: the largest index found on the device
    let list = g.index_random(13, 0, e, made_for, false).unwrap();
    let err = g
        .index_select(&g.upload(&dst, &[rows, f]).unwrap(), Indices::held(&list))
        .unwrap_err();
    assert!(
        matches!(err, BError::IndexOutOfRange { position, bound: 500, .. } if position == first),
        "{err}"
    );
    // a destination of far more rows than entries: the plan is built for max + 1 rows
    let list = g.index_random(16, 0, 5000, 1 << 26, true).unwrap();
    let host = indices(16, 5000, 1 << 26, true);
    let big = (1usize << 26) + 3;
    let m = g.upload(&values::<f32>(17, 5000), &[5000, 1]).unwrap();
    let s = g
        .segment_sum(&m, Indices::held(&list).with_rows(big))
        .unwrap();
    let cpu = CpuBackend::reference();
    let want = cpu
        .segment_sum(
            &cpu.upload(&values::<f32>(17, 5000), &[5000, 1]).unwrap(),
            Indices::held(&cpu.index_from_host(&host).unwrap()).with_rows(big),
        )
        .unwrap();
    same_bits(
        "max + 1 rows",
        &g.download(&s).unwrap(),
        &cpu.download(&want).unwrap(),
    );
}

#[test]
fn lists_dropped_while_their_ops_are_queued() {
    let g = backend();
    let cpu = CpuBackend::reference();
    let (rows, e, f) = (3000usize, 400_000usize, 4usize);
    let msg: Vec<f32> = values(20, e * f);
    let m = g.upload(&msg, &[e, f]).unwrap();
    let mut d = g.zeros::<f32>(&[rows, f]).unwrap();
    let mut c = cpu.zeros::<f32>(&[rows, f]).unwrap();
    let cm = cpu.upload(&msg, &[e, f]).unwrap();
    for step in 0..8u64 {
        // made, used and dropped without a synchronization
        let list = g.index_random(100 + step, 0, e, rows, true).unwrap();
        g.index_add(&mut d, Indices::held(&list), &m).unwrap();
        drop(list);
        cpu.index_add(&mut c, &indices(100 + step, e, rows, true), &cm)
            .unwrap();
    }
    same_bits(
        "eight fresh lists",
        &g.download(&d).unwrap(),
        &cpu.download(&c).unwrap(),
    );
}

#[test]
fn more_than_two_to_the_31_values_through_a_device_list() {
    // 2^27 indices into 1000 rows, 16 columns: 2^31 values summed, each row a
    // count of ones (exact in f32: every count is below 2^24)
    let g = backend();
    let (e, rows, f) = (1usize << 27, 1000usize, 16usize);
    let list = g.index_random(31, 0, e, rows, false).unwrap();
    let ones = g
        .unary(Unary::Exp, &g.zeros::<f32>(&[e, f]).unwrap())
        .unwrap();
    let s = g
        .segment_sum(&ones, Indices::held(&list).with_rows(rows))
        .unwrap();
    let got = g.download(&s).unwrap();
    let mut counts = vec![0u32; rows];
    for i in indices(31, e, rows, false) {
        counts[i as usize] += 1;
    }
    for r in 0..rows {
        for j in 0..f {
            assert_eq!(got[r * f + j], counts[r] as f32, "row {r} column {j}");
        }
    }
}

#[test]
fn same_bits_twice_and_a_dynamic_graph_loop() {
    let g = backend();
    let cpu = CpuBackend::reference();
    let (nodes, f) = (20_000usize, 8usize);
    let x: Vec<f32> = values(40, nodes * f);
    let (gx, cx) = (
        g.upload(&x, &[nodes, f]).unwrap(),
        cpu.upload(&x, &[nodes, f]).unwrap(),
    );
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut h = gx.clone();
        let mut hc = cx.clone();
        for step in 0..3u64 {
            // a message-passing layer on a fresh edge list made on the device
            let e = 100_000 + 7 * step as usize;
            let src = g.index_random(50 + step, 0, e, nodes, true).unwrap();
            let dst = g.index_random(60 + step, 0, e, nodes, false).unwrap();
            let msg = g.index_select(&h, Indices::held(&src)).unwrap();
            h = g
                .segment_sum(&msg, Indices::held(&dst).with_rows(nodes))
                .unwrap();
            let (hs, hd) = (
                indices(50 + step, e, nodes, true),
                indices(60 + step, e, nodes, false),
            );
            let cmsg = cpu.index_select(&hc, &hs).unwrap();
            hc = cpu
                .segment_sum(&cmsg, &rtx_backend::IndexPlan::new(&hd, nodes).unwrap())
                .unwrap();
        }
        let got = g.download(&h).unwrap();
        same_bits("three fresh layers", &got, &cpu.download(&hc).unwrap());
        runs.push(got);
    }
    same_bits("same bits twice", &runs[0], &runs[1]);
}

#[test]
fn a_long_host_list_that_differs_only_between_samples_is_not_taken_for_a_cached_one() {
    // the cache keys long lists by a sample and, for gathers, runs the kernel
    // before the exact comparison: a list equal at every sampled entry but
    // one unsampled entry must still gather its own rows
    let g = backend();
    let cpu = CpuBackend::reference();
    let (rows, f) = (1000usize, 4usize);
    let idx = indices(70, 1 << 20, rows, true);
    let mut other = idx.clone();
    other[257] = (other[257] + 1) % rows as u32; // not a sampled position
    let src: Vec<f32> = values(71, rows * f);
    let (gs, cs) = (
        g.upload(&src, &[rows, f]).unwrap(),
        cpu.upload(&src, &[rows, f]).unwrap(),
    );
    for (k, list) in [&idx, &other, &idx, &other].into_iter().enumerate() {
        let got = g.download(&g.index_select(&gs, list).unwrap()).unwrap();
        let want = cpu.download(&cpu.index_select(&cs, list).unwrap()).unwrap();
        same_bits(&format!("gather {k}"), &got, &want);
        let mut d = g.zeros::<f32>(&[rows, f]).unwrap();
        let m = g
            .upload(&values::<f32>(72, list.len() * f), &[list.len(), f])
            .unwrap();
        g.index_add(&mut d, list, &m).unwrap();
        let mut c = cpu.zeros::<f32>(&[rows, f]).unwrap();
        let cm = cpu
            .upload(&values::<f32>(72, list.len() * f), &[list.len(), f])
            .unwrap();
        cpu.index_add(&mut c, list, &cm).unwrap();
        same_bits(
            &format!("scatter {k}"),
            &g.download(&d).unwrap(),
            &cpu.download(&c).unwrap(),
        );
    }
}

#!/usr/bin/env python3
"""The peers of `rtx-bench dynamic` (crates/rtx-bench/src/dynamic.rs) on the
same lists: torch `index_select` + `index_add_` (atomic, and with
`torch.use_deterministic_algorithms(True)`) and PyG's `scatter(..., "sum")`,
timed with CUDA events (median of --reps after 3 warm runs). One JSON line
per row, {"suite": "dynamic", "case", "impl", "ms", "gbps"?}.

The lists are the anchors' generators (docs/workloads.md), imported from
torch_anchors.py (pass its folder with --anchors):
* minibatch-1024x15x10: sources = indices(1000 + 2k, 1M, 15360, hub) ++
  indices(1001 + 2k, 1M, 153600, hub), destinations = i // 15 for the first
  hop, 1024 + i // 10 for the second; 16,384 destination rows.
* 1M-{2M,16M}-f64-hub: destinations = indices(1 + k, 1M, E, hub), sources =
  indices(500 + k, 1M, E, uniform).
Usage: python3 torch_dynamic.py --anchors DIR [--reps N] [--only NAME]
"""
import argparse, json, sys

ap = argparse.ArgumentParser()
ap.add_argument("--anchors", required=True)
ap.add_argument("--reps", type=int, default=15)
ap.add_argument("--only", default=None)
args = ap.parse_args()
sys.path.insert(0, args.anchors)
import numpy as np
import torch
from torch_anchors import bench, emit, indices, values

dev = "cuda"
N = 1 << 20
F = 64
K = 2  # the draw whose lists are timed (rtx times fresh draws of the same shape)


def minibatch(k):
    s = np.concatenate([indices(1000 + 2 * k, N, 1024 * 15, "hub"), indices(1001 + 2 * k, N, 1024 * 150, "hub")])
    d = np.concatenate([np.arange(1024 * 15) // 15, 1024 + np.arange(1024 * 150) // 10])
    return s, d, 1024 + 1024 * 15


def large(e):
    def make(k):
        return indices(500 + k, N, e, "uniform"), indices(1 + k, N, e, "hub"), N
    return make


CASES = [("minibatch-1024x15x10", minibatch), ("1M-2M-f64-hub", large(2 << 20)), ("1M-16M-f64-hub", large(16 << 20))]

x = torch.from_numpy(values(2, N * F)).view(N, F).to(dev)
for name, make in CASES:
    if args.only and args.only not in name:
        continue
    s, d, rows = make(K)
    e = len(d)
    src = torch.from_numpy(s.astype(np.int64)).to(dev)
    dst = torch.from_numpy(d.astype(np.int64)).to(dev)
    msg = torch.from_numpy(values(3, e * F)).view(e, F).to(dev)
    out = torch.zeros(rows, F, device=dev)
    scatter_bytes = e * F * 4 + rows * F * 8 + e * 8
    layer_bytes = scatter_bytes + e * F * 4 * 2 + e * 8
    extra = {"edges": e, "rows": rows}
    emit("dynamic", name, "torch-scatter-atomic", bench(lambda: out.index_add_(0, dst, msg), args.reps), scatter_bytes, **extra)
    emit("dynamic", name, "torch-layer-atomic",
         bench(lambda: torch.zeros(rows, F, device=dev).index_add_(0, dst, torch.index_select(x, 0, src)), args.reps),
         layer_bytes, **extra)
    torch.use_deterministic_algorithms(True)
    emit("dynamic", name, "torch-scatter-deterministic", bench(lambda: out.index_add_(0, dst, msg), max(3, args.reps // 3)), scatter_bytes, **extra)
    emit("dynamic", name, "torch-layer-deterministic",
         bench(lambda: torch.zeros(rows, F, device=dev).index_add_(0, dst, torch.index_select(x, 0, src)), max(3, args.reps // 3)),
         layer_bytes, **extra)
    torch.use_deterministic_algorithms(False)
    try:
        from torch_geometric.utils import scatter
        emit("dynamic", name, "pyg-layer-scatter-sum",
             bench(lambda: scatter(x[src], dst, 0, dim_size=rows, reduce="sum"), args.reps), layer_bytes, **extra)
    except ImportError:
        pass
    del src, dst, msg, out

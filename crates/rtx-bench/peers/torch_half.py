#!/usr/bin/env python3
"""torch in bf16 beside `rtx-bench half` (crates/rtx-bench/src/half.rs, the
same case names): `index_select`, `index_add_` with atomics (and whether two
runs give the same bits) and under `torch.use_deterministic_algorithms(True)`
over the anchors' index workloads, and `permute(...).contiguous()` on the
permute cases, with a 1 GiB copy row. Timed with CUDA events (median of
--reps after 3 warm runs). One JSON line per row:
{"suite": "half", "case", "impl", "ms", "gbps"}. The index lists come from
shared/anchors/torch_anchors.py (its directory is --anchors), the values
from torch.rand.

Usage: python3 torch_half.py [--anchors DIR] [--reps N] [--only NAME,NAME...]
"""
import argparse, json, os, sys
import torch

PERMUTE_CASES = [  # keep in step with crates/rtx-bench/src/half.rs
    ("8192x8192", [8192, 8192], [1, 0]),
    ("4211136x32", [4211136, 32], [1, 0]),
    ("32x4211136", [32, 4211136], [1, 0]),
    ("b64x1024x1024-021", [64, 1024, 1024], [0, 2, 1]),
    ("b1000000x8x8-021", [1000000, 8, 8], [0, 2, 1]),
    ("b2000000x4x16-021", [2000000, 4, 16], [0, 2, 1]),
    ("64x128x256x32-0321", [64, 128, 256, 32], [0, 3, 2, 1]),
    ("64x128x256x32-2103", [64, 128, 256, 32], [2, 1, 0, 3]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--anchors", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", ".gpu", "anchors"))
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", default=None)
    a = ap.parse_args()
    sys.path.insert(0, a.anchors)
    import torch_anchors as ta

    def emit(case, impl, ms, nbytes=None, **extra):
        ta.emit("half", case, impl, ms, nbytes, **extra)

    want = lambda name: a.only is None or any(o in name for o in a.only.split(","))
    print(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__}), flush=True)
    dev = "cuda"
    x = torch.empty(1 << 28, device=dev).uniform_()
    y = torch.empty_like(x)
    emit("copy-1GiB", "torch-copy", ta.bench(lambda: y.copy_(x), reps=a.reps), 2 * x.numel() * 4)
    del x, y
    for name, n, e, f, dist in ta.INDEX_CASES:
        if not want(name):
            continue
        idx = torch.from_numpy(ta.indices(1, n, e, dist)).to(dev)
        # values drawn on the device (the times do not depend on them; numpy
        # would take tens of seconds for the 1G values of the large cases)
        src = (torch.rand(n, f, device=dev) * 2 - 1).to(torch.bfloat16)
        msg = (torch.rand(e, f, device=dev) * 2 - 1).to(torch.bfloat16)
        gather_bytes = e * f * 2 * 2 + e * 8
        scatter_bytes = e * f * 2 + n * f * 2 * 2 + e * 8
        emit(name, "torch-index_select-bf16", ta.bench(lambda: torch.index_select(src, 0, idx), reps=a.reps), gather_bytes)
        out = torch.zeros(n, f, device=dev, dtype=torch.bfloat16)
        emit(name, "torch-index_add-bf16-atomic", ta.bench(lambda: out.index_add_(0, idx, msg), reps=a.reps), scatter_bytes)
        z = lambda: torch.zeros(n, f, device=dev, dtype=torch.bfloat16).index_add_(0, idx, msg)
        first = z()
        same = all(torch.equal(first, z()) for _ in range(3))
        emit(name, "torch-index_add-bf16-atomic-repeatable", 0.0, None, bit_identical_runs=bool(same))
        torch.use_deterministic_algorithms(True)
        emit(name, "torch-index_add-bf16-deterministic", ta.bench(lambda: out.index_add_(0, idx, msg), reps=5), scatter_bytes)
        torch.use_deterministic_algorithms(False)
        outf = torch.zeros(n, f, device=dev)
        msgf = msg.float()
        emit(name, "torch-index_add-f32-atomic", ta.bench(lambda: outf.index_add_(0, idx, msgf), reps=a.reps), scatter_bytes * 2)
        del idx, src, msg, out, first, outf, msgf
        torch.cuda.empty_cache()
    for name, shape, perm in PERMUTE_CASES:
        if not want(name):
            continue
        x = torch.rand(shape, device=dev).to(torch.bfloat16)
        ms = ta.bench(lambda: x.permute(*perm).contiguous(), reps=a.reps)
        emit(name, "torch-permute-contiguous-bf16", ms, 2 * x.numel() * 2)
        del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

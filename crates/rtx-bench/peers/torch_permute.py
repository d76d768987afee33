#!/usr/bin/env python3
"""torch's `x.permute(...).contiguous()` on the cases of `rtx-bench transpose
--set permute` (crates/rtx-bench/src/permute.rs: CASES, the same names), timed
with CUDA events (median of --reps after 3 warm runs), one JSON line per case:
{"suite": "permute", "case", "impl": "torch-permute-contiguous", "ms", "gbps"},
and a copy row (`copy-256MiB`, `x.clone()`). Pair with
shared/anchors/compare.py.

Usage: python3 torch_permute.py [--reps N]
"""
import argparse, json
import torch

CASES = [  # keep in step with crates/rtx-bench/src/permute.rs
    ("b2000000x4x16-021", [2000000, 4, 16], [0, 2, 1], "f32"),
    ("b500000x16x4-021", [500000, 16, 4], [0, 2, 1], "f32"),
    ("b70000x3x5-021", [70000, 3, 5], [0, 2, 1], "f32"),
    ("b8x4194304x2-021", [8, 4194304, 2], [0, 2, 1], "f32"),
    ("b7x2097187x2-021", [7, 2097187, 2], [0, 2, 1], "f32"),
    ("b1000000x8x8-021", [1000000, 8, 8], [0, 2, 1], "f32"),
    ("b4000000x3x5-021", [4000000, 3, 5], [0, 2, 1], "f32"),
    ("b1000000x4x8-021-f64", [1000000, 4, 8], [0, 2, 1], "f64"),
    ("16777216x3", [16777216, 3], [1, 0], "f32"),
    ("3x16777216", [3, 16777216], [1, 0], "f32"),
    ("b4x2x8388608-021", [4, 2, 8388608], [0, 2, 1], "f32"),
    ("4211136x32", [4211136, 32], [1, 0], "f32"),
    ("32x4211136", [32, 4211136], [1, 0], "f32"),
    ("2097152x8-f64", [2097152, 8], [1, 0], "f64"),
    ("8192x8192", [8192, 8192], [1, 0], "f32"),
    ("4096x4096-f64", [4096, 4096], [1, 0], "f64"),
    ("65536x1024", [65536, 1024], [1, 0], "f32"),
    ("1024x65536", [1024, 65536], [1, 0], "f32"),
    ("b64x1024x1024-021", [64, 1024, 1024], [0, 2, 1], "f32"),
    ("b256x384x256-021", [256, 384, 256], [0, 2, 1], "f32"),
    ("b2048x2048x2-021", [2048, 2048, 2], [0, 2, 1], "f32"),
    ("64x128x256x32-0321", [64, 128, 256, 32], [0, 3, 2, 1], "f32"),
    ("32x256x128x64-3021", [32, 256, 128, 64], [3, 0, 2, 1], "f32"),
    ("16x32x64x128-3210-f64", [16, 32, 64, 128], [3, 2, 1, 0], "f64"),
    ("8x16x32x64x32-40312", [8, 16, 32, 64, 32], [4, 0, 3, 1, 2], "f32"),
    ("64x128x256x32-2103", [64, 128, 256, 32], [2, 1, 0, 3], "f32"),
]


def bench(f, reps):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def emit(case, impl, ms, nbytes):
    print(json.dumps({"suite": "permute", "case": case, "impl": impl, "ms": round(ms, 4),
                      "gbps": round(nbytes / ms / 1e6, 1)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    print(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__}), flush=True)
    n = 1 << 26
    x = torch.zeros(n, dtype=torch.float32, device="cuda")
    emit("copy-256MiB", "torch-copy", bench(lambda: x.clone(), a.reps), 2 * n * 4)
    del x
    m = 1 << 23
    x = torch.zeros(m, dtype=torch.float32, device="cuda")
    emit("copy-32MiB", "torch-copy", bench(lambda: x.clone(), a.reps), 2 * m * 4)
    del x
    for name, shape, perm, ty in CASES:
        dt = torch.float32 if ty == "f32" else torch.float64
        x = torch.rand(shape, dtype=torch.float32, device="cuda").to(dt)
        emit(name, "torch-permute-contiguous",
             bench(lambda: x.permute(*perm).contiguous(), a.reps), 2 * x.numel() * x.element_size())
        del x
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()

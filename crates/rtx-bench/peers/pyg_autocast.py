#!/usr/bin/env python3
"""The mixed-precision peer of `rtx-bench hetgat --precision bf16`: PyG's
HeteroConv of GATConv (the anchors' HetGAT, torch_anchors.py's gat suite:
2 layers x 3 relations, 4 heads x 16 channels, a linear head, MSE, SGD) on
the Harris batch, trained in f32 and under
`torch.autocast("cuda", dtype=torch.bfloat16)` (f32 master weights, bf16
activations where autocast picks them), alternating in one process so both
rows come from the same call. CUDA-event medians of --reps steps after 3
warm-up steps. One JSON line per row:
{"suite": "gat-mixed", "case": "harris-batch{B}", "impl": "pyg-heteroconv-gat-{f32,autocast-bf16}-train-step", "ms"}.
Usage: python3 pyg_autocast.py --anchors DIR [--batches 1,8,16] [--reps 20] [--rounds 3]
"""
import argparse, sys

ap = argparse.ArgumentParser()
ap.add_argument("--anchors", required=True)
ap.add_argument("--batches", default="1,8,16")
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--rounds", type=int, default=3)
args = ap.parse_args()
sys.path.insert(0, args.anchors)
import torch
from torch_anchors import bench, emit, indices, values
from torch_geometric.nn import GATConv, HeteroConv, Linear

dev = "cuda"
na, nb = 10_000, 5_000
rels = [("a", "aa", "a", 20_000, na, na, 10), ("a", "ab", "b", 11_478, na, nb, 20),
        ("b", "ba", "a", 11_477, nb, na, 30)]


def graph(batch):
    ei = {}
    for s, r, d, e, ns, nd, seed in rels:
        src = torch.from_numpy(indices(seed, ns, e, "uniform"))
        dst = torch.from_numpy(indices(seed + 1, nd, e, "hub"))
        off_s = torch.arange(batch).repeat_interleave(e) * ns
        off_d = torch.arange(batch).repeat_interleave(e) * nd
        ei[(s, r, d)] = torch.stack([src.repeat(batch) + off_s, dst.repeat(batch) + off_d]).to(dev)
    x = {"a": torch.from_numpy(values(40, batch * na * 32)).view(batch * na, 32).to(dev),
         "b": torch.from_numpy(values(41, batch * nb * 32)).view(batch * nb, 32).to(dev)}
    return x, ei


class HetGat(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = torch.nn.ModuleList([
            HeteroConv({(s, r, d): GATConv((-1, -1), 16, heads=4, add_self_loops=False)
                        for s, r, d, *_ in rels}, aggr="sum")
            for _ in range(2)])
        self.head = Linear(64, 1)

    def forward(self, x, ei):
        for conv in self.convs:
            x = {k: torch.relu(v) for k, v in conv(x, ei).items()}
        return self.head(x["a"])


model = HetGat().to(dev)
x1, e1 = graph(1)
model(x1, e1)  # materialize the lazy shapes
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for batch in [int(b) for b in args.batches.split(",")]:
    x, ei = graph(batch)
    target = torch.zeros(batch * na, 1, device=dev)

    def step_f32():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x, ei), target)
        loss.backward()
        opt.step()

    def step_bf16():
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = model(x, ei)
        loss = torch.nn.functional.mse_loss(y.float(), target)
        loss.backward()
        opt.step()

    for _ in range(args.rounds):
        for name, fn in (("f32", step_f32), ("autocast-bf16", step_bf16)):
            emit("gat-mixed", f"harris-batch{batch}", f"pyg-heteroconv-gat-{name}-train-step",
                 bench(fn, reps=args.reps))

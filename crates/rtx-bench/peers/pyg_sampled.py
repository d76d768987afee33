#!/usr/bin/env python3
"""The peers of `rtx-bench sampled` and of `rtx-bench dynamic --only hetgat-sampled`:
PyG's HeteroConv of GATConv((-1, -1), 16, heads=4, add_self_loops=False), two
layers, ReLU, Linear(64, 1) on the target type, MSE against zeros, SGD.

* `mag` (suite "sampled"): the ogbn-mag-shaped graph of crates/rtx-gnn/src/mag.rs,
  built identically (docs/workloads.md generators: edge k of a relation seeded s
  runs index(s, k, n_src, hub) -> index(s + 1, k, n_dst, hub); features
  value(200 + t, i), 128 per node), reverse relations as rtx adds them.
  PyG's NeighborLoader needs pyg-lib or torch-sparse, which the GPU host
  lacks, so the sampler is written here in torch on the GPU: per relation a
  CSR by destination (stable sort), per hop and relation Floyd's uniform
  picks without replacement vectorized over the frontier (torch's RNG), the
  frontier the nodes first reached in the previous hop, a global-to-local
  map per type. Seeds: the same epoch permutation as rtx (epoch_seeds).
  The last layer keeps only the relations into papers (what rtx computes).
* `dynamic` (suite "dynamic", case hetgat-sampled): 200,000 + 100,000 nodes,
  relations aa/ab/ba of 30,000/20,000/25,000 edges drawn fresh every step
  (harris_like's generator, seed 5000 + 97 * step), copied to the device in
  the step; 32 features.
Usage: python3 pyg_sampled.py --anchors DIR [--case mag|dynamic|all]
       [--steps N] [--batch B] [--fanouts 15,10] [--div D] [--infer-batches N]

`TorchNeighborSampler` (the sampler above, on any heterogeneous graph) is
imported by pyg_learn.py; importing this module runs nothing.
"""
import argparse, math, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--anchors", required=True)
ap.add_argument("--case", default="all", choices=["mag", "dynamic", "all"])
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--batch", type=int, default=1024)
ap.add_argument("--fanouts", default="15,10")
ap.add_argument("--div", type=int, default=1)
ap.add_argument("--infer-batches", type=int, default=0)
import numpy as np
import torch
from torch_geometric.nn import GATConv, HeteroConv, Linear

dev = "cuda"
MAG_NODES = [("paper", 736_389), ("author", 1_134_649), ("institution", 8_740), ("field_of_study", 59_965)]
MAG_RELS = [("writes", 1, 0, 7_145_660, 100), ("cites", 0, 0, 5_416_271, 110),
            ("has_topic", 0, 3, 7_505_078, 120), ("affiliated_with", 1, 2, 1_043_998, 130)]
MAG_REV = [("rev_writes", 0), ("rev_has_topic", 2), ("rev_affiliated_with", 3)]


def sync():
    torch.cuda.synchronize()


def model_for(types, rels, target, in_features):
    """HetGAT: 2 HeteroConv layers; the last keeps the relations into `target`."""
    class HetGat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layers = []
            for last in (False, True):
                keep = [k for k in rels if not last or k[2] == target]
                layers.append(HeteroConv({k: GATConv((-1, -1), 16, heads=4, add_self_loops=False) for k in keep}, aggr="sum"))
            self.convs = torch.nn.ModuleList(layers)
            self.head = Linear(64, 1)

        def forward(self, x, ei):
            for conv in self.convs:
                x = {k: torch.relu(v) for k, v in conv(x, ei).items()}
            return self.head(x[target])
    return HetGat().to(dev)


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


class TorchNeighborSampler:
    """PyG NeighborLoader's sampling in torch on the device (no pyg-lib or
    torch-sparse): per relation a CSR by destination (stable sort); per hop
    and relation into a frontier type, up to `k` distinct incoming neighbours
    of every frontier node, uniformly without replacement (Floyd's picks,
    vectorized over the frontier, from torch's global RNG); the frontier of
    hop 0 the seeds, of hop h the nodes first reached in hop h - 1 (as rtx's
    sampler defines it: crates/rtx-backend/src/sample.rs).

    counts: nodes per type; rels: [(src type, dst type, src, dst)] (int64 on
    `device`); fanouts: one k per hop."""

    def __init__(self, counts, rels, fanouts, device):
        self.counts, self.fanouts, self.dev = list(counts), list(fanouts), device
        self.types = [(s, d) for s, d, _, _ in rels]
        self.csr = []
        for s, d, src, dst in rels:
            perm = torch.sort(dst, stable=True).indices
            rowptr = torch.zeros(self.counts[d] + 1, dtype=torch.int64, device=device)
            rowptr[1:] = torch.cumsum(torch.bincount(dst, minlength=self.counts[d]), 0)
            self.csr.append((rowptr, src[perm]))
        self.maps = [torch.full((n,), -1, dtype=torch.int64, device=device) for n in self.counts]

    def _relabel(self, t, cand, nodes):
        maps = self.maps
        uniq = torch.unique(cand)
        new = uniq[maps[t][uniq] < 0]
        start = sum(len(c) for c in nodes[t])
        maps[t][new] = torch.arange(start, start + len(new), device=self.dev)
        if len(new):
            nodes[t].append(new)
        return maps[t][cand]

    def sample(self, seeds, target):
        """(per type the global ids of its sampled nodes, local id = position;
        per relation its sampled edge_index [2, E] in local ids, or None when
        nothing was sampled; the seeds' local ids, in the order given)."""
        dev = self.dev
        nodes = [[] for _ in self.counts]
        seed_local = self._relabel(target, seeds, nodes)
        frontier = {target: (torch.cat(nodes[target]), 0)}
        edges = [([], []) for _ in self.csr]
        for k in self.fanouts:
            sizes = [sum(len(c) for c in n) for n in nodes]
            for r, ((s, d), (rowptr, nbr)) in enumerate(zip(self.types, self.csr)):
                if d not in frontier:
                    continue
                f, lo = frontier[d]
                start = rowptr[f]
                deg = rowptr[f + 1] - start
                take = torch.clamp(deg, max=k)
                # Floyd over the slots, vectorized over the frontier
                picks = torch.empty((len(f), k), dtype=torch.int64, device=dev)
                for s_ in range(k):
                    j = deg - k + s_
                    t = torch.floor(torch.rand(len(f), device=dev, dtype=torch.float64) * (j + 1).clamp(min=1)).to(torch.int64)
                    seen = (picks[:, :s_] == t[:, None]).any(1) if s_ else torch.zeros_like(t, dtype=torch.bool)
                    picks[:, s_] = torch.where(seen, j, t)
                small = deg <= k
                picks = torch.where(small[:, None], torch.arange(k, device=dev)[None, :], picks)
                valid = torch.arange(k, device=dev)[None, :] < take[:, None]
                pos = (start[:, None] + picks)[valid]
                dst_local = (lo + torch.arange(len(f), device=dev))[:, None].expand(-1, k)[valid]
                src_local = self._relabel(s, nbr[pos], nodes)
                edges[r][0].append(src_local)
                edges[r][1].append(dst_local)
            frontier = {}
            for t in range(len(self.counts)):
                if len(nodes[t]) and sum(len(c) for c in nodes[t]) > sizes[t]:
                    allt = torch.cat(nodes[t])
                    frontier[t] = (allt[sizes[t]:], sizes[t])
        node_ids = [torch.cat(n) if n else torch.zeros(0, dtype=torch.int64, device=dev) for n in nodes]
        for t, ids in enumerate(node_ids):
            self.maps[t][ids] = -1
        ei = [torch.stack([torch.cat(a), torch.cat(b)]) if a else None for a, b in edges]
        return node_ids, ei, seed_local


def mag():
    div = max(args.div, 1)
    names = [n for n, _ in MAG_NODES]
    counts = [max(n // div, 1) for _, n in MAG_NODES]
    rels = []  # (name, s, d, src, dst) on the device
    for name, s, d, e, seed in MAG_RELS:
        e = max(e // div, 1)
        src = torch.from_numpy(indices(seed, counts[s], e, "hub")).to(dev)
        dst = torch.from_numpy(indices(seed + 1, counts[d], e, "hub")).to(dev)
        rels.append((name, s, d, src, dst))
    for name, r in MAG_REV:
        _, s, d, src, dst = rels[r]
        rels.append((name, d, s, dst, src))
    x_all = [torch.from_numpy(values(200 + t, n * 128)).view(n, 128).to(dev) for t, n in enumerate(counts)]
    keys = [(names[s], name, names[d]) for name, s, d, _, _ in rels]
    fanouts = [int(f) for f in args.fanouts.split(",")]
    sampler = TorchNeighborSampler(counts, [(s, d, src, dst) for _, s, d, src, dst in rels], fanouts, dev)
    n_papers = counts[0]
    m = 1_000_003
    while math.gcd(m, n_papers) != 1:
        m += 1
    steps_per_epoch = -(-n_papers // args.batch)

    def seeds_of(step):
        s = step % steps_per_epoch
        i = torch.arange(s * args.batch, min(s * args.batch + args.batch, n_papers), dtype=torch.int64)
        return ((i * m + 12345) % n_papers).to(dev)

    def sample(step):
        node_ids, edges, _ = sampler.sample(seeds_of(step), 0)
        x = {names[t]: x_all[t][ids] for t, ids in enumerate(node_ids)}
        ei = {key: e for key, e in zip(keys, edges) if e is not None}
        n_edges = sum(v.shape[1] for v in ei.values())
        return x, ei, n_edges

    model = model_for(names, keys, "paper", 128)
    x, ei, _ = sample(0)
    model(x, ei)
    # relations no sample reaches (affiliated_with: institutions are only
    # reached in the last hop) keep lazy parameters: leave them out
    live = [p for p in model.parameters() if not isinstance(p, torch.nn.parameter.UninitializedParameter)]
    opt = torch.optim.SGD(live, lr=1e-3)
    ts, tt, tot, ne = [], [], [], []
    case = ("mag" if div == 1 else f"mag-div{div}") + f"-b{args.batch}-f" + "x".join(str(f) for f in fanouts)
    for step in range(args.steps + 3):
        sync()
        t0 = time.perf_counter()
        x, ei, n_edges = sample(step)
        sync()
        t1 = time.perf_counter()
        opt.zero_grad()
        out = model(x, ei)
        loss = torch.nn.functional.mse_loss(out, torch.zeros_like(out))
        loss.backward()
        opt.step()
        loss.item()
        t2 = time.perf_counter()
        if step >= 3:
            ts.append((t1 - t0) * 1e3)
            tt.append((t2 - t1) * 1e3)
            tot.append((t2 - t0) * 1e3)
            ne.append(n_edges)
    e = median(ne)
    emit("sampled", case, "pyg-torch-sampler-sample", median(ts), None, edges=e, batch=args.batch)
    emit("sampled", case, "pyg-heteroconv-gat-train", median(tt), None, edges=e, batch=args.batch)
    step_ms = median(tot)
    emit("sampled", case, "pyg-step", step_ms, None, edges=e, sampled_edges_per_s=round(e / step_ms * 1e3))
    n_inf = steps_per_epoch if args.infer_batches == 0 else min(args.infer_batches, steps_per_epoch)
    sync()
    t0 = time.perf_counter()
    with torch.no_grad():
        for s in range(n_inf):
            x, ei, _ = sample(s)
            model(x, ei)
    sync()
    ms = (time.perf_counter() - t0) * 1e3
    emit("sampled", case, "pyg-infer-all-papers", ms, None, batches=n_inf, ms_per_batch=ms / n_inf)


def dynamic():
    na, nb = 200_000, 100_000
    n = [na, nb]
    rel_defs = [("a", "aa", "a", 0, 0), ("a", "ab", "b", 0, 1), ("b", "ba", "a", 1, 0)]
    edges = [30_000, 20_000, 25_000]
    keys = [(s, r, d) for s, r, d, _, _ in rel_defs]

    def host_sample(step):
        seed = 5000 + 97 * step
        out = {}
        for i, ((s, r, d, si, di), e) in enumerate(zip(rel_defs, edges)):
            s_seed = seed + 10 * i
            out[(s, r, d)] = np.stack([indices(s_seed, n[si], e, "uniform"), indices(s_seed + 1, n[di], e, "hub")])
        return out

    x = {"a": torch.from_numpy(values(40, na * 32)).view(na, 32).to(dev),
         "b": torch.from_numpy(values(41, nb * 32)).view(nb, 32).to(dev)}
    model = model_for(["a", "b"], keys, "a", 32)
    reps = args.steps
    samples = [host_sample(s + 1) for s in range(reps + 2)]
    ei = {k: torch.from_numpy(v).to(dev) for k, v in samples[0].items()}
    model(x, ei)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    t = []
    for step in range(reps + 2):
        sync()
        t0 = time.perf_counter()
        ei = {k: torch.from_numpy(v).to(dev, non_blocking=False) for k, v in samples[step].items()}
        opt.zero_grad()
        out = model(x, ei)
        loss = torch.nn.functional.mse_loss(out, torch.zeros_like(out))
        loss.backward()
        opt.step()
        loss.item()
        t1 = time.perf_counter()
        if step >= 2:
            t.append((t1 - t0) * 1e3)
    emit("dynamic", "hetgat-sampled", "pyg-heteroconv-gat-train-step", median(t), None, edges=sum(edges), nodes=na + nb)


if __name__ == "__main__":
    import json
    args = ap.parse_args()
    sys.path.insert(0, args.anchors)
    from torch_anchors import emit, indices, values
    print(json.dumps({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "suite": "sampled"}), flush=True)
    if args.case in ("dynamic", "all"):
        dynamic()
    if args.case in ("mag", "all"):
        mag()

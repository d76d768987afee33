#!/usr/bin/env python3
"""The PyG peer of `rtx-train` in the learning comparison: trains the same HetGAT on the same
dataset file with the same AdamW, hyper-parameters, fanouts, batch size and
epochs, evaluates the validation and test splits after every epoch the way
rtx-train does, and prints one JSON object per epoch as
`rtx-train --format json` does, so that `learn_compare.py` computes time to
accuracy for both from their lines.

* Model: `rtx_model.HetGAT` (the PyG model of rtx checkpoints: per layer a
  HeteroConv of GATConv((-1, -1), C, heads=H, add_self_loops=False) over every
  relation, sum, ReLU; Linear(H*C, classes or outputs) on the target), initialised by
  PyG from `torch.manual_seed(seed)` (rtx draws the same distributions from
  its own seed, not the same bits).
* Optimizer: torch.optim.AdamW(lr, weight_decay) over every parameter (those
  without a gradient are skipped, as rtx skips them), constant rate,
  optional clipping by global norm (`--clip`).
* Task: from the target's `.y` as rtx-train decides it (`--task` overrides):
  class labels -> classification, softmax cross-entropy; float targets
  `[n, d]` -> regression, MSE (`--loss l1`: L1) over every output, mean over
  the training nodes (full graph) or the mini-batch's seeds.
* Scores per split, as rtx-train's `--format json` names them: `loss` and
  `accuracy` (classification); `loss`, `mse`, `mae` and `r2` (regression;
  R2 as scikit-learn's r2_score(multioutput="uniform_average"), as
  rtx_gnn::metrics computes it: `rtx_model.r2_score`), in float64.
* Full graph (no `--batch`): one step per epoch on the whole graph on the
  device; evaluation one forward.
* Sampled (`--batch B --fanouts K,K`): per epoch the training nodes shuffled
  (torch.randperm) in batches of B; neighbour sampling with
  `pyg_sampled.TorchNeighborSampler` on the GPU (PyG's NeighborLoader needs
  pyg-lib or torch-sparse, which the GPU host lacks): up to K incoming
  neighbours per node and relation per hop, uniformly without replacement,
  as rtx's sampler; evaluation in sampled mini-batches of `--eval-batch`
  nodes of the split (in order) with the training fanouts, as rtx-train's.
* Timing: `elapsed` is wall seconds since the first epoch began (data on the
  device, model and optimizer built), sampling, the optimizer's steps and
  evaluation included, as rtx-train's `elapsed`; the training loss is summed
  on the device and read once per epoch.

Usage:
  pyg_learn.py --data mag16.safetensors [--target paper] [--epochs 10]
      [--batch 1024 --fanouts 15,10] [--eval-batch 4096] [--lr 0.01]
      [--weight-decay 0.01] [--heads 4] [--channels 16] [--layers 2]
      [--clip NORM] [--seed 0] [--device cuda] > pyg.jsonl
  pyg_learn.py --data harris4.safetensors --epochs 30 > pyg.jsonl
      (the Harris-shaped regression of `rtx-train --planted harris:4
      --export-data`: full graph, target `a`, MSE, R2)
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from safetensors import safe_open

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtx_model import HetGAT, load_data, r2_score  # noqa: E402
from pyg_sampled import TorchNeighborSampler  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--target", default=None, help="default: the one node type with targets (.y)")
    ap.add_argument("--task", choices=["classify", "regress"], default=None,
                    help="default: regress for float targets, else classify")
    ap.add_argument("--loss", choices=["mse", "l1"], default="mse", help="the regression loss")
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--batch", type=int, default=0, help="seeds per mini-batch (default: full graph)")
    ap.add_argument("--fanouts", default="15,10")
    ap.add_argument("--eval-batch", type=int, default=4096)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--channels", type=int, default=16)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--clip", type=float, default=0.0, help="clip the gradients' global norm (0: off)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    dev = args.device
    sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    torch.manual_seed(args.seed)

    node_types, edge_types, x, ei, tensors = load_data(args.data, dev)
    with safe_open(args.data, framework="pt") as f:
        meta = f.metadata() or {}
    with_y = [n for n in node_types if f"{n}.y" in tensors]
    if args.target is None and len(with_y) != 1:
        raise SystemExit(f"{args.data}: node types with targets {with_y}: choose one with --target")
    t = args.target or with_y[0]
    ti = node_types.index(t)
    y = tensors[f"{t}.y"]
    task = args.task or ("regress" if y.is_floating_point() else "classify")
    if task == "classify":
        y = y.to(dev).long().reshape(-1)
        out_features = json.loads(meta.get("num_classes", "{}")).get(t) or int(y.max()) + 1
        loss_fn = F.cross_entropy
    else:
        y = y.to(dev).float().reshape(y.shape[0], -1)
        out_features = y.shape[1]
        loss_fn = F.mse_loss if args.loss == "mse" else F.l1_loss
    split = {m: torch.nonzero(tensors[f"{t}.{m}_mask"].bool()).reshape(-1).to(dev)
             for m in ("train", "val", "test") if f"{t}.{m}_mask" in tensors}
    in_features = {k: v.shape[1] for k, v in x.items()}
    model = HetGAT(node_types, edge_types, t, args.heads, args.channels, args.layers, out_features,
                   in_features=in_features).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    fanouts = [int(k) for k in args.fanouts.split(",")]
    if args.batch and len(fanouts) != args.layers:
        raise SystemExit(f"--fanouts {args.fanouts}: want one per layer ({args.layers})")
    sampler = None
    if args.batch:
        counts = [int(json.loads(meta["num_nodes"])[n]) for n in node_types]
        rels = [(node_types.index(s), node_types.index(d), ei[(s, r, d)][0], ei[(s, r, d)][1])
                for s, r, d in edge_types]
        sampler = TorchNeighborSampler(counts, rels, fanouts, dev)

    def subgraph(seeds):
        """(x_dict, edge_index_dict with every relation, the seeds' rows)."""
        node_ids, edges, seed_local = sampler.sample(seeds, ti)
        xs = {n: x[n][node_ids[i]] for i, n in enumerate(node_types)}
        empty = torch.zeros((2, 0), dtype=torch.int64, device=dev)
        es = {et: (e if e is not None else empty) for et, e in zip(edge_types, edges)}
        return xs, es, seed_local

    def logits(nodes):
        """The model's outputs for target nodes `nodes` (eval mode)."""
        with torch.no_grad():
            if sampler is None:
                return model(x, ei)[nodes]
            outs = []
            for chunk in torch.split(nodes, args.eval_batch):
                xs, es, rows = subgraph(chunk)
                outs.append(model(xs, es)[rows])
            return torch.cat(outs)

    def scores(name):
        nodes = split.get(name)
        if nodes is None or len(nodes) == 0:
            return None
        out = logits(nodes)
        if task == "classify":
            return {"loss": F.cross_entropy(out, y[nodes]).item(),
                    "accuracy": (out.argmax(1) == y[nodes]).double().mean().item()}
        diff = out.double() - y[nodes].double()
        mse, mae = (diff ** 2).mean().item(), diff.abs().mean().item()
        return {"loss": mse if args.loss == "mse" else mae, "mse": mse, "mae": mae,
                "r2": r2_score(out, y[nodes])}

    def step(xs, es, rows, labels):
        opt.zero_grad()
        loss = loss_fn(model(xs, es)[rows], labels)
        loss.backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        return loss.detach()

    train = split["train"]
    global_step = 0
    sync()
    start = time.perf_counter()
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        model.train()
        total = torch.zeros((), device=dev)
        steps = 0
        if sampler is None:
            total += step(x, ei, train, y[train])
            steps = 1
        else:
            order = train[torch.randperm(len(train), device=dev)]
            for seeds in torch.split(order, args.batch):
                xs, es, rows = subgraph(seeds)
                total += step(xs, es, rows, y[seeds])
                steps += 1
        global_step += steps
        train_loss = total.item() / steps
        model.eval()
        val, test = scores("val"), scores("test")
        sync()
        now = time.perf_counter()
        print(json.dumps({"event": "epoch", "epoch": epoch, "global_step": global_step,
                          "train_loss": train_loss, "lr": args.lr, "val": val, "test": test,
                          "seconds": now - t0, "elapsed": now - start}), flush=True)
    print(json.dumps({"event": "done", "epochs": args.epochs, "global_step": global_step,
                      "seconds": time.perf_counter() - start, "framework": "pyg", "task": task,
                      "torch": torch.__version__,
                      "device": torch.cuda.get_device_name(0) if dev.startswith("cuda") else "cpu"}),
          flush=True)


if __name__ == "__main__":
    main()

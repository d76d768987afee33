#!/usr/bin/env python3
"""The PyG side of rtx checkpoints and predictions.

`HetGAT` is the PyG model whose state_dict an rtx checkpoint holds: per layer a
`HeteroConv({edge_type: GATConv((-1, -1), channels, heads=heads,
add_self_loops=False)}, aggr="sum")` over every relation, ReLU, and a
`torch.nn.Linear(heads * channels, out_features)` head on the target type.

Checkpoint (safetensors, f32, C-contiguous), keys as PyG 2.8 names them
(HeteroConv's ModuleDict stores the edge type (s, r, d) under "<s___r___d>",
with any '.' in a name written '#'):
  convs.{l}.convs.<{s}___{r}___{d}>.lin_src.weight  [heads*channels, in_s]
  convs.{l}.convs.<{s}___{r}___{d}>.lin_dst.weight  [heads*channels, in_d]
  convs.{l}.convs.<{s}___{r}___{d}>.att_src         [1, heads, channels]
  convs.{l}.convs.<{s}___{r}___{d}>.att_dst         [1, heads, channels]
  convs.{l}.convs.<{s}___{r}___{d}>.bias            [heads*channels]
  head.weight [out_features, heads*channels], head.bias [out_features]
(in_s, in_d: the input features in layer 0, heads*channels after), keys
starting with "optim." or "rtx." (rtx's optimizer state and best parameters, not loaded here), and metadata:
format "rtx-checkpoint/1", config / schema / task as JSON (see
`checkpoint_meta`), and entries only rtx reads.

Like rtx, a layer computes only the relations whose output reaches the head
(`HetGAT.live`; the others keep their parameters, as in PyG). Datasets are
rtx's safetensors format (`<type>.x`, `<type>.y`, `<type>.train_mask`/
`val_mask`/`test_mask`, `<s>__<r>__<d>.edge_index`; metadata node_types,
edge_types as JSON), read here directly.

Usage:
  rtx_model.py predict --checkpoint C --data D --out P.safetensors [--device cpu]
  rtx_model.py compare A.safetensors B.safetensors [--rtol 1e-5] [--atol 1.0]
  rtx_model.py train --data D --target T --task classify|regress [--epochs 100]
      [--lr 0.01] [--weight-decay 0.01] [--heads 4] [--channels 16] [--layers 2]
      [--loss mse|l1] [--classes C] [--seed 0] [--device cuda] --save C
"""
import argparse, json, sys

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch_geometric.nn import GATConv, HeteroConv
from torch_geometric.nn.dense.linear import is_uninitialized_parameter

FORMAT = "rtx-checkpoint/1"


def live_relations(node_types, edge_types, target, layers):
    """Per layer, the relations whose output reaches the head (rtx's liveness):
    from the last layer back, those into a needed type; a needed type with no
    incoming relation is an error (HeteroConv would drop it)."""
    needed, live = {target}, []
    for l in reversed(range(layers)):
        for t in needed:
            if not any(d == t for _, _, d in edge_types):
                raise ValueError(f"node type {t} is needed after layer {l} but no relation points to it")
        row = [et for et in edge_types if et[2] in needed]
        needed = {et[0] for et in row} | {et[2] for et in row}
        live.append(row)
    return live[::-1]


class HetGAT(torch.nn.Module):
    def __init__(self, node_types, edge_types, target, heads, channels, layers, out_features,
                 negative_slope=0.2, input_dropout=0.0, attention_dropout=0.0, in_features=None):
        """`in_features` ({type: features}), when given, initialises the lazy
        GATConv weights at once (glorot, as PyG's first forward would), so that
        relations no forward reaches have values too; leave it out to load a
        state_dict into the lazy model (PyG's Linear materialises on load)."""
        super().__init__()
        self.node_types = list(node_types)
        self.edge_types = [tuple(et) for et in edge_types]
        self.target, self.heads, self.channels, self.layers = target, heads, channels, layers
        self.out_features, self.negative_slope = out_features, negative_slope
        self.input_dropout, self.attention_dropout = input_dropout, attention_dropout
        if target not in self.node_types:
            raise ValueError(f"target {target} is not a node type")
        self.live = live_relations(self.node_types, self.edge_types, target, layers)
        self.convs = torch.nn.ModuleList([
            HeteroConv({et: GATConv((-1, -1), channels, heads=heads, add_self_loops=False,
                                    negative_slope=negative_slope, dropout=attention_dropout)
                        for et in self.edge_types}, aggr="sum")
            for _ in range(layers)])
        self.head = torch.nn.Linear(heads * channels, out_features)
        if in_features is not None:
            hidden = heads * channels
            for l, layer in enumerate(self.convs):
                for (s, r, d), conv in layer.convs.items():
                    for lin, t in ((conv.lin_src, s), (conv.lin_dst, d)):
                        if is_uninitialized_parameter(lin.weight):
                            width = in_features[t] if l == 0 else hidden
                            lin.initialize_parameters(lin, (torch.empty(0, width),))

    def forward(self, x_dict, edge_index_dict):
        x = x_dict
        for conv, live in zip(self.convs, self.live):
            x = {k: F.dropout(v, self.input_dropout, self.training) for k, v in x.items()}
            x = conv(x, {et: edge_index_dict[et] for et in live})
            x = {k: F.relu(v) for k, v in x.items()}
        return self.head(x[self.target])


def checkpoint_meta(model, in_features, task):
    """The metadata of a checkpoint of `model` (JSON values as Python objects)."""
    config = dict(heads=model.heads, channels=model.channels, layers=model.layers,
                  negative_slope=model.negative_slope, out_features=model.out_features,
                  target=model.target, input_dropout=model.input_dropout,
                  attention_dropout=model.attention_dropout,
                  in_features={t: int(in_features[t]) for t in model.node_types})
    schema = dict(node_types=model.node_types, edge_types=[list(et) for et in model.edge_types])
    return dict(format=FORMAT, config=config, schema=schema, task=task)


def save_checkpoint(model, path, meta):
    """Writes `model`'s state_dict (f32, contiguous, no optim. keys) and `meta`
    (strings as they are, other values as JSON) in rtx's checkpoint format."""
    tensors = {}
    for k, v in model.state_dict().items():
        if is_uninitialized_parameter(v):
            raise ValueError(f"{k} is not initialised (build the model with in_features)")
        tensors[k] = v.detach().to("cpu", torch.float32).contiguous()
    md = {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items()}
    md["format"] = FORMAT
    save_file(tensors, path, metadata=md)


def model_from_checkpoint(path, device="cpu"):
    """(HetGAT with the checkpoint's parameters, loaded strictly, in eval mode
    on `device`; the metadata with config / schema / task parsed)."""
    with safe_open(path, framework="pt") as f:
        meta = dict(f.metadata() or {})
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path}: format {meta.get('format')!r}, expected {FORMAT!r}")
    for k in ("config", "schema", "task"):
        if k not in meta:
            raise ValueError(f"{path}: no {k} in the metadata")
        meta[k] = json.loads(meta[k])
    c, s = meta["config"], meta["schema"]
    model = HetGAT(s["node_types"], s["edge_types"], c["target"], c["heads"], c["channels"],
                   c["layers"], c["out_features"], c["negative_slope"],
                   c.get("input_dropout", 0.0), c.get("attention_dropout", 0.0))
    state = {k: v for k, v in load_file(path).items() if not k.startswith(("optim.", "rtx."))}
    model.load_state_dict(state, strict=True)  # materialises the lazy GATConv weights
    return model.to(device).eval(), meta


def load_data(path, device="cpu"):
    """(node_types, edge_types, x_dict (f32), edge_index_dict (i64), all tensors)."""
    tensors = load_file(path)
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
    node_types = json.loads(meta["node_types"])
    edge_types = [tuple(et) for et in json.loads(meta["edge_types"])]
    x = {t: tensors[f"{t}.x"].to(device, torch.float32) for t in node_types}
    ei = {et: tensors[f"{'__'.join(et)}.edge_index"].to(device, torch.int64) for et in edge_types}
    return node_types, edge_types, x, ei, tensors


def check_fits(meta, x, ei):
    c = meta["config"]
    for et in meta["schema"]["edge_types"]:
        if tuple(et) not in ei:
            raise ValueError(f"the data has no relation {et}")
    for t, f in c["in_features"].items():
        if t not in x or x[t].shape[1] != f:
            got = tuple(x[t].shape) if t in x else "nothing"
            raise ValueError(f"{t}.x: the checkpoint expects {f} features, the data has {got}")


def predict(args):
    model, meta = model_from_checkpoint(args.checkpoint, args.device)
    _, _, x, ei, _ = load_data(args.data, args.device)
    check_fits(meta, x, ei)
    with torch.no_grad():
        out = model(x, ei).to("cpu", torch.float32).contiguous()
    t = meta["config"]["target"]
    res = {f"{t}.out": out}
    if meta["task"]["kind"] == "classify":
        res[f"{t}.pred"] = out.argmax(dim=1).to(torch.int64)  # the first maximum wins
    save_file(res, args.out)
    print(f"wrote {args.out}: " + ", ".join(f"{k} {list(v.shape)}" for k, v in res.items()))


def compare(args):
    """Per key: floats, max |a - b| / max(|a|, |b|, atol) (a relative difference,
    absolute below |atol|), over when > rtol; integers, exactly equal."""
    a, b = load_file(args.a), load_file(args.b)
    bad = sorted(set(a) ^ set(b))
    for k in bad:
        print(f"{k}: only in {args.a if k in a else args.b}")
    for k in sorted(set(a) & set(b)):
        x, y = a[k], b[k]
        if x.shape != y.shape or x.dtype != y.dtype:
            print(f"{k}: {x.dtype} {list(x.shape)} vs {y.dtype} {list(y.shape)}")
            bad.append(k)
        elif x.is_floating_point():
            x, y = x.double(), y.double()
            den = torch.maximum(torch.maximum(x.abs(), y.abs()), torch.tensor(args.atol, dtype=torch.float64))
            rel = ((x - y).abs() / den).max().item() if x.numel() else 0.0
            over = not rel <= args.rtol  # a NaN is over
            print(f"{k}: max rel diff {rel:.3e} (rtol {args.rtol:g}, atol floor {args.atol:g}){' OVER' if over else ''}")
            bad += [k] if over else []
        else:
            n = int((x != y).sum())
            print(f"{k}: {n} of {x.numel()} differ")
            bad += [k] if n else []
    sys.exit(1 if bad else 0)


def r2_score(pred, y):
    """scikit-learn's r2_score(multioutput="uniform_average"), constant columns
    1.0 if perfect else 0.0."""
    pred, y = pred.double(), y.double()
    ss_res = ((y - pred) ** 2).sum(0)
    ss_tot = ((y - y.mean(0)) ** 2).sum(0)
    score = torch.where(ss_res == 0, 1.0, torch.where(ss_tot == 0, 0.0, 1 - ss_res / ss_tot))
    return score.mean().item()


def train(args):
    dev = args.device
    node_types, edge_types, x, ei, tensors = load_data(args.data, dev)
    t = args.target
    y = tensors[f"{t}.y"].to(dev)
    mask = {m: tensors[f"{t}.{m}_mask"].to(dev).bool() for m in ("train", "val", "test")
            if f"{t}.{m}_mask" in tensors}
    if "train" not in mask or not mask["train"].any():
        raise ValueError(f"{t}.train_mask is missing or empty")
    if args.task == "classify":
        y = y.long()
        classes = args.classes or int(y.max()) + 1
        task, loss_fn, out_features = dict(kind="classify", classes=classes), F.cross_entropy, classes
    else:
        y = y.float().reshape(y.shape[0], -1)
        task = dict(kind="regress", dim=y.shape[1], loss=args.loss)
        loss_fn, out_features = (F.mse_loss if args.loss == "mse" else F.l1_loss), y.shape[1]
    torch.manual_seed(args.seed)
    in_features = {k: v.shape[1] for k, v in x.items()}
    model = HetGAT(node_types, edge_types, t, args.heads, args.channels, args.layers, out_features,
                   args.negative_slope, args.input_dropout, args.attention_dropout,
                   in_features=in_features).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    for epoch in range(1, args.epochs + 1):
        model.train()
        opt.zero_grad()
        loss = loss_fn(model(x, ei)[mask["train"]], y[mask["train"]])
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            out = model(x, ei)
        line = f"epoch {epoch} loss {loss.item():.6f}"
        if "val" in mask and mask["val"].any():
            o, v = out[mask["val"]], y[mask["val"]]
            if args.task == "classify":
                line += f" val_accuracy {(o.argmax(1) == v).double().mean().item():.4f}"
            else:
                line += f" val_r2 {r2_score(o, v):.4f}"
        print(line, flush=True)
    save_checkpoint(model, args.save, checkpoint_meta(model, in_features, task))
    print(f"saved {args.save}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p = sub.add_parser("compare")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=1.0, help="floor of the relative difference's denominator")
    p = sub.add_parser("train")
    p.add_argument("--data", required=True)
    p.add_argument("--target", required=True)
    p.add_argument("--task", required=True, choices=["classify", "regress"])
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--channels", type=int, default=16)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--negative-slope", type=float, default=0.2)
    p.add_argument("--input-dropout", type=float, default=0.0)
    p.add_argument("--attention-dropout", type=float, default=0.0)
    p.add_argument("--loss", default="mse", choices=["mse", "l1"], help="regression loss")
    p.add_argument("--classes", type=int, default=0, help="class count (default: the largest label + 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--save", required=True)
    args = ap.parse_args()
    {"predict": predict, "compare": compare, "train": train}[args.cmd](args)


if __name__ == "__main__":
    main()

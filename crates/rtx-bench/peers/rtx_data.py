#!/usr/bin/env python3
"""PyG HeteroData <-> rtx dataset files (format "rtx-hetero/1", read by
rtx_gnn::Dataset::load; docs/training.md "The dataset format").

    import rtx_data
    rtx_data.save(data, "mag.safetensors")    # HeteroData -> file
    data = rtx_data.load("mag.safetensors")   # file -> HeteroData

    python3 rtx_data.py --check FILE          # load and print a summary

Keys are PyG's: `<type>.x` (float32, bfloat16 or float16 [n, f]), `<type>.y`
(float32 [n, d] targets or int64 [n] class labels), `<type>.train_mask` /
`val_mask` / `test_mask` (bool [n]), `<src>__<rel>__<dst>.edge_index` (int64
[2, E]); the file's metadata holds the format, the node and edge type order,
every type's node count and, for class labels, the class count.
"""
import json
import os
import sys
import tempfile

FORMAT = "rtx-hetero/1"
MASKS = ("train_mask", "val_mask", "test_mask")


def _rows(v):
    return v.unsqueeze(-1) if v.dim() == 1 else v.flatten(1)


def save(data, path, node_types=None, edge_types=None, num_classes=None):
    """Writes `data` (a torch_geometric.data.HeteroData) to `path`.

    node_types / edge_types: the order (and subset) to write; default all of
    `data`'s, in its order. num_classes: {type: C} for class labels; default
    a type's `num_classes` attribute if set, else rtx takes max label + 1.
    Float targets are written as float32, integer labels as int64, masks as
    bool, edge indices as int64; features keep float32 / bfloat16 / float16
    (float64 features become float32). The file is written to a temporary
    file in the same directory and renamed, so `path` is never half-written.
    """
    import torch
    from safetensors.torch import save_file

    node_types = list(node_types if node_types is not None else data.node_types)
    edge_types = [tuple(e) for e in (edge_types if edge_types is not None else data.edge_types)]
    tensors, num_nodes, classes = {}, {}, dict(num_classes or {})
    for t in node_types:
        store = data[t]
        n = store.num_nodes
        if n is None:
            raise ValueError(f"node type {t!r}: unknown node count (set data[{t!r}].num_nodes)")
        num_nodes[t] = int(n)
        if "x" in store:
            x = store.x
            if x.dtype == torch.float64:
                x = x.float()
            if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
                raise ValueError(f"{t}.x: dtype {x.dtype}: want float32, bfloat16 or float16")
            tensors[f"{t}.x"] = _rows(x)
        if "y" in store:
            y = store.y
            if y.is_floating_point():
                tensors[f"{t}.y"] = _rows(y.float())
            elif y.dtype == torch.bool:
                raise ValueError(f"{t}.y: bool labels: want int class labels or float targets")
            else:
                tensors[f"{t}.y"] = y.long().reshape(-1)
                if t not in classes and isinstance(getattr(store, "num_classes", None), int):
                    classes[t] = store.num_classes
        for m in MASKS:
            if m in store:
                tensors[f"{t}.{m}"] = store[m].bool().reshape(-1)
    for s, r, d in edge_types:
        tensors[f"{s}__{r}__{d}.edge_index"] = data[s, r, d].edge_index.long()
    meta = {
        "format": FORMAT,
        "node_types": json.dumps(node_types),
        "edge_types": json.dumps([list(e) for e in edge_types]),
        "num_nodes": json.dumps(num_nodes),
    }
    if classes:
        meta["num_classes"] = json.dumps({t: int(c) for t, c in classes.items()})
    # safetensors refuses tensors that share memory (masks sliced from one
    # buffer, say): give each its own.
    tensors = {k: v.detach().cpu().contiguous().clone() for k, v in tensors.items()}
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".rtx-dataset-", suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata=meta)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's file is 0600
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load(path):
    """Reads an rtx dataset file into a HeteroData (node and edge types in
    the file's order; masks bool, edge_index and labels int64; a type's
    `num_classes` set where the file gives it)."""
    from safetensors import safe_open
    from torch_geometric.data import HeteroData

    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: format {meta.get('format')!r}, want {FORMAT!r}")
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    node_types = json.loads(meta["node_types"])
    edge_types = [tuple(e) for e in json.loads(meta["edge_types"])]
    num_nodes = json.loads(meta["num_nodes"])
    num_classes = json.loads(meta.get("num_classes", "{}"))
    data = HeteroData()
    for t in node_types:
        data[t].num_nodes = int(num_nodes[t])
        for a in ("x", "y") + MASKS:
            v = tensors.pop(f"{t}.{a}", None)
            if v is None:
                continue
            if a in MASKS:
                v = v.bool()
            elif a == "y" and not v.is_floating_point():
                v = v.long().reshape(-1)
            data[t][a] = v
        if t in num_classes:
            data[t].num_classes = int(num_classes[t])
    for s, r, d in edge_types:
        data[s, r, d].edge_index = tensors.pop(f"{s}__{r}__{d}.edge_index").long()
    if tensors:
        raise ValueError(f"{path}: keys not in the metadata: {sorted(tensors)}")
    return data


def summary(data):
    """One line per node and edge type."""
    lines = []
    for t in data.node_types:
        s = data[t]
        parts = [f"{s.num_nodes} nodes"]
        if "x" in s:
            parts.append(f"x {list(s.x.shape)} {str(s.x.dtype).replace('torch.', '')}")
        if "y" in s:
            y = s.y
            if y.is_floating_point():
                parts.append(f"y {list(y.shape)} float32 targets")
            else:
                c = getattr(s, "num_classes", None)
                c = c if isinstance(c, int) else (int(y.max()) + 1 if y.numel() else 0)
                parts.append(f"y {c} classes")
        for m in MASKS:
            if m in s:
                parts.append(f"{m.split('_')[0]} {int(s[m].sum())}")
        lines.append(f"node {t}: " + ", ".join(parts))
    for e in data.edge_types:
        lines.append(f"edge {'__'.join(e)}: {data[e].edge_index.shape[1]} edges")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--check":
        sys.exit("usage: python3 rtx_data.py --check FILE")
    print(summary(load(sys.argv[2])))

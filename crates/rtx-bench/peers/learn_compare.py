#!/usr/bin/env python3
"""Time to accuracy, rtx against PyG on the same task, from the JSON lines of
`rtx-train --format json` and `pyg_learn.py` (one object per epoch with
`elapsed`, wall seconds since the first epoch began, and `val` / `test`
scores). Needs only the standard library.

Per seed (the i-th --rtx file with the i-th --pyg file): the target is PyG's
final validation accuracy; for each framework the wall time (`elapsed`) and
epoch of the first epoch whose validation accuracy reaches it ("-" if never),
its final validation and test accuracy; the speed-up is PyG's time over
rtx's. Then the means over seeds.

Usage:
  learn_compare.py --rtx rtx_s0.jsonl rtx_s1.jsonl ... --pyg pyg_s0.jsonl pyg_s1.jsonl ...
      [--mlp mlp_s0.jsonl ...] [--json]
(--mlp: rtx-train --features-only runs, whose final test accuracy is
reported beside, for the "at least 10 points above the features-only
baseline" target.)
"""
import argparse
import json
import sys


def epochs(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            o = json.loads(line)
            if o.get("event") == "epoch" and o.get("val"):
                rows.append(o)
    if not rows:
        raise SystemExit(f"{path}: no epoch lines with validation scores")
    return rows


def reach(rows, target):
    """(elapsed, epoch) of the first epoch at or above `target`, or None."""
    for o in rows:
        if o["val"]["accuracy"] >= target:
            return o["elapsed"], o["epoch"]
    return None


def final(rows, split):
    s = rows[-1].get(split)
    return s["accuracy"] if s else float("nan")


def mean(v):
    v = [x for x in v if x is not None]
    return sum(v) / len(v) if v else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtx", nargs="+", required=True)
    ap.add_argument("--pyg", nargs="+", required=True)
    ap.add_argument("--mlp", nargs="*", default=[])
    ap.add_argument("--json", action="store_true", help="one JSON object per seed and the mean, not a table")
    args = ap.parse_args()
    if len(args.rtx) != len(args.pyg):
        raise SystemExit(f"{len(args.rtx)} rtx files against {len(args.pyg)} PyG files: want pairs")
    res = []
    for i, (rp, pp) in enumerate(zip(args.rtx, args.pyg)):
        r, p = epochs(rp), epochs(pp)
        target = p[-1]["val"]["accuracy"]
        rr, pr = reach(r, target), reach(p, target)
        row = dict(seed=i, target=target,
                   rtx_time=rr[0] if rr else None, rtx_epoch=rr[1] if rr else None,
                   pyg_time=pr[0] if pr else None, pyg_epoch=pr[1] if pr else None,
                   rtx_val=final(r, "val"), rtx_test=final(r, "test"),
                   pyg_val=final(p, "val"), pyg_test=final(p, "test"),
                   rtx_total=r[-1]["elapsed"], pyg_total=p[-1]["elapsed"])
        row["speedup"] = (row["pyg_time"] / row["rtx_time"]
                          if rr and pr and row["rtx_time"] > 0 else None)
        if i < len(args.mlp):
            row["mlp_test"] = final(epochs(args.mlp[i]), "test")
        res.append(row)
    keys = [k for k in res[0] if k != "seed"]
    avg = {k: mean([r.get(k) for r in res]) for k in keys}
    # the speed-up of the mean times, not the mean of the speed-ups
    if avg["rtx_time"] and avg["pyg_time"] and all(r["rtx_time"] is not None for r in res):
        avg["speedup"] = avg["pyg_time"] / avg["rtx_time"]
    if args.json:
        for r in res:
            print(json.dumps(r))
        print(json.dumps(dict(avg, seed="mean")))
        return

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    head = ("seed", "target val", "rtx s (ep)", "pyg s (ep)", "speed-up", "rtx val/test", "pyg val/test",
            "mlp test", "rtx/pyg total s")
    lines = []
    for r in res + [dict(avg, seed="mean", rtx_epoch=None, pyg_epoch=None)]:
        ep = lambda e: "" if e is None else f" ({e + 1})"  # noqa: E731
        lines.append((str(r["seed"]), f(r["target"], ".4f"),
                      f(r["rtx_time"], ".2f") + ep(r["rtx_epoch"]),
                      f(r["pyg_time"], ".2f") + ep(r["pyg_epoch"]),
                      f(r["speedup"], ".2f") + ("x" if r["speedup"] else ""),
                      f"{f(r['rtx_val'], '.4f')}/{f(r['rtx_test'], '.4f')}",
                      f"{f(r['pyg_val'], '.4f')}/{f(r['pyg_test'], '.4f')}",
                      f(r.get("mlp_test"), ".4f"),
                      f"{f(r['rtx_total'], '.1f')}/{f(r['pyg_total'], '.1f')}"))
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for cells in lines:
        print("| " + " | ".join(cells) + " |")
    m = avg
    if m["rtx_test"] is not None and m["pyg_test"] is not None:
        print(f"\nmean test accuracy: rtx {m['rtx_test']:.4f}, PyG {m['pyg_test']:.4f} "
              f"(difference {100 * (m['rtx_test'] - m['pyg_test']):+.2f} points)"
              + (f"; features-only {m['mlp_test']:.4f} ({100 * (m['rtx_test'] - m['mlp_test']):+.2f} points below rtx)"
                 if m.get("mlp_test") is not None else ""))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

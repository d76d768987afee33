#!/usr/bin/env python3
"""Time to accuracy (or R2), rtx against PyG on the same task, from the JSON
lines of `rtx-train --format json` and `pyg_learn.py` (one object per epoch
with `seconds`, the epoch's wall seconds, `elapsed`, wall seconds since the
first epoch began, and `val` / `test` scores). Needs only the standard
library.

The metric is `--metric` (accuracy or r2; default: accuracy when the
validation scores have it, else r2), higher is better. Per seed (the i-th
--rtx file with the i-th --pyg file): the target is PyG's final validation
metric; for each framework the wall time (`elapsed`) and epoch of the first
epoch whose validation metric reaches it ("-" if never), its final
validation and test metric; the speed-up is PyG's time over rtx's. Beside
it, each framework's epoch time, the median `seconds` of its epochs after
the first (the first holds warm-up: kernel compilation, allocator growth),
and the epoch speed-up, PyG's epoch time over rtx's. Then the means over
seeds.

Usage:
  learn_compare.py --rtx rtx_s0.jsonl rtx_s1.jsonl ... --pyg pyg_s0.jsonl pyg_s1.jsonl ...
      [--mlp mlp_s0.jsonl ...] [--metric accuracy|r2] [--at VALUE|common] [--json]
(--at: also each side's time to one validation value for every seed, e.g.
0.70, which both may reach where one seed's PyG final is out of reach;
`common`: the highest multiple of 0.01 that every run of both sides
reached.)
(--mlp: rtx-train --features-only runs, whose final test metric is
reported beside, for the "at least 10 points above the features-only
baseline" target.)
"""
import argparse
import json
import math
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


def reach(rows, target, metric):
    """(elapsed, epoch) of the first epoch at or above `target`, or None."""
    for o in rows:
        if o["val"][metric] >= target:
            return o["elapsed"], o["epoch"]
    return None


def final(rows, split, metric):
    s = rows[-1].get(split)
    return s[metric] if s else float("nan")


def epoch_seconds(rows):
    """The median `seconds` of the epochs after the first (the only one if
    there is one)."""
    v = sorted(o["seconds"] for o in (rows[1:] or rows))
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def ep(e):
    """` (N)`: the epochs run to reach a target (`e` the 0-based epoch), or nothing."""
    return "" if e is None else f" ({e + 1})"


def gap(ours, baseline):
    """`ours - baseline` in accuracy points, in words."""
    d = 100 * (ours - baseline)
    return f"{abs(d):.2f} points {'below' if d >= 0 else 'above'} rtx"


def mean(v):
    v = [x for x in v if x is not None]
    return sum(v) / len(v) if v else None


def common_level(runs, metric):
    """The highest multiple of 0.01 that every run's validation `metric`
    reached (its best epoch), so that both sides' time to it is defined."""
    best = [max(r["val"][metric] for r in rows) for rows in runs]
    # a hair below each best, against a best that is itself a multiple of 0.01
    return math.floor(min(best) * 100 + 1e-9) / 100


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rtx", nargs="+", required=True)
    ap.add_argument("--pyg", nargs="+", required=True)
    ap.add_argument("--mlp", nargs="*", default=[])
    ap.add_argument("--metric", choices=["accuracy", "r2"], default=None,
                    help="the validation metric (default: accuracy when present, else r2)")
    ap.add_argument("--at", default=None,
                    help="also the time each side took to reach this validation metric (one target for every "
                         "seed), or 'common': the highest multiple of 0.01 that every run of both sides reached")
    ap.add_argument("--json", action="store_true", help="one JSON object per seed and the mean, not a table")
    args = ap.parse_args()
    if len(args.rtx) != len(args.pyg):
        raise SystemExit(f"{len(args.rtx)} rtx files against {len(args.pyg)} PyG files: want pairs")
    res = []
    metric = args.metric
    if args.at is not None and args.at != "common":
        try:
            args.at = float(args.at)
        except ValueError:
            raise SystemExit(f"--at {args.at!r}: want a number or 'common'")
    rtx_runs, pyg_runs = [epochs(p) for p in args.rtx], [epochs(p) for p in args.pyg]
    if metric is None:
        metric = "accuracy" if "accuracy" in pyg_runs[0][-1]["val"] else "r2"
    for path, rows in zip(args.rtx + args.pyg, rtx_runs + pyg_runs):
        if metric not in rows[-1]["val"]:
            raise SystemExit(f"{path}: no validation {metric}")
    if args.at == "common":
        args.at = common_level(rtx_runs + pyg_runs, metric)
    for i, (r, p) in enumerate(zip(rtx_runs, pyg_runs)):
        target = p[-1]["val"][metric]
        rr, pr = reach(r, target, metric), reach(p, target, metric)
        row = dict(seed=i, target=target,
                   rtx_time=rr[0] if rr else None, rtx_epoch=rr[1] if rr else None,
                   pyg_time=pr[0] if pr else None, pyg_epoch=pr[1] if pr else None,
                   rtx_val=final(r, "val", metric), rtx_test=final(r, "test", metric),
                   pyg_val=final(p, "val", metric), pyg_test=final(p, "test", metric),
                   rtx_total=r[-1]["elapsed"], pyg_total=p[-1]["elapsed"],
                   rtx_epoch_s=epoch_seconds(r), pyg_epoch_s=epoch_seconds(p))
        row["speedup"] = (row["pyg_time"] / row["rtx_time"]
                          if rr and pr and row["rtx_time"] > 0 else None)
        row["epoch_speedup"] = row["pyg_epoch_s"] / row["rtx_epoch_s"] if row["rtx_epoch_s"] > 0 else None
        if i < len(args.mlp):
            row["mlp_test"] = final(epochs(args.mlp[i]), "test", metric)
        if args.at is not None:
            ra, pa = reach(r, args.at, metric), reach(p, args.at, metric)
            row["at_rtx_time"], row["at_pyg_time"] = (ra[0] if ra else None), (pa[0] if pa else None)
            row["at_rtx_epoch"], row["at_pyg_epoch"] = (ra[1] if ra else None), (pa[1] if pa else None)
            row["at_speedup"] = pa[0] / ra[0] if ra and pa and ra[0] > 0 else None
        res.append(row)
    keys = [k for k in res[0] if k != "seed"]
    avg = {k: mean([r.get(k) for r in res]) for k in keys}
    # the speed-up of the mean times, not the mean of the speed-ups
    if avg["rtx_time"] and avg["pyg_time"] and all(r["rtx_time"] is not None for r in res):
        avg["speedup"] = avg["pyg_time"] / avg["rtx_time"]
    if args.at is not None:
        both = all(r["at_rtx_time"] is not None and r["at_pyg_time"] is not None for r in res)
        avg["at_speedup"] = avg["at_pyg_time"] / avg["at_rtx_time"] if both and avg["at_rtx_time"] else None
    if avg["rtx_epoch_s"]:
        avg["epoch_speedup"] = avg["pyg_epoch_s"] / avg["rtx_epoch_s"]
    if args.json:
        for r in res:
            print(json.dumps(dict(r, metric=metric)))
        print(json.dumps(dict(avg, seed="mean", metric=metric)))
        return

    def f(v, fmt):
        return "-" if v is None else format(v, fmt)

    head = ("seed", f"target val {metric}", "rtx s (ep)", "pyg s (ep)", "speed-up", "rtx val/test",
            "pyg val/test", "mlp test", "rtx/pyg total s", "rtx/pyg epoch s", "epoch speed-up")
    lines = []
    for r in res + [dict(avg, seed="mean", rtx_epoch=None, pyg_epoch=None)]:
        lines.append((str(r["seed"]), f(r["target"], ".4f"),
                      f(r["rtx_time"], ".2f") + ep(r["rtx_epoch"]),
                      f(r["pyg_time"], ".2f") + ep(r["pyg_epoch"]),
                      f(r["speedup"], ".2f") + ("x" if r["speedup"] else ""),
                      f"{f(r['rtx_val'], '.4f')}/{f(r['rtx_test'], '.4f')}",
                      f"{f(r['pyg_val'], '.4f')}/{f(r['pyg_test'], '.4f')}",
                      f(r.get("mlp_test"), ".4f"),
                      f"{f(r['rtx_total'], '.1f')}/{f(r['pyg_total'], '.1f')}",
                      f"{f(r['rtx_epoch_s'], '.4f')}/{f(r['pyg_epoch_s'], '.4f')}",
                      f(r["epoch_speedup"], ".2f") + ("x" if r["epoch_speedup"] else "")))
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for cells in lines:
        print("| " + " | ".join(cells) + " |")
    m = avg
    if m["rtx_test"] is not None and m["pyg_test"] is not None and metric == "accuracy":
        print(f"\nmean test accuracy: rtx {m['rtx_test']:.4f}, PyG {m['pyg_test']:.4f} "
              f"(difference {100 * (m['rtx_test'] - m['pyg_test']):+.2f} points)"
              + (f"; features-only {m['mlp_test']:.4f} ({gap(m['rtx_test'], m['mlp_test'])})"
                 if m.get("mlp_test") is not None else ""))
    elif m["rtx_test"] is not None and m["pyg_test"] is not None:
        print(f"\nmean test {metric}: rtx {m['rtx_test']:.4f}, PyG {m['pyg_test']:.4f} "
              f"(difference {m['rtx_test'] - m['pyg_test']:+.4f}); mean val {metric}: rtx "
              f"{m['rtx_val']:.4f}, PyG {m['pyg_val']:.4f} (difference {m['rtx_val'] - m['pyg_val']:+.4f})"
              + (f"; features-only test {m['mlp_test']:.4f}" if m.get("mlp_test") is not None else ""))
    if args.at is not None:
        print(f"\ntime to validation {metric} {args.at}:")
        for r in res + [dict(avg, seed="mean", at_rtx_epoch=None, at_pyg_epoch=None)]:
                print(f"  seed {r['seed']}: rtx {f(r['at_rtx_time'], '.2f')} s{ep(r['at_rtx_epoch'])}, "
                  f"PyG {f(r['at_pyg_time'], '.2f')} s{ep(r['at_pyg_epoch'])}, "
                  f"speed-up {f(r['at_speedup'], '.2f')}" + ("x" if r["at_speedup"] else ""))
    if m.get("epoch_speedup"):
        print(f"epoch time (median after the first, mean over seeds): rtx {m['rtx_epoch_s']:.4f} s, "
              f"PyG {m['pyg_epoch_s']:.4f} s: {m['epoch_speedup']:.2f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

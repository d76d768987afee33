#!/usr/bin/env bash
# The rtx-against-PyG learning comparison in one command: generate the planted
# mag-shaped dataset (rtx-train --planted SPEC --export-data), then per seed,
# in alternating rounds, rtx-train (the HetGAT), pyg_learn.py (PyG's HetGAT,
# the same settings) and rtx-train --features-only (the baseline), each
# writing JSON lines under OUT; then learn_compare.py's table, with each
# side's time to the highest validation level every run reached (also written
# to OUT/compare_<spec>.md). docs/training.md "Planted mag-shaped tasks" and
# "Planted Harris-shaped regression".
#
# usage: learn_gpu.sh SPEC OUT [EPOCHS] [SEEDS]
#   SPEC    mag:DIV:HOMOPHILY:SIGNAL[:SEED], e.g. mag:16:0.5:0.2 (classification,
#           time to PyG's validation accuracy); or harris:COPIES[:SEED], e.g.
#           harris:4 (the Harris-shaped regression, full graph; R2 and the
#           epoch time against PyG's)
#   OUT     a folder for the JSON lines and the table
#   EPOCHS  of the graph models (mag 10, harris 30); SEEDS "0 1 2"
# environment: BATCH (mag 1024, harris 0; 0 = full-graph training on both
# sides), FANOUTS (15,10), MLP_EPOCHS (mag 30, harris EPOCHS), BACKEND
# (cuda), PYG_DEVICE (pyg_learn.py's default: cuda when available), RTX_TRAIN
# (target/release/rtx-train), PYTHON (python3), DATA (where the dataset goes:
# /tmp/learn-<spec>.safetensors)
set -euo pipefail
SPEC=${1:?usage: learn_gpu.sh SPEC OUT [EPOCHS] [SEEDS]}
OUT=${2:?usage: learn_gpu.sh SPEC OUT [EPOCHS] [SEEDS]}
case $SPEC in
  harris:*) DEFAULT_EPOCHS=30 DEFAULT_BATCH=0 ;;
  *) DEFAULT_EPOCHS=10 DEFAULT_BATCH=1024 ;;
esac
EPOCHS=${3:-$DEFAULT_EPOCHS}
SEEDS=${4:-0 1 2}
HERE=$(cd "$(dirname "$0")" && pwd)
B=${RTX_TRAIN:-$HERE/../../../target/release/rtx-train}
PY=${PYTHON:-python3}
BACKEND=${BACKEND:-cuda}
TAG=${SPEC//:/_}
DATA=${DATA:-/tmp/learn-$TAG.safetensors}
BATCH=${BATCH:-$DEFAULT_BATCH}
FANOUTS=${FANOUTS:-15,10}
if [ "$BATCH" = 0 ]; then SAMPLE=(); else SAMPLE=(--batch "$BATCH" --fanouts "$FANOUTS"); fi
PYDEV=()
if [ -n "${PYG_DEVICE:-}" ]; then PYDEV=(--device "$PYG_DEVICE"); fi
mkdir -p "$OUT"
if [ ! -f "$DATA" ]; then
  "$B" --planted "$SPEC" --export-data "$DATA" --batch 1024 --epochs 0 --format json > /dev/null
fi
rtx=() pyg=() mlp=()
for s in $SEEDS; do
  r=$OUT/rtx_${TAG}_s$s.jsonl p=$OUT/pyg_${TAG}_s$s.jsonl m=$OUT/mlp_${TAG}_s$s.jsonl
  "$B" --data "$DATA" --backend "$BACKEND" "${SAMPLE[@]}" --epochs "$EPOCHS" --seed "$s" --format json > "$r"
  "$PY" "$HERE/pyg_learn.py" --data "$DATA" "${SAMPLE[@]}" --epochs "$EPOCHS" --seed "$s" "${PYDEV[@]}" > "$p"
  case $SPEC in harris:*) MLP=${MLP_EPOCHS:-$EPOCHS} ;; *) MLP=${MLP_EPOCHS:-30} ;; esac
  "$B" --data "$DATA" --backend "$BACKEND" --features-only "${SAMPLE[@]}" --epochs "$MLP" \
    --seed "$s" --format json > "$m"
  rtx+=("$r") pyg+=("$p") mlp+=("$m")
done
"$PY" "$HERE/learn_compare.py" --rtx "${rtx[@]}" --pyg "${pyg[@]}" --mlp "${mlp[@]}" --at common \
  | tee "$OUT/compare_$TAG.md"

#!/usr/bin/env bash
# Puts NVRTC (CUDA 13's run-time compiler, libnvrtc.so.13, the library the
# CUDA backend compiles its kernels with) in a cache folder and prints that
# folder: taken from NVIDIA's `nvidia-cuda-nvrtc` Python wheel, which holds
# the library alone (no driver, no GPU needed). .ci/run then compiles every
# kernel for Hopper on a machine with no GPU. Exits non-zero, saying why,
# when it cannot.
set -euo pipefail
VERSION=13.5.37
dir="${XDG_CACHE_HOME:-$HOME/.cache}/rtx-ci/nvrtc-$VERSION"
if [ -f "$dir/libnvrtc.so.13" ]; then
    echo "$dir"
    exit 0
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq >&2 && apt-get install -y -qq python3-pip >&2
    else sudo apt-get update -qq >&2 && sudo apt-get install -y -qq python3-pip >&2; fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" "nvidia-cuda-nvrtc==$VERSION" >&2
python3 -m zipfile -e "$tmp"/nvidia_cuda_nvrtc-*.whl "$tmp/x" >&2
mkdir -p "$dir.part"
cp "$tmp"/x/nvidia/cu13/lib/libnvrtc.so.13 "$tmp"/x/nvidia/cu13/lib/libnvrtc-builtins.so.* "$dir.part/"
rm -rf "$dir"
mv "$dir.part" "$dir"
echo "$dir"

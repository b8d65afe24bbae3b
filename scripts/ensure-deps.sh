#!/usr/bin/env bash
# Installs the Debian packages a step needs, or says exactly why it cannot.
# Usage: scripts/ensure-deps.sh native|wasm|browser|sanitize ...
set -euo pipefail

declare -A GROUP_PACKAGES=(
  [native]="cmake make g++ libeigen3-dev libgtest-dev"
  [wasm]="cmake make emscripten libeigen3-dev"
  [browser]="chromium firefox-esr"
  [sanitize]="cmake make clang libclang-rt-14-dev libeigen3-dev libgtest-dev"
)

missing=()
for group in "$@"; do
  packages=${GROUP_PACKAGES[$group]:-}
  if [[ -z $packages ]]; then
    echo "ensure-deps: unknown group '$group' (known: ${!GROUP_PACKAGES[*]})" >&2
    exit 2
  fi
  for pkg in $packages; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "ensure-deps: missing ${missing[*]}, and this is not a Debian/Ubuntu system (no apt-get)." >&2
  echo "Install the equivalents of: ${missing[*]}" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=sudo; else
    echo "ensure-deps: missing Debian packages: ${missing[*]}" >&2
    echo "Installing them needs root. Run:  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
echo "ensure-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
${SUDO:-} apt-get update -qq
${SUDO:-} apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

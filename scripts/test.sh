#!/usr/bin/env bash
# `npm test`: every test suite of the project, in order. Installs what it lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-native.sh

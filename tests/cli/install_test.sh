#!/usr/bin/env bash
# `cmake --install BUILD --prefix P` puts a lean mtplx in P/bin and the bundled model in
# P/share/mtplx/models/default; the installed binary finds that model from any working folder.
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
limit=$((15 * 1024 * 1024))
size=$(stat -c %s "$prefix/bin/mtplx")
if [ "$size" -ge "$limit" ]; then
  echo "FAIL: the installed binary is $size bytes; the limit is $limit"
  exit 1
fi
test -f "$prefix/share/mtplx/models/default/config.json"
cd /
unset MTPLX_MODEL
out=$("$prefix/bin/mtplx" run hi --max-tokens 4 --temperature 0 --json)
expected="\"model\":\"$prefix/share/mtplx/models/default\""
if [[ "$out" != *"$expected"* ]]; then
  echo "FAIL: the installed binary did not answer from its own model: $out"
  exit 1
fi
echo "ok: $size bytes, answered from $prefix/share/mtplx/models/default"

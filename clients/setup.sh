#!/usr/bin/env bash
# Installs what the agent-SDK tests run, pinned, into target/agent-sdks/
# (or $STRANDS_AGENT_SDKS_DIR), and checks that this repository's client
# packages build and install into clean environments:
#
#   python: a venv with clients/python/requirements-test.txt (strands-agents,
#           langgraph, mcp, … every version pinned), the strands-hitl wheel
#           built by `python -m build` and installed from that wheel (not
#           from the source tree); the wheel also installs into a fresh venv.
#   node:   clients/typescript (npm ci, type check, unit tests, build,
#           npm pack), the packed tarball installed into an empty project,
#           and examples/agents/typescript (npm ci: @strands-agents/sdk and
#           strands-hitl from clients/typescript).
#
# Run it once before `cargo test` to include the agent-SDK tests; without
# it they skip (CI sets STRANDS_REQUIRE_AGENT_SDKS=1, where they fail).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${STRANDS_AGENT_SDKS_DIR:-$ROOT/target/agent-sdks}
mkdir -p "$OUT"
PY=${PYTHON:-python3}

echo "== agent SDKs: Python ($("$PY" --version 2>&1)) into $OUT/venv"
"$PY" -m venv "$OUT/venv"
VPY="$OUT/venv/bin/python"
"$VPY" -m pip install --quiet --disable-pip-version-check --upgrade "pip==26.3"
"$VPY" -m pip install --quiet --disable-pip-version-check -r clients/python/requirements-test.txt
rm -rf "$OUT/dist/python"
"$VPY" -m build --outdir "$OUT/dist/python" clients/python
"$VPY" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$OUT"/dist/python/strands_hitl-*.whl
(cd clients/python && "$VPY" -m mypy)
"$VPY" -m unittest discover -s clients/python/tests

echo "== strands-hitl (Python) into a clean venv"
rm -rf "$OUT/clean-py"
"$PY" -m venv "$OUT/clean-py"
"$OUT/clean-py/bin/python" -m pip install --quiet --disable-pip-version-check "$OUT"/dist/python/strands_hitl-*.whl
"$OUT/clean-py/bin/python" -c 'import strands_hitl, sys; print("strands-hitl", strands_hitl.__version__, "imports in a clean venv"); sys.exit(0)'

echo "== agent SDKs: TypeScript (node $(node --version))"
(cd clients/typescript && npm ci --no-audit --no-fund && npm run typecheck && npm test && npm run build)
rm -rf "$OUT/dist/typescript"
mkdir -p "$OUT/dist/typescript"
(cd clients/typescript && npm pack --silent --pack-destination "$OUT/dist/typescript")

echo "== strands-hitl (TypeScript) into a clean project"
rm -rf "$OUT/clean-ts"
mkdir -p "$OUT/clean-ts"
(cd "$OUT/clean-ts" \
  && echo '{"name": "clean", "private": true, "type": "module"}' > package.json \
  && npm install --no-audit --no-fund --silent "$OUT"/dist/typescript/strands-hitl-*.tgz \
  && node -e 'import("strands-hitl").then(m => { if (typeof m.Client !== "function") throw new Error("no Client export"); console.log("strands-hitl (npm) imports in a clean project"); })')

echo "== examples/agents/typescript (@strands-agents/sdk, openai, strands-hitl from clients/typescript)"
(cd examples/agents/typescript \
  && npm ci --no-audit --no-fund \
  && node -e 'import("strands-hitl/intervention").then(m => { if (typeof m.StrandsApproval !== "function") throw new Error("no StrandsApproval export"); console.log("strands-hitl/intervention imports beside @strands-agents/sdk"); })')
echo "== agent SDKs ready in $OUT"

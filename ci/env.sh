# Sourced by the ci scripts: where PoCL keeps its kernel cache (reused between runs, so a
# warm run does not recompile CLBlast), and the PoCL settings the tests are written for.
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$HOME/.cache/clgraph/pocl}"
mkdir -p "$POCL_CACHE_DIR"
export POCL_MEMORY_LIMIT="${POCL_MEMORY_LIMIT:-2}"

#!/usr/bin/env bash
# Start the course: the offline model server (when it is the active model), then JupyterLab on notebooks/.
# The server is stopped when JupyterLab exits. Extra JupyterLab options: JUPYTER_ARGS="--port 8899".
set -euo pipefail
cd "$(dirname "$0")/.."
export TRANSFORMERS_VERBOSITY=error
.venv/bin/python -m lessons.local_server prepare
trap '.venv/bin/python -m lessons.local_server stop' EXIT
# shellcheck disable=SC2086
.venv/bin/jupyter lab --notebook-dir=notebooks ${JUPYTER_ARGS:-}

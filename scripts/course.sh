#!/usr/bin/env bash
# Start the course: the offline model server (when it is the active model), then JupyterLab on notebooks/.
# The course language is one setting, AGENTIC_RAG_LANG (environment or .env): unset or `en` opens the English
# learner copies in notebooks/; `zh` (`AGENTIC_RAG_LANG=zh make course`) opens the Chinese ones in notebooks/zh/
# (every notebook has its Chinese copy).
# The server is stopped when JupyterLab exits. Extra JupyterLab options: JUPYTER_ARGS="--port 8899".
set -euo pipefail
cd "$(dirname "$0")/.."
export TRANSFORMERS_VERBOSITY=error
# The folder of the language the setting chooses; a value the course does not have stops here with the fix.
folder=$(.venv/bin/python -m lessons.core.i18n --folder)
if ! compgen -G "$folder/*.ipynb" >/dev/null; then
  echo "$folder/ holds no notebooks: run \`make notebooks\` (AGENTIC_RAG_LANG=$(.venv/bin/python -m lessons.core.i18n))" >&2
  exit 1
fi
open_at=""  # where the browser opens, below notebooks/ (empty: notebooks/ itself)
if [ "$folder" != notebooks ]; then
  open_at="/lab/tree/${folder#notebooks/}"
fi
echo "JupyterLab opens $folder/"
.venv/bin/python -m lessons.core.local_server_cli prepare
trap '.venv/bin/python -m lessons.core.local_server_cli stop' EXIT
# shellcheck disable=SC2086
.venv/bin/jupyter lab --notebook-dir=notebooks ${open_at:+--LabApp.default_url="$open_at"} ${JUPYTER_ARGS:-}

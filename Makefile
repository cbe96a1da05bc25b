# Agentic RAG, hands-on. Each target installs what it needs first (once; fast the second time).
.PHONY: course lint test prewarm run-notebooks benchmarks corpus notebooks learner-notebooks clean-cache

# Run the course: set up, start the offline model (unless DeepSeek is configured), open JupyterLab on notebooks/.
# In Chinese: `AGENTIC_RAG_LANG=zh make course` (or `make course AGENTIC_RAG_LANG=zh`, or the line in .env)
# opens notebooks/zh/.
course:
	@scripts/setup.sh
	@scripts/course.sh

# Lint: ruff's findings (rules in pyproject.toml [tool.ruff.lint]), files `ruff format` would change, and an import
# that breaks the layer contract ([tool.importlinter] in pyproject.toml: no stage imports a later one) fail it.
# Fix formatting with `.venv/bin/ruff format .`; `.venv/bin/ruff check --fix .` fixes what it safely can.
lint:
	@scripts/setup.sh dev
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports

# Run the whole test suite after the lint (unit, integration with the real local model, every notebook, every check).
test: lint
	.venv/bin/python -m pytest

# Before a workshop (docs/FACILITATOR.md): do every slow thing once — install, model, knowledge base, indexes,
# every notebook at full size into the LLM cache; a second run does nothing. PREWARM_ARGS="--skip-notebooks" etc.
prewarm:
	@.venv/bin/python -c "import tools.prewarm" 2>/dev/null || scripts/setup.sh
	.venv/bin/python -m tools.prewarm $(PREWARM_ARGS)

# Execute every notebook headless at full size; executed copies and summary.md go to runs/<time>/.
run-notebooks:
	@scripts/setup.sh
	.venv/bin/python -m tools.notebook_runner

benchmarks:
	@scripts/setup.sh dev
	.venv/bin/python -m benchmarks

# Re-render data/corpus/ from data/sources/ (needs the dev extra: python-docx, python-pptx, fpdf2).
corpus:
	@scripts/setup.sh dev
	.venv/bin/python data/build_corpus.py

# Regenerate solutions/ (solved) and notebooks/ (learner copies) from masters/NN_*.py (jupytext, dev extra).
# NOTEBOOKS_ARGS=--check changes nothing and exits 1 naming every stale notebook.
notebooks:
	.venv/bin/python -m scripts.notebooks $(NOTEBOOKS_ARGS)

learner-notebooks: notebooks

clean-cache:
	.venv/bin/python -m lessons.core.local_server_cli stop || true
	rm -rf .cache

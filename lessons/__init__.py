"""Agentic RAG, hands-on: the course's helpers, in subpackages that follow the data flow.

1. `lessons.core`: Settings, chat models, structured output, the LLM cache, usage metering, embeddings, the
   vector store, the local model runtime, prompt safety, translations and number formatting: what every later
   stage uses.
2. `lessons.text`: Language detection, normalisation for matching, CJK character classes, text decoding.
3. `lessons.ingest`: Files to Markdown and documents (Docling, PDF headings), the course corpora and their
   gold sets.
4. `lessons.chunking`: Chunkers: the baseline, the strategies of notebook 01, Markdown blocks that keep tables
   whole.
5. `lessons.transforms`: Document transformations of notebook 03: cleaning, date and property extraction, QA
   pairs.
6. `lessons.retrieval`: The index build, retrievers (dense, BM25, hybrid), context expansion, query
   transformation, rerankers, and the upload-to-retriever processor.
7. `lessons.agents`: The grading loop (04), the three-agent verification and claim checks (05), the deep-
   research and tool-calling agents (07).
8. `lessons.evaluation`: Metrics, test sets, and the evaluations of notebooks 01, 02, 05, 06 and 07, with the
   evaluation command (`python -m lessons.evaluation.cli`).
9. `lessons.widgets`: The interactive explorers and the chat panel of the notebooks.

A module imports only from its own stage and earlier ones (the import-linter contract "layers" in
`pyproject.toml`, run by `make lint`); tooling that no notebook imports (the notebook runner, pre-warm)
lives in `tools/`.
"""

import os

# Docling's chunker imports transformers (for its tokenizers only), which then advises, in English, in every
# notebook's first output, that PyTorch was not found. The course runs no PyTorch on purpose: silence the advice.
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

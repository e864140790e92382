"""The semantic index: an embedding per distinct entry text, per scope.

The model is wordllama's 256-dimension static embedding (its weights and
tokenizer ship inside its wheel; docs/architecture.md says why this one):
a text's vector is the pooled embedding of its tokens, so a query that says
the same thing in other words lands near it. Vectors are stored as 256 int8
components (`EntryVector`, 256 bytes a text) and compared by cosine in
Python within the (agent, user) scope, which is the same code on SQLite and
PostgreSQL and needs no vector extension.

Texts are embedded by the worker (`tasks.embed_scope_task`, the backfill
command `search_backfill`), never on a write's request path: a search that
meets texts of its scope with no vector yet ranks them by keyword alone and
queues the scope for the worker.

Pooling (issue 21, second round): a text's vector is the SIF-weighted mean
of its token vectors (Arora, Liang and Ma, "A simple but tough-to-beat
baseline for sentence embeddings", 2017): token w weighs a / (a + p(w)),
so "the", "is" and "," count for little and "mudguards" for much. p(w) is
estimated from the tokenizer itself: its pieces are numbered in merge order,
which follows their frequency in the tokenizer's training text, so
p(rank) ∝ 1 / (rank + SIF_OFFSET) (Zipf). That needs no corpus and is the
same for every scope, so a stored vector never goes stale when its scope
grows. Search removes the scope's common direction (SIF's second step) and
expands the query with its nearest entries (index.vector_rank).

A vector depends on the pooling as well as the text: `content_hash` mixes
EMBEDDING_VERSION into the digest, so a change of pooling makes every
stored vector "missing" (search queues the scope, the worker embeds it
again and drops the old rows as stale) instead of comparing vectors of two
kinds.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DIM = 256
# Tuned on the dev split only (docs/benchmarks.md): a 1e-4 to 3e-4 and an
# offset of 10 to 50 all gave paraphrase recall within one query.
SIF_A = 3e-4
SIF_OFFSET = 10
EMBEDDING_VERSION = "sif1"
# The versions whose vectors may still be stored (mean pooling had no
# mark): redaction forgets a text's vectors under each of them.
EMBEDDING_VERSIONS = ("", EMBEDDING_VERSION)
_model: Any = None
_weights: np.ndarray | None = None
_lock = threading.Lock()


def content_hash(text: str, version: str = EMBEDDING_VERSION) -> str:
    salted = f"{version}\n{text}" if version else text
    return hashlib.blake2b(salted.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def content_hashes(text: str) -> list[str]:
    """The text's digest under every embedding version that may be stored."""
    return [content_hash(text, version) for version in EMBEDDING_VERSIONS]


def model() -> Any:
    """wordllama from its own wheel, loaded once per process (~0.2 s)."""
    global _model
    with _lock:
        if _model is None:
            import wordllama
            from wordllama import WordLlama

            _model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True, dim=DIM)
        return _model


def sif_weights() -> np.ndarray:
    """a / (a + p) for every token id, p by Zipf over the tokenizer's order."""
    global _weights
    table = model().embedding
    with _lock:
        if _weights is None:
            ranks = np.arange(table.shape[0], dtype=np.float64)
            p = 1.0 / (ranks + SIF_OFFSET)
            p /= p.sum()
            _weights = (SIF_A / (SIF_A + p)).astype(np.float32)
        return _weights


BATCH = 64


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit float32 vectors, one row per text: the SIF-weighted mean of the
    text's token vectors (wordllama's own table and tokenizer)."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    loaded = model()
    table, weights = loaded.embedding, sif_weights()
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for start in range(0, len(texts), BATCH):
        # Row by row, not as one padded block: a long entry would make the
        # block (batch × longest × 256 floats) hundreds of megabytes.
        for row, encoded in enumerate(loaded.tokenize(list(texts[start : start + BATCH])), start=start):
            ids = np.asarray(encoded.ids, dtype=np.int64)[np.asarray(encoded.attention_mask, dtype=bool)]
            ids = np.clip(ids, 0, table.shape[0] - 1)
            out[row] = weights[ids] @ table[ids]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9)


def pack(vector: np.ndarray) -> bytes:
    scale = float(np.max(np.abs(vector))) or 1.0
    return bytes(np.clip(np.rint(vector / scale * 127), -127, 127).astype(np.int8).tobytes())


def unpack_many(blobs: Iterable[bytes]) -> np.ndarray:
    rows = [np.frombuffer(bytes(blob), dtype=np.int8) for blob in blobs]
    if not rows:
        return np.zeros((0, DIM), dtype=np.float32)
    matrix = np.vstack(rows).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-9)

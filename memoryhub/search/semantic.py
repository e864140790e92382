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
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DIM = 256
_model: Any = None
_lock = threading.Lock()


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def model() -> Any:
    """wordllama from its own wheel, loaded once per process (~0.2 s)."""
    global _model
    with _lock:
        if _model is None:
            import wordllama
            from wordllama import WordLlama

            _model = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True, dim=DIM)
        return _model


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit float32 vectors, one row per text."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    vectors = np.asarray(model().embed(list(texts), norm=True), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-9)


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

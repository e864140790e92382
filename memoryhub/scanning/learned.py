"""The structure model's learned cue: how much a text reads like a
jailbreak, from a logistic regression on wordllama's static embeddings.

Runs offline from the package's own files (the 256-dimension model and its
tokenizer ship inside the wordllama wheel; nothing is downloaded). The
weights (`learned.json`) are built by `build_learned.py` from the dev split
of the public corpus and the team corpus only, and committed; a test
rebuilds them and compares.

It is a bag of token embeddings, good at topic and register, blind to who
a sentence addresses: alone it is never a finding. The structure model
asks it only about text that already carries a structural cue it cannot
settle by itself (a persona set-up, a claimed authority, one cue short of
its threshold) or that addresses an AI, and it adds points to the persona
score (see `structure.analyse`). The model loads on the first such text,
once per process (about 0.1 s; its table is mapped, see `_model`).
"""

from __future__ import annotations

import importlib.util
import json
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

MODEL_NAME = "wordllama 0.4 l2_supercat 256, unit mean of the word pieces of lowercased words"
# Only the opening is read: a jailbreak sets itself up first, and the
# embedding of a whole long text is its topic's average.
CHARS = 2000
# Words already tokenized, each a row of summed word-piece embeddings.
# Bounded like the word index: when full, it starts again.
_MAX_KNOWN_WORDS = 65536

_LOCK = threading.RLock()  # embed() holds it while add() may reach _model()
_MODEL: list[_Model] = []


class _Known:
    """word -> row; rows hold the word's summed piece embeddings."""

    def __init__(self, width: int) -> None:
        self.rows: dict[str, int] = {}
        self.vectors = np.zeros((1024, width), dtype=np.float32)

    def add(self, batch: list[str]) -> None:
        needed = len(self.rows) + len(batch)
        if needed > len(self.vectors):
            grown = np.zeros((max(needed, 2 * len(self.vectors)), self.vectors.shape[1]), dtype=np.float32)
            grown[: len(self.vectors)] = self.vectors
            self.vectors = grown
        for word, pieces in zip(batch, _pieces(batch), strict=True):
            row = len(self.rows)
            self.vectors[row] = pieces.sum(axis=0)
            self.rows[word] = row


_KNOWN: list[_Known] = []


@dataclass(frozen=True)
class _Model:
    # (32000, 256) float16, mapped from the wheel's file: only the rows of
    # words a process has read are resident.
    embedding: np.ndarray
    tokenizer: Any


def _package_dir() -> Path:
    """The wordllama package's folder, found without importing it (its
    import pulls in modules the cue never uses, ~15 MB resident)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the wordllama package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _mapped_table(path: Path, key: str) -> np.ndarray:
    """A tensor of a safetensors file as a read-only memory map (the format:
    an 8-byte little-endian header length, a JSON header, the data)."""
    with path.open("rb") as f:
        length = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(length))
    tensor = header[key]
    start, _end = tensor["data_offsets"]
    dtype = {"F16": np.float16, "F32": np.float32}[tensor["dtype"]]
    return np.memmap(path, dtype=dtype, mode="r", offset=8 + length + start, shape=tuple(tensor["shape"]))


def _model() -> _Model:
    """wordllama's l2_supercat 256 table and tokenizer, as WordLlama.load
    reads them but with the table left in float16 and mapped, not copied
    to float32 (46 MB resident): rows are widened when a word is first
    read, which gives the same float32 values (float16 widens exactly)."""
    if not _MODEL:
        with _LOCK:
            if not _MODEL:
                from tokenizers import Tokenizer

                folder = _package_dir()
                tokenizer = Tokenizer.from_file(str(folder / "tokenizers" / "l2_supercat_tokenizer_config.json"))
                # What WordLlamaInference sets.
                tokenizer.enable_padding()
                tokenizer.no_truncation()
                model = _Model(_mapped_table(folder / "weights" / "l2_supercat_256.safetensors", "embedding.weight"),
                               tokenizer)
                _KNOWN.append(_Known(model.embedding.shape[1]))
                _MODEL.append(model)
    return _MODEL[0]


@cache
def _weights() -> tuple[np.ndarray, float, float]:
    data = json.loads(Path(__file__).with_name("learned.json").read_text("utf-8"))
    return np.array(data["weights"], dtype=np.float32), float(data["bias"]), float(data["threshold"])


def words(text: str) -> list[str]:
    """What the cue reads: the opening's words, lowercased, split on space."""
    return text[:CHARS].lower().split()


def _pieces(batch: list[str]) -> list[np.ndarray]:
    table = _model().embedding
    out = []
    for encoding in _model().tokenizer.encode_batch(batch, add_special_tokens=False):
        # The tokenizer pads a batch to its longest member: padding is no piece.
        ids = [piece for piece, real in zip(encoding.ids, encoding.attention_mask, strict=True) if real]
        out.append(np.asarray(table[np.clip(np.array(ids, dtype=np.int64), 0, table.shape[0] - 1)], dtype=np.float32))
    return out


def embed(text: str) -> np.ndarray:
    """The unit-length mean of the word-piece embeddings of the text's
    opening, each word tokenized alone (a word costs a lookup once seen)."""
    model = _model()
    found = words(text)
    known = _KNOWN[0]
    with _LOCK:
        missing = list(dict.fromkeys(word for word in found if word not in known.rows))
        if len(known.rows) + len(missing) > _MAX_KNOWN_WORDS:
            # Full: start again with this text's words.
            known.rows.clear()
            missing = list(dict.fromkeys(found))
        if missing:
            known.add(missing)
        rows = [known.rows[word] for word in found]
        total = known.vectors[rows].sum(axis=0) if rows else np.zeros(model.embedding.shape[1], dtype=np.float32)
    length = float(np.linalg.norm(total))
    return np.asarray(total / length if length else total, dtype=np.float32)


def score(text: str) -> float:
    """The regression's logit minus its threshold: above 0 reads like a
    jailbreak."""
    weights, bias, threshold = _weights()
    return float(embed(text) @ weights) + bias - threshold

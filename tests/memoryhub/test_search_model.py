"""The sentence encoder: what the relevance tests rely on, checked on its
own so that a broken forward pass fails here with a clear name, not only as
lower recall. The index runs it with ONNX Runtime, its linear layers in
int8 (memoryhub/encoder/minilm_onnx.py); numpy's pass (minilm.py) is the
reference the float32 graph is held to, and the int8 graph is held to the
float32 one."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from memoryhub.encoder import minilm, minilm_onnx
from memoryhub.search import semantic
from tests.memoryhub.search_relevance import history


def test_a_paraphrase_lands_nearer_than_a_text_on_another_topic() -> None:
    note, paraphrase, other = semantic.embed([
        "Customer prefers to be contacted by email, never by phone.",
        "how should I get in touch with her",
        "Brake pads replaced on the gravel bike.",
    ])
    assert float(note @ paraphrase) > float(note @ other) + 0.1


def test_vectors_are_unit_length_and_of_the_stored_size() -> None:
    vectors = semantic.embed(["one", "two words", ""])
    assert vectors.shape == (3, semantic.DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:2], axis=1), 1.0, atol=1e-5)


SHORT = "Invoice KC-204511 sent."
LONGER = ("A much longer note about the customer's cargo bike, its battery and "
          "the warranty claim that the workshop opened last Tuesday.")
# Varied texts: the relevance history's notes (English, German, Spanish,
# French, invoice numbers), an empty text, one word, and one longer than
# MAX_TOKENS (cut at the same place by every runtime).
TEXTS = [content for _, _, content in history.LOGS]
TEXTS += [line for body in history.FILES.values() for line in body.splitlines()]
TEXTS += ["", "ok", "how should I get in touch with her", " ".join(["warranty claim for the hinge"] * 60)]


@pytest.mark.parametrize("embed", [minilm.embed, partial(minilm_onnx.embed, precision="float32")],
                         ids=["numpy", "onnx-float32"])
def test_a_text_gets_the_same_vector_alone_and_padded_beside_a_longer_one(
        embed: Callable[[list[str]], np.ndarray]) -> None:
    # Texts of one batch are padded to the longest; the attention mask and
    # the pooling must leave the padding out, or a vector would depend on
    # its neighbours in the worker's batch.
    assert np.allclose(embed([SHORT])[0], embed([SHORT, LONGER])[0], atol=1e-5)


def test_int8_depends_on_its_batch_neighbours_only_by_its_activation_scale() -> None:
    # int8 quantizes activations with one scale per batch, so padding beside
    # a longer text moves the vector a little (documented in minilm_onnx);
    # a mask or pooling that let the padding in would move it much more.
    alone, padded = minilm_onnx.embed([SHORT])[0], minilm_onnx.embed([SHORT, LONGER])[0]
    assert float(alone @ padded) >= 0.98


def test_the_float32_graph_gives_the_vectors_of_the_numpy_reference() -> None:
    # Equal to rounding: the graph built in code is BERT's forward pass.
    cosines = (minilm_onnx.embed(TEXTS, precision="float32") * minilm.embed(TEXTS)).sum(axis=1)
    assert float(cosines.min()) >= 0.9999, sorted(zip(cosines.tolist(), TEXTS, strict=True))[:3]


def test_the_int8_graph_stays_near_the_float32_one() -> None:
    # What the index embeds with. Its dev recall equals float32's
    # (tests/memoryhub/search_relevance); this catches a quantization that
    # goes wrong (a layer's scales, weights quantized on the wrong axis)
    # with its name. The lowest cosines are the shortest texts ("ok", "").
    cosines = (minilm_onnx.embed(TEXTS) * minilm_onnx.embed(TEXTS, precision="float32")).sum(axis=1)
    print(f"int8 against float32: min {cosines.min():.4f}, mean {cosines.mean():.4f}")
    assert float(cosines.min()) >= 0.95 and float(cosines.mean()) >= 0.98, \
        sorted(zip(cosines.tolist(), TEXTS, strict=True))[:3]


def test_an_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="precision"):
        minilm_onnx.embed(["ok"], precision="float16")


def test_the_weights_come_from_the_installed_wheel_not_a_download() -> None:
    assert (minilm.model_dir() / "model.safetensors").is_file()
    assert minilm.load().layers and len(minilm.load().layers) == 6


def test_the_int8_weights_are_mapped_from_a_file_beside_the_graph() -> None:
    """ONNX Runtime maps external weights instead of copying them: the word
    table's unread rows cost a process nothing (docs/scanner.md, "Memory").
    Inline weights would put the whole 58 MB graph in every process."""
    path = minilm_onnx._cached_model("int8")
    data = path.with_name(path.name + ".data")
    assert data.is_file() and data.stat().st_size > 20_000_000
    assert path.stat().st_size < 1_000_000
    assert minilm_onnx.embed(["Prefers email over phone."]).shape == (1, minilm.DIM)


def test_a_graph_whose_weights_file_was_deleted_is_built_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deleting the model files is documented as safe (docs/operations.md):
    deleting one of the pair too. (The float32 graph is copied in, so only
    the int8 step runs again.)"""
    built = minilm_onnx._cached_model("float32")
    (tmp_path / "models").mkdir()
    shutil.copy(built, tmp_path / "models" / built.name)
    monkeypatch.setattr(minilm_onnx, "_var_dir", lambda: tmp_path)
    path = minilm_onnx._cached_model("int8")
    data = path.with_name(path.name + ".data")
    data.unlink()
    assert minilm_onnx._cached_model("int8") == path
    assert data.is_file() and data.stat().st_size > 20_000_000

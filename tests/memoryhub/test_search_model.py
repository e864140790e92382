"""The sentence encoder: what the relevance tests rely on, checked on its
own so that a broken forward pass fails here with a clear name, not only as
lower recall. The index runs it with ONNX Runtime
(memoryhub/search/minilm_onnx.py); numpy's pass (minilm.py) is the
reference those vectors are held to."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memoryhub.search import minilm, minilm_onnx, semantic
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


@pytest.mark.parametrize("embed", [minilm.embed, minilm_onnx.embed], ids=["numpy", "onnx"])
def test_a_text_gets_the_same_vector_alone_and_padded_beside_a_longer_one(
        embed: Callable[[list[str]], np.ndarray]) -> None:
    # Texts of one batch are padded to the longest; the attention mask and
    # the pooling must leave the padding out, or a vector would depend on
    # its neighbours in the worker's batch.
    short = "Invoice KC-204511 sent."
    longer = ("A much longer note about the customer's cargo bike, its battery and "
              "the warranty claim that the workshop opened last Tuesday.")
    assert np.allclose(embed([short])[0], embed([short, longer])[0], atol=1e-5)


def test_onnx_runtime_gives_the_vectors_of_the_numpy_reference() -> None:
    # Varied texts: the relevance history's notes (English, German, Spanish,
    # French, invoice numbers), an empty text, one word, and one longer than
    # MAX_TOKENS (cut at the same place by both). Equal to rounding, which
    # is why EMBEDDING_VERSION did not change with the runtime.
    texts = [content for _, _, content in history.LOGS]
    texts += [line for body in history.FILES.values() for line in body.splitlines()]
    texts += ["", "ok", "how should I get in touch with her", " ".join(["warranty claim for the hinge"] * 60)]
    cosines = (minilm_onnx.embed(texts) * minilm.embed(texts)).sum(axis=1)
    assert float(cosines.min()) >= 0.9999, sorted(zip(cosines.tolist(), texts, strict=True))[:3]


def test_the_weights_come_from_the_installed_wheel_not_a_download() -> None:
    assert (minilm.model_dir() / "model.safetensors").is_file()
    assert minilm.load().layers and len(minilm.load().layers) == 6

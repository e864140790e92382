"""The sentence encoder (memoryhub/search/minilm.py) run with numpy: what
the relevance tests rely on, checked on its own so that a broken forward
pass fails here with a clear name, not only as lower recall."""

from __future__ import annotations

import numpy as np

from memoryhub.search import minilm, semantic


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


def test_a_text_gets_the_same_vector_alone_and_padded_beside_a_longer_one() -> None:
    # Texts of one batch are padded to the longest; the attention mask and
    # the pooling must leave the padding out, or a vector would depend on
    # its neighbours in the worker's batch.
    short = "Invoice KC-204511 sent."
    alone = minilm.embed([short])[0]
    beside = minilm.embed([short, "A much longer note about the customer's cargo bike, its battery and "
                                  "the warranty claim that the workshop opened last Tuesday."])[0]
    assert np.allclose(alone, beside, atol=1e-5)


def test_the_weights_come_from_the_installed_wheel_not_a_download() -> None:
    assert (minilm.model_dir() / "model.safetensors").is_file()
    assert minilm.load().layers and len(minilm.load().layers) == 6

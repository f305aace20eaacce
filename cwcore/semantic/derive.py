"""The embedder's model file, derived from the package's in a child process of its own.

``python -m cwcore.semantic.derive [--int8] [--keep-guards] SOURCE TARGET`` writes TARGET from
the package's ONNX file at SOURCE (:func:`derive`) and prints one JSON line: ``vectorsSha256``,
the sha256 of the graph whose vectors TARGET computes bit for bit (the model's identity for
stored vectors), and ``nanGuards``, how many guards :func:`strip_nan_guards` removed. It runs
apart from the caller because the onnx package and onnxruntime's quantizer leave about 200 MB
resident in the process that imported them (peak 500 MB): a daemon assembling its model on first
use would keep that for the rest of its life. Exit 0 when TARGET is written; otherwise 1 and one
line on stderr (the quantizer's own log lines go to stderr too, and the parent reports only the
last).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from cwcore.semantic.models import sha256_file


def strip_nan_guards(model: Any) -> int:
    """Remove from ``model`` (an ``onnx.ModelProto``, edited in place) every ``Where(IsNaN(p),
    0, p)`` whose ``p`` is a Softmax output, wiring its consumers to ``p``; returns how many.

    The exporter put one after each attention softmax for rows whose every key is masked. In
    this model no row is: the mask it adds is the float32 minimum, not ``-inf``, and only key
    positions are masked, so a row always has its own finite scores and a softmax of finite
    scores is never NaN. The guard is therefore the identity, bit for bit, and cost 15 % of the
    model's time on 2 cores (a broadcast select over 12 x 256 x 256 floats a layer, unthreaded).
    Only this exact shape is matched, with a scalar zero as the replacement value."""
    from onnx import numpy_helper

    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    constants = {init.name: init for init in graph.initializer}
    drop: list[Any] = []
    alias: dict[str, str] = {}
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3:
            continue
        test, zero, value = node.input
        isnan, softmax = producer.get(test), producer.get(value)
        if isnan is None or isnan.op_type != "IsNaN" or list(isnan.input) != [value]:
            continue
        if softmax is None or softmax.op_type != "Softmax" or zero not in constants:
            continue
        if numpy_helper.to_array(constants[zero]).ravel().tolist() != [0.0]:
            continue
        if sum(test in other.input for other in graph.node) != 1:
            continue  # the test feeds something else too: keep both
        alias[node.output[0]] = value
        drop += [node, isnan]
    if not drop:
        return 0
    outputs = {o.name for o in graph.output}
    if outputs & alias.keys():
        return 0  # a guard is a graph output: leave the graph as it is
    for node in drop:
        graph.node.remove(node)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in alias:
                node.input[i] = alias[name]
    return len(drop) // 2


def _quantize(source: Path, target: Path) -> None:
    """Write ``target`` from ``source``: weights quantized per output channel (signed),
    activations per call (ONNX Runtime's dynamic quantization: ``MatMulInteger`` after
    ``DynamicQuantizeLinear``). The package's weights are int8 already but are cast back to float
    inside the graph; ONNX Runtime's basic optimizations fold those casts into float initializers
    first (a ~90 MB scratch file beside ``target``, removed), which the quantizer then reads.
    Deterministic: the same source and onnxruntime version give the same bytes."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded = target.with_name(target.name + ".float")
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        quantize_dynamic(
            folded,
            target,
            weight_type=QuantType.QInt8,
            per_channel=True,
            # Attention's activation-by-activation MatMuls stay float: quantizing both sides
            # costs accuracy for little time at 256 tokens.
            extra_options={"MatMulConstBOnly": True},
        )
    finally:
        folded.unlink(missing_ok=True)


def derive(source: Path, target: Path, *, int8: bool, strip: bool = True) -> dict[str, Any]:
    """Write ``target``: the graph of ``source`` (with ``int8``, its weight MatMuls quantized:
    :func:`_quantize`), with ``strip`` without its softmax NaN guards (:func:`strip_nan_guards`;
    ``strip=False`` is the bench's "before"). Returns ``vectorsSha256`` (the sha256 of the graph
    before the guards went, whose vectors ``target`` computes bit for bit) and ``nanGuards``.
    Deterministic."""
    import onnx

    graph = source
    if int8:
        graph = target.with_name(target.name + ".int8")
        _quantize(source, graph)
    try:
        vectors_sha = sha256_file(graph)
        model = onnx.load(str(graph))
        guards = strip_nan_guards(model) if strip else 0
        onnx.save(model, str(target))
    finally:
        if graph != source:
            graph.unlink(missing_ok=True)
    return {"vectorsSha256": vectors_sha, "nanGuards": guards}


def main(argv: list[str]) -> int:
    flags = {a for a in argv if a.startswith("--")}
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2 or flags - {"--int8", "--keep-guards"}:
        print(
            "usage: python -m cwcore.semantic.derive [--int8] [--keep-guards] SOURCE TARGET",
            file=sys.stderr,
        )
        return 2
    try:
        done = derive(
            Path(args[0]),
            Path(args[1]),
            int8="--int8" in flags,
            strip="--keep-guards" not in flags,
        )
    except Exception as exc:  # one line for the parent, whatever onnx or the quantizer raised
        print(f"{type(exc).__name__}: {exc}".replace("\n", " "), file=sys.stderr)
        return 1
    print(json.dumps(done))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

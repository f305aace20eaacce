"""The int8 variant of the embedding model, derived in a child process of its own.

``python -m cwcore.semantic.quantize SOURCE TARGET`` writes TARGET: the model of SOURCE with every
MatMul against a weight matrix run in int8 (:func:`derive`). It runs apart from the caller because
onnxruntime's quantizer and the onnx package leave about 200 MB resident in the process that
imported them (peak 500 MB): a daemon asked for ``models.install`` would keep that for the rest of
its life. Exit 0 when TARGET is written; otherwise 1 and one line on stderr (the quantizer's own
log lines go to stderr too, and the parent reports only the last).
"""

from __future__ import annotations

import sys
from pathlib import Path


def derive(source: Path, target: Path) -> None:
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


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m cwcore.semantic.quantize SOURCE TARGET", file=sys.stderr)
        return 2
    try:
        derive(Path(argv[0]), Path(argv[1]))
    except Exception as exc:  # one line for the parent, whatever the quantizer raised
        print(f"{type(exc).__name__}: {exc}".replace("\n", " "), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

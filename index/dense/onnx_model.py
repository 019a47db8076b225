"""The ONNX models busca's onnxruntime engines build in memory (e5-small's 4-bit and int8
graphs, the int8 probe, the sparse head): opset 17 with Microsoft's contrib ops, written as
IR version 8, opset 17's own. `onnx` otherwise stamps its newest IR version (1.23 writes 14),
which an older onnxruntime that busca accepts refuses ("Unsupported model IR version: 14, max
supported IR version: 10", onnxruntime 1.20, seen on ARM64)."""

from __future__ import annotations

OPSET = 17
IR_VERSION = 8  # the IR version of opset 17 (onnx's VERSION_TABLE)


def serialized(graph) -> bytes:
    """The model of an onnx GraphProto, as the bytes onnxruntime's InferenceSession takes."""
    from onnx import helper  # noqa: PLC0415  (optional: the `e5` extra)

    model = helper.make_model(graph, ir_version=IR_VERSION, opset_imports=[
        helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)])
    return model.SerializeToString()

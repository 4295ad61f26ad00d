"""cuilink_models: trains cuilink's default encoders from ontologies alone and exports ONNX.

See models/README.md. Inputs are concept JSONL files written by `cuilink kb export`
(docs/kb-jsonl.md); outputs follow docs/model-directory.md.
"""

__version__ = "0.1.0"

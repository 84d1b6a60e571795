"""A sentence-transformers model's query path in ONNX Runtime: the same vectors, a fraction of torch's time.

One query is a few tokens; torch spends most of a call on its dispatch and on waking its thread pool
(59 ms p50 for all-MiniLM-L6-v2 on 2 busy cores, 24 ms on one thread), ONNX Runtime on one thread a
fraction of that (docs/BENCHMARKS.md, "Query embedding"). :class:`OnnxQueryEncoder` runs the model's
transformer, exported once from its own weights with ``torch.onnx.export`` and kept beside the
embedding cache (keyed by the weights' digest, so a changed model is exported again), then pools and
normalises as the model's ``modules.json`` says. Its vectors are the torch model's to ``1 - cos <=
1e-3`` (a test checks 1,000 queries), so the index's fingerprint is unchanged: the same model, another
runtime.

Threads are this encoder's own (``intra_op_num_threads`` of its session, default 1): nothing is set
process-wide, so torch, numpy and the application keep theirs.

Supported: BERT-family transformers with mean or CLS pooling (all-MiniLM-L6-v2 and its kin). A model
this cannot serve (another pooling, a Dense head, no fast tokenizer) raises :class:`UnsupportedModel`,
and the embedder stays on torch.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_EXPORT_LOCK = threading.Lock()


class UnsupportedModel(Exception):
    """The model's query path cannot run in ONNX Runtime here (and stays on torch)."""


def _pooling(folder: Path) -> tuple[str, bool, int | None]:
    """(pooling mode, normalises, max_seq_length) from a sentence-transformers folder."""
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k not in ("Normalize",) for k in kinds[2:]):
        raise UnsupportedModel(f"modules {kinds}: only Transformer, Pooling and Normalize are run in ONNX Runtime")
    pooling = json.loads((folder / modules[1].get("path", "") / "config.json").read_text(encoding="utf-8"))
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
    if modes not in (["pooling_mode_mean_tokens"], ["pooling_mode_cls_token"]):
        raise UnsupportedModel(f"pooling {modes}: only mean or CLS pooling is run in ONNX Runtime")
    config = folder / "sentence_bert_config.json"
    limit = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length") if config.exists() else None
    return ("mean" if modes == ["pooling_mode_mean_tokens"] else "cls"), "Normalize" in kinds, limit


def export(folder: Path, target: Path) -> None:
    """The folder's transformer as ONNX (last hidden state, dynamic batch and length) at ``target``:
    torch and transformers, once per weights digest."""
    try:
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise UnsupportedModel(
            f"exporting the model to ONNX needs torch and transformers (the models extra): {exc}"
        ) from exc
    from transformers.utils import logging as hf_logging

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    bars = hf_logging.is_progress_bar_enabled()
    # A one-off step of a search: no "Loading weights" bar on the user's terminal.
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        model = AutoModel.from_pretrained(str(folder)).eval()
    finally:
        if bars:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
    sample = tokenizer(["a query"], return_tensors="pt")
    names = [n for n in _INPUTS if n in sample]

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(**dict(zip(names, inputs))).last_hidden_state

    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:  # written whole, then moved: no half file is ever read
        part = Path(work) / target.name
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on tracing: about this export, not the user's code
            torch.onnx.export(
                Hidden(),
                tuple(sample[n] for n in names),
                str(part),
                input_names=names,
                output_names=["hidden"],
                dynamic_axes={**axes, "hidden": {0: "batch", 1: "tokens"}},
                opset_version=17,
                dynamo=False,
            )
        os.replace(part, target)


PROBES = (
    "a query",
    "¿Cómo devuelvo un pedido?",
    "ECONNREFUSED on port 9200 after the upgrade",
    "What is the role of p53 in apoptosis induced by DNA damage in human fibroblasts?",
)
TOLERANCE = 1e-3  # 1 - cos between a vector here and the torch model's


class OnnxQueryEncoder:
    """Encodes texts as the sentence-transformers model in ``folder`` does, in ONNX Runtime.

    ``model_file``: the exported transformer (made with :func:`export` when missing); ``threads``:
    this session's intra-op threads; ``limit``: the longest input in tokens (default the model's);
    ``check``: the torch model's encode, to compare a freshly exported file with on :data:`PROBES`
    (a file further than :data:`TOLERANCE` is removed and the model stays on torch)."""

    def __init__(
        self,
        folder: Path,
        model_file: Path,
        *,
        threads: int = 1,
        normalize: bool = True,
        limit: int | None = None,
        check: Callable[[Sequence[str]], np.ndarray] | None = None,
    ) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise UnsupportedModel(f"ONNX Runtime is not installed (the onnx extra): {exc}") from exc
        self.pooling, normalises, own_limit = _pooling(folder)
        limit = limit or own_limit
        self.normalize = normalize or normalises
        if not (folder / "tokenizer.json").exists():
            raise UnsupportedModel(f"{folder} has no tokenizer.json (a fast tokenizer)")
        if not model_file.exists():
            with _EXPORT_LOCK:
                if not model_file.exists():
                    export(folder, model_file)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        if limit:
            self.tokenizer.enable_truncation(int(limit))
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, int(threads))
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.session.get_inputs()]
        if check is not None:
            self._compare(check, model_file)

    def _compare(self, reference: Callable[[Sequence[str]], np.ndarray], model_file: Path) -> None:
        ours, theirs = self.encode(PROBES), np.asarray(reference(PROBES), dtype=np.float32)
        cos = (ours * theirs).sum(axis=1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1))
        worst = float(1.0 - cos.min())
        if worst > TOLERANCE:
            model_file.unlink(missing_ok=True)
            raise UnsupportedModel(
                f"the exported model's vectors differ from torch's (1 - cos {worst:.2e} > {TOLERANCE})"
            )

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dimension)`` float32, as the model's ``encode`` returns them."""
        encodings = self.tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        arrays = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in _INPUTS}
        for row, e in enumerate(encodings):
            n = len(e.ids)
            arrays["input_ids"][row, :n] = e.ids
            arrays["attention_mask"][row, :n] = e.attention_mask
            arrays["token_type_ids"][row, :n] = e.type_ids
        hidden = self.session.run(None, {name: arrays[name] for name in self.names})[0]
        if self.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            mask = arrays["attention_mask"][:, :, None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        if self.normalize:
            pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return np.asarray(pooled, dtype=np.float32)

"""Several dense models in one index, each under a name: `dense:use`, `dense:e5-small`, `dense:NAME`.

`busca index --dense use,e5-small,bge=openai:bge-m3` asks for three. The first is the index's
default dense model and is stored as the method `dense` (as indexes with one model always
were: `--method dense` and `hybrid` keep working); the others are the methods `dense:NAME`.
`dense:NAME` also answers for the first model, by its name. A model's name is what comes
before `=`, or else one derived from its encoder (`openai:intfloat/multilingual-e5-large` →
`multilingual-e5-large`). Each model's arrays are `dense.NAME.vectors.npy` / `.hashes.npy`
(`dense.vectors.npy` for the first), its manifest entry `methods["dense:NAME"]`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...errors import BuscaError
from .embedding_api import ServerSettings
from .encoders import OPENAI_PREFIX, ST_PREFIX, check_name

DENSE = "dense"
HYBRID = "hybrid"
HYBRID3 = "hybrid3"  # hybrid + sparse (index/methods.py): fused like hybrid, never stored
LIFT = "lift"  # a hybrid entry's mark: its lexical share follows each question (search/fusion.py)
COORD = "coord"  # and its lifted fusion has the coordination bonus (search/fusion.py)
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class BadModelList(BuscaError, ValueError):
    """A --dense list that cannot be read (bad or repeated names)."""


@dataclass(frozen=True)
class DenseModel:
    """One dense model of an index: its name and the encoder that makes its vectors."""

    name: str
    encoder: str


def parse_models(text: str) -> list[DenseModel]:
    """`"use,e5-small,bge=openai:bge-m3"` -> the models, first = the default; names checked."""
    models = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, encoder = part.partition("=")
        name, encoder = (name.strip(), encoder.strip()) if sep else (default_name(part), part)
        if not _NAME.match(name):
            raise BadModelList(f"bad dense model name {name!r} in --dense: use lowercase"
                               " letters, digits, '.', '_' or '-', e.g. --dense bge=openai:bge-m3")
        check_name(encoder)
        models.append(DenseModel(name, encoder))
    if not models:  # --dense "$DENSE" with DENSE unset dropped every dense model
        raise BadModelList("--dense is empty: name an encoder (e.g. --dense e5-small), or"
                           " say none to drop the dense models")
    names = [m.name for m in models]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise BadModelList(f"two dense models named {repeated[0]!r} in --dense: name one of"
                           f" them, e.g. --dense {repeated[0]}-2=ENCODER")
    return models


def model_entries(methods: Mapping) -> dict[str, Mapping]:
    """A build's dense models' manifest entries (of `methods`) by model name."""
    return {methods[m].get("name") or default_name(methods[m]["encoder"]): methods[m]
            for m in dense_methods(methods)}


def models_spec(entries: Mapping[str, Mapping]) -> str:
    """Those models as a --dense list that builds them again: NAME=ENCODER,..."""
    return ",".join(f"{name}={entry['encoder']}" for name, entry in entries.items())


def default_name(encoder: str) -> str:
    """The name of a model when --dense gives none: the encoder's, model path's last part."""
    for prefix in (OPENAI_PREFIX, ST_PREFIX):
        if encoder.startswith(prefix):
            encoder = Path(encoder[len(prefix):].rstrip("/")).name
    name = re.sub(r"[^a-z0-9._-]+", "-", encoder.lower()).strip("-._")
    return name or "model"


def method_names(models: list[DenseModel]) -> list[str]:
    """The index methods of `models`: `dense` for the first, `dense:NAME` for the others."""
    return [DENSE] + [f"{DENSE}:{m.name}" for m in models[1:]]


def is_dense(method: str) -> bool:
    return method == DENSE or method.startswith(DENSE + ":")


def is_hybrid(method: str) -> bool:
    return method in (HYBRID, HYBRID3) or method.startswith(HYBRID + ":")


def model_of(method: str) -> str | None:
    """`dense:NAME` / `hybrid:NAME` -> NAME; None for plain `dense` / `hybrid`."""
    return method.partition(":")[2] or None


def array_key(method: str) -> str:
    """The array prefix of a dense method's files: `dense`, `dense.NAME`."""
    return method.replace(":", ".")


def resolve(methods: dict, method: str) -> str:
    """The stored method answering `method`: `dense:NAME` of the first model is `dense`,
    `hybrid:NAME` of it is `hybrid`; other names are returned unchanged."""
    name = model_of(method)
    if name and is_dense(method) and method not in methods:
        if methods.get(DENSE, {}).get("name", methods.get(DENSE, {}).get("encoder")) == name:
            return DENSE
    if name and is_hybrid(method) and resolve(methods, f"{DENSE}:{name}") == DENSE:
        return HYBRID
    return method


def dense_methods(methods: dict) -> list[str]:
    """The dense methods an index has, the default first."""
    return [m for m in methods if m == DENSE] + [m for m in methods if m.startswith(DENSE + ":")]


def label(methods: dict, method: str) -> str:
    """`dense` shown with its model's name (`dense:use`) where several models sit side by side."""
    entry = methods.get(method, {})
    if method == DENSE and entry:
        return f"{DENSE}:{entry.get('name') or default_name(entry.get('encoder', ''))}"
    return method


def server_settings(entry: dict, *, url: str | None = None, key: str | None = None,
                    **overrides) -> ServerSettings | None:
    """ServerSettings of an openai:MODEL entry of the manifest (its stored URL, prefixes and
    input_type) with the user's `url`, `key` and other non-None `overrides` on top."""
    stored = dict(entry.get("server") or {})
    stored.pop("served_model", None)
    changes = {k: v for k, v in overrides.items() if v is not None}
    url = url or stored.pop("url", None)
    stored.pop("url", None)
    if not url:
        return None
    return ServerSettings(url, key=key, **{**stored, **changes})

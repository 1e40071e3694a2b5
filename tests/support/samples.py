"""Fully populated sample instances of any event model, generated from its fields."""

from __future__ import annotations

import types
import typing
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
WHEN = datetime(2026, 7, 8, 23, 5, 28, 123000, tzinfo=UTC)


def _value(annotation: Any, name: str) -> Any:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is typing.Annotated:
        return {"name": name, "items": [1, 2.5, "三", None, {"nested": True}]}
    if origin in (Union, types.UnionType):
        return _value(next(a for a in args if a is not type(None)), name)
    if origin is Literal:
        return args[0]
    if origin is tuple:
        return (_value(args[0], name), _value(args[0], name + "2"))
    if origin is dict:
        return {"k": "v", "环境": "生产"}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return sample(annotation)
    simple: dict[Any, Any] = {
        str: f"{name}-值",
        int: 517,
        float: 0.75,
        bool: True,
        bytes: b"\x00\xff" + name.encode(),
        datetime: WHEN,
    }
    if annotation in simple:
        return simple[annotation]
    if annotation is Any:
        return {"any": [name]}
    raise TypeError(f"no sample for {annotation!r} ({name})")


def sample(model: type[M]) -> M:
    hints = typing.get_type_hints(model, include_extras=True)
    data = {name: _value(hints[name], name) for name in model.model_fields}
    if "event_id" in data:
        data["event_id"] = "7c1d6a52-0c0e-4c8d-9a55-5b7a4f1f8c1e"
    return model.model_validate(data)


def variants(model: type[M]) -> list[M]:
    """``sample(model)`` in full, and with every optional field that defaults to None empty."""
    full = sample(model)
    bare = {
        name: None
        for name, info in model.model_fields.items()
        if not info.is_required() and info.default is None
    }
    return [full, full.model_copy(update=bare)]

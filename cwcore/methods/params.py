"""Parameter checks the method handlers share: a handler reads its JSON params with these and
answers :class:`~cwcore.errors.InvalidInput` (naming the parameter) for a value of the wrong
type, before it does any work."""

from __future__ import annotations

from typing import Any

from cwcore.errors import InvalidInput


def param_str(params: dict[str, Any], name: str, default: str | None = None) -> str | None:
    """``params[name]`` (``default`` when absent); :class:`InvalidInput` unless a string."""
    value = params.get(name, default)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


def required_str(params: dict[str, Any], name: str, what: str = "") -> str:
    """A non-empty string parameter; :class:`InvalidInput` ``NAME (WHAT) is required`` when it
    is absent or empty."""
    value = param_str(params, name)
    if not value:
        raise InvalidInput(f"{name}{f' ({what})' if what else ''} is required")
    return value


def param_bool(params: dict[str, Any], name: str, default: bool, message: str = "") -> bool:
    """``params[name]`` (``default`` when absent); :class:`InvalidInput` unless a boolean
    (``message``, or ``NAME must be a boolean``)."""
    value = params.get(name, default)
    if not isinstance(value, bool):
        raise InvalidInput(message or f"{name} must be a boolean")
    return value


def param_int(params: dict[str, Any], name: str, default: int) -> int:
    """``params[name]`` (``default`` when absent); :class:`InvalidInput` unless an integer (a
    boolean is not one)."""
    value = params.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"{name} must be an integer")
    return value

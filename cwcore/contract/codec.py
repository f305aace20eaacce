"""JSON derived from a record's field declarations: one small codec instead of a hand-written
``to_json``/``from_json`` pair per record.

A record is a frozen dataclass that inherits :class:`Record`. Its JSON object has one key per
field, in declaration order, named by the field in camelCase (``message_key`` → ``messageKey``)
unless :func:`field` gives another ``name``. Values are written as they are, but:

* a nested record → its own JSON (its class's ``to_json``, so a record may still specialise);
* a tuple or list → a JSON array of the items' JSON; a mapping → an object of the values' JSON;
* ``None`` → ``null``, or no key at all for a field declared ``omit_none=True`` (the answer has
  always left such keys out when empty);
* a field declared ``skip=True`` is not written (e.g. a key that the enclosing object uses as
  the member name) and must have a default or be filled by the enclosing record;
* a ``flatten=True`` field's record writes its keys into the enclosing object; ``pairs()`` is a
  tuple of ``(key, value)`` written as an object; ``encode=``/``decode=`` say the rest.

A request is read with :meth:`Record.parse`, which also checks each value's type against the
annotation (``invalid-input`` naming the key) before a handler sees it.

Reading back (:meth:`Record.from_json`) follows the field's annotation: ``X | None``, ``tuple[X,
...]``, fixed tuples, ``dict[str, X]`` and nested records are rebuilt; any other value is taken as
it is. A key that is absent takes the field's default (a field without one is required: its
absence is a :class:`KeyError`, as a malformed answer always was). ``from_json(x).to_json() == x``
as parsed JSON for every answer the engine writes; key order is the codec's (declaration order),
and golden files compare parsed JSON, never bytes.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self, dataclass_transform

from cwcore.errors import InvalidInput

_NAME = "cw.json"
_OMIT = "cw.omit_none"
_SKIP = "cw.skip"
_DECODE = "cw.decode"
_ENCODE = "cw.encode"
_FLATTEN = "cw.flatten"


def camel(name: str) -> str:
    """``message_key`` → ``messageKey`` (a leading or doubled underscore is kept as is)."""
    head, *rest = name.split("_")
    if not head or any(not part for part in rest):
        return name
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def field(
    *,
    name: str | None = None,
    omit_none: bool = False,
    skip: bool = False,
    decode: Callable[[Any], Any] | None = None,
    encode: Callable[[Any], Any] | None = None,
    flatten: bool = False,
    default: Any = dataclasses.MISSING,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
    compare: bool = True,
) -> Any:
    """A dataclass field with its JSON declaration: ``name`` (the key, default camelCase of the
    attribute), ``omit_none`` (no key when the value is ``None``), ``skip`` (never written) and
    ``decode``/``encode`` (how to read the JSON value back and write it, where the annotation
    cannot say: a union of records, pairs written as an object; ``None`` stays ``None`` without
    calling either). A ``flatten`` field holds a record whose keys are written into the enclosing
    object at the field's place (a decision's head fields first) and read back from it."""
    metadata = {
        _NAME: name,
        _OMIT: omit_none,
        _SKIP: skip,
        _DECODE: decode,
        _ENCODE: encode,
        _FLATTEN: flatten,
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(
            default_factory=default_factory, compare=compare, metadata=metadata
        )
    return dataclasses.field(default=default, compare=compare, metadata=metadata)


@dataclasses.dataclass(frozen=True, slots=True)
class _Slot:
    attr: str
    key: str
    omit_none: bool
    skip: bool
    flatten: bool
    required: bool
    decode: Callable[[Any], Any]
    encode: Callable[[Any], Any]


def encode(value: Any) -> Any:
    """The JSON value of ``value`` (records, sequences and mappings at any depth)."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, (tuple, list)):
        return [encode(item) for item in value]
    if isinstance(value, Mapping):
        return {key: encode(item) for key, item in value.items()}
    return value


def _same(value: Any) -> Any:
    return value


def _decoder(annotation: Any) -> Callable[[Any], Any]:
    """How to rebuild a value of type ``annotation`` from its JSON."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        if len(present) == 1:
            inner = _decoder(present[0])
            return lambda value: None if value is None else inner(value)
        return _same
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _decoder(args[0])
            return lambda value: tuple(item(v) for v in value)
        if args:
            items = [_decoder(arg) for arg in args]
            return lambda value: tuple(d(v) for d, v in zip(items, value, strict=True))
        return tuple
    if origin in (dict, Mapping) and len(args) == 2:
        member = _decoder(args[1])
        return lambda value: {key: member(v) for key, v in value.items()}
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return annotation.from_json
    return _same


def _or_none(decode: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else decode(value)


#: Each record class's field plan, built on first use (annotations resolve only once the
#: defining module has finished loading).
_PLANS: dict[type, tuple[_Slot, ...]] = {}


#: Each record class's resolved annotations and request checks, built on first use (resolving
#: annotations costs more than parsing a small request; a request is parsed on every call).
_HINTS: dict[type, dict[str, Any]] = {}
_CHECKS: dict[type, dict[str, Callable[[str, Any], Any]]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _checks(cls: type) -> dict[str, Callable[[str, Any], Any]]:
    checks = _CHECKS.get(cls)
    if checks is None:
        checks = _CHECKS[cls] = {name: _checker(kind) for name, kind in _hints(cls).items()}
    return checks


def _slots(cls: type) -> tuple[_Slot, ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _plan(cls)
    return plan


def _plan(cls: type) -> tuple[_Slot, ...]:
    hints = _hints(cls)
    snake = getattr(cls, "__cw_keys__", "camel") == "snake"
    slots = []
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        custom = f.metadata.get(_DECODE)
        decode = _decoder(hints[f.name]) if custom is None else _or_none(custom)
        writer = f.metadata.get(_ENCODE)
        slots.append(
            _Slot(
                attr=f.name,
                key=f.metadata.get(_NAME) or (f.name if snake else camel(f.name)),
                omit_none=bool(f.metadata.get(_OMIT)),
                skip=bool(f.metadata.get(_SKIP)),
                flatten=bool(f.metadata.get(_FLATTEN)),
                required=required,
                decode=decode,
                encode=encode if writer is None else _or_none(writer),
            )
        )
    return tuple(slots)


def pairs(
    value: Callable[[Any], Any] = _same,
    *,
    name: str | None = None,
    default: Any = dataclasses.MISSING,
) -> Any:
    """A field holding a tuple of ``(key, value)`` pairs, written as one JSON object (key order
    kept); ``value`` rebuilds each member's value (e.g. ``tuple`` for id lists). Required unless
    a ``default`` is given."""

    def write(items: Any) -> dict[str, Any]:
        return {key: encode(item) for key, item in items}

    def read(body: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        return tuple((key, value(item)) for key, item in body.items())

    return field(name=name, encode=write, decode=read, default=default)


@dataclass_transform(frozen_default=True, field_specifiers=(field, pairs))
class Record:
    """Base of the records whose JSON the codec derives (see the module docstring). A subclass
    is made a frozen dataclass when it is defined (no decorator); ``to_json``/``from_json`` may
    be overridden where an answer's shape is not one key per field, calling
    :func:`fields_json`/:func:`fields_from_json` for the rest."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]

    #: How a field's name becomes its key when :func:`field` gives none: ``camel``
    #: (``message_key`` → ``messageKey``) or ``snake`` (the name as it is, as the daemon's own
    #: status answers). Set per class: ``class DaemonStatus(Record, keys="snake")``.
    __cw_keys__: ClassVar[str] = "camel"

    def __init_subclass__(cls, *, keys: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if keys is not None:
            if keys not in ("camel", "snake"):
                raise TypeError(f"keys must be 'camel' or 'snake', not {keys!r}")
            cls.__cw_keys__ = keys
        dataclasses.dataclass(frozen=True)(cls)

    def to_json(self) -> dict[str, Any]:
        return fields_json(self)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        return cls(**fields_from_json(cls, body))

    @classmethod
    def parse(cls, params: Any, *, where: str = "") -> Self:
        """The record a request's JSON ``params`` names, checked at the edge: a value of the
        wrong type or a missing required key is :class:`~cwcore.errors.InvalidInput` naming the
        key (``where`` prefixes it for a nested record); keys the record does not declare are
        ignored, as the engine always has. Bounds beyond the type are the record's
        ``__post_init__``'s to check."""
        if not isinstance(params, Mapping):
            raise InvalidInput(f"{where.rstrip('.') or 'params'} must be an object")
        checks = _checks(cls)
        kwargs: dict[str, Any] = {}
        for slot in _slots(cls):
            if slot.skip or slot.flatten:
                continue
            key = where + slot.key
            if slot.key in params:
                kwargs[slot.attr] = checks[slot.attr](key, params[slot.key])
            elif slot.required:
                raise InvalidInput(f"{key} is required")
        return cls(**kwargs)


def fields_json(record: Record) -> dict[str, Any]:
    """The record's fields as a JSON object (declaration order, declarations applied)."""
    body: dict[str, Any] = {}
    for slot in _slots(type(record)):
        if slot.skip:
            continue
        value = getattr(record, slot.attr)
        if value is None and slot.omit_none:
            continue
        if slot.flatten:
            body.update(slot.encode(value))
            continue
        body[slot.key] = slot.encode(value)
    return body


def _nested_keys(cls: type, slot: _Slot) -> tuple[str, ...]:
    """The keys a flattened field's record writes into its enclosing object."""
    annotation = _hints(cls)[slot.attr]
    kinds = typing.get_args(annotation) or (annotation,)
    nested = next(k for k in kinds if isinstance(k, type) and issubclass(k, Record))
    return tuple(s.key for s in _slots(nested) if not s.skip)


def _checker(annotation: Any) -> Callable[[str, Any], Any]:
    """How to check (and rebuild) a request value of type ``annotation``: the value, or
    :class:`InvalidInput` naming the key. Strings, integers (a boolean is not one), numbers,
    booleans, ``X | None``, ``tuple[X, ...]`` and nested records."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        inner = _checker(present[0]) if len(present) == 1 else None

        def optional(key: str, value: Any) -> Any:
            if value is None:
                return None
            if inner is None:
                raise InvalidInput(f"{key} has a type no request field can take")
            return inner(key, value)

        return optional
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _checker(args[0])

        def sequence(key: str, value: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise InvalidInput(f"{key} must be a list")
            return tuple(item(key, v) for v in value)

        return sequence
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return lambda key, value: annotation.parse(value, where=f"{key}.")
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
    if annotation in names:
        want, kinds = names[annotation], _KINDS[annotation]

        def scalar(key: str, value: Any) -> Any:
            if isinstance(value, bool) and annotation is not bool:
                raise InvalidInput(f"{key} must be {want}")
            if not isinstance(value, kinds):
                raise InvalidInput(f"{key} must be {want}")
            return value

        return scalar
    return lambda key, value: value


#: The JSON values each scalar annotation accepts (a whole number is a number too).
_KINDS: dict[Any, tuple[type, ...]] = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def fields_from_json(cls: type[Record], body: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``cls`` from its JSON object: skipped and absent optional fields
    are left to their defaults; an absent required field raises :class:`KeyError`."""
    kwargs: dict[str, Any] = {}
    for slot in _slots(cls):
        if slot.skip:
            continue
        if slot.flatten:
            if slot.omit_none and not any(key in body for key in _nested_keys(cls, slot)):
                continue  # an absent optional part: none of its keys are there
            kwargs[slot.attr] = slot.decode(body)
        elif slot.key in body:
            kwargs[slot.attr] = slot.decode(body[slot.key])
        elif slot.required:
            raise KeyError(slot.key)
    return kwargs

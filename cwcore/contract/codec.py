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
annotation and the field's declared bounds (``invalid-input`` naming the key and the bound)
before a handler sees it; building a record that declares bounds checks them too, so a face is
refused before it sends a bad request. A request field may declare ``doc`` (what it means to a
caller), ``minimum``/``maximum`` (a number's range, inclusive) and ``min_length``/``max_length``
(a string's length in characters, not bytes; for a ``tuple[str, ...]`` each item's). The same
declarations give the request's JSON Schema (:meth:`Record.json_schema`), which the MCP tools
offer as their ``inputSchema``: what the schema accepts, the record parses, and a value out of a
declared bound is refused by both.

Reading back (:meth:`Record.from_json`) follows the field's annotation: ``X | None``, ``tuple[X,
...]``, fixed tuples, ``dict[str, X]`` and nested records are rebuilt; any other value is taken as
it is. A key that is absent takes the field's default (a field without one is required: its
absence is a :class:`KeyError`, as a malformed answer always was). ``from_json(x).to_json() == x``
as parsed JSON for every answer the engine writes; key order is the codec's (declaration order),
and golden files compare parsed JSON, never bytes.
"""

from __future__ import annotations

import dataclasses
import functools
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
_DOC = "cw.doc"
_BOUNDS = "cw.bounds"


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
    doc: str | None = None,
    minimum: int | float | None = None,
    maximum: int | float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
) -> Any:
    """A dataclass field with its JSON declaration: ``name`` (the key, default camelCase of the
    attribute), ``omit_none`` (no key when the value is ``None``), ``skip`` (never written) and
    ``decode``/``encode`` (how to read the JSON value back and write it, where the annotation
    cannot say: a union of records, pairs written as an object; ``None`` stays ``None`` without
    calling either). A ``flatten`` field holds a record whose keys are written into the enclosing
    object at the field's place (a decision's head fields first) and read back from it.

    A request field may also say what it means (``doc``, its JSON Schema ``description``) and
    its bounds, which :meth:`Record.parse` enforces and :func:`json_schema` publishes:
    ``minimum``/``maximum`` (inclusive, for an ``int`` or ``float``) and
    ``min_length``/``max_length`` (a ``str``'s length in characters — code points, as JSON
    Schema counts them — or each item's for a ``tuple[str, ...]``)."""
    bounds = {
        key: value
        for key, value in (
            ("minimum", minimum),
            ("maximum", maximum),
            ("minLength", min_length),
            ("maxLength", max_length),
        )
        if value is not None
    }
    metadata = {
        _DOC: doc,
        _BOUNDS: bounds,
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
        hints = _hints(cls)
        checks = _CHECKS[cls] = {
            f.name: _checker(hints[f.name], f.metadata.get(_BOUNDS) or {})
            for f in dataclasses.fields(cls)
        }
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
        bounded = [f.name for f in dataclasses.fields(cls) if f.metadata.get(_BOUNDS)]
        if bounded:
            _check_bounds_on_init(cls, tuple(bounded))

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
        ignored, as the engine always has. A value out of its field's declared bounds
        (:func:`field`) is refused naming the key and the bound — by the parse, and by building
        the record directly too; rules across fields are the record's ``__post_init__``'s to
        check."""
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

    @classmethod
    def check_present(cls, params: Mapping[str, Any]) -> None:
        """Check the keys of ``params`` that are there, as :meth:`parse` would (type and
        bounds), without asking for the missing ones or building the record: what a face can
        refuse before it has every value (e.g. before it opens a store)."""
        checks = _checks(cls)
        for slot in _slots(cls):
            if not (slot.skip or slot.flatten) and slot.key in params:
                checks[slot.attr](slot.key, params[slot.key])

    @classmethod
    def json_schema(cls, *, without: tuple[str, ...] = ()) -> dict[str, Any]:
        """This request's JSON Schema (draft 2020-12), derived from its declarations: one
        property per key (the keys in ``without`` left out: those a host fills in itself),
        typed from the annotation, with the field's ``doc``, bounds and default (when it is a
        JSON scalar), the keys without a default ``required``, and no other key allowed. An
        ``X | None`` field whose default is None offers ``X`` only (leaving the key out says
        None); one without that default offers ``null`` too."""
        hints = _hints(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for f, slot in zip(dataclasses.fields(cls), _slots(cls), strict=True):
            if slot.skip or slot.flatten or slot.key in without:
                continue
            prop = _schema(hints[f.name], f.metadata.get(_BOUNDS) or {}, f.default is not None)
            if f.default is not dataclasses.MISSING and isinstance(
                f.default, str | int | float | bool
            ):
                prop["default"] = f.default
            if f.metadata.get(_DOC):
                prop["description"] = f.metadata[_DOC]
            properties[slot.key] = prop
            if slot.required:
                required.append(slot.key)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema


def _check_bounds_on_init(cls: type[Record], bounded: tuple[str, ...]) -> None:
    """Make building a ``cls`` check its ``bounded`` fields as :meth:`Record.parse` does, so a
    face that builds a request out of bounds is refused before it sends it (the engine's parse
    would refuse it anyway). Only records that declare bounds pay for it: the answers do not."""
    init = cls.__init__

    @functools.wraps(init)
    def checked(self: Record, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        checks, keys = _checks(cls), {s.attr: s.key for s in _slots(cls)}
        for attr in bounded:
            checks[attr](keys[attr], getattr(self, attr))

    setattr(cls, "__init__", checked)  # noqa: B010 (mypy refuses assigning a method)


#: The JSON Schema type of each scalar annotation.
_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema(annotation: Any, bounds: Mapping[str, Any], nullable: bool) -> dict[str, Any]:
    """The JSON Schema of a request value of type ``annotation`` with ``bounds`` (on the
    scalar: a sequence's items carry them); ``nullable`` says whether an ``X | None`` offers
    ``null``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        if len(present) != 1:
            raise TypeError(f"no JSON Schema for the request type {annotation!r}")
        inner = _schema(present[0], bounds, nullable)
        if nullable and isinstance(inner.get("type"), str):
            inner["type"] = [inner["type"], "null"]
        return inner
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": _schema(args[0], bounds, nullable)}
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return annotation.json_schema()
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation], **bounds}
    raise TypeError(f"no JSON Schema for the request type {annotation!r}")


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


def _checker(annotation: Any, bounds: Mapping[str, Any] | None = None) -> Callable[[str, Any], Any]:
    """How to check (and rebuild) a request value of type ``annotation``: the value, or
    :class:`InvalidInput` naming the key. Strings, integers (a boolean is not one), numbers,
    booleans, ``X | None``, ``tuple[X, ...]`` and nested records; ``bounds`` (the field's
    declared ones) apply to the scalar (each item of a sequence)."""
    bounds = bounds or {}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        present = [arg for arg in args if arg is not type(None)]
        inner = _checker(present[0], bounds) if len(present) == 1 else None

        def optional(key: str, value: Any) -> Any:
            if value is None:
                return None
            if inner is None:
                raise InvalidInput(f"{key} has a type no request field can take")
            return inner(key, value)

        return optional
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _checker(args[0], bounds)

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
        within = _within(bounds)

        def scalar(key: str, value: Any) -> Any:
            if isinstance(value, bool) and annotation is not bool:
                raise InvalidInput(f"{key} must be {want}")
            if not isinstance(value, kinds):
                raise InvalidInput(f"{key} must be {want}")
            if within is not None:
                within(key, value)
            return value

        return scalar
    return lambda key, value: value


def _within(bounds: Mapping[str, Any]) -> Callable[[str, Any], None] | None:
    """The check of a scalar's declared ``bounds`` (None when it has none): a number's range,
    a string's length in characters; the message names the key and the bound, never the
    value (which may be long or hostile)."""
    if not bounds:
        return None
    low, high = bounds.get("minimum"), bounds.get("maximum")
    shortest, longest = bounds.get("minLength"), bounds.get("maxLength")

    def within(key: str, value: Any) -> None:
        if isinstance(value, str):
            if shortest is not None and len(value) < shortest:
                if shortest == 1:
                    raise InvalidInput(f"{key} must not be empty")
                raise InvalidInput(f"{key} must be at least {shortest} characters long")
            if longest is not None and len(value) > longest:
                raise InvalidInput(
                    f"{key} is {len(value)} characters long; at most {longest} are allowed"
                )
            return
        if (low is not None and value < low) or (high is not None and value > high):
            if low is not None and high is not None:
                raise InvalidInput(f"{key} must be from {low} to {high}")
            if low is not None:
                raise InvalidInput(f"{key} must be at least {low}")
            raise InvalidInput(f"{key} must be at most {high}")

    return within


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

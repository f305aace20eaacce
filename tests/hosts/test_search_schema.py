"""One declaration of the search request: the MCP tools' JSON schemas are generated from the
fields the engine's validator checks, so the two accept and refuse the same requests.

For each property of the search and gather tool schemas the test tries the values at its
bounds and just past them, each of its choices and a wrong type, and asks both the JSON schema
(as the MCP server validates arguments) and :func:`parse_request` (as the engine and the CLI's
pre-open check validate them)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from cwcore.contract.search import FIELD, FIELDS, json_schema, parse_request
from cwcore.errors import CwError
from cwcore.hosts.mcp_server import GATHER_SCHEMA, SEARCH_SCHEMA


def _schema_accepts(schema: dict[str, Any], args: dict[str, Any]) -> bool:
    return not list(jsonschema.Draft202012Validator(schema).iter_errors(args))


def _validator_accepts(args: dict[str, Any]) -> bool:
    try:
        parse_request(args)
    except CwError:
        return False
    return True


def _cases(name: str, prop: dict[str, Any]) -> list[Any]:
    """Values at and past the property's bounds, its choices, and a value of the wrong type."""
    out: list[Any] = []
    kind = prop["type"][0] if isinstance(prop["type"], list) else prop["type"]
    if "minimum" in prop:
        out += [prop["minimum"], prop["minimum"] - 1]
    if "maximum" in prop:
        out += [prop["maximum"], prop["maximum"] + 1]
    if "maxLength" in prop:
        out += ["q" * prop["maxLength"], "q" * (prop["maxLength"] + 1)]
    if "maxItems" in prop:
        out += [[f"k{i}" for i in range(n)] for n in (prop["maxItems"], prop["maxItems"] + 1)]
    if "enum" in prop:
        out += [c for c in prop["enum"] if c is not None] + ["bogus"]
    out.append({"string": 7, "integer": "7", "array": "k", "boolean": "yes"}[kind])
    if kind == "integer":
        out.append(True)  # JSON Schema and the validator both refuse booleans as integers
    return out


def _engine_side(args: dict[str, Any]) -> dict[str, Any]:
    """The request as the engine gets it: the MCP server adds its bound session to a session
    scope (a tool caller cannot name sessions)."""
    return {**args, "sessions": ["s1"]} if args.get("scope") == "session" else args


@pytest.mark.parametrize("schema", [SEARCH_SCHEMA, GATHER_SCHEMA], ids=["search", "gather"])
def test_the_mcp_schema_and_the_validator_agree_at_every_bound(schema: dict[str, Any]) -> None:
    checked = 0
    for name, prop in schema["properties"].items():
        if name not in FIELD:
            continue  # the tool's own argument (gather's neighbors), not a request field
        for value in _cases(name, prop):
            args = {"query": "pool", name: value}
            agree = _schema_accepts(schema, args) == _validator_accepts(_engine_side(args))
            assert agree, (name, value)
            checked += 1
    assert checked >= 10  # every bound of every request property was tried
    # A field no schema offers is refused by both.
    assert not _schema_accepts(schema, {"query": "pool", "nonsense": 1})
    assert not _validator_accepts({"query": "pool", "nonsense": 1})


def test_every_search_schema_property_is_generated_from_the_declaration() -> None:
    for name, prop in SEARCH_SCHEMA["properties"].items():
        generated = FIELD[name].json_schema()
        for key in ("type", "enum", "minimum", "maximum", "maxLength", "maxItems", "items"):
            assert prop.get(key) == generated.get(key), (name, key)
    assert SEARCH_SCHEMA["additionalProperties"] is False
    # The declaration names every field the validator knows, and nothing else.
    every = json_schema(tuple(f.name for f in FIELDS))["properties"]
    assert set(every) == set(FIELD)
    request = {"query": "pool", "limit": 3, "rerank": False, "group": "session", "id": 4}
    assert _schema_accepts(json_schema(tuple(FIELD)), request) and _validator_accepts(request)

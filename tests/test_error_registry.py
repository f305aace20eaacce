"""Every CwError subclass is registered with its code and exit status by construction.

The daemon sends an error as its JSON body and the client rebuilds it with ``from_json``; a
class the registry did not know came back as ``internal`` (exit 1) — ``LocatorInvalid``, defined
outside ``cwcore/errors.py``, did. These tests import every ``cwcore`` module and walk the whole
hierarchy, so a new error anywhere is checked without being listed here.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import cwcore
from cwcore import errors


def _all_subclasses(cls: type[errors.CwError]) -> list[type[errors.CwError]]:
    found: list[type[errors.CwError]] = []
    stack = [cls]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.append(sub)
            stack.append(sub)
    return found


def _import_every_cwcore_module() -> None:
    for info in pkgutil.walk_packages(cwcore.__path__, "cwcore."):
        if ".model." in info.name or info.name.endswith(".model"):
            continue  # the packaged embedding model folder holds data, not code
        importlib.import_module(info.name)


_import_every_cwcore_module()
_CLASSES: list[type[errors.CwError]] = [errors.CwError, *_all_subclasses(errors.CwError)]


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda c: c.__qualname__)
def test_every_error_survives_the_wire(cls: type[errors.CwError]) -> None:
    sent = cls("message", field="value")
    back = errors.from_json(sent.to_json())
    assert back.code == sent.code
    assert back.exit_code == sent.exit_code
    assert back.message == "message"
    assert back.details == {"field": "value"}
    if "code" in cls.__dict__:
        assert type(back) is cls


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda c: c.__qualname__)
def test_every_declared_code_is_in_the_documented_table(cls: type[errors.CwError]) -> None:
    """EXIT_CODES is what docs/cli.md documents (tests/test_docs.py): a code declared in another
    module would be missing from it, so codes are declared in cwcore/errors.py only."""
    if "code" in cls.__dict__:
        assert cls.__module__ == "cwcore.errors", (
            f"{cls.__qualname__} declares a code outside errors"
        )
    assert errors.EXIT_CODES[cls.code] == cls.exit_code


def test_codes_are_unique_and_kebab_case() -> None:
    declared = [c.code for c in _CLASSES if "code" in c.__dict__]
    assert len(declared) == len(set(declared))
    assert all(code.replace("-", "").isalpha() and code.islower() for code in declared)
    assert set(declared) == set(errors.registered())


def test_a_second_class_cannot_take_a_code() -> None:
    with pytest.raises(TypeError, match="not-found"):

        class Again(errors.CwError):
            code = "not-found"


def test_locator_invalid_crosses_the_wire_as_itself() -> None:
    """Found in two reviews: it came back as ``internal``, exit 1, instead of exit 2."""
    back = errors.from_json(errors.LocatorInvalid("not a cw locator").to_json())
    assert isinstance(back, errors.InvalidInput)
    assert (back.code, back.exit_code) == ("locator-invalid", 2)

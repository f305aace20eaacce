"""The project-bound reads the MCP server uses (:mod:`cwcore.reads`):
``bound.sessions``, ``bound.messages``, ``bound.memory``. Each takes the caller's binding —
``project`` (required) and ``boundSession`` (optional) — and never answers beyond it."""

from __future__ import annotations

import threading
from typing import Any

from cwcore import reads
from cwcore.engine import Emit, Engine, MiB
from cwcore.errors import InvalidInput
from cwcore.methods.params import param_str, required_str
from cwcore.methods.registry import Method


def _binding(params: dict[str, Any]) -> tuple[str, str | None]:
    project = required_str(params, "project", "the bound project")
    return project, param_str(params, "boundSession") or None


def _sessions(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    project, _ = _binding(params)
    return reads.sessions_page(
        engine.reader,
        project,
        agent=param_str(params, "agent"),
        since=param_str(params, "since"),
        limit=params.get("limit", reads.DEFAULT_RANGE),
        cursor=param_str(params, "cursor"),
    ).to_json()


def _messages(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    project, bound = _binding(params)
    return reads.messages_range(
        engine.reader,
        required_str(params, "session", "a session id or unique prefix"),
        project,
        bound=bound,
        start=params.get("from", 1),
        end=params.get("to"),
    ).to_json()


def _memory(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    project, bound = _binding(params)
    prompt = params.get("prompt")
    if not isinstance(prompt, str):
        raise InvalidInput("prompt must be a string")
    return reads.memory_context(engine, prompt, project, bound=bound).to_json()


METHODS: tuple[Method, ...] = (
    Method("bound.sessions", _sessions),
    Method("bound.messages", _messages, output_bytes=2 * MiB),
    Method("bound.memory", _memory),
)

"""Default retrieval limits for Markdown evidence.

Settings-like constants: the reads and :func:`cwcore.markdown.hits.markdown_fields` enforce them.
``VECTOR`` is kept for the semantic tier (cw reads existing vectors only; none exist for
Markdown yet), ``LEXICAL`` caps the lexical evidence list, ``CANDIDATES`` the fused pool,
``FINAL`` the default number of hits returned.
"""

from __future__ import annotations

VECTOR = 30  # vector candidates
LEXICAL = 30  # lexical candidates
CANDIDATES = 40  # fused candidate pool
FINAL = 6  # hits returned by default
RESULT_CHARS = 16_000  # characters of one result (a read, or all hit excerpts together)
HIT_CHARS = 3_000  # characters of one hit's excerpt
TOOL_RESULT_CHARS = 64_000  # the most characters any one tool result may carry
TOOL_RESULT_HITS = 20  # the most hits any one tool result may carry


def clamp_chars(value: object, default: int = RESULT_CHARS) -> int:
    """A requested character budget, validated: 1 to :data:`TOOL_RESULT_CHARS`."""
    from cwcore.errors import InvalidInput

    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInput("maxChars must be a positive integer")
    if value > TOOL_RESULT_CHARS:
        raise InvalidInput(f"maxChars is {value}; a tool result holds at most {TOOL_RESULT_CHARS}")
    return value


def clamp_hits(value: object, default: int = FINAL) -> int:
    """A requested hit count, validated: 1 to :data:`TOOL_RESULT_HITS`."""
    from cwcore.errors import InvalidInput

    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInput("limit must be a positive integer")
    if value > TOOL_RESULT_HITS:
        raise InvalidInput(f"limit is {value}; a tool result holds at most {TOOL_RESULT_HITS} hits")
    return value

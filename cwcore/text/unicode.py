"""Text that is not valid Unicode, as a request may carry it.

JSON can spell a lone UTF-16 surrogate (a message cut inside an emoji, ``"passed \\ud83d"``),
which Python decodes into a ``str`` no UTF-8 encoder accepts. Imported text has each one
replaced by U+FFFD (:mod:`cwcore.importers.surrogates`); text a request brings to be read as
the archive reads (a preflight message, a query) is replaced the same way, so it matches what
was stored and never stops the call.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (``text`` itself when it has none)."""
    return LONE_SURROGATE.sub(REPLACEMENT, text)

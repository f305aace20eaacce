"""A deterministic, conservative token estimator for model-visible budgets.

Without a model tokenizer, model-visible budgets use this estimate as a hard bound. It charges:

* plain ASCII words (letters, at most an initial capital): one token per 4 letters, rounded up;
* upper-case ASCII words (``HISTORICAL``, ``JSON``): one token per 2 letters, rounded up;
* digit runs: one token per 2 digits, rounded up;
* identifiers and opaque strings (camelCase, snake_case, letters mixed with digits, hex,
  base64): one token per byte;
* punctuation and symbols: one token each — so JSON escapes (``\\n``, ``\\"``, ``\\u00e9``) are
  charged character by character;
* CJK and every other non-ASCII character: one token per UTF-8 byte;
* white space: free.

It is an upper bound of the lexical tokenizer's term count (a property test checks this).
"""

from __future__ import annotations

import re

_RUN = re.compile(r"[A-Za-z0-9_]+|\s+|.", re.DOTALL)
_INNER_CAPITAL = re.compile(r".[A-Z]")


def estimate(text: str) -> int:
    """Conservative model-token count of ``text`` (see the module docstring)."""
    total = 0
    for m in _RUN.finditer(text):
        run = m.group()
        first = run[0]
        if first.isspace():
            continue
        if not first.isascii():
            total += len(run.encode("utf-8", "surrogatepass"))
        elif run.isalpha() and not _INNER_CAPITAL.search(run):
            total += -(-len(run) // 4)
        elif (run.isalpha() and run.isupper()) or run.isdigit():
            total += -(-len(run) // 2)
        elif len(run) > 1:
            total += len(run)  # identifiers (camelCase, snake_case, hex, base64): by byte
        else:
            total += 1
    return total

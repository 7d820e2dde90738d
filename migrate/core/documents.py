"""The versioned JSON documents kmigrate writes and reads back (plans, verify snapshots). Pure.

Every reader first makes the same three checks, each refused with a one-line ``BadInput`` in the
reader's own words: the text is JSON, the object is one of ours (its marker field), and it is of
the format version this kmigrate reads.
"""

from __future__ import annotations

import json
from typing import Callable

from migrate.errors import BadInput


def parse_document(text: str, marker: tuple[str, str], version: int, *, not_json: Callable[[Exception], str],
                   not_ours: str, other_version: Callable[[object], str]) -> dict:
    """The JSON object in ``text`` once it is ours (``doc[marker[0]] == marker[1]``) and of ``format_version`` ``version``.

    >>> parse_document('{"kind": "x", "format_version": 1}', ("kind", "x"), 1,
    ...                not_json=str, not_ours="not ours", other_version=str)
    {'kind': 'x', 'format_version': 1}
    """
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadInput(not_json(exc)) from None
    key, value = marker
    if not isinstance(doc, dict) or doc.get(key) != value:
        raise BadInput(not_ours)
    if doc.get("format_version") != version:
        raise BadInput(other_version(doc.get("format_version")))
    return doc

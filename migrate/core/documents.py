"""The versioned JSON documents kmigrate writes and reads back (plans, verify snapshots). Pure.

Every reader first makes the same three checks, each refused with a one-line ``BadInput`` in the
reader's own words (its :class:`Wording`): the text is JSON, the object is one of ours (its marker
field), and it is of the format version this kmigrate reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from migrate.errors import BadInput


@dataclass(frozen=True)
class Wording:
    """What a reader says when a document is not JSON, not one of ours, or of another format version:
    ``str.format`` templates of ``source`` (the file), ``exc`` (the JSON error), ``found`` (the version
    read) and ``version`` (the one this kmigrate reads)."""

    not_json: str
    not_ours: str
    other_version: str


def parse_document(text: str, source: str, marker: tuple[str, str], version: int | tuple[int, ...],
                   wording: Wording) -> dict:
    """The JSON object in ``text`` once it is ours (``doc[marker[0]] == marker[1]``) and of ``format_version``
    ``version`` (or one of them, for a reader of several versions; ``{version}`` names the newest).

    >>> words = Wording("{source}: not JSON", "{source}: not ours", "{source}: version {found!r}, not {version}")
    >>> parse_document('{"kind": "x", "format_version": 1}', "f.json", ("kind", "x"), 1, words)
    {'kind': 'x', 'format_version': 1}
    >>> parse_document('{"kind": "x", "format_version": "2"}', "f.json", ("kind", "x"), 1, words)
    Traceback (most recent call last):
    migrate.errors.BadInput: f.json: version '2', not 1
    """
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadInput(wording.not_json.format(source=source, exc=exc)) from None
    key, value = marker
    if not isinstance(doc, dict) or doc.get(key) != value:
        raise BadInput(wording.not_ours.format(source=source))
    versions = version if isinstance(version, tuple) else (version,)
    found = doc.get("format_version")
    if type(found) is not int or found not in versions:
        raise BadInput(wording.other_version.format(source=source, found=found, version=max(versions)))
    return doc

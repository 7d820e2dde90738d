"""What a partition migration moves: the old -> new broker mapping, the topics selected, the plan id.

Parsers of the operator's ``--mapping``, ``--topics`` and ``--exclude`` (refusals are
:class:`~migrate.errors.BadInput` naming the option), and the plan id of a migration given by its
mapping alone. Pure.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from migrate.errors import BadInput

_MAPPING_ITEM = re.compile(r"^\s*(\d+)\s*[:=]\s*(\d+)\s*$")


def parse_mapping(text: str | None, option: str = "--mapping") -> dict[int, int]:
    """``"1:4,2:5,3:6"`` -> ``{1: 4, 2: 5, 3: 6}`` (old broker id -> new broker id).

    Refused (:class:`BadInput`): empty, unreadable items, an old id given twice, an id that is
    both old and new, two old brokers sent to the same new one.

    >>> parse_mapping("1:4, 2:5")
    {1: 4, 2: 5}
    """
    if text is None or not text.strip():
        raise BadInput(f"{option} is empty: give old:new broker ids, like 1:4,2:5,3:6")
    mapping: dict[int, int] = {}
    for item in text.split(","):
        m = _MAPPING_ITEM.match(item)
        if not m:
            raise BadInput(f"{option} {text!r}: {item.strip()!r} is not old:new broker ids; write e.g. 1:4,2:5,3:6")
        old, new = int(m.group(1)), int(m.group(2))
        if old in mapping:
            raise BadInput(f"{option} {text!r}: broker {old} is mapped twice; give each old broker one new id")
        mapping[old] = new
    check_mapping(mapping, option)
    return mapping


def check_mapping(mapping: Mapping[int, int], source: str = "--mapping") -> None:
    """Refuse a mapping that is empty, maps a broker onto itself or onto another old broker, or
    sends two old brokers to the same new one (the replication factor could not be kept)."""
    if not mapping:
        raise BadInput(f"{source} is empty: give old:new broker ids, like 1:4,2:5,3:6")
    both = sorted(set(mapping) & set(mapping.values()))
    if both:
        raise BadInput(f"{source}: broker {both[0]} is both an old and a new broker; map old brokers to new ids only")
    seen: dict[int, int] = {}
    for old, new in sorted(mapping.items()):
        if new in seen:
            raise BadInput(f"{source}: brokers {seen[new]} and {old} both map to {new}; give each old broker its own new broker")
        seen[new] = old


def compile_topic_filter(include: str | None, exclude: str | None) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """Compile ``--topics`` / ``--exclude`` (Python regular expressions, matched in full)."""
    out: list[re.Pattern[str] | None] = []
    for option, text in (("--topics", include), ("--exclude", exclude)):
        if text is None:
            out.append(None)
            continue
        try:
            out.append(re.compile(text))
        except re.error as exc:
            raise BadInput(f"{option} {text!r} is not a valid regular expression ({exc}): e.g. 'orders\\..*'") from None
    return out[0], out[1]


def select_topics(topics: Iterable[str], include: re.Pattern[str] | None, exclude: re.Pattern[str] | None) -> list[str]:
    """Topics matched in full by ``include`` (all when None) and not by ``exclude``, sorted."""
    return sorted(
        t for t in topics
        if (include is None or include.fullmatch(t)) and not (exclude is not None and exclude.fullmatch(t))
    )


def mapping_plan_id(mapping: Mapping[int, int]) -> str:
    """A stable plan id for a migration given only by its mapping: ``mapping-1.4-2.5-3.6``.

    Readable on purpose: the bookkeeping topic shows which migration a record belongs to.
    """
    return "mapping-" + "-".join(f"{o}.{n}" for o, n in sorted(mapping.items()))

"""The verify digest of records hashed in Python: the same two 64-bit hashes per record as the Spark job's
(``migrate.adapters.spark.job._record_hashes``, two-cluster form: offsets not hashed), so a digest made here
equals one made by Spark of the same records (``tests/integration/test_mirror_cutover.py`` proves it).

Spark's ``xxhash64(col1, col2, ...)`` starts from seed 42 and hashes each column with the previous column's
hash as the seed; a null column leaves the hash unchanged; a boolean is hashed as the 4-byte int 1 or 0,
bytes and strings (UTF-8) as their bytes, a timestamp as its 8-byte count of microseconds, an array or a
struct as its elements in order (the same chaining). xxhash64 of 4 or 8 bytes is Spark's ``hashInt`` /
``hashLong``: the little-endian bytes. The record's columns (:func:`record_hashes`)::

    key is null, key or b"", value is null, value or b"", [(header key, value is null, value or b"")...], timestamp

and the second hash puts the string ``"kmigrate-h2"`` first. Pure: no I/O (``xxhash`` is a hash function).

A compacted topic's digest is its table (:func:`table_digest`): for each key the last record, tombstones left out.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

import xxhash

SEED = 42
_MASK = (1 << 64) - 1
_H2 = b"kmigrate-h2"
_TRUE = (1).to_bytes(4, "little")
_FALSE = (0).to_bytes(4, "little")

Headers = Sequence[tuple[str, bytes | None]] | None


def _signed(h: int) -> int:
    return h - (1 << 64) if h >= 1 << 63 else h


def _chain(seed: int, key: bytes | None, value: bytes | None, headers: Headers, timestamp_ms: int) -> int:
    h = xxhash.xxh64_intdigest
    seed = h(_TRUE if key is None else _FALSE, seed)
    seed = h(key or b"", seed)
    seed = h(_TRUE if value is None else _FALSE, seed)
    seed = h(value or b"", seed)
    for name, data in headers or ():
        seed = h(name.encode() if isinstance(name, str) else bytes(name), seed)
        seed = h(_TRUE if data is None else _FALSE, seed)
        seed = h(data or b"", seed)
    return h((timestamp_ms * 1000 & _MASK).to_bytes(8, "little"), seed)


def record_hashes(key: bytes | None, value: bytes | None, headers: Headers, timestamp_ms: int) -> tuple[int, int]:
    """``(hash1, hash2)`` of one record, signed 64-bit, as Spark's job computes them.

    >>> record_hashes(b"k", b"v", [("h", None)], 1000) == record_hashes(b"k", b"v", [("h", None)], 1000)
    True
    >>> record_hashes(None, b"v", None, 0) != record_hashes(b"", b"v", None, 0)
    True
    """
    return (_signed(_chain(SEED, key, value, headers, timestamp_ms)),
            _signed(_chain(xxhash.xxh64_intdigest(_H2, SEED), key, value, headers, timestamp_ms)))


class Hashed(NamedTuple):
    """One record as verify keeps it: its offset, key (compacted topics' tables only), tombstone flag, hashes."""

    offset: int
    h1: int
    h2: int
    key: bytes | None = None
    tombstone: bool = False


def digest_sums(records: Iterable[Hashed]) -> tuple[int, int, int]:
    """``(records, sum of hash1, sum of hash2)``: exact integers, as the Spark job's chunk sums.

    >>> digest_sums([Hashed(0, 1, 2), Hashed(5, -3, 4)])
    (2, -2, 6)
    """
    n = s1 = s2 = 0
    for r in records:
        n, s1, s2 = n + 1, s1 + r.h1, s2 + r.h2
    return n, s1, s2


def table_digest(records: Iterable[Hashed]) -> tuple[int, int, int]:
    """A compacted partition's table as ``_digest_compacted`` digests it: the last record of each key (each
    null-key record on its own), tombstones left out; ``(live keys, sum of hash1, sum of hash2)``.

    >>> table_digest([Hashed(0, 1, 1, b"a"), Hashed(1, 2, 2, b"a"), Hashed(2, 5, 5, b"b", True)])
    (1, 2, 2)
    """
    last: dict[object, Hashed] = {}
    for r in records:
        last[("null", r.offset) if r.key is None else ("key", r.key)] = r
    return digest_sums(r for r in last.values() if not r.tombstone)

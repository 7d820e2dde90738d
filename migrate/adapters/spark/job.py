"""The PySpark job: read bounded offset ranges with Spark's Kafka source and digest them in Spark SQL.

Verify's one use of Spark (``migrate.runner.verify`` runs it in a session from ``adapters/spark``).
No record reaches Python: hashing and aggregation run in the JVM (``xxhash64`` per record, exact sums per chunk of
offsets), and the driver collects one small row per chunk (at most ``MAX_CHUNKS`` per partition); a partition's
digest is the exact sum of its chunks', so the chunks cost no second read.

Reads are bounded: every partition is assigned with an explicit ``startingOffsets`` and
``endingOffsets``, so records produced while the job runs are not read. The Kafka source makes one
Spark partition per Kafka partition, so the job spreads over as many executors as there are
partitions.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from migrate.adapters.spark.session import collect
from migrate.core.verify.compare import Alignment
from migrate.core.verify.snapshot import Chunk, Digest, ReadRange, Tail, chunk_grid


class RangeDigest(NamedTuple):
    """What the job found in one range: its digest, its tail, its chunks (plain partitions; None for
    compacted ones) and the first and last record's hash1 (across clusters only)."""

    digest: Digest
    tail: Tail
    chunks: tuple[Chunk, ...] | None = None
    edges: tuple[int | None, int | None] = (None, None)


# The Kafka consumer settings of every read (a user's --command-config may override them).
#
# * fetch.max.wait.ms: Spark's Kafka source asks for the partition's offset range (two ListOffsets
#   requests) after every poll, and a broker answers one connection's requests in order. At the end
#   of a range the consumer's next fetch finds no data and waits fetch.max.wait.ms (500 ms by
#   default) at the broker, and the ListOffsets waits behind it: half a second per partition
#   (measured: 200 partitions of 8,000 records read in 56 s with 500 ms, 16 s with 10 ms). While
#   records are there, a fetch is answered at once whatever this setting.
# * max.partition.fetch.bytes, max.poll.records: large enough that the per-poll round trips are
#   rare (2 MB: 2M records of 1 KB in 12 partitions read within 10% of 4 or 8 MB), small enough that
#   each running task holds a few MB (every task of a local master shares the driver's heap).
READ_OPTIONS = {
    "kafka.fetch.max.wait.ms": "10",
    "kafka.max.partition.fetch.bytes": str(2 << 20),
    "kafka.max.poll.records": "10000",
    "kafka.receive.buffer.bytes": str(1 << 20),
}


def _offsets_json(ranges: list[ReadRange], attr: str) -> str:
    out: dict[str, dict[str, int]] = {}
    for r in ranges:
        out.setdefault(r.topic, {})[str(r.partition)] = getattr(r, attr)
    return json.dumps(out)


def _read(spark, kafka_options: dict[str, str], ranges: list[ReadRange], isolation_level: str,
          start_attr: str = "read_from", end_attr: str = "end"):
    assign: dict[str, list[int]] = {}
    for r in ranges:
        assign.setdefault(r.topic, []).append(r.partition)
    reader = spark.read.format("kafka")
    options = {**READ_OPTIONS, **kafka_options}
    for k, v in options.items():
        reader = reader.option(k, v)
    return (reader.option("assign", json.dumps(assign))
            .option("startingOffsets", _offsets_json(ranges, start_attr))
            .option("endingOffsets", _offsets_json(ranges, end_attr))
            .option("includeHeaders", "true")
            .option("failOnDataLoss", "false")
            .option("kafka.isolation.level", isolation_level)
            .load())


def _record_hashes(df, include_offsets: bool):
    """Add ``h1`` and ``h2``: two independent 64-bit hashes of each record's content.

    Null and empty are told apart (a flag before each nullable field); header order counts, as in Kafka.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    # Types go to Spark as DataType objects and literals, never as type strings ("binary"): a string
    # goes through Spark's SQL parser, whose first use on a fresh JVM builds its grammar tables (about
    # 0.3 s, and as long again of the JIT compiling the parser). A DataType crosses as JSON.
    empty = F.lit(bytearray())
    no_headers = F.array().cast(T.ArrayType(T.StructType([T.StructField("key", T.StringType()),
                                                          T.StructField("value", T.BinaryType())])))
    headers = F.transform(
        F.coalesce(F.col("headers"), no_headers),
        lambda h: F.struct(h["key"], h["value"].isNull(), F.coalesce(h["value"], empty)),
    )
    fields = [
        F.col("key").isNull(), F.coalesce(F.col("key"), empty),
        F.col("value").isNull(), F.coalesce(F.col("value"), empty),
        headers, F.col("timestamp"),
    ]
    if include_offsets:
        fields.insert(0, F.col("offset"))
    # One projection (each DataFrame step is analysed on its own, which costs on a JVM that just started).
    return df.select("*", F.xxhash64(*fields).alias("h1"), F.xxhash64(F.lit("kmigrate-h2"), *fields).alias("h2"))


def _table(spark, rows: list[tuple], schema):
    """A small broadcast table built in the JVM from one JSON literal (no Python worker is started).

    ``schema``: a ``StructType``, one field per item of each row."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    text = json.dumps([dict(zip(schema.names, row)) for row in rows])
    table = spark.range(1).select(F.inline(F.from_json(F.lit(text), ArrayType(schema))))
    return F.broadcast(table)


# A 64-bit hash h is summed exactly as three bigint sums of its pieces, h = a * 2^42 + b * 2^21 + c
# (a signed, b and c in [0, 2^21)): each piece sum stays below 2^63 for up to 2^41 records per partition,
# far past any Kafka partition, and bigint sums cost much less than DECIMAL(38,0) ones.
_PIECES = ((42, None), (21, (1 << 21) - 1), (0, (1 << 21) - 1))


def _sum_pieces(col, name: str) -> list:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    out = []
    for i, (shift, mask) in enumerate(_PIECES):
        piece = F.shiftright(col, shift) if shift else col
        if mask is not None:
            piece = piece.bitwiseAND(F.lit(mask))
        out.append(F.coalesce(F.sum(piece), F.lit(0).cast(LongType())).alias(f"{name}_{i}"))
    return out


def _join_pieces(row, name: str) -> int:
    """The exact sum from its pieces (Python ints do not overflow)."""
    return sum(int(row[f"{name}_{i}"]) << shift for i, (shift, _) in enumerate(_PIECES))


def _digest_plain(spark, kafka_options: dict[str, str], ranges: list[ReadRange], include_offsets: bool,
                  isolation_level: str) -> dict[tuple[str, int], tuple[Digest, tuple[Chunk, ...], tuple]]:
    """Every record of ``[read_from, read_to)``, hashed and summed per chunk of the range's grid; the
    partition's digest is the sum of its chunks'. One read, one aggregation (topic, partition, chunk).

    ``edges`` (the first and the last record's hash1, for aligning two clusters' partitions) are
    computed only when offsets are not hashed (the two-cluster form)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    df = _read(spark, kafka_options, ranges, isolation_level, end_attr="read_to")
    grids = {(r.chunk_base, r.chunk_size) for r in ranges}
    if len(grids) == 1:  # a fresh snapshot, or one against a format 2 snapshot: the chunk from the offset alone
        base, size = grids.pop()
        chunk = F.floor((F.col("offset") - F.lit(base)) / F.lit(size))
    elif all(r.chunk_base <= r.read_from and r.read_to <= r.chunk_base + r.chunk_size for r in ranges):
        chunk = F.lit(0)  # against a format 1 snapshot: each range is one piece
    else:  # grids of several sizes: each partition's from a small broadcast table
        table = _table(spark, [(r.topic, r.partition, r.chunk_base, r.chunk_size) for r in ranges],
                       T.StructType([T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
                                     T.StructField("cbase", T.LongType()), T.StructField("csize", T.LongType())]))
        df = df.join(table, ["topic", "partition"])
        chunk = F.floor((F.col("offset") - F.col("cbase")) / F.col("csize"))
    df = _record_hashes(df, include_offsets)
    edges = [] if include_offsets else [F.min_by("h1", "offset").alias("first_h1"),
                                        F.max_by("h1", "offset").alias("last_h1")]
    agg = df.groupBy("topic", "partition", chunk.alias("chunk")).agg(
        F.count(F.lit(1)).alias("records"),
        *_sum_pieces(F.col("h1"), "hash1"),
        *_sum_pieces(F.col("h2"), "hash2"),
        F.min("offset").alias("first_offset"),
        F.max("offset").alias("last_offset"),
        F.max(F.unix_millis(F.col("timestamp"))).alias("max_ts"),
        *edges,
    )
    rows: dict[tuple[str, int], list] = {}
    for r in collect(agg):
        rows.setdefault((r["topic"], r["partition"]), []).append(r)
    out = {}
    for rng in ranges:
        found = {int(r["chunk"]): r for r in rows.get((rng.topic, rng.partition), [])}
        chunks = []
        for start, end in chunk_grid(rng.chunk_base, rng.chunk_size, rng.read_from, rng.read_to):
            r = found.get((start - rng.chunk_base) // rng.chunk_size)
            chunks.append(Chunk(start, end) if r is None else Chunk(
                start, end, int(r["records"]), _join_pieces(r, "hash1"), _join_pieces(r, "hash2"),
                None if r["max_ts"] is None else int(r["max_ts"])))
        present = sorted(found.values(), key=lambda r: r["first_offset"])
        records = sum(c.records for c in chunks)
        digest = Digest(records, sum(c.hash1 for c in chunks), sum(c.hash2 for c in chunks),
                        present[0]["first_offset"] if present else None,
                        present[-1]["last_offset"] if present else None, records)
        ends = (present[0]["first_h1"], present[-1]["last_h1"]) if present and edges else (None, None)
        out[(rng.topic, rng.partition)] = (digest, tuple(chunks), ends)
    return out


def _digest_compacted(spark, kafka_options: dict[str, str], ranges: list[ReadRange], include_offsets: bool,
                      isolation_level: str) -> dict[tuple[str, int], Digest]:
    """The table of ``[read_from, read_to)``: the last record of each key (null keys count one record each),
    tombstones left out."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    df = _record_hashes(_read(spark, kafka_options, ranges, isolation_level, end_attr="read_to"), include_offsets)
    group_key = F.when(F.col("key").isNull(),
                       F.concat(F.lit(b"\x00"), F.col("offset").cast(StringType()).cast(BinaryType()))
                       ).otherwise(F.concat(F.lit(b"\x01"), F.col("key")))
    per_key = df.withColumn("gkey", group_key).groupBy("topic", "partition", "gkey").agg(
        F.count(F.lit(1)).alias("n"),
        F.max_by("h1", "offset").alias("h1"),
        F.max_by("h2", "offset").alias("h2"),
        F.max_by(F.col("value").isNull(), "offset").alias("tombstone"),
        F.min("offset").alias("lo"),
        F.max("offset").alias("hi"),
    )
    live = ~F.col("tombstone")
    agg = per_key.groupBy("topic", "partition").agg(
        F.count_if(live).alias("records"),
        F.sum(F.col("n")).alias("raw_records"),
        *_sum_pieces(F.when(live, F.col("h1")), "hash1"),
        *_sum_pieces(F.when(live, F.col("h2")), "hash2"),
        F.min("lo").alias("first_offset"),
        F.max("hi").alias("last_offset"),
    )
    return {(r["topic"], r["partition"]): Digest(int(r["records"]), _join_pieces(r, "hash1"), _join_pieces(r, "hash2"),
                                                 r["first_offset"], r["last_offset"], int(r["raw_records"]))
            for r in collect(agg)}


def _count_tails(spark, kafka_options: dict[str, str], ranges: list[ReadRange],
                 isolation_level: str) -> dict[tuple[str, int], Tail]:
    """Records of ``[read_to, end)``: counted, not hashed."""
    from pyspark.sql import functions as F

    df = _read(spark, kafka_options, ranges, isolation_level, start_attr="read_to")
    agg = df.groupBy("topic", "partition").agg(
        F.count(F.lit(1)).alias("records"), F.min("offset").alias("first"), F.max("offset").alias("last"))
    return {(r["topic"], r["partition"]): Tail(int(r["records"]), r["first"], r["last"]) for r in collect(agg)}


def digest_ranges(spark, kafka_options: dict[str, str], ranges: list[ReadRange], include_offsets: bool,
                  isolation_level: str = "read_committed") -> dict[tuple[str, int], RangeDigest]:
    """Digest, tail and chunks of every range (an empty range gives an empty digest), in one Spark read per kind.

    Plain partitions: every record of ``[read_from, read_to)`` is hashed and summed, per chunk of the
    range's grid (``chunk_base``, ``chunk_size``) and in all. Compacted
    partitions: the last record of each key in that range (null keys count one record each), tombstones
    left out. Tails (``[read_to, end)``, only in a snapshot taken against an earlier one) are a read of
    their own, counted and not hashed: each read is bounded by its offsets alone, so no record needs
    its partition's bounds looked up.
    """
    digests: dict[tuple[str, int], Digest] = {}
    prefix = [r for r in ranges if r.read_to > r.read_from]
    plain = [r for r in prefix if not r.compacted]
    compacted = [r for r in prefix if r.compacted]
    tails = [r for r in ranges if r.end > r.read_to]
    chunked = _digest_plain(spark, kafka_options, plain, include_offsets, isolation_level) if plain else {}
    if compacted:
        digests.update(_digest_compacted(spark, kafka_options, compacted, include_offsets, isolation_level))
    tail_counts = _count_tails(spark, kafka_options, tails, isolation_level) if tails else {}
    out = {}
    for r in ranges:
        key = (r.topic, r.partition)
        tail = tail_counts.get(key, Tail())
        if r.compacted:
            out[key] = RangeDigest(digests.get(key, Digest()), tail)
        else:
            digest, chunks, ends = chunked.get(key, (Digest(), (), (None, None)))
            out[key] = RangeDigest(digest, tail, chunks, ends)
    return out


def digest_alignments(spark, kafka_options: dict[str, str], ranges: list[ReadRange],
                      cuts: dict[tuple[str, int], tuple[int | None, int | None]],
                      isolation_level: str = "read_committed") -> dict[tuple[str, int], Alignment]:
    """Each range in ``cuts`` cut at the first record whose hash1 is ``cuts[key][0]`` and the last whose hash1 is
    ``cuts[key][1]`` (the other cluster's first and last record; not found: this side's own first or last):
    the count and newest timestamp of the records before, the digest of those in between, the count after.

    Used across clusters, where offsets differ: the records both hold are compared, and those one side
    holds alone are judged (expired on the other side, or a tail). Offsets are never hashed here.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    to_read = [r for r in ranges if (r.topic, r.partition) in cuts and r.read_to > r.read_from]
    if not to_read:
        return {}
    table = _table(spark, [(r.topic, r.partition, *cuts[(r.topic, r.partition)]) for r in to_read],
                   T.StructType([T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
                                 T.StructField("fh", T.LongType()), T.StructField("lh", T.LongType())]))
    df = _record_hashes(_read(spark, kafka_options, to_read, isolation_level, end_attr="read_to")
                        .join(table, ["topic", "partition"]), False)
    whole = Window.partitionBy("topic", "partition")
    df = df.withColumn("rn", F.row_number().over(whole.orderBy("offset")))
    df = df.withColumn("lo", F.coalesce(F.min(F.when(F.col("h1") == F.col("fh"), F.col("rn"))).over(whole), F.lit(1)))
    df = df.withColumn("hi", F.coalesce(F.max(F.when((F.col("h1") == F.col("lh")) & (F.col("rn") >= F.col("lo")),
                                                     F.col("rn"))).over(whole), F.max("rn").over(whole)))
    piece = F.when(F.col("rn") < F.col("lo"), 0).when(F.col("rn") > F.col("hi"), 2).otherwise(1)
    agg = df.groupBy("topic", "partition", piece.alias("piece")).agg(
        F.count(F.lit(1)).alias("records"), *_sum_pieces(F.col("h1"), "hash1"), *_sum_pieces(F.col("h2"), "hash2"),
        F.min("offset").alias("first_offset"), F.max("offset").alias("last_offset"),
        F.max(F.unix_millis(F.col("timestamp"))).alias("max_ts"))
    # the records in between with each content once: a mirror that copied a stretch again (MirrorMaker 1
    # after a crash) holds the same distinct records as its source, more of them
    distinct = (df.where(piece == 1).dropDuplicates(["topic", "partition", "h1", "h2"]).groupBy("topic", "partition")
                .agg(F.count(F.lit(1)).alias("records"), *_sum_pieces(F.col("h1"), "hash1"),
                     *_sum_pieces(F.col("h2"), "hash2")))
    found: dict[tuple[str, int], dict[int, object]] = {}
    for r in collect(agg):
        found.setdefault((r["topic"], r["partition"]), {})[int(r["piece"])] = r
    once = {(r["topic"], r["partition"]): Digest(int(r["records"]), _join_pieces(r, "hash1"), _join_pieces(r, "hash2"))
            for r in collect(distinct)}
    out = {}
    for r in to_read:
        pieces = found.get((r.topic, r.partition), {})
        before, common, after = pieces.get(0), pieces.get(1), pieces.get(2)
        out[(r.topic, r.partition)] = Alignment(
            int(before["records"]) if before else 0,
            None if before is None or before["max_ts"] is None else int(before["max_ts"]),
            Digest(int(common["records"]), _join_pieces(common, "hash1"), _join_pieces(common, "hash2"),
                   common["first_offset"], common["last_offset"], int(common["records"])) if common else Digest(),
            int(after["records"]) if after else 0, once.get((r.topic, r.partition), Digest()))
    return out

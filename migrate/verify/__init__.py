"""``kmigrate verify``: per-partition record counts and checksums, computed by Spark, compared.

Pure: ``snapshot`` (model and JSON file), ``compare`` (partition-by-partition comparison, report).
Spark only in ``job``; Kafka reads in ``offsets``; the sequence of side effects in ``run``.
"""

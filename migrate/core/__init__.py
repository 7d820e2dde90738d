"""The pure core: data and decisions, no I/O, no clock, no client library (kazoo, confluent_kafka,
kafka-python, pyspark). Everything here is tested without a server."""

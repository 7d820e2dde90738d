"""Adapters: the only modules that talk to ZooKeeper, Kafka or Spark."""

import logging as _logging

# librdkafka's own log lines go to this logger (every confluent-kafka client's ``logger``); silent unless
# a caller configures it, so that librdkafka never prints its own lines on stderr.
LIBRDKAFKA_LOG = _logging.getLogger("kmigrate.librdkafka")
LIBRDKAFKA_LOG.addHandler(_logging.NullHandler())

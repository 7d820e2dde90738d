"""Kafka reads of the ZooKeeper-to-KRaft migration that are not about the quorum (``adapters/kafka/quorum``), and
the broker registrations of a KRaft cluster (``registrations``)."""

"""Bookkeeping records as the previous version wrote them (for tests/unit/core/test_ledger.py and the
integration check in tests/integration/test_partitions_migration.py).

``OLD_RECORDS`` are the exact key and value bytes that kmigrate 94e2d81 (``adapters/bookkeeping.py``,
before the ledger moved to core) wrote for every record kind, generated with that version's
``make_record`` and ``encode``. Do not regenerate them with the current code: they are the reference.
"""

OLD_RECORDS = [
    (b'p1/~plan/plan',
     b'{"kind":"plan","mapping":{"1":4,"2":5},"plan_id":"p1","schema":"kmigrate.bookkeeping/1","throttle_bytes_per_s":10485760,"time":"2023-11-14T22:13:20.123+00:00"}'),
    (b'p1/~submitted/orders',
     b'{"kind":"submitted","partitions":{"0":[4,5],"1":[5,6]},"plan_id":"p1","schema":"kmigrate.bookkeeping/1","time":"2023-11-14T22:13:21.123+00:00","topic":"orders"}'),
    (b'p1/~throttle-broker/4/leader.replication.throttled.rate',
     b'{"broker":4,"config":"leader.replication.throttled.rate","kind":"throttle-broker","plan_id":"p1","prior":null,"schema":"kmigrate.bookkeeping/1","time":"2023-11-14T22:13:22.123+00:00","value":"10485760"}'),
    (b'p1/~throttle-broker/4/leader.replication.throttled.rate',
     b'{"broker":4,"config":"leader.replication.throttled.rate","kind":"throttle-broker","plan_id":"p1","prior":"10485760","schema":"kmigrate.bookkeeping/1","time":"2023-11-14T22:13:22.623+00:00","value":"20971520"}'),
    (b'p1/~throttle-broker/5/follower.replication.throttled.rate',
     b'{"broker":5,"config":"follower.replication.throttled.rate","kind":"throttle-broker","plan_id":"p1","prior":"5000","schema":"kmigrate.bookkeeping/1","time":"2023-11-14T22:13:23.123+00:00","value":"10485760"}'),
    (b'p1/~throttle-topic/orders/leader.replication.throttled.replicas',
     b'{"config":"leader.replication.throttled.replicas","entries":["0:1","1:2"],"kind":"throttle-topic","plan_id":"p1","schema":"kmigrate.bookkeeping/1","time":"2023-11-14T22:13:24.123+00:00","topic":"orders"}'),
    (b'p1/~throttle-topic/orders/follower.replication.throttled.replicas',
     b'{"config":"follower.replication.throttled.replicas","entries":["0:4","1:5"],"kind":"throttle-topic","plan_id":"p1","schema":"kmigrate.bookkeeping/1","time":"2023-11-14T22:13:24.123+00:00","topic":"orders"}'),
    (b'p1/orders',
     b'{"kind":"topic-moved","moved_partitions":[0,1],"plan_id":"p1","schema":"kmigrate.bookkeeping/1","target":{"0":[4,5],"1":[5,6]},"time":"2023-11-14T22:13:25.123+00:00","topic":"orders"}'),
    (b'p1/orders',
     b'{"kind":"topic-moved","moved_partitions":[0,1],"plan_id":"p1","schema":"kmigrate.bookkeeping/1","target":{"0":[4,5],"1":[5,6]},"time":"2023-11-14T22:13:25.623+00:00","topic":"orders"}'),
    (b'p0/payments',
     b'{"kind":"topic-moved","moved_partitions":[0],"plan_id":"p0","schema":"kmigrate.bookkeeping/1","target":{"0":[4]},"time":"2023-11-14T22:13:26.123+00:00","topic":"payments"}'),
    (b'p1/~cancelled/stuck',
     b'{"kind":"cancelled","partitions":[0,2],"plan_id":"p1","schema":"kmigrate.bookkeeping/1","time":"2023-11-14T22:13:27.123+00:00","topic":"stuck"}'),
    (b'p1/~throttle-cleared/4/leader.replication.throttled.rate',
     b'{"broker":4,"config":"leader.replication.throttled.rate","kind":"throttle-cleared","plan_id":"p1","schema":"kmigrate.bookkeeping/1","scope":"broker","time":"2023-11-14T22:13:28.123+00:00"}'),
    (b'p1/~throttle-cleared/orders/follower.replication.throttled.replicas',
     b'{"config":"follower.replication.throttled.replicas","kind":"throttle-cleared","plan_id":"p1","schema":"kmigrate.bookkeeping/1","scope":"topic","time":"2023-11-14T22:13:29.123+00:00","topic":"orders"}'),
]

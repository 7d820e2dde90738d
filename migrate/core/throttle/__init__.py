"""The adaptive replication throttle (``--throttle auto --latency-budget 50ms``), pure.

The replication throttle and the number of moves in flight are steered together, per broker, by
a feedback loop on client-visible latency (the canary's acks=all produce p99 over short windows,
against the p99 measured at rest before the first move): slow start, then AIMD, within rails, with
a fail-safe to the minimum when the signal is lost. No I/O, no clock: ``now_s`` is passed in.

* :mod:`.signals`: :class:`~.signals.LatencyWindow`, :class:`~.signals.Baseline`,
  :class:`~.signals.Budget` (:func:`~.signals.parse_budget`), :class:`~.signals.Health` (the rails);
* :mod:`.law`: :class:`~.law.Settings` and the law for one broker and one step (:func:`~.law.advance`);
* :mod:`.decisions`: :class:`~.decisions.Decision`, one change and why, as JSON;
* :mod:`.controller`: :class:`~.controller.Controller`, every broker, one :meth:`~.controller.Controller.step`
  per window, and :meth:`~.controller.Controller.resume` from the recorded decisions.

How a runner drives it (``now`` from its clock; nothing here reads one)::

    budget = parse_budget(option)                      # BadInput before any change
    baseline = Baseline.from_latencies(acks_at_rest)   # the canary at rest, before the first move
    c = Controller(settings, baseline, budget, now)    # or, on --resume:
    c = Controller.resume(settings, baseline, budget, now, recorded_decisions)
    every window (about 5 s; settings.interval_s about 2 windows):
        window = LatencyWindow.from_acks(now, acks_by_leader, stalls_by_leader)   # or .silent(now)
        health = Health(...)                           # partitions *not being moved*; target brokers
        for d in c.step(now, window, health, brokers_taking_part):
            record d.to_dict() first (write-ahead), then set d.new_rate on d.broker if
            d.rate_changed, cap d.broker's moves in flight at d.moves, emit it
    status: c.rates(), c.moves(), c.why (the last reason per broker), c.limit_s
"""

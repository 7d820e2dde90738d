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

How a runner drives it::

    baseline = Baseline.from_latencies(at_rest_latencies)         # canary at rest, before any move
    c = Controller(settings, baseline, parse_budget("50ms"), now_s=clock.now())
    #   or Controller.resume(settings, baseline, budget, clock.now(), recorded_decision_values)
    every window (about 5 s):
        window = LatencyWindow.from_acks(clock.now(), acks_of_the_window, stalls_by_leader)
        for d in c.step(clock.now(), window, health_read_now, brokers_taking_part):
            record d.to_dict() (write-ahead), then write d.new_rate if d.rate_changed, cap the
            broker's moves at d.moves, emit it
"""

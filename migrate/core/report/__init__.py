"""What the clients felt over time, and per phase (pure).

``timeline``: the canary's acknowledgements in time buckets (throughput, latency percentiles from a compact
histogram, the produce stall in progress), kept in bounded memory; ``phases``: named intervals (a demo's
steps, or what kmigrate recorded in its bookkeeping topic) and the figures of each.
"""

"""Runners: the only sequencers of side effects. Each re-reads the truth from the cluster before acting."""

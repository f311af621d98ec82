"""Plumbing: the shared clock, the leader lease, Redis Cluster, a clean stop."""

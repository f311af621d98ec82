"""Throwaway local Redis, Redis Cluster and Mosquitto processes on loopback, for the
demo, the tests and the benchmarks."""

"""The floor simulator, the demo, rehearsals and the load-test smoke run."""

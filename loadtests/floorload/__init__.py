"""Locust load tests of a whole casino floor against one bonusd daemon.

    python loadtests/run_scenario.py saturday-20h --run-time 3m     # = make load

The runner (`runner.py`, a plain program) sets up a private site, imports the simulated
floor, writes the stream the floor plays, starts the daemon and runs locust headless on
`loadtests/locustfile.py` (`locustrun.py`); the users (`mqtt_users.py`, `push_users.py`,
`http_users.py`) run inside locust (gevent) and read what they need from the run's
`LoadConfig` file (`config.py`). Named scenarios are in `scenarios.py`; docs/loadtests.md
has the results.
"""

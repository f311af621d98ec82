# The commands the README names; CI runs `make test` through .ci/run.
# Every target sets itself up: virtual environment, Python packages, Redis and Mosquitto.

SHELL := /bin/bash
PY := .venv/bin/python

.PHONY: setup services demo run test test-slow screens lint format bench-anchor bench-trail bench-ingest bench-standings bench-draws bench-push bench-scale bench-summary bench-floor bench-import bench-kiosk load soak clean

setup:
	@scripts/bootstrap.sh

services: setup
	@scripts/ensure-services.sh

## The main job: daemon + simulated floor + API + pages (Ctrl-C stops it).
demo: services
	@.venv/bin/bonusd demo $(DEMO_ARGS)

## The daemon alone, with the BONUSD_* settings of the environment. The dev Redis does not
## fsync every write, so its policy is warned about, not refused (docs/deploy.md, "Redis").
run: services
	@BONUSD_REDIS_CHECK=$${BONUSD_REDIS_CHECK:-warn} .venv/bin/bonusd run

## The whole default test suite (real Redis, real Mosquitto started by the tests, and
## Debian's headless Chromium for the page tests in tests/browser/), in two worker
## processes (each test has its own key and topic prefix; each worker its own broker).
TEST_WORKERS ?= 2
test: setup
	@scripts/ensure-services.sh --with-test-tools --with-chromium
	@.venv/bin/pytest -m "not slow" -n $(TEST_WORKERS) $(PYTEST_ARGS)

## Long-running tests (soak, full rehearsal).
test-slow: setup
	@scripts/ensure-services.sh --with-test-tools --with-chromium
	@.venv/bin/pytest -m slow $(PYTEST_ARGS)

## The page tests again, writing their screenshots into docs/screens/.
screens: setup
	@scripts/ensure-services.sh --with-test-tools --with-chromium
	@BONUSD_SCREENS=1 .venv/bin/pytest tests/browser $(PYTEST_ARGS)

lint: setup
	@.venv/bin/ruff check .
	@.venv/bin/ruff format --check .
	@.venv/bin/mypy
	@.venv/bin/lint-imports --no-cache

format: setup
	@.venv/bin/ruff format .
	@.venv/bin/ruff check --fix .

## Ingest throughput and latency against a bare aiomqtt consumer (see docs/benchmarks.md).
bench-ingest: setup
	@scripts/ensure-services.sh --with-test-tools
	@$(PY) loadtests/bench_ingest.py $(BENCH_ARGS)

## De-duplication memory of 10,000 devices after 10 million events: telemetry contract v2
## (a sequence per device) beside v1 (event ids), through lua/apply.lua on a throwaway Redis.
.PHONY: bench-dedup
bench-dedup: setup
	@$(PY) loadtests/bench_dedup.py $(BENCH_ARGS)

## Recompute all standings and boards for 200,000 members; leaderboard reads.
bench-standings: services
	@$(PY) loadtests/bench_standings.py $(BENCH_ARGS)

## The daily audit digest of a 20,000-record trail, read 500 records at a time and whole.
bench-anchor: services
	@$(PY) loadtests/bench_anchor.py $(BENCH_ARGS)

## The daemon's reads of a 20,000-record audit trail, beside the whole walk they made before.
bench-trail: services
	@$(PY) loadtests/bench_trail.py $(BENCH_ARGS)

## A draw round (15 winners, 1,000,000 tickets, 200,000 members) and a RAPS pick, 50 runs.
bench-draws: services
	@$(PY) loadtests/bench_draws.py $(BENCH_ARGS)

## 2,000 signage websockets: a winner committed to the last screen, beside a bare broadcast.
bench-push: services
	@$(PY) loadtests/bench_push.py $(BENCH_ARGS)

## 1, 2 and 3 daemons in one shared-subscription group against one Redis, beside a bare
## consumer group (docs/scaling.md); BENCH_ARGS="--redis-cluster" for a local cluster.
bench-scale: setup
	@scripts/ensure-services.sh --with-test-tools
	@$(PY) loadtests/bench_scale.py $(BENCH_ARGS)

## The desk's draw summary on 470,000 members: its time and how long it holds the event
## loop, beside the raw reads of the same keys (docs/benchmarks.md).
bench-summary: services
	@$(PY) loadtests/bench_summary.py $(BENCH_ARGS)

## GET /floor/active for 8,000 active players through a running daemon, whole and one
## page, beside the raw Redis reads of the same keys (docs/benchmarks.md).
bench-floor: setup
	@scripts/ensure-services.sh --with-test-tools
	@$(PY) loadtests/bench_floor.py $(BENCH_ARGS)

## A 45 MB member import through a running daemon: /health latency p50/p99 and the
## daemon's RSS during it, beside /health with no import (docs/benchmarks.md).
bench-import: setup
	@scripts/ensure-services.sh --with-test-tools
	@$(PY) loadtests/bench_import.py $(BENCH_ARGS)

## Kiosk card-in -> a member's standings in every running draw as JSON, 200,000 members,
## beside a bare pipelined read of the same Redis keys (docs/benchmarks.md).
bench-kiosk: services
	@$(PY) loadtests/bench_kiosk.py $(BENCH_ARGS)

## A named locust scenario, headless and bounded (docs/loadtests.md): own daemon, site and
## broker; the report (HTML, CSV, summary) in .run/loadtests/$(SCENARIO) unless --out.
SCENARIO ?= saturday-20h
load: setup
	@scripts/ensure-services.sh --with-test-tools
	@$(PY) loadtests/run_scenario.py $(SCENARIO) $(LOAD_ARGS)

## Soak: 30 minutes of the 10,000-EGM Saturday-night floor, a draw every 5 minutes; daemon
## RSS, Redis growth by key family and log errors checked (docs/loadtests.md, "Soak").
soak: setup
	@scripts/ensure-services.sh --with-test-tools
	@$(PY) loadtests/soak.py $(SOAK_ARGS)

## A week on the 10,000-EGM floor compressed on the shared clock (~35 minutes): the Festa
## Fortuna campaign's draws and jackpots every day, the retention sweeper; Redis memory
## by simulated day and key family, bytes retained per event, daemon RSS
## (docs/loadtests.md, "A week on the floor").
.PHONY: soak-week
soak-week: setup
	@scripts/ensure-services.sh --with-test-tools
	@$(PY) loadtests/soak.py --week $(SOAK_ARGS)

clean:
	@scripts/ensure-services.sh stop || true
	rm -rf .run .pytest_cache .mypy_cache .ruff_cache

"""Monitoring: the alert rules of deploy/prometheus/ pass `promtool check rules` and their
own `promtool test rules` file, the example scrape configuration `promtool check config`;
every metric the rules and the Grafana dashboard name is one bonusd exposes (declared in
bonusd/infra/metrics.py, with the suffixes Prometheus gives counters and histograms),
the dashboard shows every metric the rules alert on, and the issue's list of alerts is
covered."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bonusd.infra.metrics import Metrics
from tests.deploy.helpers import DEPLOY, tool

PROMETHEUS = DEPLOY / "prometheus"
RULES = PROMETHEUS / "bonusd-alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "bonusd.json"
# PromQL words that are not metrics; label names in by/on clauses are dropped before
PROMQL = {"sum", "max", "min", "avg", "count", "rate", "increase", "histogram_quantile"}
PROMQL |= {"time", "and", "or", "unless", "by", "on", "without", "ignoring"}
PROMETHEUS_OWN = {"up"}  # recorded by Prometheus for every target


def _promtool(*args: str) -> str:
    result = subprocess.run(
        [tool("promtool", "prometheus"), *args],
        cwd=PROMETHEUS,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_promtool_checks_the_rules_and_the_scrape_configuration() -> None:
    assert "SUCCESS: 20 rules found" in _promtool("check", "rules", RULES.name)
    assert "SUCCESS" in _promtool("check", "config", "prometheus.example.yml")


def test_the_rules_pass_their_unit_tests() -> None:
    assert "SUCCESS" in _promtool("test", "rules", "bonusd-alerts.test.yml")


def _rule_expressions() -> dict[str, str]:
    """Alert name -> its expression (every expression of the file is on one line)."""
    text = RULES.read_text()
    names = re.findall(r"^\s*- alert: (\w+)$", text, re.MULTILINE)
    exprs = re.findall(r"^\s*expr: (.+)$", text, re.MULTILINE)
    assert len(names) == len(exprs) == 20
    return dict(zip(names, exprs, strict=True))


def _dashboard_expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression."""
    expr = re.sub(r'"[^"]*"', "", expr)  # strings, label values
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", expr)  # label matchers, ranges
    expr = re.sub(r"\b(by|on|without|ignoring)\s*\([^)]*\)", "", expr)  # label lists
    expr = re.sub(r"\boffset\s+\w+", "", expr)  # offset 10m
    expr = re.sub(r"\b\d+(\.\d+)?(e\d+)?\b", "", expr)  # numbers (8e9)
    return set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr)) - PROMQL


def _exposed() -> set[str]:
    """Every series name bonusd's /metrics can carry, from the declarations themselves."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {
        family.name + suffix
        for family in Metrics().registry.collect()
        for suffix in suffixes[family.type]
    }


def test_every_metric_named_exists_in_bonusd() -> None:
    exposed = _exposed() | PROMETHEUS_OWN
    for where, exprs in (
        ("bonusd-alerts.yml", list(_rule_expressions().values())),
        ("grafana/bonusd.json", _dashboard_expressions()),
    ):
        named = set().union(*(metric_names(e) for e in exprs))
        assert named, where
        unknown = named - exposed
        assert not unknown, f"{where} names metrics bonusd does not expose: {sorted(unknown)}"


def test_the_check_of_names_is_not_vacuous() -> None:
    expr = 'sum by (site) (rate(bonusd_events_applied_total{site="x"}[5m])) > 0.5 * up offset 10m'
    assert metric_names(expr) == {"bonusd_events_applied_total", "up"}
    assert "redis_memory_used_bytes" not in _exposed()  # another exporter's name


def test_the_dashboard_shows_what_the_rules_alert_on() -> None:
    alerted = set().union(*(metric_names(e) for e in _rule_expressions().values()))
    shown = set().union(*(metric_names(e) for e in _dashboard_expressions()))
    assert alerted - PROMETHEUS_OWN <= shown
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["templating"]["list"][0]["type"] == "datasource"


@pytest.mark.parametrize(
    ("concern", "alerts"),
    [
        ("ingest stalled or lagging", {"BonusdIngestStalled", "BonusdIngestLagging"}),
        ("dead-letter rate", {"BonusdDeadLetters"}),
        ("Redis memory near its limit", {"BonusdRedisMemoryHigh", "BonusdRedisMemoryCritical"}),
        ("leader missing or flapping", {"BonusdLeaderMissing", "BonusdLeaderFlapping"}),
        ("claim timers overdue", {"BonusdClaimTimersOverdue"}),
        ("websocket clients dropped", {"BonusdPushClientsDropped", "BonusdScreensDisconnected"}),
        ("certificate expiry", {"BonusdCertificateExpiresSoon", "BonusdCertificateExpiryCritical"}),
    ],
)
def test_each_concern_of_the_issue_has_its_alerts(concern: str, alerts: set[str]) -> None:
    assert alerts <= set(_rule_expressions()), concern
    tested = Path(PROMETHEUS / "bonusd-alerts.test.yml").read_text()
    assert any(f"alertname: {a}" in tested for a in alerts), f"{concern}: no promtool test"

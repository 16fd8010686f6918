"""A real Prometheus server (Debian's, from `make tools`) for tests: it scrapes the given
targets every second, evaluates the given rule files every second, and answers queries
over its HTTP API."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from migration.common.ports import unused_port
from tests.broker_harness import eventually
from tests.tools import tool


@dataclass
class Prometheus:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.api("query", query=promql)["result"]
        return result

    def values(self, promql: str, since: float) -> list[float]:
        """One series' values from ``since`` until now, a second apart."""
        data = self.api(
            "query_range", query=promql, start=f"{since:.3f}", end=f"{time.time():.3f}", step="1"
        )
        (series,) = data["result"]
        return [float(v) for _, v in series["values"]]

    def firing(self) -> set[str]:
        return {
            a["labels"]["alertname"] for a in self.api("alerts")["alerts"] if a["state"] == "firing"
        }

    def active(self, alertname: str) -> list[dict[str, Any]]:
        """``alertname``'s alerts pending or firing now: their labels, with ``state``."""
        return [
            {**a["labels"], "state": a["state"]}
            for a in self.api("alerts")["alerts"]
            if a["labels"]["alertname"] == alertname
        ]

    def scraped(self) -> set[str]:
        """The targets up now."""
        return {r["metric"]["instance"] for r in self.query("up == 1")}


@contextmanager
def prometheus(
    tmp: Path, targets: list[str] | dict[str, list[str]], rule_files: list[Path]
) -> Iterator[Prometheus]:
    """``targets`` scraped as one job ``zk2kraft``, or as the jobs a mapping names
    (job -> its targets: "controller" and "broker", as the alert rules expect)."""
    tmp.mkdir(parents=True, exist_ok=True)
    jobs = {"zk2kraft": targets} if isinstance(targets, list) else targets
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": hosts}]} for job, hosts in jobs.items()
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = unused_port()
    log = tmp / "prometheus.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [tool("prometheus"), f"--config.file={tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = Prometheus(f"http://127.0.0.1:{port}", process, log)
    try:
        eventually(lambda: server.api("status/runtimeinfo"), 60, "prometheus serving")
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

"""docs/helm.md against the chart: every value it names (``controllers.replicas``) is in
values.yaml, and its table of ``migration.phase`` steps is the schema's enum, in order."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "helm.md").read_text()
CHART = ROOT / "charts" / "zk2kraft"
VALUES: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
NAME = re.compile(r"`([a-zA-Z][a-zA-Z0-9]*(?:\.[a-zA-Z0-9]+)+)`")


def resolves(path: str) -> bool:
    node: Any = VALUES
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_every_value_named_is_in_values_yaml() -> None:
    named = {n for n in NAME.findall(DOC) if n.split(".")[0] in VALUES}
    assert len(named) > 10, named  # the doc's values were found
    missing = sorted(n for n in named if not resolves(n))
    assert not missing, f"docs/helm.md names values the chart does not have: {missing}"


def test_the_phase_table_is_the_schemas_enum() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    phases = schema["properties"]["migration"]["properties"]["phase"]["enum"]
    rows = re.findall(r"^\| `([a-z-]+)` \|", DOC, flags=re.MULTILINE)
    assert rows == phases
    assert VALUES["migration"]["phase"] == phases[0]

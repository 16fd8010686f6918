"""Metric families built from the catalog's specs (the one place a name, type and help
text meet a value)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from migration.observability.catalog import Kind, Spec
from migration.observability.samples import LatencySummary


def gauge(spec: Spec, value: float) -> GaugeMetricFamily:
    assert spec.kind is Kind.GAUGE and not spec.labels, spec.name
    return GaugeMetricFamily(spec.name, spec.help, value=value)


def labelled(spec: Spec, rows: Iterable[tuple[tuple[str, ...], float]]) -> Metric:
    """A family of ``spec.labels`` rows: (label values, value)."""
    assert spec.labels, spec.name
    family: GaugeMetricFamily | CounterMetricFamily
    if spec.kind is Kind.COUNTER:
        family = CounterMetricFamily(
            spec.name.removesuffix("_total"), spec.help, labels=spec.labels
        )
    else:
        family = GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)
    for values, value in rows:
        family.add_metric(list(values), value)
    return family


def enum(spec: Spec, current: str, members: Iterable[str]) -> Metric:
    """1 for ``current``, 0 for every other member (one label)."""
    return labelled(spec, (((m,), 1.0 if m == current else 0.0) for m in members))


def counter_by(spec: Spec, counts: Mapping[str, int], members: Iterable[str]) -> Metric:
    """A counter per member of one label, zeros included (so ``increase()`` works from
    the first error on)."""
    return labelled(spec, (((m,), float(counts.get(m, 0))) for m in members))


def summary(spec: Spec, s: LatencySummary) -> Metric:
    """A Prometheus summary: the window's quantiles, lifetime ``_count`` and ``_sum``
    (what the JMX exporter renders of a Kafka timer, plus the sum)."""
    assert spec.kind is Kind.SUMMARY, spec.name
    family = Metric(spec.name, spec.help, "summary")
    for q, ms in s.quantiles:
        family.add_sample(spec.name, {"quantile": f"{q:g}"}, ms)
    family.add_sample(spec.name + "_count", {}, float(s.count))
    family.add_sample(spec.name + "_sum", {}, s.total_ms)
    return family

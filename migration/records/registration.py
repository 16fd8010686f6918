"""A broker registration's parts, one list for every form that carries them under
Kafka's names: its endpoints (the BrokerRegistrationRequest's listeners, the
RegisterBrokerRecord's end_points, the image's EndpointImage) and the feature ranges it
supports (the request's and the record's features; the image keeps each as
``(name, min, max)``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ENDPOINT_FIELDS = ("name", "host", "port", "security_protocol")
FEATURE_FIELDS = ("name", "min_supported_version", "max_supported_version")
FeatureRange = tuple[str, int, int]


def endpoint_values(endpoint: object) -> dict[str, Any]:
    """The endpoint's fields by name."""
    return {name: getattr(endpoint, name) for name in ENDPOINT_FIELDS}


def feature_range(feature: Any) -> FeatureRange:
    """A request's or record's feature as ``(name, min, max)``."""
    return feature.name, feature.min_supported_version, feature.max_supported_version


def add_features(parts: Any, ranges: Iterable[FeatureRange]) -> None:
    """Append ``ranges`` to a message's repeated features."""
    for feature in ranges:
        parts.add(**dict(zip(FEATURE_FIELDS, feature, strict=True)))

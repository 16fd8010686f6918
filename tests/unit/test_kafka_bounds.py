"""The frame check before kio decodes: every valid request of every served API version
passes it whole (generated from kio's schemas), and each kind of lying length is refused
naming its field, before anything is reserved."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_writer

from migration.kafka.bounds import FrameError, check, length_fields
from migration.kafka.wire import SUPPORTED, parse_request

VERSIONS = [(k, v) for k, (_, low, high) in sorted(SUPPORTED.items()) for v in range(low, high + 1)]


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
def test_every_valid_request_passes_the_check_whole(api_key: int, version: int) -> None:
    schema = load_request_schema(api_key, version)

    @settings(max_examples=15, database=None, suppress_health_check=list(HealthCheck))
    @given(st.from_type(schema))
    def passes(body: object) -> None:
        out = io.BytesIO()
        entity_writer(schema)(out, body)
        frame = out.getvalue()
        assert check(schema, frame) == len(frame)
        for offset, width, _ in length_fields(schema, frame):
            assert offset >= 0 and offset + width <= len(frame)

    passes()


def test_the_26_byte_frame_is_refused_naming_the_topics_array() -> None:
    frame = bytes.fromhex("0003000900000003000570726f626500ffffffff0f00")
    with pytest.raises(FrameError, match=r"MetadataRequest\.topics claims 4294967294 entries"):
        parse_request(frame)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"\x00", "a length of -1"),  # CreateTopics v5's topics array, null: not nullable
        (b"\x80\x80\x80\x80\x80\x01", "a varint longer than 5 bytes"),
        (b"\x80", "a varint cut short"),
        (b"\x05\x00", "claims 4 entries, 1 bytes remain"),
    ],
)
def test_lying_lengths_are_refused_before_decoding(body: bytes, problem: str) -> None:
    header = bytes.fromhex("0013000500000001ffff00")  # CreateTopics v5, null client id
    with pytest.raises(FrameError, match=problem):
        parse_request(header + body)

"""A broker's bulk request handled a slice per event of the quorum's loop.

A write that may change thousands of partitions (a leader's AlterPartition, a
controlled shutdown's heartbeat) does at most ``SLICE_RECORDS`` of its work per call of
its handler; the RPC's ``rest`` says what of the request the next slice handles (None:
nothing). Each slice is a write of its own, validated against the pending image the
slices before it left, and posted to the loop behind what was queued meanwhile (a
follower's fetch, a vote), so no slice holds the loop for a whole step. The request's
answer is the RPC's ``whole`` of the slices' answers, given once the last slice's
records have committed; a slice refused (leadership lost on the way: NOT_CONTROLLER)
makes the request's answer that refusal, and no slice runs after it. What the slices
before it wrote stands, as with any request whose answer is lost: each is a step a
broker takes again (its AlterPartition is asked anew, its heartbeat sent again).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Generic, TypeVar

from migration.controller.context import WriteContext
from migration.proto import controller_pb2 as cpb

Req = TypeVar("Req")
Resp = TypeVar("Resp")


class SlicedRequest(Generic[Req, Resp]):
    """One request's slices: :meth:`run` the first, the rest are posted as they go.

    ``write``: a slice's write, (the slice's request, the reply for its answer on
    commit) -> its context and answer once its records are queued, or None when it
    was refused at once. ``rest``: (that context, the slice's request, its answer, the
    slices run so far) -> the next slice's request, or None. ``whole``: the request's
    answer from its slices' answers, in order."""

    def __init__(
        self,
        write: Callable[
            [Req, Callable[[Resp | cpb.RequestError], None]],
            tuple[WriteContext, Resp | cpb.RequestError] | None,
        ],
        post: Callable[[Callable[[], None]], None],
        rest: Callable[[WriteContext, Req, Resp, int], Req | None],
        whole: Callable[[list[Resp]], Resp],
        reply: Callable[[Resp | cpb.RequestError], None],
    ) -> None:
        self._write, self._post, self._rest, self._whole = write, post, rest, whole
        self._reply: Callable[[Resp | cpb.RequestError], None] | None = reply
        self._answers: dict[int, Resp | cpb.RequestError] = {}
        self._slices = 0
        self._all_run = False

    def run(self, request: Req) -> None:
        """Write one slice of ``request``; post the next, or end the slicing."""
        index = self._slices
        self._slices += 1
        written = self._write(request, partial(self._answered, index))
        rest = None
        if written is not None:
            context, answer = written
            if not isinstance(answer, cpb.RequestError):
                rest = self._rest(context, request, answer, self._slices)
        if rest is None:
            self._all_run = True
            self._maybe_reply()
        else:
            self._post(partial(self.run, rest))

    def _answered(self, index: int, answer: Resp | cpb.RequestError) -> None:
        self._answers[index] = answer
        self._maybe_reply()

    def _maybe_reply(self) -> None:
        if self._reply is None or not self._all_run or len(self._answers) < self._slices:
            return
        reply, self._reply = self._reply, None
        granted: list[Resp] = []
        for i in range(self._slices):
            answer = self._answers[i]
            if isinstance(answer, cpb.RequestError):
                reply(answer)  # a slice refused: the request's answer
                return
            granted.append(answer)
        reply(self._whole(granted))

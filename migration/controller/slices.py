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

from google.protobuf.message import Message

from migration.controller.context import WriteContext
from migration.proto import controller_pb2 as cpb

# A slice's write: (the slice's request, the reply for its answer on commit) -> its
# context and answer once its records are queued, or None when it was refused at once.
SliceWrite = Callable[
    [Message, Callable[[Message], None]], tuple[WriteContext, Message | cpb.RequestError] | None
]
Rest = Callable[[WriteContext, Message, Message, int], Message | None]
Whole = Callable[[list[Message]], Message]


class SlicedRequest:
    """One request's slices: :meth:`run` the first, the rest are posted as they go."""

    def __init__(
        self,
        write: SliceWrite,
        post: Callable[[Callable[[], None]], None],
        rest: Rest,
        whole: Whole,
        reply: Callable[[Message], None],
    ) -> None:
        self._write, self._post, self._rest, self._whole = write, post, rest, whole
        self._reply: Callable[[Message], None] | None = reply
        self._answers: dict[int, Message] = {}
        self._slices = 0
        self._all_run = False

    def run(self, request: Message) -> None:
        """Write one slice of ``request``; post the next, or end the slicing."""
        index = self._slices
        self._slices += 1
        written = self._write(request, partial(self._answered, index))
        rest = None
        if written is not None and not isinstance(written[1], cpb.RequestError):
            rest = self._rest(written[0], request, written[1], self._slices)
        if rest is None:
            self._all_run = True
            self._maybe_reply()
        else:
            self._post(partial(self.run, rest))

    def _answered(self, index: int, answer: Message) -> None:
        self._answers[index] = answer
        self._maybe_reply()

    def _maybe_reply(self) -> None:
        if self._reply is None or not self._all_run or len(self._answers) < self._slices:
            return
        reply, self._reply = self._reply, None
        answers = [self._answers[i] for i in range(self._slices)]
        refused = next((a for a in answers if isinstance(a, cpb.RequestError)), None)
        reply(refused if refused is not None else self._whole(answers))

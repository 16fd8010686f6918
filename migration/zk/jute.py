"""ZooKeeper's jute wire basics shared by the multi-read and write-multi requests."""

from __future__ import annotations

import struct

INT = struct.Struct("!i")
MULTI_HEADER = struct.Struct("!iBi")  # op type, done, err
# Stat: czxid mzxid ctime mtime version cversion aversion ephemeralOwner dataLength
#       numChildren pzxid
STAT = struct.Struct("!qqqqiiiqiiq")
MULTI_END = MULTI_HEADER.pack(-1, 1, -1)

ERR_NO_NODE = -101
ERR_BAD_VERSION = -103
ERR_NODE_EXISTS = -110
ERR_NO_AUTH = -102

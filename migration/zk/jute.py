"""ZooKeeper's jute encoding: the wire structs and error codes both multi requests
share, and the fixed parts of its on-disk files (snapshots and transaction logs)."""

from __future__ import annotations

import struct

INT = struct.Struct("!i")
LONG = struct.Struct("!q")
MULTI_HEADER = struct.Struct("!iBi")  # op type, done, err
# Stat: czxid mzxid ctime mtime version cversion aversion ephemeralOwner dataLength
#       numChildren pzxid
STAT = struct.Struct("!qqqqiiiqiiq")
MULTI_END = MULTI_HEADER.pack(-1, 1, -1)

ERR_NO_NODE = -101
ERR_BAD_VERSION = -103
ERR_NODE_EXISTS = -110
ERR_NO_AUTH = -102

# --- files (org.apache.zookeeper.server.persistence) ----------------------------------
FILE_HEADER = struct.Struct("!iiq")  # magic, version, dbid
SNAP_MAGIC = int.from_bytes(b"ZKSN", "big")
TXNLOG_MAGIC = int.from_bytes(b"ZKLG", "big")
TXN_HEADER = struct.Struct("!qiqqi")  # clientId, cxid, zxid, time, type
SESSION_ENTRY = struct.Struct("!qi")  # session id, timeout (a snapshot's session list)
ACL_PERMS_LEN = struct.Struct("!ii")  # an ACL's perms and its Id's scheme length
# A snapshot's DataNode after its data buffer: acl (long) and StatPersisted (czxid
# mzxid ctime mtime version cversion aversion ephemeralOwner pzxid), then the next
# node's path length; only version, ephemeralOwner and that length are unpacked.
NODE_TAIL = struct.Struct("!40xi8xq8xi")
SEAL_END = INT.pack(1) + b"/"  # a seal: Adler32 (long), then the string "/"
SEAL_SIZE = LONG.size + len(SEAL_END)

# EphemeralType's ephemeralOwner encodings besides a session id (0: persistent)
CONTAINER_OWNER = -(1 << 63)  # Long.MIN_VALUE
EXTENDED_MASK = -(1 << 56)  # 0xff00000000000000: TTL nodes (extended types)


def ttl_owner(ttl: int) -> int:
    """EphemeralType.TTL.toEphemeralOwner: the ephemeralOwner a TTL znode carries."""
    return EXTENDED_MASK | ttl


def is_session_owner(owner: int) -> bool:
    """Whether ``owner`` is a session (an ephemeral znode), not 0, a container or TTL."""
    return owner not in (0, CONTAINER_OWNER) and owner & EXTENDED_MASK != EXTENDED_MASK

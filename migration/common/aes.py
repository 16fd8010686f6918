"""AES (FIPS-197) with CBC and PKCS#5 padding: what Kafka's ``password.encoder.secret``
encryption uses (``AES/CBC/PKCS5Padding``).

Pure Python, for the few short values it protects (dynamic broker passwords in
ZooKeeper), not for bulk data. The S-box is derived from its definition (the inverse in
GF(2^8), then the affine map) rather than typed in. Checked against FIPS-197's
appendix C vectors and against Java's JCE (tests).
"""

from __future__ import annotations


def _xtime(a: int) -> int:
    a <<= 1
    return (a ^ 0x11B) if a & 0x100 else a


def _mul(a: int, b: int) -> int:
    out = 0
    while b:
        if b & 1:
            out ^= a
        a, b = _xtime(a), b >> 1
    return out


def _sbox() -> tuple[list[int], list[int]]:
    inverse = [0] * 256
    for a in range(1, 256):
        for b in range(1, 256):
            if _mul(a, b) == 1:
                inverse[a] = b
                break
    sbox = []
    for a in range(256):
        x = inverse[a]
        s = x
        for shift in range(1, 5):
            s ^= ((x << shift) | (x >> (8 - shift))) & 0xFF
        sbox.append(s ^ 0x63)
    inv = [0] * 256
    for a, s in enumerate(sbox):
        inv[s] = a
    return sbox, inv


SBOX, INV_SBOX = _sbox()
_MUL = {k: [_mul(a, k) for a in range(256)] for k in (2, 3, 9, 11, 13, 14)}


class AES:
    """One key (16, 24 or 32 bytes); blocks of 16 bytes."""

    def __init__(self, key: bytes) -> None:
        if len(key) not in (16, 24, 32):
            raise ValueError(f"an AES key is 16, 24 or 32 bytes, not {len(key)}")
        self.rounds = {16: 10, 24: 12, 32: 14}[len(key)]
        self._round_keys = self._expand(key)

    def _expand(self, key: bytes) -> list[list[int]]:
        nk = len(key) // 4
        words = [list(key[4 * i : 4 * i + 4]) for i in range(nk)]
        rcon = 1
        for i in range(nk, 4 * (self.rounds + 1)):
            word = list(words[i - 1])
            if i % nk == 0:
                word = [SBOX[b] for b in word[1:] + word[:1]]
                word[0] ^= rcon
                rcon = _xtime(rcon)
            elif nk > 6 and i % nk == 4:
                word = [SBOX[b] for b in word]
            words.append([a ^ b for a, b in zip(words[i - nk], word, strict=True)])
        return [
            [byte for word in words[4 * r : 4 * r + 4] for byte in word]
            for r in range(self.rounds + 1)
        ]

    def encrypt_block(self, block: bytes) -> bytes:
        state = [b ^ k for b, k in zip(block, self._round_keys[0], strict=True)]
        for r in range(1, self.rounds + 1):
            state = [SBOX[b] for b in state]
            state = [state[(i + 4 * (i % 4)) % 16] for i in range(16)]  # ShiftRows
            if r != self.rounds:
                state = _mix(state, (2, 3, 1, 1))
            state = [b ^ k for b, k in zip(state, self._round_keys[r], strict=True)]
        return bytes(state)

    def decrypt_block(self, block: bytes) -> bytes:
        state = [b ^ k for b, k in zip(block, self._round_keys[self.rounds], strict=True)]
        for r in range(self.rounds - 1, -1, -1):
            state = [state[(i - 4 * (i % 4)) % 16] for i in range(16)]  # InvShiftRows
            state = [INV_SBOX[b] for b in state]
            state = [b ^ k for b, k in zip(state, self._round_keys[r], strict=True)]
            if r:
                state = _mix(state, (14, 11, 13, 9))
        return bytes(state)


def _mix(state: list[int], row: tuple[int, int, int, int]) -> list[int]:
    """MixColumns (or its inverse) with the circulant ``row``."""
    out = []
    for c in range(4):
        column = state[4 * c : 4 * c + 4]
        for i in range(4):
            acc = 0
            for j in range(4):
                k = row[(j - i) % 4]
                acc ^= column[j] if k == 1 else _MUL[k][column[j]]
            out.append(acc)
    return out


def cbc_encrypt(key: bytes, iv: bytes, plaintext: bytes) -> bytes:
    """AES/CBC with PKCS#5 padding."""
    cipher = AES(key)
    pad = 16 - len(plaintext) % 16
    data = plaintext + bytes([pad]) * pad
    out, previous = bytearray(), iv
    for i in range(0, len(data), 16):
        previous = cipher.encrypt_block(
            bytes(a ^ b for a, b in zip(data[i : i + 16], previous, strict=True))
        )
        out += previous
    return bytes(out)


def cbc_decrypt(key: bytes, iv: bytes, ciphertext: bytes) -> bytes:
    """AES/CBC with PKCS#5 padding; ValueError for a wrong key or damaged data (the
    padding does not check out)."""
    if len(iv) != 16 or not ciphertext or len(ciphertext) % 16:
        raise ValueError("AES/CBC needs a 16-byte IV and whole 16-byte blocks")
    cipher = AES(key)
    out, previous = bytearray(), iv
    for i in range(0, len(ciphertext), 16):
        block = ciphertext[i : i + 16]
        out += bytes(a ^ b for a, b in zip(cipher.decrypt_block(block), previous, strict=True))
        previous = block
    pad = out[-1]
    if not 1 <= pad <= 16 or out[-pad:] != bytes([pad]) * pad:
        raise ValueError("bad padding: a wrong key, or damaged data")
    return bytes(out[:-pad])

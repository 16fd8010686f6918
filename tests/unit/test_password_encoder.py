"""Kafka's encoded broker passwords against a value encoded by Java's own JCE
(PBKDF2WithHmacSHA512, AES/CBC/PKCS5Padding), as a Kafka broker encodes with
password.encoder.secret; a wrong secret or damaged ciphertext is one named error."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest

from migration.zk.model import passwords

# Produced on this machine by javax.crypto (JDK 17) in Kafka's format; the password has
# a character outside the BMP, so Java counts 12 UTF-16 units for its 11 characters.
JCE_ENCODED = "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:128,salt:S0yhJBfLfOFUb0Z0+F9V2OH+mSlUK/HtgkIvbZJ0uYgubN11u6Vm2tT+n5t/5uvToYVMBu9dqsVVr2Et6e9Q5uhYeUC4yjOZ4+uglLIO1dAy5rlAUa3NFNgGiqalduX13Fw6AAOHgIJPuZohYbNE+u28L1yeS10ayGxwZhuQutMIL6w054bbZeI8COkY1o/xunWcwsWTUuow52+5DtQ47h5I0c7gz7sImTTNY0KCSXTD+t2ipZVLBxDk+9PkEss8aahSfcjsmPyp4BlLfVf8T2JLd5EEA5WdZoon6XMwmLqqUThyddSEWeIQVb4efC/4lq88Guk2X4eW22znGUWy0Q==,iterations:4096,encryptedPassword://QWkgj6mwpAlPORnEeWeQ==,passwordLength:12,initializationVector:VebB/1WqBIfs1yRpG78Ehg=="
JCE_SECRET = "s3cr3t-ëncoder"
JCE_PASSWORD = "hunter2-ü-𝄞"


def test_a_value_javas_jce_encoded_decodes() -> None:
    assert passwords.is_encoded(JCE_ENCODED)
    assert passwords.decode(JCE_ENCODED, JCE_SECRET) == JCE_PASSWORD


def test_encode_then_decode_and_no_secret_in_errors() -> None:
    encoded = passwords.encode(JCE_PASSWORD, JCE_SECRET)
    assert passwords.decode(encoded, JCE_SECRET) == JCE_PASSWORD
    assert "passwordLength:12" in encoded  # Java's UTF-16 length, as Kafka checks it
    with pytest.raises(passwords.PasswordDecodeError) as wrong:
        passwords.decode(encoded, "another secret")
    assert JCE_SECRET not in str(wrong.value) and JCE_PASSWORD not in str(wrong.value)


@pytest.mark.parametrize(
    ("mangle", "why"),
    [
        (lambda v: v.replace("AES/CBC/PKCS5Padding", "AES/GCM/NoPadding"), "cipher"),
        (lambda v: v.replace("PBKDF2WithHmacSHA512", "MD5"), "key factory"),
        (lambda v: ",".join(p for p in v.split(",") if not p.startswith("salt:")), "no salt"),
        (lambda v: "plain-text-password", "not an encoded password"),
    ],
)
def test_malformed_encoded_passwords_are_named(mangle: object, why: str) -> None:
    with pytest.raises(passwords.PasswordDecodeError, match=why):
        passwords.decode(mangle(JCE_ENCODED), JCE_SECRET)  # type: ignore[operator]


def _with_field(encoded: str, name: str, value: str) -> str:
    return ",".join(
        f"{name}:{value}" if item.startswith(f"{name}:") else item for item in encoded.split(",")
    )


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 100])
def test_every_padding_length_round_trips(size: int) -> None:
    """PKCS#7 pads 1 to 16 bytes: a password of each boundary size comes back whole."""
    password = "p" * size
    assert passwords.decode(passwords.encode(password, JCE_SECRET), JCE_SECRET) == password


def _encrypted(encoded: str) -> bytes:
    field = next(i for i in encoded.split(",") if i.startswith("encryptedPassword:"))
    return base64.b64decode(field.partition(":")[2])


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda raw: raw[:-1], id="a partial block"),
        pytest.param(lambda raw: raw[:-16], id="the last block gone"),
        pytest.param(lambda raw: raw[:-1] + bytes([raw[-1] ^ 0x5A]), id="a flipped last byte"),
        pytest.param(lambda raw: b"", id="empty"),
    ],
)
def test_damaged_ciphertext_is_one_named_error(damage: Callable[[bytes], bytes]) -> None:
    raw = damage(_encrypted(JCE_ENCODED))
    damaged = _with_field(JCE_ENCODED, "encryptedPassword", base64.b64encode(raw).decode())
    with pytest.raises(passwords.PasswordDecodeError, match=r"does not decrypt|wrong length") as e:
        passwords.decode(damaged, JCE_SECRET)
    assert JCE_SECRET not in str(e.value) and JCE_PASSWORD not in str(e.value)


def test_a_wrong_iv_size_or_wrong_secret_is_one_named_error() -> None:
    short_iv = _with_field(
        JCE_ENCODED, "initializationVector", base64.b64encode(b"8 bytes!").decode()
    )
    with pytest.raises(passwords.PasswordDecodeError, match="does not decrypt"):
        passwords.decode(short_iv, JCE_SECRET)
    with pytest.raises(passwords.PasswordDecodeError, match=r"password\.encoder\.secret"):
        passwords.decode(JCE_ENCODED, JCE_SECRET + "x")

"""AES against FIPS-197's vectors; Kafka's encoded broker passwords against a value
encoded by Java's own JCE (PBKDF2WithHmacSHA512, AES/CBC/PKCS5Padding), as a Kafka
broker encodes with password.encoder.secret."""

from __future__ import annotations

import pytest

from migration.common.aes import AES, cbc_decrypt, cbc_encrypt
from migration.zk.model import passwords

# Produced on this machine by javax.crypto (JDK 17) in Kafka's format; the password has
# a character outside the BMP, so Java counts 12 UTF-16 units for its 11 characters.
JCE_ENCODED = "keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,keyLength:128,salt:S0yhJBfLfOFUb0Z0+F9V2OH+mSlUK/HtgkIvbZJ0uYgubN11u6Vm2tT+n5t/5uvToYVMBu9dqsVVr2Et6e9Q5uhYeUC4yjOZ4+uglLIO1dAy5rlAUa3NFNgGiqalduX13Fw6AAOHgIJPuZohYbNE+u28L1yeS10ayGxwZhuQutMIL6w054bbZeI8COkY1o/xunWcwsWTUuow52+5DtQ47h5I0c7gz7sImTTNY0KCSXTD+t2ipZVLBxDk+9PkEss8aahSfcjsmPyp4BlLfVf8T2JLd5EEA5WdZoon6XMwmLqqUThyddSEWeIQVb4efC/4lq88Guk2X4eW22znGUWy0Q==,iterations:4096,encryptedPassword://QWkgj6mwpAlPORnEeWeQ==,passwordLength:12,initializationVector:VebB/1WqBIfs1yRpG78Ehg=="
JCE_SECRET = "s3cr3t-ëncoder"
JCE_PASSWORD = "hunter2-ü-𝄞"


@pytest.mark.parametrize(
    ("key", "ciphertext"),
    [
        ("000102030405060708090a0b0c0d0e0f", "69c4e0d86a7b0430d8cdb78070b4c55a"),
        ("000102030405060708090a0b0c0d0e0f1011121314151617", "dda97ca4864cdfe06eaf70a0ec0d7191"),
        (
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "8ea2b7ca516745bfeafc49904b496089",
        ),
    ],
    ids=["AES-128", "AES-192", "AES-256"],
)
def test_fips_197_appendix_c(key: str, ciphertext: str) -> None:
    cipher = AES(bytes.fromhex(key))
    plaintext = bytes.fromhex("00112233445566778899aabbccddeeff")
    assert cipher.encrypt_block(plaintext).hex() == ciphertext
    assert cipher.decrypt_block(bytes.fromhex(ciphertext)) == plaintext


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 100])
def test_cbc_with_pkcs5_padding_round_trips(size: int) -> None:
    data = bytes(range(size))
    encrypted = cbc_encrypt(b"k" * 16, b"i" * 16, data)
    assert len(encrypted) % 16 == 0 and len(encrypted) > size
    assert cbc_decrypt(b"k" * 16, b"i" * 16, encrypted) == data


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

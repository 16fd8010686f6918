"""Dynamic broker passwords as Kafka keeps them in ZooKeeper: encrypted with the
brokers' ``password.encoder.secret``.

The stored value is a CSV map ``key:value,...`` holding ``encryptedPassword`` (base64),
``passwordLength`` (in UTF-16 units, as Java counts), ``salt`` (base64, 256 bytes),
``initializationVector`` (base64), ``keyFactoryAlgorithm`` (PBKDF2WithHmacSHA512, or
PBKDF2WithHmacSHA1), ``cipherAlgorithm`` (AES/CBC/PKCS5Padding), ``keyLength`` (bits) and
``iterations``. The key is PBKDF2 of the secret over the salt; the values used to encode
are stored with the value, so decoding needs only the secret.

The cipher is the ``cryptography`` library's AES in CBC mode with PKCS#7 padding (Java's
``PKCS5Padding`` for 16-byte blocks); the key derivation is ``hashlib``'s PBKDF2.

Errors never show the secret or the password: they say which step failed. A wrong secret
and damaged ciphertext are both a :class:`PasswordDecodeError`, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from migration.common.text import shown

CIPHER = "AES/CBC/PKCS5Padding"
KEY_FACTORIES = {"PBKDF2WithHmacSHA512": "sha512", "PBKDF2WithHmacSHA1": "sha1"}
DEFAULT_KEY_FACTORY = "PBKDF2WithHmacSHA512"
DEFAULT_KEY_LENGTH = 128  # bits: password.encoder.key.length
DEFAULT_ITERATIONS = 4096  # password.encoder.iterations
SALT_BYTES = 256


class PasswordDecodeError(ValueError):
    """An encoded password that cannot be decoded with the given secret."""


def _java_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _key(secret: str, factory: str, salt: bytes, iterations: int, key_length: int) -> bytes:
    digest = KEY_FACTORIES.get(factory)
    if digest is None:
        raise PasswordDecodeError(f"key factory {shown(factory)} is not one Kafka uses")
    if key_length not in (128, 192, 256):
        raise PasswordDecodeError(f"key length {key_length} is not an AES key length")
    return hashlib.pbkdf2_hmac(digest, secret.encode("utf-8"), salt, iterations, key_length // 8)


def _cbc_encrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    padder = padding.PKCS7(algorithms.AES.block_size).padder()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    padded = padder.update(data) + padder.finalize()
    return encryptor.update(padded) + encryptor.finalize()


def _cbc_decrypt(key: bytes, iv: bytes, data: bytes) -> bytes:
    """The clear bytes; ValueError for a wrong IV size, a length that is not whole
    blocks, or bad padding (what a wrong key gives, nearly always)."""
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    unpadder = padding.PKCS7(algorithms.AES.block_size).unpadder()
    padded = decryptor.update(data) + decryptor.finalize()
    return unpadder.update(padded) + unpadder.finalize()


def encode(
    password: str,
    secret: str,
    *,
    iterations: int = DEFAULT_ITERATIONS,
    key_length: int = DEFAULT_KEY_LENGTH,
    key_factory: str = DEFAULT_KEY_FACTORY,
    salt: bytes | None = None,
    iv: bytes | None = None,
) -> str:
    """``password`` encoded as a Kafka broker writes it (a fresh salt and IV unless given:
    the seeder gives them, to be reproducible)."""
    salt = os.urandom(SALT_BYTES) if salt is None else salt
    iv = os.urandom(16) if iv is None else iv
    key = _key(secret, key_factory, salt, iterations, key_length)
    encrypted = _cbc_encrypt(key, iv, password.encode("utf-8"))
    fields = {
        "keyFactoryAlgorithm": key_factory,
        "cipherAlgorithm": CIPHER,
        "keyLength": str(key_length),
        "salt": base64.b64encode(salt).decode(),
        "iterations": str(iterations),
        "encryptedPassword": base64.b64encode(encrypted).decode(),
        "passwordLength": str(_java_length(password)),
        "initializationVector": base64.b64encode(iv).decode(),
    }
    return ",".join(f"{k}:{v}" for k, v in fields.items())


def is_encoded(value: str) -> bool:
    """Whether ``value`` looks like an encoded password (rather than a clear one)."""
    return "encryptedPassword:" in value and "salt:" in value


def decode(encoded: str, secret: str) -> str:
    """The clear password; PasswordDecodeError says why not (never the secret)."""
    fields: dict[str, str] = {}
    for item in encoded.split(","):
        key, colon, value = item.partition(":")
        if not colon:
            raise PasswordDecodeError("not an encoded password (no key:value map)")
        fields[key.strip()] = value.strip()
    try:
        if fields["cipherAlgorithm"] != CIPHER:
            raise PasswordDecodeError(f"cipher {shown(fields['cipherAlgorithm'])} is not {CIPHER}")
        derived = _key(
            secret,
            fields["keyFactoryAlgorithm"],
            base64.b64decode(fields["salt"], validate=True),
            int(fields["iterations"]),
            int(fields["keyLength"]),
        )
        iv = base64.b64decode(fields["initializationVector"], validate=True)
        encrypted = base64.b64decode(fields["encryptedPassword"], validate=True)
        length = int(fields["passwordLength"])
    except KeyError as exc:
        raise PasswordDecodeError(f"the encoded password has no {exc.args[0]}") from None
    except (ValueError, binascii.Error) as exc:
        if isinstance(exc, PasswordDecodeError):
            raise
        raise PasswordDecodeError(f"malformed field in the encoded password ({exc})") from None
    try:
        password = _cbc_decrypt(derived, iv, encrypted).decode("utf-8")
    except ValueError:  # bad padding, a partial block, a wrong IV size, or not UTF-8
        raise PasswordDecodeError(
            "does not decrypt: password.encoder.secret is not the one the brokers used, "
            "or the stored value is damaged"
        ) from None
    if _java_length(password) != length:
        raise PasswordDecodeError("decrypted to the wrong length: a wrong secret or damaged data")
    return password

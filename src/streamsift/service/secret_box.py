"""Credentials at rest: the secrets of a pipeline document, encrypted with Fernet.

The secrets of a document are found by config/secrets.py (one walk for every use). In a
stored document each one is replaced by
`{"$secret": "<Fernet token>"}`; `mask` shows it as "***".

The key comes from STREAMSIFT_SECRET_KEY (a Fernet key: `Fernet.generate_key()`) or from
`<data_dir>/secret.key`, generated on first use and readable by its owner only.
"""

from __future__ import annotations

import contextlib
import copy
import os
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from pydantic import BaseModel

from streamsift.config.secrets import MASK, get_path, secret_paths, set_path
from streamsift.service.errors import SecretKeyError

KEY_ENV = "STREAMSIFT_SECRET_KEY"
KEY_FILE = "secret.key"
SEALED = "$secret"


class SecretBox:
    """Encrypts and decrypts the secrets of pipeline documents with one Fernet key."""

    def __init__(self, data_dir: Path) -> None:
        self._fernet = Fernet(_load_key(Path(data_dir)))

    def seal(self, doc: dict[str, Any], model: BaseModel) -> dict[str, Any]:
        """A copy of `doc` with each secret replaced by its encrypted form."""
        sealed = copy.deepcopy(doc)
        for path in secret_paths(model, sealed):
            value = get_path(sealed, path)
            if value is None or is_sealed(value):
                continue
            token = self._fernet.encrypt(str(value).encode()).decode()
            set_path(sealed, path, {SEALED: token})
        return sealed

    def open(self, doc: dict[str, Any]) -> dict[str, Any]:
        """A copy of a sealed document with its secrets in clear (for the worker only)."""
        return _replace_sealed(doc, self._decrypt)

    def _decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            raise SecretKeyError(
                "a stored secret cannot be decrypted with this key",
                f"the secrets were encrypted with another key: set {KEY_ENV} to that key "
                f"(or restore {KEY_FILE} in the data directory)",
            ) from None


def mask(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of a sealed document with each secret shown as "***"."""
    return _replace_sealed(doc, lambda _token: MASK)


def is_sealed(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {SEALED}


def _replace_sealed(doc: Any, replace: Any) -> Any:
    if is_sealed(doc):
        return replace(doc[SEALED])
    if isinstance(doc, dict):
        return {k: _replace_sealed(v, replace) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_replace_sealed(v, replace) for v in doc]
    return doc


def _load_key(data_dir: Path) -> bytes:
    """The key from the environment, else from the key file (created once, mode 0600)."""
    key = os.environ.get(KEY_ENV, "").strip()
    if key:
        _check_key(key.encode(), KEY_ENV)
        return key.encode()
    path = data_dir / KEY_FILE
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(Fernet.generate_key())
    key_bytes = path.read_bytes().strip()
    _check_key(key_bytes, str(path))
    return key_bytes


def _check_key(key: bytes, where: str) -> None:
    try:
        Fernet(key)
    except ValueError:
        raise SecretKeyError(
            f"{where}: not a Fernet key (32 url-safe base64-encoded bytes)",
            "generate one with: python -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())'",
        ) from None

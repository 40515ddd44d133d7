"""A certificate directory (``ca.crt``, ``tls.crt``, ``tls.key``) written and read safely.

Each file is replaced atomically (write a temporary file, fsync, rename), the key first and the
certificate last, so a reader polling the directory never sees a half-written file; a reader that
catches the pair mid-rotation sees a key that does not match the certificate, which
``read_cert_dir`` reports as ``InvalidCertificate`` and the reader retries.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from certs.secret import CA_CERT_KEY, TLS_CERT_KEY, TLS_PRIVATE_KEY_KEY
from certs.serving import ServingCertificate, serving_certificate_from_pem

CA_CERT_FILE = CA_CERT_KEY
CERT_FILE = TLS_CERT_KEY
KEY_FILE = TLS_PRIVATE_KEY_KEY


class CertificateFilesMissing(FileNotFoundError):
    """The directory lacks one of the three files."""


def write_cert_dir(directory: Path | str, serving: ServingCertificate) -> None:
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    _write_atomically(target / CA_CERT_FILE, serving.ca_pem, mode=0o644)
    _write_atomically(target / KEY_FILE, serving.key_pem, mode=0o600)
    _write_atomically(target / CERT_FILE, serving.cert_pem, mode=0o644)


def read_cert_dir(directory: Path | str) -> ServingCertificate:
    source = Path(directory)
    pems: dict[str, bytes] = {}
    for name in (CERT_FILE, KEY_FILE, CA_CERT_FILE):
        try:
            pems[name] = (source / name).read_bytes()
        except FileNotFoundError:
            raise CertificateFilesMissing(f"{source / name} does not exist") from None
    return serving_certificate_from_pem(pems[CERT_FILE], pems[KEY_FILE], pems[CA_CERT_FILE])


def _write_atomically(path: Path, content: bytes, *, mode: int) -> None:
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

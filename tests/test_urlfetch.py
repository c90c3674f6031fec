"""urlfetch.tls_context: a --ca-file is read as hostile input and trusted alone."""

from __future__ import annotations

import os
import ssl
import threading
from pathlib import Path

import pytest
from conftest import Pki

from hwinfo.urlfetch import FetchError, parse_url, tls_context


def refused(ca: Path | str) -> str:
    with pytest.raises(FetchError) as raised:
        tls_context(str(ca))
    message = str(raised.value)
    assert "\n" not in message and "_ssl.c" not in message
    return message


def test_the_ca_file_alone_is_trusted(pki: Pki) -> None:
    context = tls_context(str(pki.ca))
    assert context.cert_store_stats()["x509_ca"] == 1  # not the system's CAs beside it
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    # Opening a FIFO nobody writes to waits for a writer forever: refused, or it would hang.
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.append(refused(fifo)), daemon=True)
    reader.start()
    reader.join(60)
    assert said == [f"--ca-file {fifo}: not a regular file (a FIFO)"]


def test_an_empty_file_trusts_nothing_rather_than_the_system(tmp_path: Path) -> None:
    # ssl reads cadata="" as no cadata at all, which would trust every system CA.
    empty = tmp_path / "ca.pem"
    empty.write_text("\n")
    assert refused(empty) == f"--ca-file {empty}: empty, no CA certificate in it"


def test_a_key_is_no_ca(pki: Pki) -> None:
    assert refused(pki.server_key).startswith(f"--ca-file {pki.server_key}: no CA certificate loads (")


def test_a_huge_file_is_refused_unread(tmp_path: Path) -> None:
    huge = tmp_path / "ca.pem"
    huge.write_bytes(b"")
    os.truncate(huge, 64 << 20)
    assert refused(huge) == f"--ca-file {huge}: larger than 1 MiB, the most accepted"


@pytest.mark.parametrize("url", [
    "http://prom:s3cret@127.0.0.1:99999", "ftp://prom:s3cret@127.0.0.1:9090",
    "prom:s3cret@127.0.0.1:9090", "http://prom:s3cret@127.0.0.1:0",
    "http://prom:s3c/ret@[::1:9090", "http://prom:s3cret@127.0.0.1:9090/\n",
])
def test_a_malformed_url_is_never_shown_with_its_password(url: str) -> None:
    with pytest.raises(FetchError) as raised:
        parse_url(url, "--prometheus", "Prometheus")
    assert "s3c" not in str(raised.value) and "prom:***@" in str(raised.value)

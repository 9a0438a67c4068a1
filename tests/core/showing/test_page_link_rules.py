"""Signed page links' key versions and edges (pure): what a version is signed as, which `v` a link may carry, and
how long a link lives by default."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from core.showing.pages import PageLinks, version_of

SECRET = "s" * 32
LINKS = PageLinks(base_url="https://council.example.test/", secret=SECRET, ttl=timedelta(days=1))
NOW = datetime(2026, 3, 2, tzinfo=UTC)


def signed(message: str) -> str:
    """The wire format links are signed in, stated apart from the code: links given out before a deploy stay good
    after it only while this does not change."""
    return hmac.new(SECRET.encode(), message.encode(), hashlib.sha256).hexdigest()[:32]


def query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def test_a_version_is_signed_after_the_id_and_the_expiry_and_version_zero_as_before_versions() -> None:
    assert LINKS.signature("d1", 123) == signed("d1:123")
    assert LINKS.signature("d1", 123, 0) == signed("d1:123")
    assert LINKS.signature("d1", 123, 1) == signed("d1:123:v1")
    assert LINKS.signature("d1", 123, 12) == signed("d1:123:v12")


def test_a_link_carries_its_version_only_when_it_has_one() -> None:
    plain = query(LINKS.url("d1", NOW))
    assert set(plain) == {"exp", "sig"}
    later = LINKS.url("d1", NOW, version=3)
    fields = query(later)
    assert fields["v"] == ["3"] and set(fields) == {"exp", "sig", "v"}
    assert urlsplit(later).path == "/d/d1" and later.startswith("https://council.example.test/d/d1?")
    [exp], [sig] = fields["exp"], fields["sig"]
    assert sig == signed(f"d1:{exp}:v3")
    assert LINKS.valid("d1", exp, sig, NOW, version=3)
    assert not LINKS.valid("d1", exp, sig, NOW)  # revoked: the discussion's version is no longer 3
    assert not LINKS.valid("d1", exp, sig, NOW, version=4)


def test_a_link_signed_before_a_revocation_is_refused_under_the_new_version() -> None:
    [exp], [sig] = (query(LINKS.url("d1", NOW))[k] for k in ("exp", "sig"))
    assert LINKS.valid("d1", exp, sig, NOW, version=0)
    assert not LINKS.valid("d1", exp, sig, NOW, version=1)


def test_a_link_is_good_for_ninety_days_by_default() -> None:
    links = PageLinks("https://x.test", SECRET)
    assert links.ttl == timedelta(days=90)
    [exp] = query(links.url("d1", NOW))["exp"]
    assert int(exp) == int((NOW + timedelta(days=90)).timestamp())
    sig = links.signature("d1", int(exp))
    assert links.valid("d1", exp, sig, NOW + timedelta(days=90) - timedelta(seconds=1))
    assert not links.valid("d1", exp, sig, NOW + timedelta(days=90))


def test_the_base_url_keeps_its_path_without_a_doubled_slash() -> None:
    assert PageLinks("https://x.test/council//", SECRET).url("d1", NOW).startswith("https://x.test/council/d/d1?")
    assert PageLinks("https://x.test/council", SECRET).url("d1", NOW).startswith("https://x.test/council/d/d1?")


@pytest.mark.parametrize(("given", "version"), [
    ("", 0), ("1", 1), ("9", 9), ("10", 10), ("123456789012", 123456789012),
])
def test_a_version_that_url_writes_is_read_back(given: str, version: int) -> None:
    assert version_of(given) == version


@pytest.mark.parametrize("given", [
    "0", "01", "0007", "1234567890123", "-1", "+1", " 1", "1 ", "1.0", "x", "١", "１", "1e3",
])
def test_a_version_url_never_writes_is_none(given: str) -> None:
    assert version_of(given) is None


def test_an_expiry_of_twelve_digits_is_the_longest_and_zero_digits_none() -> None:
    twelve = "9" * 12
    assert LINKS.valid("d1", twelve, LINKS.signature("d1", int(twelve)), NOW)
    assert not LINKS.valid("d1", "1" + twelve, LINKS.signature("d1", int("1" + twelve)), NOW)
    assert not LINKS.valid("d1", "", LINKS.signature("d1", 0), NOW)

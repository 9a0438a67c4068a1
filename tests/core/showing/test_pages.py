"""Signed page links (pure): what a link is made of, and every way a link can be wrong."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.showing.pages import PageLinks

LINKS = PageLinks(base_url="https://council.example.test/", secret="s" * 32, ttl=timedelta(days=1))
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 3, 2, tzinfo=UTC)


def test_a_link_is_the_base_the_id_its_expiry_and_their_signature() -> None:
    exp = int((NOW + timedelta(days=1)).timestamp())
    assert LINKS.url("d1", NOW) == f"https://council.example.test/d/d1?exp={exp}&sig={LINKS.signature('d1', exp)}"
    assert PageLinks("https://x.test/X/", "k" * 32).url("d1", NOW).startswith("https://x.test/X/d/d1?exp=")
    assert PageLinks("https://x.test", "").url("d1", NOW) == "" and PageLinks("", "k").url("d1", NOW) == ""
    sig = LINKS.signature("d1", exp)
    assert len(sig) == 32 and sig not in (LINKS.signature("d2", exp), LINKS.signature("d1", exp + 1))
    assert PageLinks(secret="t" * 32).signature("d1", exp) != sig  # the secret signs


def test_a_good_link_is_valid_until_it_expires_and_not_a_second_longer() -> None:
    exp = int(NOW.timestamp()) + 10
    sig = LINKS.signature("d1", exp)
    assert LINKS.valid("d1", str(exp), sig, NOW)
    assert not LINKS.valid("d1", str(exp), sig, NOW + timedelta(seconds=10))  # expired at its second
    assert not LINKS.valid("d1", str(exp), "0" * 32, NOW)  # unexpired but forged
    assert not LINKS.valid("d2", str(exp), sig, NOW)
    assert not PageLinks("https://x.test", "").valid("d1", str(exp), sig, NOW)


def test_expiries_of_one_to_twelve_ascii_digits_and_nothing_else() -> None:
    for exp in (9, 10**11):  # one digit, twelve digits
        assert LINKS.valid("d1", str(exp), LINKS.signature("d1", exp), EPOCH)
    big = 10**12  # thirteen digits
    assert not LINKS.valid("d1", str(big), LINKS.signature("d1", big), EPOCH)
    assert not LINKS.valid("d1", "١٢٣", LINKS.signature("d1", 123), EPOCH)  # digits, but not ASCII ones
    assert not LINKS.valid("d1", "", LINKS.signature("d1", 0), EPOCH)


def test_a_signature_of_other_characters_or_length_is_simply_invalid() -> None:
    exp = int(NOW.timestamp()) + 10
    sig = LINKS.signature("d1", exp)
    for bad in ("é" * 32, sig.upper(), sig[:31], sig + "0", "", "\x00" * 32):
        assert not LINKS.valid("d1", str(exp), bad, NOW), bad

"""Sealing rules (core/storage/sealing.py), one at a time: keys are read from a comma- or space-separated setting,
the first seals and any reads; a missing, malformed or wrong key is refused with a message that names the setting
and says what to do; a value is told apart as sealed (under any key, or under ours) or not."""

from __future__ import annotations

import base64

import pytest

from core.storage.sealing import KEY_VARIABLE, NEW_KEY_HINT, BadKey, Sealer, looks_sealed, missing_key

# Fixed keys, not generated ones: every xdist worker must collect the same parametrized ids.
OLD, NEW, OTHER = (base64.urlsafe_b64encode(bytes([n]) * 32).decode() for n in (1, 2, 3))


@pytest.mark.parametrize("setting", ["", "  ", ",", " , ,"])
def test_no_key_is_refused_with_how_to_make_one(setting: str) -> None:
    with pytest.raises(BadKey) as refused:
        Sealer.from_keys(setting)
    said = str(refused.value)
    assert said.startswith(f"{KEY_VARIABLE} is not set"), said
    assert said.endswith(NEW_KEY_HINT), said
    assert refused.value.__context__ is None


@pytest.mark.parametrize("setting", ["not-a-key", f"{NEW},short", "x" * 44])
def test_a_malformed_key_is_refused_with_the_form_a_key_takes(setting: str) -> None:
    with pytest.raises(BadKey) as refused:
        Sealer.from_keys(setting)
    said = str(refused.value)
    assert said.startswith(f"{KEY_VARIABLE} must be Fernet keys"), said
    assert "comma-separated, the newest first" in said and said.endswith(NEW_KEY_HINT), said
    assert refused.value.__suppress_context__, "the key is not echoed in a chained error"


@pytest.mark.parametrize("setting", [f"{NEW},{OLD}", f"{NEW} {OLD}", f" {NEW} , {OLD} ", f"{NEW},,{OLD},"])
def test_the_first_key_seals_and_every_key_reads(setting: str) -> None:
    both, new_only, old_only = Sealer.from_keys(setting), Sealer.from_keys(NEW), Sealer.from_keys(OLD)
    sealed = both.seal("xoxb-the-token")
    assert new_only.unseal(sealed) == "xoxb-the-token", "sealed under the first key"
    assert both.unseal(old_only.seal("xoxb-old")) == "xoxb-old", "read under the second"
    assert both.sealed(sealed) and both.sealed(old_only.seal("x"))
    assert not old_only.sealed(sealed)


def test_a_value_no_key_reads_is_refused_saying_the_old_key_is_missing() -> None:
    sealed = Sealer.from_keys(OLD).seal("xoxb-the-token")
    only_new = Sealer.from_keys(NEW)
    with pytest.raises(BadKey) as refused:
        only_new.unseal(sealed)
    said = str(refused.value)
    assert said.startswith(f"a stored credential cannot be read with {KEY_VARIABLE}"), said
    assert said.endswith('("new,old") until the reseal?'), said
    assert refused.value.__suppress_context__
    with pytest.raises(BadKey) as resealing:
        only_new.reseal(sealed, where="slack_bots row 3")
    said = str(resealing.value)
    assert said == str(missing_key("slack_bots row 3"))
    assert said.startswith(f"slack_bots row 3 is not sealed under any key in {KEY_VARIABLE}"), said
    assert '"new,old"' in said and said.endswith("Nothing was written."), said
    assert resealing.value.__suppress_context__
    with pytest.raises(BadKey) as unnamed:
        only_new.reseal(sealed)
    assert str(unnamed.value).startswith(f"a stored credential is not sealed under any key in {KEY_VARIABLE}")


def test_a_reseal_moves_a_value_to_the_first_key() -> None:
    sealed = Sealer.from_keys(OLD).seal("xoxb-the-token")
    moved = Sealer.from_keys(f"{NEW},{OLD}").reseal(sealed)
    assert Sealer.from_keys(NEW).unseal(moved) == "xoxb-the-token"


def test_only_a_token_under_one_of_our_keys_counts_as_sealed() -> None:
    ours = Sealer.from_keys(NEW)
    assert not ours.sealed("xoxb-in-clear")
    assert not ours.sealed("")
    assert not ours.sealed("é")  # not ASCII: no token at all
    assert not ours.sealed(Sealer.from_keys(OTHER).seal("x"))


def test_the_form_of_a_token_is_told_apart_from_a_credential_in_clear() -> None:
    token = Sealer.from_keys(OTHER).seal("")  # the shortest token there is, under a key not ours
    assert looks_sealed(token)
    assert not looks_sealed("xoxb-1234-5678-abcdefghijklmnop")
    assert not looks_sealed("not base64 at all!")
    assert not looks_sealed("é")
    raw = bytearray(base64.urlsafe_b64decode(token))
    assert not looks_sealed(base64.urlsafe_b64encode(bytes(raw[:72])).decode()), "one byte short"
    assert looks_sealed(base64.urlsafe_b64encode(bytes(raw[:73])).decode()), "as short as one can be"
    raw[0] = 0x81
    assert not looks_sealed(base64.urlsafe_b64encode(bytes(raw)).decode()), "another version"

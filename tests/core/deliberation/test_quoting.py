"""Quoting people's words (pure): one line or many, cut to size before escaping, and every value escaped."""

from __future__ import annotations

from core.deliberation.quoting import INLINE_CHARS, NAME_CHARS, ZWJ, attr, clean, escape, inline, named, quote, unescape


def test_escape_and_unescape_are_inverse_for_the_three_characters() -> None:
    assert escape("a & <b> &lt;") == "a &amp; &lt;b&gt; &amp;lt;"
    for text in ("a & <b> &lt; &amp;gt;", "&&<<>>", ""):
        assert unescape(escape(text)) == text
    assert unescape("&lt;&gt;&amp;") == "<>&"


def test_clean_keeps_lines_tabs_and_joined_emoji_and_drops_what_is_invisible() -> None:
    assert clean("a\tb\nc\x00d\x7fe\x1bf") == "a\tb\ncdef"
    assert clean("é\u200b\u202ex\u2066\ny\tz\x00") == "éx\ny\tz"
    assert clean("é\x00x\x07y") == "éxy"  # a control character inside non-ASCII text
    assert clean(f"👩{ZWJ}💻") == f"👩{ZWJ}💻"
    assert clean("\U000e0041\U000e0042ok") == "ok"


def test_inline_is_one_escaped_line_cut_with_an_ellipsis() -> None:
    assert inline("  a\n b\t<c>  ") == "a b &lt;c&gt;"
    assert INLINE_CHARS == 300 and NAME_CHARS == 80
    long = inline("x" * 400)
    assert long == "x" * 299 + "…" and len(inline("y" * 300)) == 300 and inline("y" * 300) == "y" * 300
    assert inline("word " * 3, limit=7) == "word w…"
    assert inline("ab   cd", limit=4) == "ab…"  # the cut drops the space before the ellipsis
    assert inline("<" * 10, limit=4) == "&lt;" * 3 + "…"  # cut before escaping: never inside an entity


def test_attributes_escape_quotes_too_and_names_are_quoted() -> None:
    assert attr('Ann "the boss" <x>') == "Ann &quot;the boss&quot; &lt;x&gt;"
    assert attr("n" * 100) == "n" * 79 + "…"
    assert named('Bo"b') == '"Bo&quot;b"'


def test_quote_wraps_text_in_our_tag_with_escaped_attributes() -> None:
    assert quote("human", " hi <there>\n second ", name='A"') == (
        '<human name="A&quot;">\nhi &lt;there&gt;\n second\n</human>')
    assert quote("topic", "t") == "<topic>\nt\n</topic>"
    assert quote("t", "abcdef", limit=4) == "<t>\nabc…\n</t>"
    assert quote("t", "ab  cdef", limit=4) == "<t>\nab…\n</t>"
    assert quote("t", "abcd", limit=4) == "<t>\nabcd\n</t>"
    assert quote("t", "<<<<<", limit=3) == "<t>\n&lt;&lt;…\n</t>"
    assert quote("t", "x", a="1", b="2") == '<t a="1" b="2">\nx\n</t>'

"""Posts on the page and in the saved HTML: their Markdown rendered (bold, lists, links to web pages), everything
they say escaped: no markup of their own, no script, no link but http and https."""

from __future__ import annotations

from adapters.web.view import markdown


def test_markdown_renders_and_everything_else_stays_text() -> None:
    html = str(markdown("✅ **supported** — see [Survey <2025>](https://research.example.org/s?a=1&b=2) now"))
    assert '<a href="https://research.example.org/s?a=1&amp;b=2" rel="noopener noreferrer">Survey &lt;2025&gt;</a>' \
        in html
    assert "<strong>supported</strong>" in html and "**" not in html
    assert str(markdown("**Verdict:** LEANING x\n- one\n- two")).count("<li>") == 2
    assert "<br" in str(markdown("**Recommendation**\nRun a trial")), "a line break in a post is one on the page"
    quoted = str(markdown('[x](https://a.example/"onmouseover="y)'))
    assert 'onmouseover="' not in quoted and "%22onmouseover=%22y" in quoted, "a quote in a URL ends nothing"
    for hostile in ("[x](javascript:alert(1))", "<script>alert(1)</script>",
                    "[x](data:text/html;base64,PHNjcmlwdD4=)",
                    '<a href="https://a.example">x</a>'):
        out = str(markdown(hostile))
        assert "<a " not in out and "<script" not in out and "<img" not in out, out
    assert "<img" not in str(markdown("![x](https://a.example/pixel.png)")), "the page fetches nothing"

"""Sources on the page and in the saved HTML are links; nothing else a post says becomes markup."""

from __future__ import annotations

from adapters.web.view import links


def test_markdown_links_become_links_and_everything_else_stays_text() -> None:
    html = str(links("✅ **supported** — see [Survey <2025>](https://research.example.org/s?a=1&b=2) now"))
    assert '<a href="https://research.example.org/s?a=1&amp;b=2" rel="noopener noreferrer">Survey &lt;2025&gt;</a>' \
        in html
    assert html.startswith("✅ **supported** — see ")
    for hostile in ("[x](javascript:alert(1))", '[x](https://a.example/"onmouseover="y)', "<script>alert(1)</script>"):
        out = str(links(hostile))
        assert "<a " not in out and "<script" not in out, out

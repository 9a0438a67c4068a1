"""The discussion's living synthesis on Discord: a `synthesis.md` attachment with the link to its page (pure)."""

from __future__ import annotations

from core.models import Post, PostFile


def as_attachment(post: Post, *, updated: bool = False) -> Post:
    """A `document` post as a notice carrying synthesis.md; each later synthesis brings a fresh file."""
    what = "The synthesis is updated" if updated else "The synthesis, the stance table and the open questions"
    text = f"📄 {what}: `synthesis.md` below."
    if post.page_url:
        text += f" The whole discussion: [its page]({post.page_url})."
    file = PostFile(name="synthesis.md", data=post.text.encode(), title="synthesis.md",
                    alt=f"The synthesis of the discussion as Markdown ({len(post.text):,} characters)")
    return Post(kind="notice", key=f"{post.key}:file", text=text, files=[file], offline=post.offline)

"""The final synthesis comes with its charts, uploaded into the thread through files_upload_v2."""

from __future__ import annotations

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


async def test_the_final_synthesis_brings_its_charts_into_the_thread(slack: Slack, server: SlackServer,
                                                                     fake: FakeSlack) -> None:
    # Two rounds: in the second the personas name round 1's proposals by id, so the final poll has their votes.
    await slack.command("Should we adopt Rust? --rounds 2")
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    assert [c.method for c in fake.calls].count("files.getUploadURLExternal") == len(fake.uploads) > 0
    names = sorted(f["name"] for f in fake.uploads)
    assert "vote.png" in names
    for f in fake.uploads:
        assert f["data"].startswith(b"\x89PNG") and f["shares"]["thread_ts"] == d.thread_ref
        assert f["alt_txt"].startswith(("Bar chart of the vote", "Grid of each persona's choice"))
    synthesis = next(m for m in fake.messages if "Final synthesis" in m.text or "Final synthesis" in str(m.blocks))
    shared = next(m for m in fake.messages if m.files)
    assert float(shared.ts) > float(synthesis.ts), "the charts follow the synthesis they illustrate"


async def test_a_refused_upload_leaves_the_synthesis_standing(slack: Slack, server: SlackServer,
                                                             fake: FakeSlack) -> None:
    fake.fail("files.getUploadURLExternal", "missing_scope", times=5)
    await slack.command("Should we adopt Rust? --rounds 1")
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    assert d.status.value == "done" and fake.uploads == []
    assert any("Final synthesis" in m.text or "Final synthesis" in str(m.blocks) for m in fake.messages)


async def test_the_export_button_uploads_what_a_team_files_with_the_charts(slack: Slack, server: SlackServer,
                                                                             fake: FakeSlack) -> None:
    import json

    await slack.command("Should we adopt Rust? --rounds 2")
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    header = fake.find("C0001", d.thread_ref)
    assert header is not None and '"action_id": "ctl:export"' in json.dumps(header.blocks)
    charts = sorted(f["name"] for f in fake.uploads)  # the charts the final synthesis brought into the thread
    assert "vote.png" in charts
    before, calls = len(fake.uploads), len(fake.called("files.completeUploadExternal"))
    await slack.click(header.ts, "ctl:export", d.id)
    await server.idle()
    uploaded = fake.uploads[before:]
    assert len(fake.called("files.completeUploadExternal")) == calls + 1, "one upload, all files together"
    files = {f["name"]: f for f in uploaded}
    assert len(uploaded) == len(files) == 3 + len(charts), [f["name"] for f in uploaded]
    assert set(files) == {"synthesis.md", "open-questions.md", "transcript.json", *charts}
    synthesis = files["synthesis.md"]["data"].decode()
    assert synthesis.startswith("# ") and "Rust" in synthesis
    assert all(f"]({name})" in synthesis for name in charts), "synthesis.md shows the pictures beside it"
    assert files["open-questions.md"]["data"].decode().startswith("# Open questions: ")
    assert json.loads(files["transcript.json"]["data"])["discussion"]["id"] == d.id
    for name in charts:
        assert files[name]["data"].startswith(b"\x89PNG") and files[name]["alt_txt"]
    assert all(f["shares"]["thread_ts"] == d.thread_ref for f in files.values())

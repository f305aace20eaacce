"""Issue 33: what the user said is kept with the decision, ``none`` says why, a session-id
prefix resolves before deciding, a stale tool output does not hide an eligible message of its
window, ``alternateBranchCandidates`` counts defensive rejections, and a decision's candidate
recalls as a located hit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.errors import NotFound
from cwcore.hints import candidates, privacy
from cwcore.hints import preflight as preflight_mod
from cwcore.hints.preflight import SAID_MAX_CHARS, said
from cwcore.hints.why import Limits, explain
from cwcore.importers.scrub import PATTERNS
from cwcore.memory import context as memory_context
from cwtui.cli import app
from tests.hints.helpers import load, row

runner = CliRunner()
KEY = "sk-ant-" + "a1B2c3D4e5" * 4


# -- what the user said ------------------------------------------------------------------------


def test_said_is_kept_scrubbed_and_shown_beside_the_bytes(tmp_path: Path, archive: Archive) -> None:
    load(archive, tmp_path, [row("s", "u1", "user", "REAP_DRAIN keeps the reaper from draining")])
    message = f"remember REAP_DRAIN? my key was {KEY}"
    body = archive.preflight(message, session="s", message_key="u:1")
    assert body.outcome == "excerpt"
    assert KEY not in json.dumps(body.to_json())  # never in the answer or its diagnostics
    entry = archive.hints(session="s").hints[0]
    assert entry.said == "remember REAP_DRAIN? my key was [REDACTED:anthropic-key]"
    assert entry.hint == body.hint
    raw = archive.hints(session="s").to_json()["hints"][0]
    assert raw["said"] == entry.said and "saidWithheld" not in raw
    assert "said" not in json.dumps(raw["diagnostics"])
    archive.close()
    text = runner.invoke(app, ["hints", "--session", "s"])
    assert text.exit_code == 0, text.output
    assert "said: remember REAP_DRAIN? my key was [REDACTED:anthropic-key]" in text.stdout
    assert KEY not in text.stdout


def test_said_is_cut_to_its_cap_and_a_long_secret_across_the_cut_is_scrubbed() -> None:
    pem = (
        "-----BEGIN RSA PRIVATE KEY-----\n"
        + "MIIEowIBAAKCAQEA" * 200
        + "\n-----END RSA PRIVATE KEY-----"
    )
    # The key starts inside the kept text and ends far past the cut: replaced whole.
    text, withheld = said("x" * (SAID_MAX_CHARS - 100) + " " + pem, scrub=True)
    assert withheld is None
    assert text == "x" * (SAID_MAX_CHARS - 100) + " [REDACTED:private-key]"
    long, _ = said("y" * 50_000, scrub=True)
    assert long is not None and len(long) == SAID_MAX_CHARS and long.endswith("…")
    short, _ = said("ok thanks", scrub=True)
    assert short == "ok thanks"


@settings(max_examples=60, deadline=None)
@given(
    head=st.text(max_size=300),
    tail=st.text(max_size=3000),
    secret=st.sampled_from([KEY, "ghp_" + "A1b2C3d4E5" * 4, "AKIA" + "ABCDEFGH12345678"]),
)
def test_said_is_bounded_and_holds_no_secret(head: str, tail: str, secret: str) -> None:
    text, _ = said(head + " " + secret + " " + tail, scrub=True)
    assert text is not None and len(text) <= SAID_MAX_CHARS
    assert secret not in text
    for pattern in PATTERNS.values():
        for found in pattern.finditer(text):
            assert found.group(0).startswith(("[REDACTED", "password", "secret", "token"))


def test_a_privacy_policy_withholds_what_the_user_said(tmp_path: Path, archive: Archive) -> None:
    load(archive, tmp_path, [row("s", "u1", "user", "REAP_DRAIN keeps the reaper from draining")])
    policy = privacy.RegexPolicy([r"(?i)salary"], "confidential", "HR data")
    privacy.register_policy(policy)
    try:
        archive.preflight("remember my salary talk?", session="s", message_key="k")
    finally:
        privacy.unregister_policy(policy)
    entry = archive.hints(session="s").hints[0]
    assert entry.said is None and entry.said_withheld == "privacy:HR data"


# -- why there is no hint ----------------------------------------------------------------------


def test_none_names_every_row_older_than_the_age_limits(tmp_path: Path, archive: Archive) -> None:
    rows = [
        row("s", "u1", "user", "REAP_DRAIN keeps the reaper from draining", days=40),
        row("s", "a1", "assistant", "Noted: REAP_DRAIN.", days=40, minute=1),
    ]
    load(archive, tmp_path, rows)
    body = archive.preflight("what did we decide about REAP_DRAIN last time?", session="s")
    assert (body.outcome, body.diagnostics.reason) == ("none", "no-candidate")
    why = explain(body.outcome, body.diagnostics.reason, body.diagnostics)
    assert "older than the age limits (30 days for conversation, 7 days for tool output)" in why
    assert "every indexed row" in why
    archive.close()
    out = runner.invoke(app, ["preflight", "what about REAP_DRAIN again?", "--session", "s"])
    assert out.exit_code == 0, out.output
    assert "why: every indexed row of this session's lineage" in out.stdout
    assert "is older than the age limits (30 days" in out.stdout


def test_each_reason_reads_as_a_sentence(tmp_path: Path, archive: Archive) -> None:
    rows = [
        row("s", "u1", "user", "The gateway timeout shows in the nginx proxy logs"),
        row("s", "u2", "user", "REAP_DRAIN keeps the reaper from draining", minute=1),
    ]
    load(archive, tmp_path, rows)
    cases = {
        "ok thanks": "no topic",
        "what is a monad in category theory?": "matches",  # nothing matches, or weak
    }
    for message, words in cases.items():
        body = archive.preflight(message, session="s")
        why = explain(body.outcome, body.diagnostics.reason, body.diagnostics)
        assert body.outcome in ("none", "no-query")
        assert words in why or "weak evidence" in why, (message, why)
    unknown = archive.preflight("REAP_DRAIN again?", session="no-such-session")
    assert "not in the archive" in explain(unknown.outcome, "unknown-session", unknown.diagnostics)
    weak = archive.preflight("proxy timeout", session="s", message_key="w")
    text = explain(weak.outcome, weak.diagnostics.reason, weak.diagnostics, Limits(10, 2, 24))
    assert text  # every outcome has a sentence
    if weak.diagnostics.reason == "weak":
        assert "strong needs at least 2" in text


# -- a session-id prefix ----------------------------------------------------------------------


def test_a_unique_session_prefix_resolves_before_deciding(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        row("alpha-session-one", "u1", "user", "REAP_DRAIN keeps the reaper from draining"),
        row("beta-session-one", "u1", "user", "nothing here", project="beta"),
        row("beta-session-two", "u1", "user", "nothing there", project="beta"),
    ]
    load(archive, tmp_path, rows)
    body = archive.preflight("remember REAP_DRAIN?", session="alpha-ses", message_key="k1")
    assert body.session == "alpha-session-one" and body.outcome == "excerpt"
    listed = archive.hints().hints
    assert [(h.session, h.message_key) for h in listed] == [("alpha-session-one", "k1")]
    # The same prefix again returns the frozen decision of the full id.
    again = archive.preflight("remember REAP_DRAIN?", session="alpha-ses", message_key="k1")
    assert again.frozen and again.hint == body.hint
    # An ambiguous prefix is a one-line error, and nothing is stored.
    with pytest.raises(NotFound, match="ambiguous: beta-session-one, beta-session-two"):
        archive.preflight("remember REAP_DRAIN?", session="beta-ses", message_key="k2")
    assert len(archive.hints().hints) == 1
    # An id that names no session is kept as given (a host asks before it is imported).
    unknown = archive.preflight("remember REAP_DRAIN?", session="gamma-session", message_key="k3")
    assert (unknown.session, unknown.diagnostics.reason) == ("gamma-session", "unknown-session")
    # The memory block takes the prefix too: its project is the session's.
    seen: list[str | None] = []
    build = memory_context.injection.build

    def spy(*args: Any, **kw: Any) -> Any:
        seen.append(kw.get("project"))
        return build(*args, **kw)

    monkeypatch.setattr(memory_context.injection, "build", spy)
    archive.memory_context("what about REAP_DRAIN?", session="beta-session-o")
    assert seen == ["beta"]
    with pytest.raises(NotFound, match="ambiguous"):
        archive.memory_context("x", session="beta-ses")


def test_the_cli_takes_a_prefix_and_reports_ambiguity_in_one_line(
    tmp_path: Path, archive: Archive
) -> None:
    rows = [
        row("alpha-session-one", "u1", "user", "REAP_DRAIN keeps the reaper from draining"),
        row("alpha-session-two", "u1", "user", "nothing", minute=1),
    ]
    load(archive, tmp_path, rows)
    archive.close()
    out = runner.invoke(app, ["preflight", "remember REAP_DRAIN?", "--session", "alpha-session-o"])
    assert out.exit_code == 0 and "session alpha-session-one" in out.stdout
    bad = runner.invoke(app, ["preflight", "remember REAP_DRAIN?", "--session", "alpha-s"])
    assert bad.exit_code == 3
    assert len(bad.output.strip().splitlines()) == 1 and "ambiguous" in bad.output


# -- candidates --------------------------------------------------------------------------------


def _tool_turn() -> list[dict[str, Any]]:
    return [
        row("s", "u1", "user", "What does `REAP_DRAIN` do on shutdown?", days=10),
        row("s", "a1", "assistant", "Let me look.", days=10, minute=1),
        row(
            "s",
            "t1",
            "tool",
            "REAP_DRAIN: drains the bounded queue on shutdown of the worker pool",
            days=10,
            minute=2,
            tool_call_id="c1",
        ),
        row("s", "a2", "assistant", "Done.", days=10, minute=3),
        row("s", "u2", "user", "ok", days=1),
    ]


def test_a_stale_tool_output_does_not_hide_an_eligible_message_of_its_window(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tool output (10 days old, past its 7-day limit) matches more units than the user's
    # message of the same window (10 days old, within the 30-day limit).
    load(archive, tmp_path, _tool_turn())
    message = "remember REAP_DRAIN bounded queue shutdown?"
    body = archive.preflight(message, session="s", message_key="fixed")
    assert body.outcome == "excerpt", body.diagnostics.reason
    assert [c.id.split("#")[1] for c in body.diagnostics.candidates] == ["user:u1"]
    # Without the age check while picking the message, the window was dropped whole.
    verify = candidates.verify
    monkeypatch.setattr(
        candidates, "verify", lambda ev, r, q, m, fresh=None: verify(ev, r, q, m, None)
    )
    old = archive.preflight(message, session="s", message_key="old-way")
    assert old.outcome == "none"
    assert [r.reason for r in old.diagnostics.left_out] == ["stale:tool-payload"]


def test_alternate_branch_candidates_count_defensive_rejections(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        row("mine", "u1", "user", "WIDGET_ID is the widget sprocket"),
        row("other", "u1", "user", "WIDGET_ID is a sibling's widget", minute=1),
    ]
    load(archive, tmp_path, rows)
    body = archive.preflight("remember WIDGET_ID?", session="mine", message_key="a")
    counts = body.diagnostics.counts
    assert counts is not None and counts.alternate_branch_candidates == 0
    assert "alternateBranchCandidates" in body.to_json()["diagnostics"]["counts"]
    # A lookup that leaks another session's rows: they are rejected after it, and counted.
    allowed_rows = preflight_mod.allowed_rows

    def leaky(store: Any, index: Any, lineage: list[str], *args: Any, **kw: Any) -> Any:
        return allowed_rows(store, index, [*lineage, "other"], *args, **kw)

    monkeypatch.setattr(preflight_mod, "allowed_rows", leaky)
    leaked = archive.preflight("remember WIDGET_ID?", session="mine", message_key="b")
    assert leaked.diagnostics.counts is not None
    assert leaked.diagnostics.counts.alternate_branch_candidates == 1
    assert all(c.session == "mine" for c in leaked.diagnostics.candidates)


def test_a_candidate_recalls_as_a_located_hit(tmp_path: Path, archive: Archive) -> None:
    load(archive, tmp_path, _tool_turn()[:2])
    body = archive.preflight("remember REAP_DRAIN?", session="s")
    candidate = body.diagnostics.candidates[0].id
    recalled = archive.recall(archive.hint_locator(candidate))
    source = recalled.source
    assert recalled.status == "resolved" and source is not None
    assert source.agent and source.range[1] > 0 and source.tokens > 0
    assert [m.role for m in source.messages] == ["user", "assistant"]
    user = source.messages[0]
    assert source.match == user.range  # the candidate's message is the match
    with pytest.raises(NotFound):
        archive.hint_locator("t-0000000000000000#user:u1")
    assert re.match(r"^cwl\d", archive.hint_locator(candidate.split("#")[0]))

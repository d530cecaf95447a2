"""The closed-book rule on hand-written ATIF trajectories: reader, web tools, URLs, verdicts.

The trajectories (fixtures/trajectories/) are shaped like those Harbor writes for
Claude Code, Codex, Gemini CLI, OpenHands and Terminus, one clean and one
violating each, plus continuations, subagents and broken files.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from usd_repair_verifier import closed_book
from usd_repair_verifier.closed_book import rule, trajectory, web_tools
from usd_repair_verifier.closed_book.allowed import allowed_urls, package_urls

ROOT = Path(__file__).resolve().parent.parent
TRAJECTORIES = ROOT / "fixtures" / "trajectories"
INPUT = ROOT / "fixtures" / "cases" / "ant_two_joint_faults" / "input"


def verdict(name: str, input_package: Path = INPUT, instruction: tuple[str, ...] = ()) -> closed_book.Verdict:
    return closed_book.evaluate(TRAJECTORIES / name / "trajectory.json", input_package, instruction)


@pytest.mark.parametrize("agent, clean, violating, tool, kind", [
    ("claude-code", "claude_code_clean", "claude_code_webfetch", "WebFetch", "web_tool"),
    ("codex", "codex_clean", "codex_web_search", "web_search_call", "web_tool"),
    ("gemini-cli", "gemini_cli_clean", "gemini_cli_web_search", "google_web_search", "web_tool"),
    ("openhands", "openhands_clean", "openhands_browser", "browser", "web_tool"),
    ("terminus-2", "terminus_clean", "terminus_git_clone", "bash_command", "url"),
])
def test_each_agent_shape_clean_and_violating(agent, clean, violating, tool, kind):
    ok = verdict(clean)
    assert ok.status == closed_book.CLEAN, ok.reason
    assert ok.run["agent"] == agent and ok.run["tool_calls"] >= 1 and ok.violations == []
    bad = verdict(violating)
    assert bad.status == closed_book.VIOLATION
    assert bad.run["agent"] == agent
    first = bad.violations[0]
    assert (first.tool, first.kind, first.step_id) == (tool, kind, 2)
    assert first.excerpt  # the reviewer sees what was done


def test_a_web_tool_call_with_a_url_is_listed_as_both():
    v = verdict("claude_code_webfetch")
    assert [x.kind for x in v.violations] == ["web_tool", "url"]
    assert v.violations[1].url.startswith("https://github.com/Farama-Foundation/Gymnasium/")


def test_a_bare_host_without_scheme_is_a_url():
    v = verdict("terminus_git_clone")
    assert v.violations[0].url == "github.com/google-deepmind/mujoco_menagerie"
    assert "git clone" in v.violations[0].excerpt


def test_continuations_are_followed():
    assert verdict("continuation_clean").status == closed_book.CLEAN
    assert verdict("continuation_clean").run["files"] == ["trajectory.json", "trajectory.cont-1.json"]
    v = verdict("continuation_violation")
    assert v.status == closed_book.VIOLATION
    assert v.violations[0].trajectory == "trajectory.cont-1.json"
    assert "raw.githubusercontent.com" in v.violations[0].url


def test_a_continuation_segment_nobody_refers_to_is_read_too():
    v = verdict("continuation_unreferenced")
    assert v.status == closed_book.VIOLATION
    assert v.violations[0].trajectory == "trajectory.cont-1.json"


def test_embedded_subagents_are_read():
    v = verdict("subagent_embedded_violation")
    assert v.status == closed_book.VIOLATION
    assert v.violations[0].tool == "WebSearch"
    assert v.violations[0].trajectory == "trajectory.json/subagent:agent-a1b2"
    assert v.run["trajectories"] == 2


def test_subagent_files_are_read_and_a_missing_one_makes_the_run_unverified():
    ok = verdict("subagent_file_clean")
    assert ok.status == closed_book.CLEAN
    assert "trajectory.summarization-1-summary.json" in ok.run["files"]
    missing = verdict("subagent_missing")
    assert missing.status == closed_book.UNVERIFIED
    assert "trajectory.summarization-9-summary.json" in missing.reason


def test_a_url_written_through_an_editor_is_a_violation():
    v = verdict("editor_url")
    assert v.status == closed_book.VIOLATION
    assert (v.violations[0].tool, v.violations[0].url) == ("Write", "https://example.com/robots/ant.xml")


def test_local_addresses_are_not_web_access():
    assert verdict("local_urls").status == closed_book.CLEAN


def test_mcp_tools_that_search_are_web_tools():
    v = verdict("mcp_search")
    assert v.status == closed_book.VIOLATION and v.violations[0].kind == "web_tool"


@pytest.mark.parametrize("name, words", [
    ("malformed_json", "not valid JSON"),
    ("malformed_tool_call", "function_name"),
    ("no_tool_calls", "records no tool call"),
])
def test_unreadable_trajectories_are_unverified(name, words):
    v = verdict(name)
    assert v.status == closed_book.UNVERIFIED and words in v.reason


def test_no_trajectory_is_unverified(tmp_path):
    v = closed_book.evaluate(None, INPUT)
    assert v.status == closed_book.UNVERIFIED and "no trajectory" in v.reason
    v = closed_book.evaluate(tmp_path / "trajectory.json", INPUT)
    assert v.status == closed_book.UNVERIFIED and "no trajectory at" in v.reason


URL_PACKAGE_LAYER = '''#usda 1.0
(
    doc = "Converted from https://github.com/google-deepmind/mujoco_menagerie/tree/main/ant by a converter"
)
def Xform "ant" {}
'''


def test_a_url_from_the_input_package_may_be_written_back_but_not_fetched(tmp_path):
    (tmp_path / "ant.usda").write_text(URL_PACKAGE_LAYER)
    assert package_urls(tmp_path) == {"https://github.com/google-deepmind/mujoco_menagerie/tree/main/ant"}
    assert verdict("input_url_allowed", tmp_path).status == closed_book.CLEAN
    assert verdict("input_url_allowed").status == closed_book.VIOLATION  # not in this input
    fetched = verdict("input_url_fetched", tmp_path)
    assert fetched.status == closed_book.VIOLATION and "curl" in fetched.violations[0].excerpt


def test_a_url_inside_a_binary_layer_is_found(tmp_path):
    from pxr import Sdf

    layer = Sdf.Layer.CreateNew(str(tmp_path / "ant.usdc"))
    layer.documentation = "Converted from https://example.org/models/ant.xml"
    layer.Save()
    assert "https://example.org/models/ant.xml" in package_urls(tmp_path)


def test_urls_in_the_instruction_are_allowed():
    allowed = allowed_urls(INPUT, ("Write the converter note https://example.com/robots/ant.xml back",))
    assert "https://example.com/robots/ant.xml" in allowed
    assert verdict("editor_url", INPUT, ("see https://example.com/robots/ant.xml",)).status == closed_book.CLEAN


@pytest.mark.parametrize("name", ["WebSearch", "webfetch", "WEB_SEARCH", "web_search_call", "google_web_search",
                                  "websearch", "browser", "web_read", "web_fetch", "mcp__fetch__fetch",
                                  "mcp__playwright__browser_navigate", "tavily__search", "mcp_exa_search"])
def test_web_tool_names(name):
    assert web_tools.is_web_tool(name)


@pytest.mark.parametrize("name", ["Bash", "Edit", "Grep", "search_file_content", "str_replace_editor", "bash_command",
                                  "exec_command", "apply_patch", "read_file", "mcp__filesystem__read_file"])
def test_local_tool_names(name):
    assert not web_tools.is_web_tool(name)


def test_the_tool_list_names_the_agent_of_each_tool():
    table = web_tools.web_tool_table()
    names = {t["name"] for t in table["tools"]}
    for required in ("WebSearch", "WebFetch", "web_search_call", "web_search", "web_fetch", "google_web_search",
                     "websearch", "webfetch", "browser", "web_read"):
        assert required in names
    assert all(t["agents"] and all(isinstance(a, str) for a in t["agents"]) for t in table["tools"])
    assert set(table["words"]["list"]) >= {"web", "url", "browser"}
    assert "filesystem" in table["mcp"]["local_servers"]


@pytest.mark.parametrize("text, urls", [
    ("curl -sL https://a.example.com/x.xml | tar x", ["https://a.example.com/x.xml"]),
    ("git clone git@github.com:google-deepmind/mujoco_menagerie.git", ["git@github.com:google-deepmind/mujoco_menagerie.git"]),
    ("pip download --index-url=http://pypi.example.org/simple foo", ["http://pypi.example.org/simple"]),
    ("see (https://example.org/page).", ["https://example.org/page"]),
    ("wget 93.184.216.34:80/ant.xml", ["93.184.216.34:80/ant.xml"]),
    ("open www.example.com now", ["www.example.com"]),
    ("aws s3 cp s3://bucket/ant.usd .", ["s3://bucket/ant.usd"]),
    ("python3 -c 'from pxr import Usd; Usd.Stage.Open(\"/app/ant.usda\")'", []),
    ("pip install numpy==1.26.4 && ls ./Payload/Physics.usda", []),
])
def test_urls_in_text(text, urls):
    assert rule.urls_in(text) == urls


@pytest.mark.parametrize("url, local", [
    ("file:///tmp/x", True), ("http://localhost:8000/", True), ("http://127.0.0.1/x", True),
    ("http://[::1]:8080/", True), ("http://0.0.0.0:80", True), ("https://10.0.0.1/", False),
    ("https://example.com", False), ("localhost.example.com/x", False),
])
def test_local_addresses(url, local):
    assert rule.is_local(url) is local


def _write(folder: Path, name: str, doc: dict) -> Path:
    path = folder / name
    path.write_text(json.dumps(doc))
    return path


def _minimal(**extra) -> dict:
    return {"schema_version": "ATIF-v1.7", "agent": {"name": "a", "version": "1"},
            "steps": [{"step_id": 1, "source": "agent", "message": "",
                       "tool_calls": [{"tool_call_id": "c", "function_name": "Bash", "arguments": {"command": "ls"}}]}],
            **extra}


@pytest.mark.parametrize("ref", ["../outside.json", "/etc/passwd", "https://example.com/t.json", "s3://b/t.json"])
def test_a_reference_that_leaves_the_folder_is_refused(tmp_path, ref):
    folder = tmp_path / "agent"
    folder.mkdir()
    _write(tmp_path, "outside.json", _minimal())
    root = _write(folder, "trajectory.json", _minimal(continued_trajectory_ref=ref))
    with pytest.raises(trajectory.TrajectoryError):
        trajectory.read_run(root)


def test_a_symlink_out_of_the_folder_is_refused(tmp_path):
    folder = tmp_path / "agent"
    folder.mkdir()
    _write(tmp_path, "outside.json", _minimal())
    (folder / "next.json").symlink_to(tmp_path / "outside.json")
    root = _write(folder, "trajectory.json", _minimal(continued_trajectory_ref="next.json"))
    with pytest.raises(trajectory.TrajectoryError, match="leaves"):
        trajectory.read_run(root)


def test_a_cycle_of_continuations_is_refused(tmp_path):
    _write(tmp_path, "b.json", _minimal(continued_trajectory_ref="trajectory.json"))
    root = _write(tmp_path, "trajectory.json", _minimal(continued_trajectory_ref="b.json"))
    with pytest.raises(trajectory.TrajectoryError, match="cycle"):
        trajectory.read_run(root)


@pytest.mark.parametrize("version", ["ATIF-v2.0", "ATIF-v1.9", "v1.6", None])
def test_an_unknown_schema_version_is_refused(tmp_path, version):
    root = _write(tmp_path, "trajectory.json", _minimal(schema_version=version))
    with pytest.raises(trajectory.TrajectoryError, match="schema_version"):
        trajectory.read_run(root)


def test_a_file_over_the_size_limit_is_refused(tmp_path, monkeypatch):
    root = _write(tmp_path, "trajectory.json", _minimal())
    monkeypatch.setattr(trajectory, "MAX_FILE_BYTES", 100)
    with pytest.raises(trajectory.TrajectoryError, match="over the limit"):
        trajectory.read_run(root)


def test_the_decoded_size_bound_is_the_widest_character_found_by_bytes_or_escapes():
    """decoded_bytes searches each of its patterns on its own (fast on large files); a document gets
    the width one search of all its patterns gives, on documents made of every piece that matters."""
    import random

    from bench.bench_measures import one_alternation_bound   # the bound as first written

    pieces = [b"a", b"{", b'"', b"\\", b"u", b"0", b"1", b"d", b"D", b"8", b"b", b"f", b"\\u00e9", b"\\u0100",
              b"\\uD83D\\uDE00", b"\\udbff", "\u00e9".encode(), "\u0101".encode(), "\U0001F600".encode(), b"\xc3\xbf"]
    rng = random.Random(7)
    documents = [b"", b'{"a": "plain"}', "caf\u00e9".encode(), "\u0101".encode(), "\U0001F600".encode()]
    documents += [b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12))) for _ in range(3000)]
    in_strings = [b"a", b"\\\\", b"u0100", b"\\u00e9", b"\\u0100", b"\\uD83D\\uDE00", "\u00e9".encode(),
                  "\u0101".encode(), "\U0001F600".encode()]
    documents += [b'"' + b"".join(rng.choice(in_strings) for _ in range(rng.randrange(1, 8))) + b'"' for _ in range(500)]
    widths = {trajectory.decoded_bytes(raw) // len(raw) for raw in documents if raw}
    assert widths == {1, 2, 4}
    assert [trajectory.decoded_bytes(raw) for raw in documents] == [one_alternation_bound(raw) for raw in documents]
    # What Python takes for the text of each document that is a JSON string is never more.
    strings = 0
    for raw in documents:
        try:
            text = json.loads(raw)
        except ValueError:
            continue
        if isinstance(text, str) and text:
            width = 4 if max(text) > "\uffff" else 2 if max(text) > "\xff" else 1
            assert len(text) * width <= trajectory.decoded_bytes(raw), raw
            strings += 1
    assert strings > 50


def test_continuation_segments_on_disk_are_read_in_numeric_order(tmp_path):
    root = _write(tmp_path, "trajectory.json", _minimal())
    for n in (2, 10):
        _write(tmp_path, f"trajectory.cont-{n}.json", _minimal())
    assert trajectory.read_run(root).files == ["trajectory.json", "trajectory.cont-2.json", "trajectory.cont-10.json"]


def test_the_verdict_is_the_same_for_the_same_bytes():
    a, b = verdict("claude_code_webfetch"), verdict("claude_code_webfetch")
    assert json.dumps(a.to_json(), sort_keys=True) == json.dumps(b.to_json(), sort_keys=True)


# The reward rule and the profile field -------------------------------------------

from usd_repair_verifier.profiles.schema import ProfileError, profile_from_json  # noqa: E402
from usd_repair_verifier.scoring.reward import OUTCOMES, Decision, Status, apply_closed_book  # noqa: E402


@pytest.mark.parametrize("measured", [Status.GRADED, Status.INVALID, Status.PRESERVATION_FAILED])
@pytest.mark.parametrize("verdict_status, status", [("violation", Status.CLOSED_BOOK_VIOLATION),
                                                    ("unverified", Status.CLOSED_BOOK_UNVERIFIED)])
def test_a_violation_or_an_unverified_run_zeroes_a_measured_reward(measured, verdict_status, status):
    raw = 0.75 if measured is Status.GRADED else 0.0
    d = apply_closed_book(Decision(measured, raw, targeted_repair_fraction=0.5, reasons=["why"]), verdict_status, "it")
    assert (d.status, d.authored_usd, d.raw_authored_usd) == (status, 0.0, raw)
    assert d.targeted_repair_fraction == 0.5 and d.reasons[1:] == ["why"] and d.reasons[0].endswith(": it")
    assert OUTCOMES[status] == (True, 0)  # reward.json written, exit 0: the grade itself worked


@pytest.mark.parametrize("measured, reward", [(Status.PARTIAL, None), (Status.INFRASTRUCTURE_ERROR, 0.0)])
def test_no_reward_and_infrastructure_errors_stay_what_they_are(measured, reward):
    d = apply_closed_book(Decision(measured, reward), "violation", "it")
    assert d.status is measured and d.authored_usd == reward


def test_a_clean_run_or_an_open_book_case_keeps_the_reward():
    for verdict_status in ("clean", None):
        d = apply_closed_book(Decision(Status.GRADED, 0.75), verdict_status)
        assert (d.status, d.authored_usd, d.raw_authored_usd) == (Status.GRADED, 0.75, 0.75)


def _profile_json() -> dict:
    return json.loads((ROOT / "fixtures" / "cases" / "ant_two_joint_faults" / "profile.json").read_text())


def test_the_profile_freezes_closed_book_and_the_instructions_urls():
    d = _profile_json()
    assert profile_from_json(d).closed_book is False  # cases made by hand: open book by default
    d.update(closed_book=True, allowed_urls=["https://example.com/doc"])
    p = profile_from_json(d)
    assert p.closed_book is True and p.allowed_urls == ("https://example.com/doc",)
    assert profile_from_json(json.loads(p.dumps())) == p


@pytest.mark.parametrize("field, value", [("closed_book", "yes"), ("closed_book", 1), ("allowed_urls", "https://x"),
                                          ("allowed_urls", [1])])
def test_a_malformed_closed_book_field_is_a_profile_error(field, value):
    d = _profile_json()
    d[field] = value
    with pytest.raises(ProfileError, match=field):
        profile_from_json(d)


def test_a_run_too_large_to_search_is_unverified(tmp_path, monkeypatch):
    root = _write(tmp_path, "trajectory.json", _minimal())
    monkeypatch.setattr(rule, "MAX_ARGUMENT_CHARS", 5)
    v = closed_book.evaluate(root, INPUT)
    assert v.status == closed_book.UNVERIFIED and "more than the" in v.reason


@pytest.mark.parametrize("hostile", ["a." * 200000, "a.com:" * 100000, "a@" * 200000, "www." * 100000,
                                     "-x a.b " * 50000, "tee " * 100000 + "/etc/hosts", "/etc/hosts " * 50000,
                                     "> /etc/hosts " * 50000, "curl " * 100000, "import " * 100000,
                                     "a.com/" * 100000, "[::" * 100000, "http://" * 100000])
def test_searching_hostile_text_stays_fast(hostile):
    import time

    start = time.process_time()      # this process's CPU: the machine's load does not count
    rule.call_violations(trajectory.ToolCall("t", 1, "c", "Bash", {"command": hostile}), frozenset())
    assert time.process_time() - start < 3.0  # under 0.5 s here; quadratic searching took minutes


def test_a_long_scheme_prefix_does_not_hide_a_url():
    assert rule.urls_in("x" * 50 + "https://example.com/a") == ["x" * 50 + "https://example.com/a"]


def test_the_harbor_task_lines_in_the_docs_are_the_ones_the_code_gives():
    import tomllib

    from usd_repair_verifier.closed_book import harbor

    docs = (ROOT / "docs" / "closed-book.md").read_text()
    assert harbor.collect_block() in docs and harbor.GRADE_ARGUMENT in docs
    assert f'artifacts = ["/app", "{harbor.TRAJECTORY_FOLDER}"]' in docs
    hook = tomllib.loads(harbor.collect_block())["verifier"]["collect"][0]
    assert hook == {"command": harbor.COLLECT_COMMAND, "user": "root"}
    # The hook empties the folder first (nothing planted survives) and fills it from Harbor's location.
    assert hook["command"].startswith(f"rm -rf {harbor.TRAJECTORY_FOLDER} && ")
    assert "find /logs/agent -maxdepth 1 -type f -name 'trajectory*.json'" in hook["command"]
    assert harbor.GRADE_ARGUMENT.endswith(f"{harbor.TRAJECTORY_FOLDER}/trajectory.json")

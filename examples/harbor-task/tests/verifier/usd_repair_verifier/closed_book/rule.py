"""The closed-book rule on a run's tool calls: web tools and URLs.

A tool call breaks the rule when
- its tool is a web tool (`web_tools.json`: names used by the agents Harbor runs,
  case-insensitive, and MCP tools whose name says fetch, search or browse), or
- any string in its arguments holds a URL: with a scheme (`https://`, `git://`,
  `s3://`, ...), an scp-style `git@host:path`, or a bare `host.tld/path` or
  `www.host` (curl and git accept those too). Deliberately strict: a URL written
  into a file through an editor tool counts as much as one given to `curl`.
Not web access: local addresses (`file:`, `localhost`, `127.0.0.1`, `::1`, `0.0.0.0`).
Not a lookup: a URL the task already gave the agent (in its input package or its
instruction), unless the same argument also fetches something (`curl`, `git clone`,
`urllib`...): copying a converter's documentation string back into a layer is fine,
downloading from the address it names is not.

Tool results (observations) and the agent's own messages are not read: they are what
the environment said or what the model wrote, not something the agent did.
"""
from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from .trajectory import Run, ToolCall

WEB_TOOLS_FILE = Path(__file__).with_name("web_tools.json")
EXCERPT_CHARS = 160
# Searching costs up to about a second per million characters of hostile text: past this
# many, the run is too large to check within a grade's time and is left unverified.
MAX_ARGUMENT_CHARS = 64 << 20
TRAILING = ".,;:!?)]}>'\"`"

# Each form may start only where a token starts (a look-behind), which keeps the scan linear.
SCHEME_URL = re.compile(r"(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*://[^\s\"'<>`]+", re.IGNORECASE)
SCP_URL = re.compile(r"(?<![\w.\-])[\w.\-]+@(?:[a-z0-9\-]+\.)+[a-z]{2,}:[\w./~\-]+", re.IGNORECASE)
TLDS = ("com|org|net|io|dev|ai|edu|gov|co|uk|de|fr|cn|ru|jp|app|me|info|xyz|sh|gg|us|ca|eu|ly|so|to|tv|cc|biz")
BARE_URL = re.compile(
    rf"(?<![\w./@-])(?:www\.(?:[a-z0-9\-]+\.)+[a-z]{{2,}}\b(?:[:/][^\s\"'<>`]*)?"
    rf"|(?:[a-z0-9\-]+\.)+(?:{TLDS})(?::\d+)?/[^\s\"'<>`]*)",
    re.IGNORECASE,
)
BARE_IP = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d+/?|/)[^\s\"'<>`]*")
LOCAL_HOSTS = {"localhost", "localhost.localdomain", "ip6-localhost", "0.0.0.0", "::1", "[::1]"}
# Words that fetch: an input URL next to one of these is being looked up, not copied.
FETCHING = re.compile(
    r"\b(?:curl|wget|aria2c|lynx|w3m|links|httpie|svn|hg|scp|sftp|ftp|rsync|ssh|nc|ncat|telnet|"
    r"git\s+(?:clone|fetch|pull|ls-remote|submodule|remote|archive)|(?:pip|pip3|uv|conda|npm|yarn)\s+(?:\w+\s+)?"
    r"(?:install|download|add)|urllib|urlopen|urlretrieve|requests|httpx|aiohttp|http\.client|socket|"
    r"fetch|hf_hub_download|snapshot_download|huggingface-cli|load_dataset)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Violation:
    trajectory: str
    step_id: int
    tool_call_id: str
    tool: str
    kind: str            # "web_tool" | "url"
    excerpt: str         # the offending text, shortened
    url: str | None = None

    def to_json(self) -> dict:
        return {"trajectory": self.trajectory, "step_id": self.step_id, "tool_call_id": self.tool_call_id,
                "tool": self.tool, "kind": self.kind, "url": self.url, "excerpt": self.excerpt}


@lru_cache(maxsize=1)
def web_tool_table() -> dict:
    """The data file: {"tools": [{"name", "agents"}], "mcp": {"prefixes", "separators", "words"}}."""
    return json.loads(WEB_TOOLS_FILE.read_text(encoding="utf-8"))


def is_web_tool(name: str) -> bool:
    table = web_tool_table()
    lowered = name.strip().lower()
    if lowered in {t["name"].lower() for t in table["tools"]}:
        return True
    mcp = table["mcp"]
    served = lowered.startswith(tuple(mcp["prefixes"])) or any(s in lowered for s in mcp["separators"])
    return served and any(word in lowered for word in mcp["words"])


def _clean(url: str) -> str:
    return url.rstrip(TRAILING)


def _host(url: str) -> str:
    if "://" not in url:
        return re.split(r"[:/]", url.split("@")[-1], maxsplit=1)[0].lower()
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def is_local(url: str) -> bool:
    """file: URLs and loopback or unspecified addresses: not the web."""
    if url.lower().startswith("file:"):
        return True
    host = _host(url).strip("[]")
    if host in LOCAL_HOSTS:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


# One pass: at each position the first form that matches wins, and the scan resumes after it,
# so one address gives one finding.
ANY_URL = re.compile("|".join(f"(?:{p.pattern})" for p in (SCHEME_URL, SCP_URL, BARE_URL, BARE_IP)), re.IGNORECASE)


# Every form lies within one run of these characters, so the text is cut into such tokens first
# and only the few that could hold an address are searched (much faster on layer text and code).
TOKEN = re.compile(r"[^\s\"'<>`]+")


def _may_hold_url(token: str) -> bool:
    return "://" in token or ("." in token and ("/" in token or ":" in token or "www." in token.lower()))


def urls_in(text: str) -> list[str]:
    """Every URL-like address in `text`, in order, local ones included."""
    return [_clean(match.group(0)) for token in TOKEN.findall(text) if _may_hold_url(token)
            for match in ANY_URL.finditer(token)]


def _strings(value, depth: int = 0):
    """Every string in a JSON value (keys too), depth-first in document order."""
    if depth > 64:
        yield json.dumps(value)[:100000]
    elif isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


def argument_chars(run: Run) -> int:
    """How much text the rule would search: every string of every call's arguments."""
    return sum(len(text) for call in run.calls for text in _strings(call.arguments))


def _excerpt(text: str, needle: str) -> str:
    at = max(text.find(needle), 0)
    start = max(at - (EXCERPT_CHARS - len(needle)) // 2, 0)
    piece = text[start:start + max(EXCERPT_CHARS, len(needle))]
    return ("..." if start else "") + " ".join(piece.split()) + ("..." if start + len(piece) < len(text) else "")


def call_violations(call: ToolCall, allowed: frozenset[str]) -> list[Violation]:
    where = (call.trajectory, call.step_id, call.tool_call_id, call.function_name)
    found = []
    if is_web_tool(call.function_name):
        arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
        found.append(Violation(*where, "web_tool", _excerpt(arguments, arguments[:EXCERPT_CHARS])))
    for text in _strings(call.arguments):
        for url in urls_in(text):
            if is_local(url) or (url in allowed and FETCHING.search(text) is None):
                continue
            found.append(Violation(*where, "url", _excerpt(text, url), url))
    return found


def run_violations(run: Run, allowed: frozenset[str]) -> list[Violation]:
    """Every violation of the run, in trajectory order; repeats of one (same tool, kind, text) once."""
    seen, out = set(), []
    for call in run.calls:
        for violation in call_violations(call, allowed):
            key = (violation.tool.lower(), violation.kind, violation.url, violation.excerpt)
            if key not in seen:
                seen.add(key)
                out.append(violation)
    return out

"""Which tools reach the web: the names agents give their web tools, and tools served over MCP.

A tool name is compared after removing the namespace an agent writes before built-in tools
(`functions.web_search`, `default_api:google_web_search`) and without case or separators
(`WebSearch`, `web_search`, `web-search` are one name). It is a web tool when
- it is one of the listed names (web_tools.json, with the agents that use them);
- one of its words says so (`web`, `url`, `http`, `browser`, `google`, `download`, ...);
- it is served over MCP (`mcp__SERVER__TOOL`, `SERVER__TOOL`, `mcp_SERVER_TOOL`) by a server not
  known to stay on the machine: an MCP server is a program the harness runs for the agent, and
  nothing in the trajectory says what it reaches (`mcp__deepwiki__ask_question` names no web).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

WEB_TOOLS_FILE = Path(__file__).with_name("web_tools.json")
# Keys under which a tool call names other tools it runs (multi_tool_use.parallel's recipient_name).
NESTED_NAME_KEYS = {"recipient_name", "tool_name", "function_name", "tool"}


@lru_cache(maxsize=1)
def web_tool_table() -> dict:
    """The data file: {"tools": [{"name", "agents"}], "namespaces", "words", "mcp"}."""
    return json.loads(WEB_TOOLS_FILE.read_text(encoding="utf-8"))


def _squash(name: str) -> str:
    return re.sub(r"[\s_.\-:/]+", "", name).lower()


def words_of(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def strip_namespace(name: str) -> str:
    prefixes = tuple(web_tool_table()["namespaces"]["prefixes"])
    name = name.strip()
    while name.lower().startswith(prefixes):
        name = name[next(len(p) for p in prefixes if name.lower().startswith(p)):]
    return name


def mcp_server(name: str) -> str | None:
    """The server of a tool served over MCP, or None for a tool of the agent's own."""
    mcp = web_tool_table()["mcp"]
    lowered = name.lower()
    for prefix in mcp["prefixes"]:
        if lowered.startswith(prefix) and len(lowered) > len(prefix):
            rest = lowered[len(prefix):]
            return re.split(r"__|[_.:/-]", rest, maxsplit=1)[0] if "__" not in rest else rest.split("__", 1)[0]
    for separator in mcp["separators"]:
        head, found, tail = lowered.partition(separator)
        if found and head.strip("_") and tail.strip("_"):
            return head.strip("_")
    return None


def is_web_tool(name: str) -> bool:
    table = web_tool_table()
    bare = strip_namespace(name)
    if _squash(bare) in {_squash(t["name"]) for t in table["tools"]}:
        return True
    words = table["words"]["list"]
    if set(words_of(bare)) & set(words) or any(len(w) >= 6 and w in _squash(bare) for w in words):
        return True
    server = mcp_server(bare)
    return server is not None and server not in table["mcp"]["local_servers"]


def nested_tool_names(value, depth: int = 0) -> list[str]:
    """Names of tools a call runs inside it (a parallel wrapper's recipients)."""
    if depth > 16:
        return []
    names = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in NESTED_NAME_KEYS and isinstance(item, str):
                names.append(item)
            else:
                names += nested_tool_names(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            names += nested_tool_names(item, depth + 1)
    return names

"""The closed-book rule on a run's tool calls: web tools, addresses, network clients.

A tool call is judged whole (every string of its arguments, keys too, and its tool's name),
and breaks the rule when
- its tool is a web tool (closed_book/web_tools.py: the names agents give their web tools, and
  every tool served over MCP except by a server known to stay on the machine);
- an address appears in it (closed_book/addresses.py: with a scheme or `://`, scp-style, a
  bare `host.tld/path` or `host.tld:port`, an IP literal with a port or path). Deliberately
  strict: a URL written into a file through an editor tool counts as much as one given to `curl`;
- it runs a network client (`curl`, `wget`, `git clone`, `ssh`, `nc`, Python's `urllib` or
  `requests`, ...) without naming a local address: `wget -i list.txt` or `curl "$(cat f)"` reach
  the web with no address in sight;
- it redirects connections (`--connect-to`, `--resolve`, a proxy option or variable, a `Host:`
  header, an edit of `/etc/hosts`) to a host that is not local.
Not web access: local addresses (`file:`, `localhost`, loopback and unspecified IPs in any
spelling), unless the same call redirects them. Not a lookup: an address the task already
gave the agent (in its input package or its instruction), unless the same call also fetches
(a network client or a fetching word anywhere in the call, a list of arguments included):
copying a converter's documentation string back into a layer is fine, downloading from the
address it names is not.

Tool results (observations) and the agent's own messages are not read: they are what
the environment said or what the model wrote, not something the agent did.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .addresses import hosts_in, is_local, urls_in
from .web_tools import is_web_tool, nested_tool_names
from .trajectory import ToolCall

EXCERPT_CHARS = 160
# Searching costs up to about a second per million characters of hostile text: past this
# many, the run is too large to check within a grade's time and is left unverified.
MAX_ARGUMENT_CHARS = 64 << 20
# One call's arguments are searched as a few copies of their text: this bounds what that costs.
MAX_CALL_CHARS = 16 << 20
# At most this many violations are listed (the count of all is in the verdict's reason).
MAX_LISTED = 1000
# Words that fetch: an input URL in a call holding one of these is being looked up, not copied.
FETCHING = re.compile(
    r"\b(?:curl|wget|aria2c|lynx|w3m|links|httpie|svn|hg|scp|sftp|ftp|rsync|ssh|nc|ncat|telnet|"
    r"git\s+(?:clone|fetch|pull|ls-remote|submodule|remote|archive)|(?:pip|pip3|uv|conda|npm|yarn)\s+(?:\w+\s+)?"
    r"(?:install|download|add)|urllib|urlopen|urlretrieve|requests|httpx|aiohttp|http\.client|socket|"
    r"fetch|hf_hub_download|snapshot_download|huggingface-cli|load_dataset)\b",
    re.IGNORECASE,
)
# An argument named like this holds an address the tool will open (`{"url": ...}`).
URL_KEY = re.compile(r"^(?:url|urls|uri|href|endpoint|link|source_url|download_url)$", re.IGNORECASE | re.MULTILINE)
# Programs that open network connections, at the start of a shell command.
CLIENTS = {"curl", "wget", "wget2", "aria2c", "axel", "lynx", "w3m", "links", "elinks", "xh", "curlie",
           "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "lftp", "tftp",
           "rclone", "gsutil", "s3cmd", "gh", "hf", "huggingface-cli", "kaggle", "gdown", "yt-dlp", "youtube-dl",
           "svn", "hg", "bzr", "fossil", "degit", "tiged", "invoke-webrequest", "iwr", "invoke-restmethod", "irm"}
GIT_REMOTE = {"clone", "fetch", "pull", "push", "ls-remote", "archive", "submodule", "remote"}
# Words a command may start with before the program it runs.
PREFIXES = {"sudo", "env", "nohup", "exec", "command", "builtin", "time", "nice", "stdbuf", "timeout", "xargs",
            "then", "do", "else", "!", "{", "eval", "busybox", "doas", "watch", "proxychains", "proxychains4",
            "torsocks", "unbuffer", "setsid", "npx", "pnpx", "bunx", "uvx"}
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "busybox-sh"}
SEGMENT_BREAK = re.compile(r"[;&|\n`()]")
# Networking in code (Python, JavaScript, PowerShell): the library or call that connects.
CODE_CLIENT = re.compile(
    r"\b(?:import\s+(?:urllib|urllib3|requests|httpx|aiohttp|socket|http\.client|pycurl|ftplib|paramiko|"
    r"huggingface_hub|wget|gdown|websocket|websockets)\b|from\s+(?:urllib|urllib3|requests|httpx|aiohttp|socket|"
    r"http|pycurl|ftplib|paramiko|huggingface_hub|gdown)\b[\w.]*\s+import|urlopen\s*\(|urlretrieve\s*\(|"
    r"hf_hub_download\s*\(|snapshot_download\s*\(|torch\.hub\.|XMLHttpRequest|new\s+WebClient|Net\.WebClient|"
    r"require\(\s*['\"](?:https?|node-fetch|axios|request)['\"]\s*\)|\bfetch\s*\(\s*[\"'`])",
    re.IGNORECASE,
)
# A word followed by one of these is a name in code (`gh = 5`, `links.append(x)`), not a command.
CODE_OPERAND = set("=.,:(+*/%<>!)]")
INFO_ONLY = {"--version", "-V", "--help", "-h", "--manual", "-M"}
# Options and settings that send a connection somewhere else than the address it names; the value
# that follows names where (`--connect-to a:443:b:443`, `https_proxy=...`, `Host: b`).
REDIRECT = re.compile(
    r"(?:--connect-to|--resolve|--proxy[\w.\-]*|--preproxy|--socks[45]h?|--doh-url|(?<![\w-])-x(?=\s*\S{0,256}[.:/])|"
    r"\b[a-z]*_proxy\b\s*=|\bproxy\s*=|\bconnect-to\s*=|\bresolve\s*=|\bhost[\"']?\s*:(?=\s*[\"']?[\w\[])|"
    r"\bHOSTALIASES\b|\binsteadOf\b)",
    re.IGNORECASE,
)
# A command that writes the file it names (after `>`, tee, sed -i, open(, cp, mv...): for the hosts
# file, every address on that line is where a name now leads.
HOSTS_WRITE = re.compile(r"\btee\b|\bsed\b.*\s-i|\bopen\(|\bcp\b|\bmv\b|\binstall\b|\bdd\b")


REDIRECT_HINTS = ("connect-to", "resolve", "proxy", "socks", "doh-url", "-x", "host", "insteadof")
CODE_HINTS = ("import", "from", "urlopen", "urlretrieve", "_download", "torch.hub", "xmlhttprequest", "webclient",
              "require(", "fetch(", "fetch (")


def redirect_targets(text: str, lowered: str) -> list[str]:
    """The values of every redirecting option or setting in the text (where connections are sent)."""
    values = []
    if any(hint in lowered for hint in REDIRECT_HINTS):
        for match in REDIRECT.finditer(text):
            rest = text[match.end():match.end() + 1024].lstrip(" \t=:\"'")
            values.append(re.split(r"[\s\"'`;|&]", rest, maxsplit=1)[0])
    at = text.find("/etc/hosts")
    while at >= 0:                                    # a write to the hosts file: the line is the value
        start = max(text.rfind("\n", max(0, at - 256), at) + 1, at - 256, 0)
        end = text.find("\n", at, at + 256)
        line = text[start:end if end >= 0 else min(len(text), at + 256)]
        window = text[start:at]
        command = window[max(window.rfind(c) for c in ";|&\n") + 1:]          # the command naming the file
        if ">" in command or HOSTS_WRITE.search(command):
            values.append(line)
            if len(values) > MAX_LISTED:
                break
        at = text.find("/etc/hosts", at + 1)
    # Each distinct value once, and no more than enough to list (a call with more is a violation anyway).
    return list(dict.fromkeys(v for v in values if v))[:MAX_LISTED]


@dataclass(frozen=True)
class Violation:
    trajectory: str
    step_id: int
    tool_call_id: str
    tool: str
    kind: str            # "web_tool" | "url" | "network_command"
    excerpt: str         # the offending text, shortened
    url: str | None = None

    def to_json(self) -> dict:
        return {"trajectory": self.trajectory, "step_id": self.step_id, "tool_call_id": self.tool_call_id,
                "tool": self.tool, "kind": self.kind, "url": self.url, "excerpt": self.excerpt}


def call_text(value, depth: int = 0) -> str:
    """The tool call's arguments as one text: every string (keys too) on its own line, and a list
    of strings (an argv) as one line, its words joined by spaces as a shell would run them."""
    if depth > 64:
        return json.dumps(value)[:100000]
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(f"{key}\n{call_text(item, depth + 1)}" for key, item in value.items())
    if isinstance(value, list):
        if value and all(isinstance(item, str) for item in value):
            return " ".join(value)
        return "\n".join(call_text(item, depth + 1) for item in value)
    return ""


def _excerpt(text: str, needle: str) -> str:
    at = max(text.find(needle), 0)
    start = max(at - (EXCERPT_CHARS - len(needle)) // 2, 0)
    piece = text[start:start + max(EXCERPT_CHARS, len(needle))]
    return ("..." if start else "") + " ".join(piece.split()) + ("..." if start + len(piece) < len(text) else "")


def _program(words: list[str]) -> tuple[str | None, list[str], bool]:
    """The program a shell command runs (past env assignments and wrappers), its arguments, and
    whether `xargs` feeds it more from its input."""
    i, fed = 0, False
    while i < len(words):
        word = words[i].strip("\"'\\")
        name = word.rsplit("/", 1)[-1].lower()
        if name in SHELLS and i + 1 < len(words) and re.fullmatch(r"-[a-z]*c[a-z]*", words[i + 1].strip("\"'")):
            i += 2                                     # `bash -lc "curl ..."`: the command it runs
            continue
        if not word or re.fullmatch(r"[A-Za-z_]\w*=.*", word) or name in PREFIXES or word.startswith("-") \
                or (i and words[i - 1].strip("\"'\\").rsplit("/", 1)[-1].lower() == "timeout" and word[:1].isdigit()):
            fed = fed or name == "xargs"
            i += 1
            continue
        return name, words[i + 1:], fed
    return None, [], fed


def network_commands(text: str, lowered: str | None = None) -> list[tuple[str, str, list[str]]]:
    """(client, command, its first arguments) for each command of the text that runs a network client."""
    found = []
    start = 0
    for end in [m.start() for m in SEGMENT_BREAK.finditer(text)] + [len(text)]:
        head = text[start:min(end, start + 4096)].split()[:64]      # the program and its first words
        segment_start, start = start, end + 1
        program, arguments, fed = _program(head)
        if program is None:
            continue
        if program == "git":
            sub = next((w for w in arguments if not w.startswith("-")), "")
            if sub.lower() not in GIT_REMOTE:
                continue
            program = f"git {sub}"
        elif program not in CLIENTS:
            continue
        if (not arguments and not fed) or (arguments and (all(a in INFO_ONLY for a in arguments)
                                                          or arguments[0][:1] in CODE_OPERAND)):
            continue
        found.append((program, text[segment_start:end].strip(), arguments))
    lowered = text.lower() if lowered is None else lowered
    if not any(hint in lowered for hint in CODE_HINTS):
        return found
    for match in CODE_CLIENT.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        found.append((match.group(0).strip(), text[line_start:line_end if line_end >= 0 else len(text)].strip(), []))
    return found


def _names_only_local(client: str, command: str, arguments: list[str]) -> bool:
    """A network command is allowed only when it names an address and every address it names is
    local (for git, a local path counts)."""
    addresses = hosts_in(command)
    if addresses:
        return all(is_local(a) for a in addresses)
    if client.startswith("git "):
        operands = [w for w in arguments if not w.startswith("-")][1:]     # past the subcommand
        return bool(operands) and all(w.startswith(("/", "./", "../", "~")) for w in operands)
    return False


def call_violations(call: ToolCall, allowed: frozenset[str], text: str | None = None) -> list[Violation]:
    where = (call.trajectory, call.step_id, call.tool_call_id, call.function_name)
    text = call_text(call.arguments) if text is None else text
    found = []
    for tool in [call.function_name] + nested_tool_names(call.arguments):
        if is_web_tool(tool):
            arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
            found.append(Violation(*where, "web_tool", _excerpt(arguments, arguments[:EXCERPT_CHARS]),
                                   None if tool == call.function_name else tool))
            break
    lowered = text.lower()
    targets = redirect_targets(text, lowered)
    # Local addresses are local only while nothing in the call sends connections elsewhere.
    redirected = bool(targets)
    fetching = None                                   # searched only when an allowed URL is found
    listed: list[str] = []
    for url in urls_in(text) + [h for value in targets for h in hosts_in(value)]:
        if url in listed or (is_local(url) and not (redirected and "://" in url and not url.lower().startswith("file:"))):
            continue
        if url in allowed and not redirected:
            if fetching is None:
                fetching = any(FETCHING.search(t) for t in (call.function_name, text)) or URL_KEY.search(text) is not None
            if not fetching:
                continue
        listed.append(url)
        found.append(Violation(*where, "url", _excerpt(text, url), url))
    commands = []
    for client, command, arguments in network_commands(text, lowered):
        if command in commands:
            continue
        commands.append(command)
        if not _names_only_local(client, command, arguments) and not any(url in command for url in listed):
            found.append(Violation(*where, "network_command", _excerpt(text, command[:EXCERPT_CHARS]), None))
    return found


class Violations:
    """The violations of a run, in trajectory order; repeats of one (same tool, kind, text) once,
    at most MAX_LISTED kept (all counted)."""

    def __init__(self, allowed: frozenset[str]):
        self.allowed = allowed
        self.listed: list[Violation] = []
        self.total = 0
        self.chars = 0
        self._seen: set[tuple] = set()

    def add_call(self, call: ToolCall) -> None:
        text = call_text(call.arguments)
        self.chars += len(text)
        if self.chars > MAX_ARGUMENT_CHARS or len(text) > MAX_CALL_CHARS:
            raise OverflowError(len(text))
        for violation in call_violations(call, self.allowed, text):
            key = (violation.tool.lower(), violation.kind, violation.url, violation.excerpt)
            if key in self._seen:
                continue
            self._seen.add(key)
            self.total += 1
            if len(self.listed) < MAX_LISTED:
                self.listed.append(violation)

"""Network addresses in text: URLs with or without a scheme, scp-style remotes, IP literals.

`urls_in(text)` finds every address written out in a text; `hosts_in(text)` also every bare
host name and IP literal (for the places where a host alone is an address: a network client's
operands, a redirect's target); `is_local(address)` says whether it stays on the machine.

Forms (docs/closed-book.md, "The rule"):
- with a scheme, or with `://` alone (a scheme assembled by the shell, `"$P"://host/...`);
- scp-style `user@host:path`, and `host.tld:dir/path` without a user;
- a bare `host.tld/path`, `host.tld:port` or `www.host.tld`, wherever a host name may start
  (after a `/`, `@`, `=`, `:` as much as after a space), the last label a real top-level domain
  (closed_book/tlds.json, the Public Suffix List's), so that `self.width/2` is not an address;
- IP literals: dotted quads (each part decimal, octal or hex, as inet_aton reads them), with a
  port or a path; a single 32-bit number or bracketed IPv6 as a host.
Each string is also searched with shell quotes, backslashes and `$VAR` expansions removed, so
that `ht"tp"s://...` or `raw.github'user'content.com/...` are found as the shell would join them,
and percent-decoded when it holds an encoded `:`, `/` or `@` (`https%3A%2F%2Fhost%2F...`).
"""
from __future__ import annotations

import ipaddress
import json
import re
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

TLDS_FILE = Path(__file__).with_name("tlds.json")
# Names that never reach the web: reserved for tests and documentation, or private networks.
NOT_PUBLIC = {"test", "example", "invalid", "localhost", "local", "localdomain", "internal", "lan", "home"}
TRAILING = ".,;:!?)]}>'\"`"
CHUNK = r"[^\s\"'<>`]"                     # a character an address may hold

LABEL = r"[^\W_](?:[\w\-]{0,62}[^\W_])?"
HOST = rf"(?:{LABEL}\.)+{LABEL}"
SCHEME_URL = re.compile(rf"(?:(?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*)?://{CHUNK}+", re.IGNORECASE)
SCP_URL = re.compile(rf"(?<![\w.\-])[\w.\-]+@{HOST}:[\w./~\-]*", re.IGNORECASE)
SCP_NO_USER = re.compile(rf"(?<![\w.\-@])({HOST}):[\w~.\-][\w.~\-]*/[\w./~\-]*", re.IGNORECASE)
BARE_URL = re.compile(rf"(?<![\w.\-])({HOST})(?:(:\d{{1,5}})(?![\w.]){CHUNK}*|/({CHUNK}*))", re.IGNORECASE)
WWW_URL = re.compile(rf"(?<![\w.\-])www\.{HOST}\b(?:[:/]{CHUNK}*)?", re.IGNORECASE)
IP_PART = r"(?:0x[0-9a-f]+|\d+)"
DOTTED_IP = rf"{IP_PART}(?:\.{IP_PART}){{3}}"
BARE_IP = re.compile(rf"(?<![\w.])({DOTTED_IP})(?::\d{{1,5}}(?![\w.])|/){CHUNK}*", re.IGNORECASE)
BARE_IPV6 = re.compile(rf"(?<![\w.\]])\[[0-9a-f:.]*:[0-9a-f:.]*\](?::\d{{1,5}})?/{CHUNK}*", re.IGNORECASE)
# Hosts alone, where the context makes a host an address.
ANY_HOST = re.compile(rf"(?<![\w.\-])(?:\[[0-9a-f:.]+\]|{DOTTED_IP}|0x[0-9a-f]{{1,8}}|\d{{8,10}}|{HOST}|localhost)"
                      rf"(?![\w\-]|\.\w)", re.IGNORECASE)
FORMS = (SCHEME_URL, SCP_URL, SCP_NO_USER, BARE_URL, WWW_URL, BARE_IP, BARE_IPV6)
# What a token must hold for a form to be searched in it at all (the search is the costly part).
FORM_HINTS = {SCHEME_URL: ("://",), SCP_URL: ("@", ":"), SCP_NO_USER: (":", "/", "."), BARE_URL: (".",),
              WWW_URL: ("www.",), BARE_IP: (".",), BARE_IPV6: ("[", ":")}
# Shell quoting and expansions, removed to see words as the shell joins them.
SHELL_NOISE = re.compile(r"\$\{[^}\s]{0,64}\}|\$[A-Za-z_][A-Za-z0-9_]{0,64}|[\"'\\]")
TOKEN = re.compile(r"[^\s\"'<>`]+")
PERCENT = re.compile(r"%(?:3a|2f|40)", re.IGNORECASE)
# Real top-level domains that are also common file extensions: a bare `fix.py` or `run.sh` alone is
# a file; with a path or port after it (`x.sh/a`, `x.sh:80`) it is still an address.
FILE_LIKE_TLDS = {"py", "sh", "md", "zip", "so", "pl", "rs", "cc", "in", "am", "ac", "mk", "pm", "cu", "ps", "sc",
                  "mov", "app", "bz", "ml", "st", "gz", "tar", "txt", "csv", "jar", "cpp", "hh", "data", "json"}
LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


@lru_cache(maxsize=1)
def top_level_domains() -> frozenset[str]:
    return frozenset(json.loads(TLDS_FILE.read_text(encoding="utf-8"))["tlds"]) - NOT_PUBLIC


def is_public_name(host: str) -> bool:
    """A dotted host name whose last label is a real top-level domain."""
    labels = host.lower().rstrip(".").split(".")
    return len(labels) >= 2 and labels[-1] in top_level_domains()


def _may_hold_address(token: str) -> bool:
    return "://" in token or ("." in token and any(c in token for c in "/:@")) or "www." in token.lower() \
        or ("[" in token and ":" in token)


def _bare_ok(match: re.Match) -> bool:
    """A bare host with a path: a real TLD, and a path that is not a division in code (`self.total/2`)."""
    host, port, path = match.group(1), match.group(2), match.group(3)
    if not is_public_name(host):
        return False
    if port or not path or not path[0].isdigit():
        return True
    labels = host.split(".")
    return len(labels) >= 3 or len(labels[-1]) <= 3


def _accept(form: re.Pattern, match: re.Match) -> bool:
    if form is BARE_URL:
        return _bare_ok(match)
    if form is SCP_NO_USER:
        return is_public_name(match.group(1))
    if form is BARE_IP:
        return ipv4(match.group(1)) is not None
    return True


def _accepted(form: re.Pattern, token: str):
    for match in form.finditer(token):
        if _accept(form, match):
            yield match


def _scan(token: str, found: list[str]) -> None:
    """One pass over the token: at each place the earliest form wins and the scan resumes after it,
    so one address gives one finding (each form's matches are found once: linear in the token)."""
    lowered = token.lower()
    pending = {form: _accepted(form, token) for form in FORMS if all(hint in lowered for hint in FORM_HINTS[form])}
    heads = {form: next(it, None) for form, it in pending.items()}
    at = 0
    while True:
        for form, match in heads.items():
            while match is not None and match.start() < at:
                match = next(pending[form], None)
            heads[form] = match
        candidates = [m for m in heads.values() if m is not None]
        if not candidates:
            return
        best = min(candidates, key=lambda m: m.start())
        url = best.group(0).rstrip(TRAILING)
        if url and url not in found:
            found.append(url)
        at = max(best.end(), best.start() + 1)


def urls_in(text: str) -> list[str]:
    """Every address written out in `text`, in order, local ones included."""
    found: list[str] = []
    sources = [text, SHELL_NOISE.sub("", text) if SHELL_NOISE.search(text) else ""]
    if "%" in text and PERCENT.search(text):        # https%3A%2F%2Fhost%2Fpath, as a client would decode it
        sources.append(unquote(text))
    for source in sources:
        for match in TOKEN.finditer(source):       # one token at a time: no list of them all
            token = match.group(0)
            if _may_hold_address(token):
                _scan(token, found)
    return found


def hosts_in(text: str) -> list[str]:
    """Every address in `text`, and every bare host name or IP literal (a dotted name counts when
    its last label is a real top-level domain)."""
    found = urls_in(text)
    for match in ANY_HOST.finditer(SHELL_NOISE.sub("", text) if SHELL_NOISE.search(text) else text):
        host = match.group(0)
        named = is_public_name(host) and host.lower().rsplit(".", 1)[-1] not in FILE_LIKE_TLDS
        if host.lower() == "localhost" or host.startswith("[") or ipv4(host) is not None or named:
            if host not in found:
                found.append(host)
    return found


def ipv4(text: str) -> ipaddress.IPv4Address | None:
    """An IPv4 literal as inet_aton reads it: 1 to 4 parts, each decimal, octal (0...) or hex (0x...)."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = []
    for part in parts:
        try:
            if part[:2].lower() == "0x":
                values.append(int(part[2:], 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            else:
                values.append(int(part, 10) if part.isdigit() else -1)
        except ValueError:
            return None
        if values[-1] < 0:
            return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = sum(v << (8 * (3 - i)) for i, v in enumerate(head)) + last
    return ipaddress.IPv4Address(number)


def host_of(url: str) -> str:
    """The host an address names (lower case, no brackets, no trailing dot)."""
    text = url if not url.startswith("://") else "x" + url
    if "://" in text:
        try:
            host = urlsplit(text).hostname or ""
        except ValueError:
            host = text.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
    elif text.startswith("["):
        host = text[1:].split("]", 1)[0]
    else:
        host = re.split(r"[:/]", text.split("@")[-1], maxsplit=1)[0]
    return host.strip("[]").rstrip(".").lower()


def is_local_host(host: str) -> bool:
    host = host.strip("[]").rstrip(".").lower()
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    address = ipv4(host)
    if address is None:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def is_local(url: str) -> bool:
    """file: URLs and loopback or unspecified addresses (in any spelling): not the web."""
    if url.lower().startswith("file:"):
        return True
    return is_local_host(host_of(url))

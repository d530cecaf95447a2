#!/usr/bin/python3
"""Stand-in for gost inside Harbor's egress-control sidecar: `gost -C gost.yaml`.

Harbor's sidecar redirects every TCP connection that the task's containers open to a
non-local address (nftables, `meta l4proto tcp redirect to :PORT`) into gost's transparent
("red") listener, which lets through only destinations on the allowlist file (`bypass`,
`whitelist: true`, reloaded every second) and drops the rest. This program does the same for
the subset of gost.yaml Harbor writes: one `red` service on `addr`, `so_mark` on its own
outgoing connections (so nftables lets them out), the allowlist file of its bypass.

A connection's destination is the host it names (TLS SNI, or an HTTP Host header, sniffed
for up to 5 s), else its original address (SO_ORIGINAL_DST). A named host is resolved and
dialled by name, so a forged SNI cannot reach another address. Allowlist entries: a hostname
(exact), `*.domain` (any subdomain), `.domain` (the domain and its subdomains), an IP address,
a CIDR range, or `A-B` (an address range). Every decision is logged on stderr.
"""
from __future__ import annotations

import ipaddress
import re
import socket
import struct
import sys
import threading

SO_ORIGINAL_DST = 80
SNIFF_SECONDS = 5.0


def config(path: str) -> tuple[int, int, str]:
    text = open(path).read()
    port = re.search(r'addr:\s*"?[^:\s"]*:(\d+)"?', text)
    mark = re.search(r"so_mark:\s*(\d+)", text)
    allowlist = re.search(r"path:\s*(\S+)", text)
    if not (port and mark and allowlist):
        sys.exit(f"gost stand-in: {path} has no red service addr, so_mark and bypass file path")
    return int(port.group(1)), int(mark.group(1)), allowlist.group(1)


def original_destination(conn: socket.socket) -> tuple[str, int]:
    raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, packed = struct.unpack_from("!2xH4s", raw)
    return socket.inet_ntoa(packed), port


def tls_server_name(data: bytes) -> str | None:
    """The SNI of a TLS ClientHello, or None."""
    try:
        if data[0] != 0x16 or data[5] != 0x01:
            return None
        at = 9 + 2 + 32                      # record + handshake headers, version, random
        at += 1 + data[at]                   # session id
        at += 2 + int.from_bytes(data[at:at + 2], "big")   # cipher suites
        at += 1 + data[at]                   # compression methods
        end = at + 2 + int.from_bytes(data[at:at + 2], "big")
        at += 2
        while at + 4 <= end:
            kind, size = int.from_bytes(data[at:at + 2], "big"), int.from_bytes(data[at + 2:at + 4], "big")
            if kind == 0:                    # server_name: list length, type, name length, name
                length = int.from_bytes(data[at + 7:at + 9], "big")
                return data[at + 9:at + 9 + length].decode("ascii").lower()
            at += 4 + size
    except (IndexError, UnicodeDecodeError):
        return None
    return None


def http_host(data: bytes) -> str | None:
    match = re.search(rb"\r\nhost:[ \t]*([^\r\n:]+)", data, re.I)
    if match and re.match(rb"[A-Z]+ \S+ HTTP/1\.[01]\r\n", data):
        return match.group(1).decode("ascii", "replace").strip().lower()
    return None


def sniff(conn: socket.socket) -> str | None:
    conn.settimeout(SNIFF_SECONDS)
    try:
        data = conn.recv(16384, socket.MSG_PEEK)
    except (socket.timeout, OSError):
        return None
    finally:
        conn.settimeout(None)
    return tls_server_name(data) if data[:1] == b"\x16" else http_host(data)


def allowed(target: str, allowlist: list[str]) -> bool:
    try:
        address = ipaddress.ip_address(target)
    except ValueError:
        address = None
    for entry in allowlist:
        if address is not None:
            if "/" in entry and address in ipaddress.ip_network(entry, strict=False):
                return True
            if "-" in entry and _in_range(address, entry):
                return True
            if entry == str(address):
                return True
        elif entry.startswith("*.") and target.endswith(entry[1:]):
            return True
        elif entry.startswith(".") and (target == entry[1:] or target.endswith(entry)):
            return True
        elif entry == target:
            return True
    return False


def _in_range(address, entry: str) -> bool:
    try:
        low, high = (ipaddress.ip_address(p.strip()) for p in entry.split("-", 1))
        return low <= address <= high
    except ValueError:
        return False


def relay(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for s, how in ((sink, socket.SHUT_WR), (source, socket.SHUT_RD)):
            try:
                s.shutdown(how)
            except OSError:
                pass


def handle(conn: socket.socket, mark: int, allowlist_path: str) -> None:
    with conn:
        address, port = original_destination(conn)
        host = sniff(conn)
        target = host or address
        entries = [line.strip().lower() for line in open(allowlist_path) if line.strip()]
        if not allowed(target, entries):
            print(f"gost stand-in: deny {target}:{port} (to {address})", file=sys.stderr, flush=True)
            return
        print(f"gost stand-in: allow {target}:{port}", file=sys.stderr, flush=True)
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        upstream.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, mark)
        try:
            upstream.connect((target, port))
        except OSError as error:
            print(f"gost stand-in: {target}:{port}: {error}", file=sys.stderr, flush=True)
            upstream.close()
            return
        with upstream:
            back = threading.Thread(target=relay, args=(upstream, conn), daemon=True)
            back.start()
            relay(conn, upstream)
            back.join()


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] != "-C":
        sys.exit("usage: gost -C CONFIG")
    port, mark, allowlist_path = config(sys.argv[2])
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(128)
    print(f"gost stand-in: red listener on :{port}, allowlist {allowlist_path}", file=sys.stderr, flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn, mark, allowlist_path), daemon=True).start()


if __name__ == "__main__":
    main()

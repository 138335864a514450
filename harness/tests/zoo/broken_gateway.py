"""A deliberately broken MCP "gateway" over stdio, for relaycheck's own robustness tests.

Usage: python3 broken_gateway.py MODE
  hang      never answers anything
  garbage   answers the handshake, then writes a line that is not JSON for every request
  crash     answers the handshake and tools/list, then exits at the first tools/call
  wrong-id  answers the handshake, then answers every request under another id
  late      answers the handshake, then answers tools/call after 30 s
  flood-stdout
            answers the handshake, then writes garbage lines to stdout without end
Modes that relay to a real upstream take its argv after `--`:
  crash-once AFTER MARKER -- CANARY...
            relays; at call AFTER+1 it exits with code 3 unless MARKER exists, which it
            creates first, so the restarted gateway relays every call
  crash-always AFTER -- CANARY...
            relays; at call AFTER+1 it exits with code 3, in every life
  close-once AFTER MARKER -- CANARY...
            relays; at call AFTER+1 it closes its stdout and lives on (unless MARKER
            exists, which it creates first): a stream that ends under a live process
  flood-stderr -- CANARY...
            relays every call while writing to stderr without end
It starts a child `sleep` in its own process group too, so a test can see that the harness
ends it with the gateway.
"""
import json
import os
import subprocess
import sys
import threading
import time

mode = sys.argv[1]
options = sys.argv[2:]
upstream_argv = []
if "--" in options:
    upstream_argv = options[options.index("--") + 1:]
    options = options[:options.index("--")]
# A grandchild the harness must end too. It holds the gateway's stdout open, so a crash does
# not end the stream; except where the gateway is to close its stream itself.
subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL if mode.startswith("close") else None)
out_lock = threading.Lock()


def write_out(data):
    with out_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


def flood(stream, line):
    chunk = line * (65536 // len(line))
    while True:
        stream.write(chunk)
        stream.flush()


def relay():
    """A transparent gateway: lines in both directions, and the scripted crash."""
    upstream = subprocess.Popen(upstream_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def pump():
        for line in upstream.stdout:
            write_out(line)
        os._exit(4)  # the upstream went away

    threading.Thread(target=pump, daemon=True).start()
    if mode == "flood-stderr":
        threading.Thread(
            target=flood, args=(sys.stderr.buffer, b"a flood of stderr noise\n"), daemon=True
        ).start()
    crash_after = int(options[0]) if mode.startswith(("crash", "close")) else None
    marker = options[1] if mode in ("crash-once", "close-once") else None
    calls = 0
    for line in sys.stdin.buffer:
        try:
            method = json.loads(line).get("method")
        except ValueError:
            method = None
        if method == "tools/call":
            calls += 1
            if crash_after is not None and calls > crash_after:
                if marker is None:
                    os._exit(3)
                if not os.path.exists(marker):
                    open(marker, "w").close()
                    if mode == "close-once":
                        with out_lock:
                            os.close(1)
                        time.sleep(300)
                    os._exit(3)
        upstream.stdin.write(line)
        upstream.stdin.flush()
    os._exit(0)


if upstream_argv:
    relay()


def send(message):
    write_out((json.dumps(message) + "\n").encode())


for line in sys.stdin:
    if mode == "hang":
        continue
    try:
        request = json.loads(line)
    except ValueError:
        continue
    if "id" not in request:
        continue
    method = request.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "broken", "version": "0"}}})
        continue
    if method == "tools/list":
        send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}})
        continue
    if mode == "garbage":
        write_out(b"this is not JSON-RPC <html>\n")
    elif mode == "flood-stdout":
        flood(sys.stdout.buffer, b"<flood> not JSON-RPC, and no end to it\n")
    elif mode == "crash":
        sys.exit(3)
    elif mode == "wrong-id":
        send({"jsonrpc": "2.0", "id": 987654, "result": {"content": []}})
    elif mode == "late":
        time.sleep(30)

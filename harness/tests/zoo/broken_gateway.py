"""A deliberately broken MCP "gateway" over stdio, for relaycheck's own robustness tests.

Usage: python3 broken_gateway.py MODE
  hang      never answers anything
  garbage   answers the handshake, then writes a line that is not JSON for every request
  crash     answers the handshake and tools/list, then exits at the first tools/call
  wrong-id  answers the handshake, then answers every request under another id
  late      answers the handshake, then answers tools/call after 30 s
It starts a child `sleep` in its own process group too, so a test can see that the harness
ends it with the gateway.
"""
import json
import subprocess
import sys
import time

mode = sys.argv[1]
subprocess.Popen(["sleep", "300"])  # a grandchild the harness must end too


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


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
        sys.stdout.write("this is not JSON-RPC <html>\n")
        sys.stdout.flush()
    elif mode == "crash":
        sys.exit(3)
    elif mode == "wrong-id":
        send({"jsonrpc": "2.0", "id": 987654, "result": {"content": []}})
    elif mode == "late":
        time.sleep(30)

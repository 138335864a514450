#!/usr/bin/env python3
"""Resident memory of the reference gateway while it retains cut results.

Each call goes through relay_batch to the canary's `echo` tool with about 450 KB of order rows
as arguments; the batch budget cuts the answer, and the gateway retains the full result in its
store (256 MiB cap) under a continuation handle. Resident memory is read from /proc after the
calls named by --at. A store that holds what it counts stays near its cap above the base.

    cargo build --release -p relaycheck
    scripts/retention-memory.py [--relaycheck target/release/relaycheck] [--calls 800]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CONFIG = """[serve]
transport = "stdio"
[limits]
max_response_bytes = 33554432
batch_budget_bytes = 20000
call_timeout_ms = 5000
[identity]
stdio = "local-user"
[[upstreams]]
name = "canary"
command = {canary}
"""


def resident(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) // 1024
    return fields


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--relaycheck", default="target/release/relaycheck")
    parser.add_argument("--calls", type=int, default=800)
    parser.add_argument("--at", type=int, nargs="*", default=[1, 50, 100, 200, 400])
    args = parser.parse_args()
    relaycheck = os.path.abspath(args.relaycheck)
    workdir = tempfile.mkdtemp(prefix="retention-memory-")
    config = os.path.join(workdir, "gateway.toml")
    with open(config, "w") as f:
        f.write(CONFIG.format(canary=json.dumps([relaycheck, "canary", "stdio"])))
    gateway = subprocess.Popen(
        [relaycheck, "gateway", "--config", config],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )

    def rpc(request_id, method, params):
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        gateway.stdin.write((json.dumps(message) + "\n").encode())
        gateway.stdin.flush()
        while True:
            line = gateway.stdout.readline()
            if not line:
                sys.exit("the gateway closed its stdout")
            answer = json.loads(line)
            if answer.get("id") == request_id:
                return answer

    try:
        rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "retention-memory", "version": "1"}})
        gateway.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        gateway.stdin.flush()
        rows = [{"id": f"ord-{i}", "amount": i * 37 % 10000, "currency": "EUR",
                 "status": "open" if i % 3 == 0 else "shipped",
                 "note": "standard delivery, leave at the door"} for i in range(4000)]
        checkpoints = sorted(set(args.at + [args.calls]))
        started = time.time()
        print(f"Command: `scripts/retention-memory.py --calls {args.calls}`\n")
        print("Resident memory of the reference gateway after each number of relay_batch calls,")
        print("each cut and retained (a 256 MiB store):\n")
        print("| calls | handles | resident MiB | peak MiB |")
        print("|---|---|---|---|")
        handles = 0
        for call in range(1, args.calls + 1):
            rows[0]["id"] = f"call-{call}"
            answer = rpc(call, "tools/call", {"name": "relay_batch", "arguments": {
                "calls": [{"server": "canary", "tool": "echo", "arguments": {"rows": rows}}]}})
            entry = answer["result"]["structuredContent"]["results"][0]
            handles += entry.get("continuation") is not None
            if call in checkpoints:
                memory = resident(gateway.pid)
                print(f"| {call} | {handles} | {memory['VmRSS']} | {memory['VmHWM']} |")
        print(f"\n{args.calls} calls in {time.time() - started:.1f} s")
    finally:
        gateway.stdin.close()
        try:
            gateway.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(gateway.pid, 9)
            gateway.wait()


if __name__ == "__main__":
    main()

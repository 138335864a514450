#!/usr/bin/env python3
"""Writes reports/hostile.md: what a run costs against each hostile target of the zoo.

Usage: scripts/hostile-table.py [RELAYCHECK]   (default: target/release/relaycheck)

Each row runs `relaycheck run` against the zoo gateway (harness/tests/zoo/broken_gateway.py)
in one mode, on the is-error cases in 2025-11-25, under /usr/bin/time, and records the
outcomes, the first message, the peak memory (the largest of relaycheck and the processes it
waited for), the size of everything --out holds, the wall time, and whether any process of
the run was alive two seconds after it ended. The last rows kill relaycheck mid-run with
SIGKILL and SIGTERM and count what is left ten seconds later. Figures are of the machine the
script ran on; run it again to measure yours.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = os.path.join(ROOT, "harness", "tests", "zoo", "broken_gateway.py")
RELAYCHECK = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                             os.path.join(ROOT, "target", "release", "relaycheck"))
MARK = "RELAYCHECK_HOSTILE_TABLE"

STDIO = "stdio"
HTTP = "http"

# (mode arguments, transport, what the target does)
ROWS = [
    (["crash-always", "1000000", "--", "{canary_cmd}"], STDIO,
     "relays every call (a well-behaved target, for comparison)"),
    (["hang"], STDIO, "never answers anything"),
    (["garbage"], STDIO, "answers every call with a line that is not JSON"),
    (["wrong-id"], STDIO, "answers every call under another id"),
    (["duplicate", "--", "{canary_cmd}"], STDIO, "relays, writing every answer twice"),
    (["unsolicited", "--", "{canary_cmd}"], STDIO,
     "relays, writing a log line and a response nobody asked for before every answer"),
    (["late"], STDIO, "answers every call after 30 s"),
    (["crash"], STDIO, "exits at the first call, a grandchild holding its stdout open"),
    (["huge-error"], STDIO, "answers every request with a 50 MB error message"),
    (["huge-stderr-line"], STDIO, "writes one 15 MB line to stderr and exits"),
    (["unterminated-stdout"], STDIO, "writes stdout without a newline, without end"),
    (["flood-stdout"], STDIO, "writes garbage lines to stdout without end"),
    (["flood-progress"], STDIO,
     "sends 100000 progress notifications for every call before answering"),
    (["flood-stderr", "--", "{canary_cmd}"], STDIO,
     "relays every call while writing to stderr without end"),
    (["hostile-bytes"], STDIO,
     "answers with terminal escapes, a forged `Total:` line, bidi controls, `</script>`"),
    (["http-never-ready", "{port}"], HTTP, "listens but never reads or answers"),
    (["http-no-mcp", "{port}"], HTTP, "is healthy but never answers an MCP request"),
]


def profile(directory, name, args, transport):
    command = ["python3", ZOO] + args
    if transport == HTTP:
        start = 'ready = "http"\nready_path = "/health"'
        north = 'transport = "http"\nurl = "http://127.0.0.1:{port}/mcp"'
        canary = 'transport = "http"'
    else:
        start = 'ready = "first-response"'
        north = 'transport = "stdio"'
        canary = 'transport = "stdio"'
    path = os.path.join(directory, name + ".toml")
    with open(path, "w") as f:
        f.write(f'name = "{name}"\ndescription = "a hostile target"\n'
                f'[start]\ncommand = {json.dumps(command)}\n{start}\ntimeout_ms = 5000\n'
                f'[north]\n{north}\n[canary]\n{canary}\n[routes.flat]\ntool = "{{tool}}"\n')
    return path


def live_with(value):
    """Live processes whose environment holds MARK=value."""
    wanted = f"{MARK}={value}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if wanted in f.read().split(b"\0"):
                    found.append(int(pid))
        except (OSError, IndexError):
            continue
    return found


def end_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def size_of(directory):
    total = 0
    for base, _, files in os.walk(directory):
        for name in files:
            total += os.path.getsize(os.path.join(base, name))
    return total


def human(size):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024


def cell(text):
    """A Markdown table cell: inert, one line, short."""
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 0x100
                   else f"\\u{{{ord(c):x}}}" for c in text)
    if len(text) > 150:
        text = text[:150] + "…"
    for c in "\\`*_[]<>|!#":
        text = text.replace(c, "\\" + c)
    return text


def run_row(scratch, index, args, transport):
    name = f"hostile-{index:02d}-{args[0]}"
    path = profile(scratch, name, args, transport)
    out = os.path.join(scratch, name + "-out")
    value = f"{os.getpid()}-{index}"
    env = dict(os.environ, **{MARK: value})
    started = time.monotonic()
    timed = subprocess.run(
        ["/usr/bin/time", "-v", RELAYCHECK, "run", "--target", path, "--shape", "2025-11-25",
         "--case", "is-error/*", "--timeout-ms", "1500", "--out", out],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.monotonic() - started
    time.sleep(2)
    left = live_with(value)
    end_all(left)
    peak = re.search(rb"Maximum resident set size \(kbytes\): (\d+)", timed.stderr)
    outcomes, first = {}, ""
    results = os.path.join(out, "results.jsonl")
    if os.path.exists(results):
        with open(results) as f:
            for line in f:
                event = json.loads(line)
                if event.get("event") == "result":
                    outcomes[event["outcome"]] = outcomes.get(event["outcome"], 0) + 1
                    first = first or event["message"]
    console = len(timed.stdout) + len(timed.stderr)
    return {
        "outcomes": ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())),
        "message": first,
        "peak": int(peak.group(1)) * 1024 if peak else 0,
        "reports": size_of(out) if os.path.isdir(out) else 0,
        "console": console,
        "wall": wall,
        "left": len(left),
    }


def run_killed(scratch, index, how):
    """Starts a run against a stdio and an HTTP gateway, signals relaycheck mid-run."""
    rows = []
    for transport, args in ((STDIO, ["late"]),
                            (HTTP, ["http-crash-always", "{port}", "1000000", "--",
                                    "{canary_url}"])):
        name = f"hostile-{index:02d}-{transport}"
        path = profile(scratch, name, args, transport)
        value = f"{os.getpid()}-{index}-{transport}"
        tmp = os.path.join(scratch, name + "-tmp")
        os.makedirs(tmp)
        env = dict(os.environ, **{MARK: value, "TMPDIR": tmp})
        child = subprocess.Popen(
            [RELAYCHECK, "run", "--target", path, "--shape", "all", "--timeout-ms", "20000"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(live_with(value)) < 4:
            time.sleep(0.05)
        time.sleep(0.5)
        running = len(live_with(value))
        child.send_signal(how)
        child.wait()
        time.sleep(10)
        left = live_with(value)
        end_all(left)
        rows.append((transport, running, len(left), len(os.listdir(tmp))))
    return rows


def main():
    if not os.path.exists(RELAYCHECK):
        sys.exit(f"{RELAYCHECK} does not exist; build it with `cargo build --release`")
    version = subprocess.run([RELAYCHECK, "--version"], stdout=subprocess.PIPE,
                             text=True).stdout.strip()
    scratch = tempfile.mkdtemp(prefix="relaycheck-hostile-table-")
    lines = [
        "# relaycheck against hostile targets",
        "",
        f"Written by `scripts/hostile-table.py` with {version}. Each row is one run of",
        "`relaycheck run --shape 2025-11-25 --case 'is-error/*' --timeout-ms 1500` against the",
        "zoo gateway (`harness/tests/zoo/broken_gateway.py`) in one mode. Peak memory is the",
        "largest of relaycheck and the processes it waited for (`/usr/bin/time -v`); reports is",
        "everything `--out` holds; left is the processes of the run alive two seconds after it",
        "ended. The bounds are in the README (\"A target is untrusted\"); the tests that hold",
        "them are in `harness/tests/hostile.rs` and `harness/tests/zoo.rs`.",
        "",
        "| The target | Outcomes | What relaycheck said first | Peak memory | Reports | Console | Wall time | Left |",
        "|---|---|---|---|---|---|---|---|",
    ]
    try:
        for index, (args, transport, what) in enumerate(ROWS):
            row = run_row(scratch, index, args, transport)
            lines.append(
                f"| `{args[0]}`: {cell(what)} | {row['outcomes']} | {cell(row['message'])} | "
                f"{human(row['peak'])} | {human(row['reports'])} | {human(row['console'])} | "
                f"{row['wall']:.1f} s | {row['left']} |")
            print(f"{args[0]}: done", file=sys.stderr)
        lines += [
            "",
            "relaycheck signalled mid-run (a `late` stdio gateway, and an HTTP gateway whose",
            "canaries relaycheck starts itself; every gateway also leaves its process group for a",
            "session of its own with a grandchild); what is left ten seconds later:",
            "",
            "| Signal | Target | Processes of the run before | Processes left | Work folders left |",
            "|---|---|---|---|---|",
        ]
        for offset, (label, how) in enumerate((("SIGKILL", signal.SIGKILL),
                                               ("SIGTERM", signal.SIGTERM),
                                               ("SIGINT", signal.SIGINT))):
            for transport, running, left, folders in run_killed(scratch, 90 + offset, how):
                lines.append(f"| {label} | {transport} | {running} | {left} | {folders} |")
            print(f"{label}: done", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with open(os.path.join(ROOT, "reports", "hostile.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote reports/hostile.md", file=sys.stderr)


if __name__ == "__main__":
    main()

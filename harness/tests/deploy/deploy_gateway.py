"""A small MCP gateway with the features a real deployment needs, for relaycheck's profile tests.

It serves streamable HTTP on 127.0.0.1 (POST /mcp, JSON answers only, never an event stream,
never a session) and relays to stdio upstream MCP servers that it spawns itself, in its own
process group. Standard library only.

Usage:
  python3 deploy_gateway.py serve --port PORT [--config FILE] [--rules FILE]
                                  [--token-secret SECRET] [--admin-key KEY] [--audit FILE]
                                  [--meta-tool]
  python3 deploy_gateway.py mint SECRET
            prints the one bearer token `serve --token-secret SECRET` accepts
            ("v1." + hex HMAC-SHA256(SECRET, "relaycheck-client")) and exits 0

Options of serve:
  --port PORT          port to bind on 127.0.0.1 (0: any free port)
  --config FILE        JSON {"upstreams": {"NAME": {"command": [ARGV...]}}}; each upstream is
                       spawned at start (stdin and stdout piped, stderr inherited)
  --rules FILE         JSON {"prefix": STR, "slug": BOOL, "description_prefix": STR}, all
                       optional: the north name of an upstream tool is prefix + name, with every
                       `_` turned into `-` under slug (`is_error` with prefix `canary-` is listed
                       as `canary-is-error`); description_prefix goes in front of every tool's
                       description (a tool without one gets it alone). Without it, names are
                       the upstream's, unprefixed.
  --token-secret S     every request to /mcp without `Authorization: Bearer <mint S>` is
                       answered HTTP 401 with a JSON body; the REST endpoints do not need it
  --admin-key KEY      the X-Admin-Key of POST /api/users (without it, every user is refused)
  --audit FILE         after each tools/call that reached an upstream, appends
                       {"ts": UNIX_TIME, "server": NAME, "tool": UPSTREAM_TOOL,
                        "status": "ok"|"error"} and flushes; "error" is a JSON-RPC error, a
                       result with isError true or no answer; arguments are never recorded
  --meta-tool          tools/list is one tool, `execute_tool` {server, tool, args}, and that
                       is the only tool a client may call

Endpoints:
  GET  /health         200 `ok` once listening
  POST /mcp            a JSON-RPC message (or a batch of them):
                         initialize        to the first upstream, answered with its answer; the
                                           same initialize goes to every other upstream too
                                           (answers discarded), and to an upstream registered
                                           later, with the notifications/initialized after it
                         notification      to every upstream; HTTP 202, empty
                         a response        dropped (the gateway drops upstream requests);
                                           HTTP 202, empty
                         tools/list        every upstream's list (the client's params, `_meta`
                                           included), renamed, concatenated in upstream order,
                                           with the other members of the first upstream's result
                         tools/call        to the upstream whose renamed tool it names (the
                                           last listing's map; listed first when there is none,
                                           and again when the name is not in it), the rest of
                                           params (`_meta`, `task`, ...) unchanged; the answer
                                           unchanged but its id. Unknown: -32602
                                           `Unknown tool: NAME`
                         anything else     to the first upstream unchanged, its answer relayed
                       No upstream yet: -32603 `no upstream registered`. No answer in 60 s:
                       -32603. Upstream notifications and requests are dropped.
  GET|DELETE /mcp      405 (no event stream, no session)
  POST /api/users      X-Admin-Key: KEY (else 403), {"name": STR}
                       -> 201 {"id": "usr-N", "api_key": 32 HEX}
  POST /api/servers    X-Api-Key: an api_key minted above (else 401),
                       {"name": STR, "command": [ARGV...]} -> 201 {"id": "srv-N", "name": NAME}
                       and the upstream is spawned; 400 (409 for a name taken) with
                       {"error": ...} otherwise
  GET  /api/servers    [{"id", "name", "command", "source": "config"|"api", "running"}...]

stdout carries nothing but `LISTENING http://127.0.0.1:PORT/mcp` once listening; logs go to
stderr. It does not handle SIGTERM: the harness ends its process group, upstreams included.
"""
import argparse
import hashlib
import hmac
import http.server
import json
import secrets
import subprocess
import sys
import threading
import time

TOKEN_MESSAGE = b"relaycheck-client"
TIMEOUT_S = 60.0
META_TOOL = {
    "name": "execute_tool",
    "description": "Runs a tool of an upstream server",
    "inputSchema": {
        "type": "object",
        "properties": {
            "server": {"type": "string"},
            "tool": {"type": "string"},
            "args": {"type": "object"},
        },
        "required": ["server", "tool"],
    },
}


def log(*parts):
    print("deploy_gateway:", *parts, file=sys.stderr, flush=True)


def mint(secret):
    return "v1." + hmac.new(secret.encode(), TOKEN_MESSAGE, hashlib.sha256).hexdigest()


def rpc_error(msg_id, code, message):
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


class RelayError(Exception):
    """A request the gateway answers itself, with a JSON-RPC error."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


_ids = {"next": 0}
_ids_lock = threading.Lock()


def internal_id():
    with _ids_lock:
        _ids["next"] += 1
        return _ids["next"]


class Upstream:
    """One stdio upstream: a child, a write lock, and a reader that hands out responses by id."""

    def __init__(self, name, command, ident, source):
        self.name = name
        self.command = command
        self.id = ident
        self.source = source
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     bufsize=0)
        self.write_lock = threading.Lock()
        self.pending = {}
        self.pending_lock = threading.Lock()
        self.alive = True
        threading.Thread(target=self.read, daemon=True, name="read-" + name).start()
        log("started upstream", name, "pid", self.proc.pid, json.dumps(command))

    def read(self):
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                log("upstream", self.name, "wrote a line that is not JSON:", line[:200])
                continue
            if not isinstance(message, dict) or "method" in message or "id" not in message:
                continue  # notifications, requests, batches: dropped
            with self.pending_lock:
                slot = self.pending.pop(message["id"], None)
            if slot is None:
                log("upstream", self.name, "answered an id no one waits for:", message["id"])
                continue
            slot["answer"] = message
            slot["done"].set()
        self.alive = False
        log("upstream", self.name, "closed its stdout")
        with self.pending_lock:
            waiting, self.pending = self.pending, {}
        for slot in waiting.values():
            slot["done"].set()

    def send(self, message):
        data = (json.dumps(message) + "\n").encode()
        with self.write_lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as err:
                raise RelayError(-32603, "upstream %s is not running: %s" % (self.name, err))

    def notify(self, message):
        try:
            self.send(message)
        except RelayError as err:
            log(err.message)

    def request(self, method, params, timeout=TIMEOUT_S):
        """Sends a request under a new internal id; the upstream's response, or RelayError."""
        if not self.alive:
            raise RelayError(-32603, "upstream %s is not running" % self.name)
        ident = internal_id()
        slot = {"done": threading.Event(), "answer": None}
        with self.pending_lock:
            self.pending[ident] = slot
        message = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self.send(message)
        except RelayError:
            with self.pending_lock:
                self.pending.pop(ident, None)
            raise
        if not slot["done"].wait(timeout):
            with self.pending_lock:
                self.pending.pop(ident, None)
            raise RelayError(-32603, "upstream %s did not answer %s within %d s"
                             % (self.name, method, timeout))
        if slot["answer"] is None:
            raise RelayError(-32603, "upstream %s went away before answering %s"
                             % (self.name, method))
        return slot["answer"]


class Gateway:
    def __init__(self, args):
        self.rules = {}
        if args.rules:
            with open(args.rules) as f:
                self.rules = json.load(f)
        self.token = mint(args.token_secret) if args.token_secret is not None else None
        self.admin_key = args.admin_key
        self.meta_tool = args.meta_tool
        self.audit_path = args.audit
        self.audit_lock = threading.Lock()
        self.lock = threading.Lock()
        self.upstreams = []
        self.api_keys = set()
        self.users = 0
        self.servers = 0
        self.tool_map = {}
        self.handshake = None  # the client's initialize params, for upstreams that come later
        self.initialized = None  # and the notifications/initialized after it
        if args.config:
            with open(args.config) as f:
                config = json.load(f)
            for index, (name, entry) in enumerate((config.get("upstreams") or {}).items()):
                self.upstreams.append(Upstream(name, list(entry["command"]),
                                               "cfg-%d" % (index + 1), "config"))

    # -- upstreams --

    def snapshot(self):
        with self.lock:
            return list(self.upstreams)

    def require_upstreams(self):
        upstreams = self.snapshot()
        if not upstreams:
            raise RelayError(-32603, "no upstream registered")
        return upstreams

    def find(self, name):
        for upstream in self.snapshot():
            if upstream.name == name:
                return upstream
        return None

    def register(self, name, command):
        with self.lock:
            if any(u.name == name for u in self.upstreams):
                return None, (409, "an upstream named %r exists" % name)
            self.servers += 1
            ident = "srv-%d" % self.servers
            try:
                upstream = Upstream(name, command, ident, "api")
            except OSError as err:
                self.servers -= 1
                return None, (400, "cannot start %s: %s" % (json.dumps(command), err))
            self.upstreams.append(upstream)
            handshake, initialized = self.handshake, self.initialized
        if handshake is not None:
            # A client already shook hands: the newcomer gets the same handshake.
            try:
                upstream.request("initialize", handshake)
            except RelayError as err:
                log("initialize of", name, "failed:", err.message)
            if initialized is not None:
                upstream.notify(initialized)
        return upstream, None

    # -- renaming --

    def north_name(self, tool_name):
        name = tool_name
        if self.rules.get("slug"):
            name = name.replace("_", "-")
        return (self.rules.get("prefix") or "") + name

    def list_tools(self, params):
        """Every upstream's tools, renamed; the first upstream's result's other members."""
        upstreams = self.require_upstreams()
        tools, extra, mapping = [], {}, {}
        for index, upstream in enumerate(upstreams):
            try:
                answer = upstream.request("tools/list", params)
            except RelayError as err:
                if index == 0:
                    raise
                log("tools/list of", upstream.name, "failed:", err.message)
                continue
            if "error" in answer or not isinstance(answer.get("result"), dict):
                if index == 0:
                    return answer
                log("tools/list of", upstream.name, "answered", json.dumps(answer)[:300])
                continue
            result = answer["result"]
            if index == 0:
                extra = {k: v for k, v in result.items() if k != "tools"}
            for tool in result.get("tools") or []:
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    continue
                north = self.north_name(tool["name"])
                if north in mapping:
                    log("tool", north, "of", upstream.name, "collides; the first one wins")
                    continue
                mapping[north] = (upstream.name, tool["name"])
                listed = dict(tool, name=north)
                prefix = self.rules.get("description_prefix")
                if prefix:
                    listed["description"] = prefix + (tool.get("description") or "")
                tools.append(listed)
        with self.lock:
            self.tool_map = mapping
        return {"result": dict(extra, tools=tools)}

    # -- audit --

    def audit(self, server, tool, status):
        if not self.audit_path:
            return
        line = json.dumps({"ts": time.time(), "server": server, "tool": tool, "status": status})
        with self.audit_lock:
            with open(self.audit_path, "a") as f:
                f.write(line + "\n")
                f.flush()

    # -- JSON-RPC --

    def relay_answer(self, answer, msg_id):
        relayed = {"jsonrpc": answer.get("jsonrpc", "2.0"), "id": msg_id}
        relayed.update((k, v) for k, v in answer.items() if k not in ("jsonrpc", "id"))
        return relayed

    def handle(self, message):
        """One JSON-RPC message: its answer, or None for a notification or a response."""
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            if isinstance(message, dict) and "id" in message and (
                    "result" in message or "error" in message):
                return None  # the client answering an upstream request we dropped
            return rpc_error(message.get("id") if isinstance(message, dict) else None,
                             -32600, "Invalid Request")
        method = message["method"]
        params = message.get("params")
        if "id" not in message:
            if method == "notifications/initialized":
                with self.lock:
                    self.initialized = message
            for upstream in self.snapshot():
                upstream.notify(message)
            return None
        msg_id = message["id"]
        try:
            if method == "initialize":
                return self.relay_answer(self.initialize(params), msg_id)
            if method == "tools/list":
                return self.relay_answer(self.tools_list(params), msg_id)
            if method == "tools/call":
                return self.relay_answer(self.tools_call(params), msg_id)
            upstream = self.require_upstreams()[0]
            return self.relay_answer(upstream.request(method, params), msg_id)
        except RelayError as err:
            return rpc_error(msg_id, err.code, err.message)

    def initialize(self, params):
        upstreams = self.require_upstreams()
        with self.lock:
            self.handshake = params
        others = [threading.Thread(target=self.initialize_other, args=(u, params), daemon=True)
                  for u in upstreams[1:]]
        for thread in others:
            thread.start()
        answer = upstreams[0].request("initialize", params)
        for thread in others:
            thread.join(TIMEOUT_S)
        return answer

    @staticmethod
    def initialize_other(upstream, params):
        try:
            upstream.request("initialize", params)
        except RelayError as err:
            log("initialize of", upstream.name, "failed:", err.message)

    def tools_list(self, params):
        answer = self.list_tools(params)
        if self.meta_tool and "result" in answer:
            answer = {"result": dict(answer["result"], tools=[dict(META_TOOL)])}
        return answer

    def tools_call(self, params):
        params = params if isinstance(params, dict) else {}
        name = params.get("name")
        if self.meta_tool:
            if name != META_TOOL["name"]:
                raise RelayError(-32602, "Unknown tool: %s" % name)
            self.require_upstreams()
            arguments = params.get("arguments")
            arguments = arguments if isinstance(arguments, dict) else {}
            server, tool = arguments.get("server"), arguments.get("tool")
            if not isinstance(server, str) or not isinstance(tool, str):
                raise RelayError(-32602, "execute_tool needs a string server and tool")
            upstream = self.find(server)
            if upstream is None:
                raise RelayError(-32602, "Unknown server: %s" % server)
            forwarded = {k: v for k, v in params.items() if k not in ("name", "arguments")}
            forwarded["name"] = tool
            if "args" in arguments:
                forwarded["arguments"] = arguments["args"]
        else:
            self.require_upstreams()
            with self.lock:
                target = self.tool_map.get(name)
                listed = bool(self.tool_map)
            if target is None:
                # No listing yet, or one from before an upstream came: list (again).
                listing = self.list_tools({})
                if "error" in listing and not listed:
                    raise RelayError(-32603, "cannot list the upstreams' tools")
                with self.lock:
                    target = self.tool_map.get(name)
            if target is None:
                raise RelayError(-32602, "Unknown tool: %s" % name)
            server, tool = target
            upstream = self.find(server)
            if upstream is None:
                raise RelayError(-32602, "Unknown tool: %s" % name)
            forwarded = dict(params, name=tool)
        try:
            answer = upstream.request("tools/call", forwarded)
        except RelayError:
            self.audit(upstream.name, tool, "error")
            raise
        result = answer.get("result")
        failed = "error" in answer or (isinstance(result, dict) and result.get("isError") is True)
        self.audit(upstream.name, tool, "error" if failed else "ok")
        return answer


def make_handler(gateway):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            log(self.address_string(), fmt % args)

        def answer(self, status, body=b"", content_type=None):
            self.send_response(status)
            if content_type:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def answer_json(self, status, value):
            self.answer(status, json.dumps(value).encode(), "application/json")

        def body(self):
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                data = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def json_body(self):
            try:
                value = json.loads(self.body() or b"null")
            except ValueError:
                return None
            return value if isinstance(value, dict) else None

        def path_only(self):
            return self.path.split("?", 1)[0]

        def authorized(self):
            if gateway.token is None:
                return True
            given = self.headers.get("Authorization") or ""
            return hmac.compare_digest(given.encode(), ("Bearer " + gateway.token).encode())

        def do_GET(self):
            path = self.path_only()
            if path == "/health":
                self.answer(200, b"ok", "text/plain")
            elif path == "/api/servers":
                self.answer_json(200, [{"id": u.id, "name": u.name, "command": u.command,
                                        "source": u.source, "running": u.alive}
                                       for u in gateway.snapshot()])
            elif path == "/mcp":
                self.mcp_other()
            else:
                self.answer_json(404, {"error": "not found"})

        def do_DELETE(self):
            if self.path_only() == "/mcp":
                self.mcp_other()
            else:
                self.answer_json(404, {"error": "not found"})

        def mcp_other(self):
            if not self.authorized():
                self.answer_json(401, {"error": "unauthorized"})
            else:
                self.send_response(405)
                self.send_header("Allow", "POST")
                self.send_header("Content-Length", "0")
                self.end_headers()

        def do_POST(self):
            path = self.path_only()
            if path == "/mcp":
                self.mcp()
            elif path == "/api/users":
                self.create_user()
            elif path == "/api/servers":
                self.create_server()
            else:
                self.body()
                self.answer_json(404, {"error": "not found"})

        def create_user(self):
            body = self.json_body()
            given = self.headers.get("X-Admin-Key")
            if gateway.admin_key is None or given is None or not hmac.compare_digest(
                    given.encode(), gateway.admin_key.encode()):
                self.answer_json(403, {"error": "a valid X-Admin-Key is required"})
                return
            if body is None or not isinstance(body.get("name"), str) or not body["name"]:
                self.answer_json(400, {"error": "the body must be {\"name\": STRING}"})
                return
            api_key = secrets.token_hex(16)
            with gateway.lock:
                gateway.users += 1
                ident = "usr-%d" % gateway.users
                gateway.api_keys.add(api_key)
            log("created user", ident, json.dumps(body["name"]))
            self.answer_json(201, {"id": ident, "api_key": api_key})

        def create_server(self):
            body = self.json_body()
            given = self.headers.get("X-Api-Key")
            with gateway.lock:
                known = given is not None and given in gateway.api_keys
            if not known:
                self.answer_json(401, {"error": "a valid X-Api-Key is required"})
                return
            name = body.get("name") if body else None
            command = body.get("command") if body else None
            if not isinstance(name, str) or not name or not isinstance(command, list) \
                    or not command or not all(isinstance(a, str) for a in command):
                self.answer_json(400, {"error": "the body must be "
                                       "{\"name\": STRING, \"command\": [STRING...]}"})
                return
            upstream, failure = gateway.register(name, command)
            if upstream is None:
                self.answer_json(failure[0], {"error": failure[1]})
                return
            self.answer_json(201, {"id": upstream.id, "name": upstream.name})

        def mcp(self):
            raw = self.body()
            if not self.authorized():
                self.answer_json(401, {"error": "unauthorized",
                                       "message": "a valid bearer token is required"})
                return
            try:
                message = json.loads(raw)
            except ValueError:
                self.answer_json(400, rpc_error(None, -32700, "Parse error"))
                return
            if isinstance(message, list):
                if not message:
                    self.answer_json(400, rpc_error(None, -32600, "Invalid Request"))
                    return
                answers = [a for a in (gateway.handle(m) for m in message) if a is not None]
                if answers:
                    self.answer_json(200, answers)
                else:
                    self.answer(202)
                return
            answer = gateway.handle(message)
            if answer is None:
                self.answer(202)
            else:
                self.answer_json(200, answer)

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 resets clients that connect all at once


def serve(args):
    gateway = Gateway(args)
    server = Server(("127.0.0.1", args.port), make_handler(gateway))
    port = server.server_address[1]
    sys.stdout.write("LISTENING http://127.0.0.1:%d/mcp\n" % port)
    sys.stdout.flush()
    log("listening on port", port, "with", len(gateway.snapshot()), "upstream(s)")
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(prog="deploy_gateway.py")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve")
    run.add_argument("--port", type=int, required=True)
    run.add_argument("--config")
    run.add_argument("--rules")
    run.add_argument("--token-secret")
    run.add_argument("--admin-key")
    run.add_argument("--audit")
    run.add_argument("--meta-tool", action="store_true")
    token = commands.add_parser("mint")
    token.add_argument("secret")
    args = parser.parse_args()
    if args.command == "mint":
        print(mint(args.secret), flush=True)
        return
    serve(args)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A tiny ACP agent for tests that need bytes or volumes the JSON scenarios
of acp-test-agent cannot express (raw invalid UTF-8, dozens of multi-MB
writes generated on the fly).

    python3 raw_agent.py PLAN.json LOG.jsonl

It answers `initialize`, `session/new` and `session/prompt`; a prompt plays
the plan's steps, then ends the turn with `end_turn`. Steps (objects):

  {"update": {...}, "invalid": "MARK"?}
      a session/update notification (sessionId filled in);
  {"request": "method", "params": {...}, "invalid": "MARK"?}
      a request to the client; waits for its answer and logs it;
  {"writes": {"path": P, "count": N, "stride": S}}
      N fs/write_text_file requests of P's disk text with 7 bytes changed
      each time (line i*S starts with "w%06d"), each awaited and logged.
  {"new_files": {"dir": D, "count": N, "size": S}}
      N fs/write_text_file requests creating D/new-%03d.txt, each of S
      bytes (lines of "x"), each awaited and logged.

With "invalid", every occurrence of MARK in the serialized line is replaced
by the byte 0xFF (invalid UTF-8) before it is written.

With "end_invalid": MARK, the prompt's answer carries the byte 0xFF in a
`_meta` string.

The log gets one JSON object per line: {"event": "client_response",
"method", "result" | "error", "elapsed_ms"}: elapsed_ms runs from the
request's write until its answer is read and parsed (one plain json.loads,
no SDK), which makes this agent the benchmarks' plain JSON reader.
"""

import json
import sys
import time

plan = json.load(open(sys.argv[1]))
log = open(sys.argv[2], "a", buffering=1)
inp = sys.stdin.buffer
out = sys.stdout.buffer
next_id = 1000


def send(obj, invalid=None):
    data = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    if invalid:
        data = data.replace(invalid.encode("utf-8"), b"\xff")
    out.write(data + b"\n")
    out.flush()


def respond(msg_id, result):
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def request(method, params, invalid=None):
    """Sends a request and reads until its answer (other lines are ignored:
    the client sends nothing else the plans need)."""
    global next_id
    next_id += 1
    my_id = next_id
    started = time.perf_counter()
    send({"jsonrpc": "2.0", "id": my_id, "method": method, "params": params}, invalid)
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        msg = json.loads(line)
        if msg.get("id") == my_id and "method" not in msg:
            event = {"event": "client_response", "method": method,
                     "elapsed_ms": (time.perf_counter() - started) * 1000}
            if "error" in msg:
                event["error"] = msg["error"]
            else:
                event["result"] = msg.get("result")
            log.write(json.dumps(event) + "\n")
            return msg


def writes(session_id, spec):
    path, count, stride = spec["path"], spec["count"], spec["stride"]
    with open(path, "r", encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i in range(1, count + 1):
        n = (i * stride) % (len(lines) - 1)
        lines[n] = ("w%06d" % i) + lines[n][7:]
        request("fs/write_text_file", {"sessionId": session_id, "path": path, "content": "\n".join(lines)})


def new_files(session_id, spec):
    line = "x" * 99 + "\n"
    text = (line * (spec["size"] // len(line) + 1))[: spec["size"]]
    for i in range(1, spec["count"] + 1):
        path = "%s/new-%03d.txt" % (spec["dir"], i)
        request("fs/write_text_file", {"sessionId": session_id, "path": path, "content": text})


def play(session_id):
    for step in plan.get("steps", []):
        if "update" in step:
            send(
                {"jsonrpc": "2.0", "method": "session/update",
                 "params": {"sessionId": session_id, "update": step["update"]}},
                step.get("invalid"),
            )
        elif "request" in step:
            params = dict(step.get("params") or {})
            params["sessionId"] = session_id
            request(step["request"], params, step.get("invalid"))
        elif "writes" in step:
            writes(session_id, step["writes"])
        elif "new_files" in step:
            new_files(session_id, step["new_files"])


def main():
    while True:
        line = inp.readline()
        if not line:
            return
        msg = json.loads(line)
        method, msg_id = msg.get("method"), msg.get("id")
        if method == "initialize":
            respond(msg_id, {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": False, "promptCapabilities": {"embeddedContext": True}},
                "agentInfo": {"name": "raw-agent", "version": "0"},
                "authMethods": [],
            })
        elif method == "session/new":
            respond(msg_id, {"sessionId": "raw-1"})
        elif method == "session/prompt":
            play(msg["params"]["sessionId"])
            mark = plan.get("end_invalid")
            if mark:
                send({"jsonrpc": "2.0", "id": msg_id,
                      "result": {"stopReason": "end_turn", "_meta": {"note": "end " + mark}}}, mark)
            else:
                respond(msg_id, {"stopReason": "end_turn"})
        elif msg_id is not None and method is not None:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "method not found"}})


main()

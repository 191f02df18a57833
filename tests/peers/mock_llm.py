#!/usr/bin/env python3
"""Scripted mock LLM server (Python stdlib only): acp.nvim's test tool for
running real ACP agents offline, against 127.0.0.1 only.

The tests in tests/test_real_agents.lua start it, point an agent's model
provider at it, and let the agent's real ACP traffic reach the plugin.

It speaks just enough of four wire formats for coding agents to run against it:

  * Anthropic Messages     POST /v1/messages            (SSE when "stream": true)
                           POST /v1/messages/count_tokens
  * OpenAI Chat Completions POST [/v1]/chat/completions (SSE when "stream": true)
  * OpenAI Responses       POST [/v1]/responses          (SSE)
  * Gemini                 POST /v1beta/models/M:streamGenerateContent?alt=sse
                           POST /v1beta/models/M:generateContent / :countTokens
  * GET [/v1]/models       (a one-model list for clients that probe it)

What the "model" answers is read from a scenario file (JSON). The choice is
stateless: every request is mapped onto the scenario by looking at its own
conversation history, so retries, side requests and parallel sessions do not
break the script:

  1. The request is normalised to a list of turns: user / assistant / tool.
  2. The last user turn containing one of the scenario prompts' "match" text
     (default: the prompt's "text") selects the prompt P.
  3. Everything after that turn must be assistant or tool turns; otherwise
     the request is a side request (title generation, next-speaker checks, ...)
     and gets a "side" response.
  4. K = number of assistant runs after the prompt. The answer is
     P.responses[K]; past the end the scenario's "after_end" response is used.
  5. A tool_call block lists candidate tools ("options"); the first whose
     name is among the request's tools is used. If none matches, the request
     is treated as a side request.

Scenario format (see scenarios/*.json):

  {
    "name": "...",
    "files": {"hello.txt": "..."},               # for the test to create
    "prompts": [
      {"text": "prompt sent by the client",
       "match": "optional substring to recognise it (default: text)",
       "responses": [
         {"content": [
            {"type": "thinking", "text": "..."},
            {"type": "text", "text": "..."},
            {"type": "tool_call", "options": [
                {"name": "mcp__acp__Read", "input": {"file_path": "{cwd}/hello.txt"}},
                {"name": "read_file", "input": {"absolute_path": "{cwd}/hello.txt"}},
                {"name": "apply_patch", "raw": "*** Begin Patch ..."}   # freeform tools
            ]}
         ]}
       ]}
    ],
    "side": [ {"match": "regex searched in the request's last user text", "content": [...]},
              {"content": [{"type": "text", "text": "OK"}]} ],
    "after_end": {"content": [{"type": "text", "text": "Done."}]}
  }

An option may carry "if_tools": [...] / "unless_tools": [...] to apply only
when the agent does / does not offer those tools (e.g. two codex versions
that both call their shell tool exec_command).

A response (or side rule) with "delay": SECONDS streams its SSE events that
far apart, overriding --delay: a slow answer the client can act on while it
still streams (steering, cancel).

A response with "optional": true is skipped (for every request of that
session) when none of its tool options is offered by the agent, e.g. a
TodoWrite/plan step that only some agents have.

"{name}" placeholders in strings are replaced by --var name=value (and
{cwd} defaults to the MOCK_CWD environment variable). Use {{ and }} for
literal braces.

Usage:
  python3 mock_llm.py --scenario scenarios/codex_apply_patch.json --port 0 \
      --var cwd=/tmp/work --log /tmp/mock-requests.jsonl
The first stdout line is "MOCK_LLM_LISTENING http://127.0.0.1:PORT".
"""
import argparse
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# --------------------------------------------------------------------------
# scenario handling
# --------------------------------------------------------------------------


class Scenario:
    def __init__(self, path, variables):
        with open(path, encoding="utf-8") as f:
            self.data = json.load(f)
        self.vars = dict(variables)
        self.prompts = self.data.get("prompts", [])
        self.side = self.data.get("side") or [{"content": [{"type": "text", "text": "OK"}]}]
        self.after_end = self.data.get("after_end") or {"content": [{"type": "text", "text": "Done."}]}

    def subst(self, value):
        if isinstance(value, str):
            def rep(m):
                key = m.group(1)
                return str(self.vars.get(key, m.group(0)))
            out = re.sub(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})", rep, value)
            return out.replace("{{", "{").replace("}}", "}")
        if isinstance(value, list):
            return [self.subst(v) for v in value]
        if isinstance(value, dict):
            return {k: self.subst(v) for k, v in value.items()}
        return value

    def prompt_matches(self, prompt, text):
        needle = self.subst(prompt.get("match") or prompt.get("text") or "")
        return bool(needle) and needle in text

    def choose(self, turns, tool_names, schema=None):
        """Return (label, response_dict, resolved_blocks)."""
        if schema is not None:  # structured side request (router, next-speaker check, ...)
            label, rule, blocks = self._side(turns, "json", only_matching=True)
            if rule:
                return label, rule, blocks
            return "side(json-schema)", {}, [{"type": "text", "text": json.dumps(synth_from_schema(schema))}]
        # locate the last user turn that carries a scenario prompt
        for idx in range(len(turns) - 1, -1, -1):
            role, text = turns[idx]
            if role != "user":
                continue
            for p_i, prompt in enumerate(self.prompts):
                if self.prompt_matches(prompt, text):
                    tail = turns[idx + 1:]
                    if any(r == "user" for r, _ in tail):
                        return self._side(turns, "user-turn-after-prompt")
                    runs = 0
                    prev = None
                    for r, _ in tail:
                        if r == "assistant" and prev != "assistant":
                            runs += 1
                        prev = r
                    # responses marked "optional" are dropped when none of their
                    # tools is offered by this agent (tool lists are per session)
                    responses = [r for r in prompt.get("responses", [])
                                 if not (r.get("optional") and self.resolve(r, tool_names) is None)]
                    if runs < len(responses):
                        resp = responses[runs]
                        label = "prompt%d/response%d" % (p_i, runs)
                    else:
                        resp = self.after_end
                        label = "prompt%d/after_end" % p_i
                    blocks = self.resolve(resp, tool_names)
                    if blocks is None:
                        return self._side(turns, label + ":no-matching-tool")
                    return label, resp, blocks
            break  # the latest user turn is not a scenario prompt
        return self._side(turns, "no-prompt")

    def _side(self, turns, why, only_matching=False):
        last_user = ""
        for role, text in reversed(turns):
            if role == "user":
                last_user = text
                break
        for rule in self.side:
            pat = rule.get("match")
            if pat is None and only_matching:
                continue
            if pat is None or re.search(pat, last_user, re.S):
                blocks = self.resolve(rule, None) or [{"type": "text", "text": "OK"}]
                return "side(%s)" % why, rule, blocks
        if only_matching:
            return None, None, None
        return "side(%s)" % why, {}, [{"type": "text", "text": "OK"}]

    def resolve(self, resp, tool_names):
        """Expand tool_call options against the request's tool list."""
        out = []
        for block in resp.get("content", []):
            block = self.subst(block)
            if block.get("type") == "tool_call":
                chosen = None
                for opt in block.get("options", [block] if "name" in block else []):
                    if tool_names is None:
                        chosen = opt
                        break
                    if opt["name"] not in tool_names:
                        continue
                    # optional guards to tell apart agents that share a tool name
                    if any(t not in tool_names for t in opt.get("if_tools", [])):
                        continue
                    if any(t in tool_names for t in opt.get("unless_tools", [])):
                        continue
                    chosen = opt
                    break
                if chosen is None:
                    return None
                out.append({"type": "tool_call", "name": chosen["name"],
                            "input": chosen.get("input"), "raw": chosen.get("raw")})
            else:
                out.append(block)
        return out


# --------------------------------------------------------------------------
# request normalisation: -> list of (role, text), set of tool names
# --------------------------------------------------------------------------


def _text_of(content):
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, str):
                parts.append(c)
            elif isinstance(c, dict):
                for key in ("text", "input_text", "output_text"):
                    if isinstance(c.get(key), str):
                        parts.append(c[key])
                if c.get("type") == "tool_result":
                    parts.append(_text_of(c.get("content")))
        return "\n".join(parts)
    if isinstance(content, dict):
        return _text_of([content])
    return str(content)


def normalise_anthropic(body):
    turns = []
    for m in body.get("messages", []):
        content = m.get("content")
        if m.get("role") == "system":  # newer Claude Code sends mid-conversation system turns
            continue
        if m.get("role") == "assistant":
            turns.append(("assistant", _text_of(content)))
        else:
            has_result = isinstance(content, list) and any(
                isinstance(c, dict) and c.get("type") == "tool_result" for c in content)
            turns.append(("tool" if has_result else "user", _text_of(content)))
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    return turns, tools


def normalise_chat(body):
    turns = []
    for m in body.get("messages", []):
        role = m.get("role")
        if role in ("system", "developer"):
            continue
        if role == "assistant":
            turns.append(("assistant", _text_of(m.get("content"))))
        elif role in ("tool", "function"):
            turns.append(("tool", _text_of(m.get("content"))))
        else:
            turns.append(("user", _text_of(m.get("content"))))
    tools = set()
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            fn = t.get("function") or {}
            tools.add(fn.get("name") or t.get("name"))
    return turns, tools


def normalise_responses(body):
    turns = []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for it in items or []:
        typ = it.get("type", "message")
        if typ == "message":
            role = it.get("role")
            if role in ("system", "developer"):
                continue
            turns.append(("assistant" if role == "assistant" else "user", _text_of(it.get("content"))))
        elif typ.endswith("_output"):
            turns.append(("tool", _text_of(it.get("output"))))
        else:  # reasoning, function_call, custom_tool_call, local_shell_call, ...
            turns.append(("assistant", ""))
    tools = set()
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            tools.add(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    return turns, tools


def normalise_gemini(body):
    turns = []
    for c in body.get("contents", []):
        parts = c.get("parts") or []
        if c.get("role") == "model":
            turns.append(("assistant", "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))))
        else:
            if any("functionResponse" in p for p in parts if isinstance(p, dict)):
                turns.append(("tool", ""))
            else:
                turns.append(("user", "\n".join(p.get("text", "") for p in parts if isinstance(p, dict))))
    tools = set()
    for t in body.get("tools") or []:
        for fd in (t.get("functionDeclarations") or t.get("function_declarations") or []):
            tools.add(fd.get("name"))
    return turns, tools


# --------------------------------------------------------------------------
# output encoders
# --------------------------------------------------------------------------


def chunks(text, size):
    """Split text into pieces of about `size` characters, on word boundaries."""
    if not text:
        return []
    out, cur = [], ""
    for word in re.findall(r"\S+\s*|\s+", text):
        cur += word
        if len(cur) >= size:
            out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def new_id(prefix):
    return prefix + uuid.uuid4().hex[:24]


def synth_from_schema(schema, depth=0):
    """A small value that satisfies a JSON schema (Gemini or OpenAPI flavour)."""
    if not isinstance(schema, dict) or depth > 8:
        return "mock"
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return synth_from_schema(schema[key][0], depth + 1)
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if str(t).lower() != "null"), "string")
    typ = str(typ or ("object" if "properties" in schema else "string")).lower()
    if typ == "object":
        props = schema.get("properties") or {}
        return {k: synth_from_schema(v, depth + 1) for k, v in props.items()}
    if typ == "array":
        n = int(schema.get("minItems") or 0)
        return [synth_from_schema(schema.get("items") or {}, depth + 1) for _ in range(n)]
    if typ in ("integer", "number"):
        return schema.get("minimum", 1)
    if typ == "boolean":
        return False
    return "mock"


def json_schema_of(body):
    """The JSON schema a request demands for its answer, or None."""
    gc = body.get("generationConfig") or {}
    if gc.get("responseJsonSchema") or gc.get("responseSchema"):
        return gc.get("responseJsonSchema") or gc.get("responseSchema")
    if gc.get("responseMimeType") == "application/json":
        return {}
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return (rf.get("json_schema") or {}).get("schema") or {}
    if rf.get("type") == "json_object":
        return {}
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        return fmt.get("schema") or {}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-llm/1"
    delay = None  # seconds between SSE events for this answer (the rule's "delay")

    # --- plumbing -------------------------------------------------------
    def log_message(self, fmt, *args):  # silence default stderr logging
        if self.server.verbose:
            sys.stderr.write("mock_llm: " + (fmt % args) + "\n")

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Content-Encoding", "").lower() in ("gzip",):
            import gzip
            raw = gzip.decompress(raw)
        elif self.headers.get("Content-Encoding", "").lower() in ("zstd",):
            raise ValueError("zstd request bodies are not supported")
        try:
            return json.loads(raw.decode("utf-8")) if raw else {}
        except Exception:
            return {"_raw": raw.decode("utf-8", "replace")}

    def _log(self, body, label, blocks):
        self.server.record({
            "t": round(time.time(), 3), "method": self.command, "path": self.path,
            "choice": label, "blocks": blocks,
            "headers": {k: v for k, v in self.headers.items()
                        if k.lower() in ("user-agent", "anthropic-beta", "anthropic-version",
                                         "x-app", "openai-beta", "content-type")},
            "body": body if self.server.log_bodies else None,
        })

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _sse(self, event, obj):
        payload = ""
        if event:
            payload += "event: %s\n" % event
        payload += "data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))
        self.wfile.write(payload.encode())
        self.wfile.flush()
        delay = self.delay if self.delay is not None else self.server.delay
        if delay:
            time.sleep(delay)

    # --- proxy guard -----------------------------------------------------------
    # Tests set HTTP(S)_PROXY to this server (with NO_PROXY=127.0.0.1,localhost)
    # so that any request an agent makes to a non-loopback host ends here and is
    # refused, instead of leaving the machine. Each refusal is logged.
    def _refuse_proxy(self):
        self.server.record({"t": round(time.time(), 3), "method": self.command, "path": self.path,
                            "choice": "proxy-refused", "blocks": None, "headers": {}, "body": None})
        self.send_response(403, "Forbidden by mock_llm (offline test)")
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_CONNECT(self):
        self._refuse_proxy()

    def _is_proxy_request(self):
        return self.path.startswith("http://") or self.path.startswith("https://")

    # --- routing -----------------------------------------------------------
    def do_HEAD(self):
        if self._is_proxy_request():
            return self._refuse_proxy()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        if self._is_proxy_request():
            return self._refuse_proxy()
        path = self.path.split("?")[0]
        self._log(None, "GET", None)
        if path.endswith("/models"):
            self._json(200, {"object": "list", "data": [
                {"id": self.server.model_name, "object": "model", "created": 0, "owned_by": "mock",
                 "type": "model", "display_name": "Mock Model"}],
                "models": [{"slug": self.server.model_name, "name": "models/" + self.server.model_name}]})
        else:
            self._json(404, {"error": {"type": "not_found", "message": "mock: no GET " + path}})

    def do_POST(self):
        if self._is_proxy_request():
            self._read_body()
            return self._refuse_proxy()
        path = self.path.split("?")[0]
        try:
            body = self._read_body()
        except Exception as e:  # pragma: no cover
            self._json(400, {"error": {"message": str(e)}})
            return
        sc = self.server.scenario
        try:
            if path.endswith("/messages/count_tokens"):
                self._log(body, "count_tokens", None)
                self._json(200, {"input_tokens": 1000})
            elif path.endswith("/messages"):
                turns, tools = normalise_anthropic(body)
                label, rule, blocks = sc.choose(turns, tools, json_schema_of(body))
                self._log(body, label, blocks)
                self.delay = (rule or {}).get("delay")
                self.anthropic(body, blocks)
            elif path.endswith("/chat/completions"):
                turns, tools = normalise_chat(body)
                label, rule, blocks = sc.choose(turns, tools, json_schema_of(body))
                self._log(body, label, blocks)
                self.delay = (rule or {}).get("delay")
                self.chat(body, blocks)
            elif path.endswith("/responses"):
                turns, tools = normalise_responses(body)
                label, rule, blocks = sc.choose(turns, tools, json_schema_of(body))
                self._log(body, label, blocks)
                self.delay = (rule or {}).get("delay")
                self.openai_responses(body, blocks, tools_of(body))
            elif ":countTokens" in path:
                self._log(body, "countTokens", None)
                self._json(200, {"totalTokens": 1000})
            elif ":streamGenerateContent" in path or ":generateContent" in path:
                turns, tools = normalise_gemini(body)
                label, rule, blocks = sc.choose(turns, tools, json_schema_of(body))
                self._log(body, label, blocks)
                self.delay = (rule or {}).get("delay")
                self.gemini(blocks, stream=":streamGenerateContent" in path)
            else:
                self._log(body, "unknown-endpoint", None)
                self._json(404, {"error": {"type": "not_found", "message": "mock: no POST " + path}})
        except (BrokenPipeError, ConnectionResetError):
            pass

    # --- Anthropic -----------------------------------------------------------
    def anthropic(self, body, blocks):
        model = body.get("model") or self.server.model_name
        msg_id = new_id("msg_mock")
        content = []
        stop = "end_turn"
        for b in blocks:
            if b["type"] == "text":
                content.append({"type": "text", "text": b["text"]})
            elif b["type"] == "thinking":
                content.append({"type": "thinking", "thinking": b["text"], "signature": "mock-signature"})
            elif b["type"] == "tool_call":
                content.append({"type": "tool_use", "id": new_id("toolu_mock"), "name": b["name"],
                                "input": b.get("input") or {}})
                stop = "tool_use"
        usage = {"input_tokens": 1000, "output_tokens": 50, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        if not body.get("stream"):
            self._json(200, {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                             "content": content, "stop_reason": stop, "stop_sequence": None,
                             "usage": usage})
            return
        self._sse_start()
        self._sse("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": dict(usage, output_tokens=1)}})
        self._sse("ping", {"type": "ping"})
        for i, c in enumerate(content):
            if c["type"] == "text":
                self._sse("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": {"type": "text", "text": ""}})
                for piece in chunks(c["text"], self.server.chunk):
                    self._sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "text_delta", "text": piece}})
            elif c["type"] == "thinking":
                self._sse("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": {"type": "thinking", "thinking": "",
                                                                    "signature": ""}})
                for piece in chunks(c["thinking"], self.server.chunk):
                    self._sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "thinking_delta", "thinking": piece}})
                self._sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                  "delta": {"type": "signature_delta",
                                                            "signature": c["signature"]}})
            elif c["type"] == "tool_use":
                self._sse("content_block_start", {"type": "content_block_start", "index": i,
                                                  "content_block": {"type": "tool_use", "id": c["id"],
                                                                    "name": c["name"], "input": {}}})
                args = json.dumps(c["input"])
                for piece in [args[j:j + 40] for j in range(0, len(args), 40)]:
                    self._sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                      "delta": {"type": "input_json_delta",
                                                                "partial_json": piece}})
            self._sse("content_block_stop", {"type": "content_block_stop", "index": i})
        self._sse("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": stop, "stop_sequence": None},
                                    "usage": {"output_tokens": 50}})
        self._sse("message_stop", {"type": "message_stop"})

    # --- OpenAI chat completions -----------------------------------------------
    def chat(self, body, blocks):
        model = body.get("model") or self.server.model_name
        cid = new_id("chatcmpl-mock")
        created = int(time.time())
        text = "".join(b["text"] for b in blocks if b["type"] == "text")
        reasoning = "".join(b["text"] for b in blocks if b["type"] == "thinking")
        calls = [b for b in blocks if b["type"] == "tool_call"]
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050}
        tool_calls = [{"id": new_id("call_mock"), "type": "function",
                       "function": {"name": c["name"],
                                    "arguments": c["raw"] if c.get("raw") is not None else json.dumps(c.get("input") or {})}}
                      for c in calls]
        if not body.get("stream"):
            msg = {"role": "assistant", "content": text or None}
            if reasoning:
                msg["reasoning_content"] = reasoning
            if tool_calls:
                msg["tool_calls"] = tool_calls
            self._json(200, {"id": cid, "object": "chat.completion", "created": created, "model": model,
                             "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                             "usage": usage})
            return
        self._sse_start()

        def chunk(delta, finish_reason=None, **extra):
            obj = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            obj.update(extra)
            self._sse(None, obj)

        chunk({"role": "assistant", "content": ""})
        for piece in chunks(reasoning, self.server.chunk):
            chunk({"reasoning_content": piece})
        for piece in chunks(text, self.server.chunk):
            chunk({"content": piece})
        for i, tc in enumerate(tool_calls):
            chunk({"tool_calls": [{"index": i, "id": tc["id"], "type": "function",
                                   "function": {"name": tc["function"]["name"], "arguments": ""}}]})
            args = tc["function"]["arguments"]
            for j in range(0, len(args), 40):
                chunk({"tool_calls": [{"index": i, "function": {"arguments": args[j:j + 40]}}]})
        chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            self._sse(None, {"id": cid, "object": "chat.completion.chunk", "created": created,
                             "model": model, "choices": [], "usage": usage})
        self._sse(None, "[DONE]")

    # --- OpenAI Responses ------------------------------------------------------
    def openai_responses(self, body, blocks, tool_types):
        model = body.get("model") or self.server.model_name
        rid = new_id("resp_mock")
        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
                "status": "in_progress", "output": []}
        usage = {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 1050}
        items = []
        for b in blocks:
            if b["type"] == "thinking":
                items.append({"type": "reasoning", "id": new_id("rs_mock"),
                              "summary": [{"type": "summary_text", "text": b["text"]}]})
            elif b["type"] == "text":
                items.append({"type": "message", "id": new_id("msg_mock"), "role": "assistant",
                              "status": "completed",
                              "content": [{"type": "output_text", "text": b["text"], "annotations": []}]})
            elif b["type"] == "tool_call":
                if tool_types.get(b["name"]) == "custom" or b.get("raw") is not None and b.get("input") is None:
                    items.append({"type": "custom_tool_call", "id": new_id("ctc_mock"),
                                  "call_id": new_id("call_mock"), "name": b["name"],
                                  "input": b.get("raw") or "", "status": "completed"})
                else:
                    items.append({"type": "function_call", "id": new_id("fc_mock"),
                                  "call_id": new_id("call_mock"), "name": b["name"],
                                  "arguments": json.dumps(b.get("input") or {}), "status": "completed"})
        if not body.get("stream", True):
            done = dict(base, status="completed", output=items, usage=usage)
            self._json(200, done)
            return
        self._sse_start()
        seq = [0]

        def ev(typ, **fields):
            obj = {"type": typ, "sequence_number": seq[0]}
            obj.update(fields)
            seq[0] += 1
            self._sse(typ, obj)

        ev("response.created", response=base)
        ev("response.in_progress", response=base)
        for oi, it in enumerate(items):
            if it["type"] == "reasoning":
                ev("response.output_item.added", output_index=oi, item=dict(it, summary=[]))
                text = it["summary"][0]["text"]
                ev("response.reasoning_summary_part.added", item_id=it["id"], output_index=oi,
                   summary_index=0, part={"type": "summary_text", "text": ""})
                for piece in chunks(text, self.server.chunk):
                    ev("response.reasoning_summary_text.delta", item_id=it["id"], output_index=oi,
                       summary_index=0, delta=piece)
                ev("response.reasoning_summary_text.done", item_id=it["id"], output_index=oi,
                   summary_index=0, text=text)
                ev("response.reasoning_summary_part.done", item_id=it["id"], output_index=oi,
                   summary_index=0, part={"type": "summary_text", "text": text})
            elif it["type"] == "message":
                text = it["content"][0]["text"]
                ev("response.output_item.added", output_index=oi,
                   item=dict(it, status="in_progress", content=[]))
                ev("response.content_part.added", item_id=it["id"], output_index=oi, content_index=0,
                   part={"type": "output_text", "text": "", "annotations": []})
                for piece in chunks(text, self.server.chunk):
                    ev("response.output_text.delta", item_id=it["id"], output_index=oi, content_index=0,
                       delta=piece)
                ev("response.output_text.done", item_id=it["id"], output_index=oi, content_index=0,
                   text=text)
                ev("response.content_part.done", item_id=it["id"], output_index=oi, content_index=0,
                   part=it["content"][0])
            elif it["type"] == "function_call":
                ev("response.output_item.added", output_index=oi, item=dict(it, arguments="",
                                                                              status="in_progress"))
                args = it["arguments"]
                for j in range(0, len(args), 40):
                    ev("response.function_call_arguments.delta", item_id=it["id"], output_index=oi,
                       delta=args[j:j + 40])
                ev("response.function_call_arguments.done", item_id=it["id"], output_index=oi,
                   arguments=args)
            elif it["type"] == "custom_tool_call":
                ev("response.output_item.added", output_index=oi, item=dict(it, input="",
                                                                              status="in_progress"))
                ev("response.custom_tool_call_input.delta", item_id=it["id"], output_index=oi,
                   delta=it["input"])
                ev("response.custom_tool_call_input.done", item_id=it["id"], output_index=oi,
                   input=it["input"])
            ev("response.output_item.done", output_index=oi, item=it)
        ev("response.completed", response=dict(base, status="completed", output=items, usage=usage))

    # --- Gemini ------------------------------------------------------------------
    def gemini(self, blocks, stream):
        usage = {"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1050}
        parts_seq = []
        for b in blocks:
            if b["type"] == "thinking":
                parts_seq += [{"text": p, "thought": True} for p in chunks(b["text"], self.server.chunk)]
            elif b["type"] == "text":
                parts_seq += [{"text": p} for p in chunks(b["text"], self.server.chunk)]
            elif b["type"] == "tool_call":
                parts_seq.append({"functionCall": {"name": b["name"], "args": b.get("input") or {}}})
        if not stream:
            merged = []
            for p in parts_seq:
                if merged and "text" in p and "text" in merged[-1] and \
                        p.get("thought") == merged[-1].get("thought"):
                    merged[-1] = dict(merged[-1], text=merged[-1]["text"] + p["text"])
                else:
                    merged.append(p)
            self._json(200, {"candidates": [{"content": {"role": "model", "parts": merged},
                                             "finishReason": "STOP", "index": 0}],
                             "usageMetadata": usage, "modelVersion": self.server.model_name})
            return
        self._sse_start()
        for i, p in enumerate(parts_seq):
            cand = {"content": {"role": "model", "parts": [p]}, "index": 0}
            obj = {"candidates": [cand], "modelVersion": self.server.model_name}
            if i == len(parts_seq) - 1:
                cand["finishReason"] = "STOP"
                obj["usageMetadata"] = usage
            self._sse(None, obj)
        if not parts_seq:
            self._sse(None, {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                                             "finishReason": "STOP", "index": 0}],
                             "usageMetadata": usage})


def tools_of(body):
    """name -> tool type ('function', 'custom', ...) for a Responses API request."""
    out = {}
    for t in body.get("tools") or []:
        if isinstance(t, dict):
            name = t.get("name") or (t.get("function") or {}).get("name") or t.get("type")
            out[name] = t.get("type")
    return out


class MockServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, scenario, args):
        super().__init__(addr, Handler)
        self.scenario = scenario
        self.delay = args.delay
        self.chunk = args.chunk
        self.verbose = args.verbose
        self.model_name = args.model
        self.log_bodies = not args.no_bodies
        self._log_lock = threading.Lock()
        self._log_file = open(args.log, "a", encoding="utf-8") if args.log else None

    def record(self, obj):
        line = json.dumps(obj)
        with self._log_lock:
            if self._log_file:
                self._log_file.write(line + "\n")
                self._log_file.flush()
            if self.verbose:
                sys.stderr.write("mock_llm: %s %s -> %s\n" % (obj["method"], obj["path"], obj["choice"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--log", help="append one JSON line per request here")
    ap.add_argument("--no-bodies", action="store_true", help="do not log request bodies")
    ap.add_argument("--delay", type=float, default=0.01, help="seconds between SSE events")
    ap.add_argument("--chunk", type=int, default=12, help="approx. characters per streamed text delta")
    ap.add_argument("--model", default="mock-model")
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        ap.error("this mock only listens on loopback")
    variables = {}
    if os.environ.get("MOCK_CWD"):
        variables["cwd"] = os.environ["MOCK_CWD"]
    for kv in args.var:
        k, _, v = kv.partition("=")
        variables[k] = v
    scenario = Scenario(args.scenario, variables)
    server = MockServer((args.host, args.port), scenario, args)
    print("MOCK_LLM_LISTENING http://%s:%d" % (args.host, server.server_address[1]), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

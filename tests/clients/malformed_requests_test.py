"""Hundreds of malformed requests against `mtplx serve`: bad JSON, wrong types, huge numbers,
unknown roles, empty messages, invalid UTF-8, oversized and truncated bodies, slow clients, bad
keys. Each must get a 4xx whose body has the error shape of its API (OpenAI or Anthropic), and
the server must stay up and keep answering.

Usage: python malformed_requests_test.py PATH/TO/mtplx   (standard library only)
"""
import http.client
import json
import signal
import socket
import sys
import time

from harness import Server, check, mtplx_binary, wait_for

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
MESSAGES = "/v1/messages"
COUNT = "/v1/messages/count_tokens"

USER = [{"role": "user", "content": "hi"}]
GOOD = {
    CHAT: {"model": "m", "messages": USER, "max_tokens": 2},
    COMPLETIONS: {"model": "m", "prompt": "hi", "max_tokens": 2},
    MESSAGES: {"model": "m", "messages": USER, "max_tokens": 2},
    COUNT: {"model": "m", "messages": USER},
    "/tokenize": {"prompt": "hi"},
    "/detokenize": {"tokens": [1, 2]},
}

# Values of the wrong type or out of range, for fields of each kind.
NOT_NUMBERS = ["hot", [], {}, True, "1e400"]
BAD_BY_FIELD = {
    CHAT: {
        "messages": ["hi", 5, {}, [], [5], ["hi"], [{}], [{"role": 5, "content": "x"}],
                     [{"role": "wizard", "content": "x"}], [{"role": "user"}],
                     [{"role": "user", "content": 5}], [{"role": "user", "content": {"a": 1}}],
                     [{"role": "user", "content": [{"type": "audio", "data": "x"}]}],
                     [{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}],
                     [{"role": "user", "content": [{"text": "no type"}]}],
                     [{"role": "assistant", "content": "x", "tool_calls": "nope"}],
                     [{"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}],
                     [{"role": "user", "content": [{"type": "text", "text": 5}]}]],
        "temperature": NOT_NUMBERS + [-1, 2.5, 1e308, -1e308],
        "top_p": NOT_NUMBERS + [-0.1, 1.5],
        "top_k": ["x", 1.5, -5, 1e12],
        "min_p": [2, -1, "x"],
        "presence_penalty": [3, -3, "x"],
        "frequency_penalty": [3, -3, []],
        "max_tokens": [-1, 1.5, "10", 1e20, 2**63, [], -2**63],
        "max_completion_tokens": [-5, "x"],
        "n": [2, 0, "1", 1.5],
        "stop": [5, [1, 2], ["a"] * 100, {"a": 1}],
        "stream": ["yes", 1, []],
        "stream_options": ["x", 5, {"include_usage": "yes"}],
        "seed": ["x", 1.5, 1e30],
        "logprobs": ["x", 5],
        "top_logprobs": [99, -1, "x"],
        "tools": ["x", 5, [5], [{}], [{"type": "function"}], [{"type": "function", "function": {}}],
                  [{"type": "function", "function": {"name": 5}}],
                  [{"type": "function", "function": {"name": "f", "parameters": 5}}]],
        "tool_choice": [5, "sometimes", {"function": {}}, {"type": "function"}, "required",
                        {"type": "function", "function": {"name": "missing"}}],
        "response_format": ["json", {"type": "yaml"}, {"type": "json_schema"},
                            {"type": "json_schema", "json_schema": {"schema": 5}},
                            {"type": "json_schema", "json_schema": {"schema": {"type": "x"}}}],
        "grammar": [5, "root ::= missing", "root ::= [a-"],
        "parallel_tool_calls": ["yes", 1],
        "enable_thinking": ["yes", 1],
        "chat_template_kwargs": ["x", {"enable_thinking": "yes"}],
        "generation_mode": ["fast", 5],
        "model": [5, [], {}],
    },
    COMPLETIONS: {
        "prompt": [5, {}, [["a"], ["b"]], ["a", "b"], [1.5], [-1], [10**9], [[1], [2]], True],
        "max_tokens": [-1, "x", 1e20],
        "logprobs": [99, -1, "x"],
        "echo": ["yes"],
        "suffix": ["tail"],
        "temperature": ["x", 9],
    },
    MESSAGES: {
        "messages": ["hi", 5, [], [5], [{"role": "tool", "content": "x"}],
                     [{"role": "user"}], [{"role": "user", "content": 5}],
                     [{"role": "user", "content": [{"type": "video"}]}],
                     [{"role": "user", "content": [{"type": "text"}]}],
                     [{"role": "user", "content": [{"type": "image", "source": {}}]}],
                     [{"role": "assistant", "content": [{"type": "tool_result",
                                                         "tool_use_id": "x"}]}],
                     [{"role": "user", "content": [{"type": "tool_use", "id": "x", "name": "f",
                                                    "input": {}}]}],
                     [{"role": "user", "content": [{"type": "tool_result"}]}]],
        "max_tokens": [0, -1, "x", 1.5, 1e20],
        "system": [5, [5], [{"type": "text"}], {"a": 1}],
        "temperature": ["x", 3, -1],
        "top_p": [2, "x"],
        "top_k": ["x", 1.5],
        "stop_sequences": [5, [5], {}],
        "stream": ["yes"],
        "tools": ["x", [5], [{"input_schema": {}}], [{"name": "f", "input_schema": 5}]],
        "tool_choice": ["auto", {"type": "sometimes"}, {"type": "tool"},
                        {"type": "tool", "name": "missing"}, {"type": "any"}],
        "thinking": ["on", {"type": "maybe"}],
        "metadata": ["x", 5],
    },
    COUNT: {"messages": [[], "x", [{"role": "user", "content": 5}]], "system": [5]},
    "/tokenize": {"prompt": [5, []], "messages": ["x", []]},
    "/detokenize": {"tokens": ["x", [-1], [10**9], [1.5], 5]},
}

RAW_BODIES = [b"", b" ", b"{", b"}", b"[", b"{\"messages\": [", b"null", b"5", b"\"text\"", b"[]",
              b"[1, 2]", b"true", b"{\"a\": }", b"{'single': 1}", b"{\"a\": 1,}", b"NaN",
              b"{\"temperature\": NaN}", b"{\"temperature\": Infinity}", b"{\"x\": 1e400}",
              b"\xff\xfe{}", b"{\"messages\": \"\xc3\x28\"}", b"{\"a\": \"\xed\xa0\x80\"}",
              b"{\"a\": \"\\ud800\"}", b"[" * 5000 + b"]" * 5000, b"{\"a\":" * 3000,
              b"\x00\x01\x02", b"<xml/>", b"a=1&b=2", b"{\"messages\": [{\"role\": \"user\", "
              b"\"content\": \"hi\"}]} trailing"]


def anthropic_path(path):
    return path.startswith(MESSAGES)


def expect_error_shape(path, status, body, what):
    check(400 <= status < 500, f"{what}: HTTP {status} {body[:300]!r}")
    try:
        parsed = json.loads(body)
    except ValueError:
        raise AssertionError(f"{what}: the error body is not JSON: {body[:300]!r}")
    if anthropic_path(path):
        check(parsed.get("type") == "error" and isinstance(parsed.get("error"), dict) and
              isinstance(parsed["error"].get("type"), str) and
              isinstance(parsed["error"].get("message"), str) and parsed["error"]["message"],
              f"{what}: not Anthropic's error shape: {parsed}")
    else:
        err = parsed.get("error")
        check(isinstance(err, dict) and isinstance(err.get("message"), str) and err["message"]
              and isinstance(err.get("type"), str) and "code" in err and "param" in err,
              f"{what}: not OpenAI's error shape: {parsed}")


def post(server, path, body: bytes, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                   **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def cases():
    for path, fields in BAD_BY_FIELD.items():
        for field, values in fields.items():
            for value in values:
                body = dict(GOOD[path])
                body[field] = value
                yield path, json.dumps(body).encode(), f"{path} {field}={json.dumps(value)[:60]}"
        without = {k: v for k, v in GOOD[path].items() if k in ("model", "max_tokens")}
        if path not in ("/tokenize",):
            yield path, json.dumps(without).encode(), f"{path} without its main field"
    for path in GOOD:
        for raw in RAW_BODIES:
            yield path, raw, f"{path} raw body {raw[:40]!r}"
    long_prompt = "word " * 40000
    yield CHAT, json.dumps({"messages": [{"role": "user", "content": long_prompt}]}).encode(), \
        "chat prompt beyond the context window"
    yield MESSAGES, json.dumps({"max_tokens": 4, "messages": [{"role": "user",
                                                               "content": long_prompt}]}).encode(), \
        "messages prompt beyond the context window"


def slow_and_truncated_clients(server):
    """A client that stops mid-body, one that sends nothing after the headers, one that closes
    at once: the server drops them (read timeout) and keeps serving."""
    socks = []
    for payload in (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
                    b"Content-Type: application/json\r\n\r\n{\"messages\": [",
                    b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n",
                    b"GARBAGE\r\n\r\n"):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(payload)
        socks.append(s)
    closed = socket.create_connection(("127.0.0.1", server.port))
    closed.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{\"a\"")
    closed.close()
    # While they hang, the server still answers others.
    status, _ = post(server, "/tokenize", b'{"prompt": "still up"}')
    check(status == 200, f"/tokenize during slow clients: {status}")
    time.sleep(3.5)  # past the read timeout (--read-timeout 2)
    for s in socks:
        s.settimeout(5)
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if data:  # an answer to a malformed request must be a 4xx
            check(data.startswith(b"HTTP/1.1 4"), data[:200])
        s.close()


def oversized_body(server):
    body = json.dumps({"messages": [{"role": "user", "content": "x" * (2 << 20)}]}).encode()
    for path in (CHAT, MESSAGES):
        status, data = post(server, path, body)
        check(status == 413, f"{path}: oversized body gave {status}")
        expect_error_shape(path, status, data, f"{path} oversized body")


def wrong_methods_and_paths(server):
    count = 0
    for method, path in (("GET", CHAT), ("GET", MESSAGES), ("PUT", CHAT), ("DELETE", "/health"),
                         ("GET", "/v2/chat"), ("POST", "/v1/models"), ("GET", "/nope"),
                         ("POST", "/v1/messages/nope")):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request(method, path, body=b"{}" if method != "GET" else None)
        response = conn.getresponse()
        expect_error_shape(path, response.status, response.read(), f"{method} {path}")
        conn.close()
        count += 1
    return count


def open_request(server, path, body):
    """Sends a request on a raw socket and returns the socket, unread."""
    data = json.dumps(body).encode()
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return s


def disconnects_cancel_and_a_full_queue_answers_503(mtplx):
    """A client that goes away stops its generation (running or queued); with every slot busy and
    the queue full, a request gets 503 with Retry-After in its API's shape."""
    long_reply = {"messages": USER, "max_tokens": 30000, "ignore_eos": True}
    with Server(mtplx, "--parallel", "2", "--max-queue", "1") as server:
        streams = []
        for _ in range(2):  # both slots
            running = open_request(server, CHAT, {**long_reply, "stream": True})
            running.settimeout(60)
            received = b""
            while b"data: {" not in received:
                chunk = running.recv(65536)
                check(chunk, f"the streamed reply did not start: {received[:300]!r}")
                received += chunk
            streams.append(running)
        wait_for(lambda: server.health()["queue"]["running"] == 2, 30, "two requests not running")
        queued = open_request(server, MESSAGES, {**long_reply, "stream": False})
        wait_for(lambda: server.health()["queue"]["waiting"] == 1, 30, "the request was not queued")
        for path, body in ((CHAT, GOOD[CHAT]), (MESSAGES, GOOD[MESSAGES])):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            conn.request("POST", path, body=json.dumps(body).encode())
            response = conn.getresponse()
            data = response.read()
            check(response.status == 503 and response.getheader("Retry-After") == "1",
                  f"{path}: {response.status} {response.getheaders()}")
            expect_error_shape_5xx(path, data)
        for running in streams:
            running.close()
        queued.close()
        # All stop: the running ones at their next step, the queued one before it starts.
        idle = {"busy": False, "done": 3, "waiting": 0, "running": 0}
        wait_for(lambda: {k: server.health()["queue"][k] for k in idle} == idle, 30,
                 f"the requests of departed clients kept running: {server.health()['queue']}")
        check("completion=30000" not in server.logs(), "a departed client's reply ran to the end")
        status, _ = post(server, CHAT, json.dumps(GOOD[CHAT]).encode())
        check(status == 200, f"after the disconnects: {status}")


def sigterm_drains_in_flight_requests(mtplx):
    """SIGTERM: new requests get 503 while the running one streams to its end; then the server
    exits 0."""
    with Server(mtplx, "--parallel", "2", "--no-mtp") as server:
        running = open_request(server, CHAT, {"messages": USER, "max_tokens": 4000,
                                              "ignore_eos": True, "stream": True})
        running.settimeout(120)
        received = running.recv(65536)
        while b"data: {" not in received:
            received += running.recv(65536)
        server.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: server.health()["status"] == "draining", 30, "not draining")
        status, data = post(server, CHAT, json.dumps(GOOD[CHAT]).encode())
        check(status == 503, f"a new request while draining got {status}")
        while b"data: [DONE]" not in received:
            chunk = running.recv(65536)
            check(chunk, "the running reply was cut off by the shutdown")
            received += chunk
        running.close()
        check(b'"finish_reason":"length"' in received, received[-400:])
        server.proc.wait(timeout=60)
        check(server.proc.returncode == 0, f"exit code {server.proc.returncode}")
        check("draining: 1 running" in server.logs(), server.logs()[-500:])


def insufficient_memory_answers_507(mtplx):
    """With a memory budget just above the loaded model, a prompt whose state cannot fit is
    refused with 507 insufficient_memory in both API shapes before any prefill, naming the need
    and the budget; short requests keep working and the server stays up."""
    with Server(mtplx) as probe:
        model_bytes = probe.health()["memory_plan"]["model_bytes"]
    budget_mib = model_bytes // (1 << 20) + 24
    long_text = "word " * 20000
    with Server(mtplx, "--memory-budget", f"{budget_mib}M", "--parallel", "1") as server:
        for path in (CHAT, MESSAGES):
            body = {**GOOD[path], "messages": [{"role": "user", "content": long_text}]}
            status, data = post(server, path, json.dumps(body).encode())
            check(status == 507, f"{path}: a prompt beyond the budget got {status}: {data[:300]!r}")
            parsed = json.loads(data)
            if anthropic_path(path):
                check(parsed["type"] == "error" and parsed["error"]["type"] == "api_error", parsed)
                message = parsed["error"]["message"]
            else:
                check(parsed["error"]["code"] == "insufficient_memory", parsed)
                message = parsed["error"]["message"]
            check("insufficient memory" in message and f"{budget_mib}.0 MiB" in message, message)
        for path in (CHAT, MESSAGES):
            status, data = post(server, path, json.dumps(GOOD[path]).encode())
            check(status == 200, f"{path}: a short request after the 507s got {status}")
        check(server.alive(), "the server died")


def expect_error_shape_5xx(path, body):
    parsed = json.loads(body)
    if anthropic_path(path):
        check(parsed["type"] == "error" and parsed["error"]["type"] == "overloaded_error", parsed)
    else:
        check(parsed["error"]["code"] == "overloaded" and parsed["error"]["message"], parsed)


def bad_keys(mtplx):
    count = 0
    with Server(mtplx, "--api-key", "secret-key") as server:
        for path in (CHAT, MESSAGES, "/v1/models"):
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"x-api-key": "secret-ke"},
                            {"Authorization": "secret-key"}, {"x-api-key": "secret-key-longer"}):
                body = json.dumps(GOOD.get(path, {})).encode()
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                conn.request("POST" if path != "/v1/models" else "GET", path,
                             body=body if path != "/v1/models" else None, headers=headers)
                response = conn.getresponse()
                data = response.read()
                check(response.status == 401, f"{path} {headers}: {response.status}")
                expect_error_shape(path, response.status, data, f"{path} key {headers}")
                count += 1
        ok, _ = post(server, CHAT, json.dumps(GOOD[CHAT]).encode(),
                     {"Authorization": "Bearer secret-key"})
        check(ok == 200, f"the right key was refused: {ok}")
        ok, _ = post(server, MESSAGES, json.dumps(GOOD[MESSAGES]).encode(),
                     {"x-api-key": "secret-key"})
        check(ok == 200, f"the right key was refused: {ok}")
    return count


def main():
    mtplx = mtplx_binary()
    total = 0
    failures = []
    with Server(mtplx, "--max-body-mib", "1", "--read-timeout", "2", "--max-tokens", "4") as server:
        for path, body, what in cases():
            total += 1
            try:
                status, data = post(server, path, body)
                expect_error_shape(path, status, data, what)
            except Exception as e:  # noqa: BLE001 - collect every failure
                failures.append(f"{what}: {e}")
            if not server.alive():
                failures.append(f"the server died after: {what}")
                break
        for check_fn in (oversized_body, slow_and_truncated_clients):
            try:
                check_fn(server)
                total += 1
            except Exception as e:  # noqa: BLE001
                failures.append(f"{check_fn.__name__}: {e}")
        try:
            total += wrong_methods_and_paths(server)
        except Exception as e:  # noqa: BLE001
            failures.append(f"wrong_methods_and_paths: {e}")
        # Still serving real requests after all that.
        status, data = post(server, CHAT, json.dumps(GOOD[CHAT]).encode())
        if status != 200 or not json.loads(data)["choices"]:
            failures.append(f"a good request after the malformed ones: {status} {data[:200]!r}")
        if not server.alive():
            failures.append("the server is not running at the end")
    try:
        total += bad_keys(mtplx)
    except Exception as e:  # noqa: BLE001
        failures.append(f"bad_keys: {e}")
    try:
        disconnects_cancel_and_a_full_queue_answers_503(mtplx)
        total += 2
    except Exception as e:  # noqa: BLE001
        failures.append(f"disconnects_cancel_and_a_full_queue_answers_503: {e}")
    try:
        sigterm_drains_in_flight_requests(mtplx)
        total += 1
    except Exception as e:  # noqa: BLE001
        failures.append(f"sigterm_drains_in_flight_requests: {e}")
    try:
        insufficient_memory_answers_507(mtplx)
        total += 2
    except Exception as e:  # noqa: BLE001
        failures.append(f"insufficient_memory_answers_507: {e}")
    for f in failures:
        print("FAIL", f)
    print(f"{total} malformed requests, {len(failures)} failures")
    check(total >= 200, f"only {total} cases")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

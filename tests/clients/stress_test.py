"""Concurrent load with clients that walk away: 8 clients x 50 requests (streaming or not, both
APIs, random lengths), a quarter of them disconnecting mid-reply. Every completed reply is well
formed, no request fails, every slot is free at the end, and the server exits 0 — under
AddressSanitizer and LeakSanitizer in CI (`.ci/run` runs it on the build-asan binary), so a leak or
a memory error fails it.

Only the Python standard library: runs with any python3.
Usage: stress_test.py PATH/TO/mtplx [--clients 8] [--requests 50]
"""
from __future__ import annotations

import argparse
import json
import random
import socket
import sys
import threading

from harness import Server, check, wait_for

PATHS = ("/v1/chat/completions", "/v1/messages")


def body(path, rng):
    content = rng.choice(["hi", "Write a sort function.", "Explain recursion. " * rng.randint(1, 30)])
    b = {"messages": [{"role": "user", "content": content}], "max_tokens": rng.randint(1, 48),
         "stream": rng.random() < 0.6, "temperature": rng.choice([0, 0.7]), "seed": rng.randint(0, 9)}
    if path == "/v1/messages":
        b["model"] = "any"
    return b


def send(port, path, payload):
    data = json.dumps(payload).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=300)
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Connection: close\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
    return s


def read_all(s):
    chunks = []
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


LOCK = threading.Lock()


def count(stats, key):
    with LOCK:
        stats[key] += 1


def client(port, seed, requests, stats, errors):
    rng = random.Random(seed)
    for _ in range(requests):
        path = rng.choice(PATHS)
        payload = body(path, rng)
        try:
            s = send(port, path, payload)
            if rng.random() < 0.25:
                s.recv(rng.choice([1, 200, 4096]))  # some of the reply, then gone
                s.close()
                count(stats, "disconnected")
                continue
            reply = read_all(s)
            s.close()
            head, _, rest = reply.partition(b"\r\n\r\n")
            status = head.split(b" ")[1]
            if status != b"200":
                errors.append(f"{path}: HTTP {status!r}: {rest[:300]!r}")
                continue
            if payload["stream"]:
                ending = b"[DONE]" if path == PATHS[0] else b"message_stop"
                if ending not in rest:
                    errors.append(f"{path}: a stream without its end: {rest[-300:]!r}")
            elif b'"usage"' not in rest:
                errors.append(f"{path}: no usage in {rest[:300]!r}")
            count(stats, "completed")
        except OSError as e:
            errors.append(f"{path}: {e}")


def load_with_disconnects(mtplx, clients, requests):
    with Server(mtplx, "--parallel", "4", "--max-queue", "32") as server:
        stats = {"completed": 0, "disconnected": 0}
        errors = []
        threads = [threading.Thread(target=client, args=(server.port, seed, requests, stats, errors))
                   for seed in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(not errors, f"{len(errors)} bad replies, e.g. {errors[:3]}")
        idle = {"running": 0, "waiting": 0, "busy": False}
        wait_for(lambda: {k: server.health()["queue"][k] for k in idle} == idle, 60,
                 f"slots still busy: {server.health()['queue']}")
        health = server.health()
        check(health["memory_plan"]["reserved_bytes"] == 0, health["memory_plan"])
        code = server.stop()
        logs = server.logs()
        check("Sanitizer" not in logs, logs[-3000:])
        check(code == 0, f"exit code {code}: {logs[-2000:]}")
        print(f"  {stats['completed']} replies completed, {stats['disconnected']} clients left "
              f"mid-reply; {health['queue']['done']} requests done")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("mtplx")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=50)
    a = ap.parse_args()
    sys.exit(0 if load_with_disconnects(a.mtplx, a.clients, a.requests) is None else 1)

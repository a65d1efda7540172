"""Scale-out: two `mtplx serve` replicas behind Debian's nginx with the shipped config
(deploy/nginx/mtplx.conf). Every turn of a conversation lands on the replica that served its
first turn (so later turns restore its cached prefix), and when a replica dies its conversations
are answered by the other.

Usage: nginx_test.py PATH/TO/mtplx
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request

from harness import ROOT, Server, check, free_port, run_scenarios, scratch_dir, wait_for

CONFIG = os.path.join(ROOT, "deploy", "nginx", "mtplx.conf")


class Nginx:
    """nginx in the foreground with a private prefix, proxying to the given replica ports."""

    def __init__(self, ports):
        self.dir = scratch_dir("mtplx-nginx-")
        self.port = free_port()
        site = open(CONFIG).read()
        site = site.replace("127.0.0.1:8001", f"127.0.0.1:{ports[0]}")
        site = site.replace("127.0.0.1:8002", f"127.0.0.1:{ports[1]}")
        site = site.replace("listen 8000;", f"listen 127.0.0.1:{self.port};")
        with open(os.path.join(self.dir, "mtplx.conf"), "w") as f:
            f.write(site)
        temp = "\n".join(f"  {kind}_temp_path {self.dir}/{kind};"
                         for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(f"daemon off;\nworker_processes 1;\npid {self.dir}/nginx.pid;\n"
                    f"error_log {self.dir}/error.log info;\nevents {{ worker_connections 128; }}\n"
                    f"http {{\n  access_log {self.dir}/access.log;\n{temp}\n"
                    f"  include {self.dir}/mtplx.conf;\n}}\n")
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = subprocess.Popen([binary, "-p", self.dir, "-c", f"{self.dir}/nginx.conf",
                                      "-e", f"{self.dir}/error.log"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(self.listening, 20, "nginx did not start:\n" + self.errors())

    def listening(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2):
                return True
        except OSError:
            return False

    def errors(self):
        try:
            return open(os.path.join(self.dir, "error.log")).read()[-2000:]
        except OSError:
            return ""

    def stop(self):
        self.proc.send_signal(signal.SIGQUIT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def finished(server):
    with urllib.request.urlopen(server.base + "/v1/mtplx/stats", timeout=10) as r:
        return sum(json.load(r)["requests"]["finished"].values())


def chat(port, session, messages):
    body = {"messages": messages, "max_tokens": 12, "temperature": 0}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              "X-Claude-Code-Session-Id": session})
    with urllib.request.urlopen(request, timeout=120) as r:
        reply = json.load(r)
    return (reply["choices"][0]["message"]["content"],
            reply["usage"]["prompt_tokens_details"]["cached_tokens"])


def turn(nginx, replicas, session, messages):
    """One turn through nginx: (reply text, cached tokens, index of the replica that served it)."""
    before = [finished(r) for r in replicas]
    text, cached = chat(nginx.port, session, messages)
    served = [i for i, r in enumerate(replicas) if finished(r) > before[i]]
    check(len(served) == 1, f"served by {served}")
    return text, cached, served[0]


def conversations_stay_on_their_replica(mtplx):
    system = {"role": "system", "content": "You are a coding assistant. " * 40}
    with Server(mtplx) as a, Server(mtplx) as b:
        replicas = [a, b]
        nginx = Nginx([a.port, b.port])
        try:
            # Two conversations that hash to different replicas.
            homes, first_turns = {}, {}
            for k in range(40):
                session = f"conversation-{k}"
                messages = [system, {"role": "user", "content": f"Write function number {k}."}]
                text, cached, replica = turn(nginx, replicas, session, messages)
                if replica not in homes:
                    homes[replica] = session
                    first_turns[session] = messages + [{"role": "assistant", "content": text}]
                if len(homes) == 2:
                    break
            check(len(homes) == 2, f"40 sessions all hashed to one replica: {homes}")
            for replica, session in homes.items():
                history = first_turns[session]
                for n in (2, 3):
                    history = history + [{"role": "user", "content": f"Now part {n}."}]
                    text, cached, served = turn(nginx, replicas, session, history)
                    check(served == replica, f"{session} turn {n} went to replica {served}")
                    check(cached > 0, f"{session} turn {n} restored nothing")
                    history = history + [{"role": "assistant", "content": text}]
                first_turns[session] = history
            # One replica dies: its conversation is answered by the other.
            dead = 0
            replicas[dead].proc.kill()
            replicas[dead].proc.wait()
            session = homes[dead]
            history = first_turns[session] + [{"role": "user", "content": "And part 4."}]
            text, _ = chat(nginx.port, session, history)
            check(text, "no reply after the replica died")
            survivor = replicas[1 - dead]
            check(finished(survivor) > 0, "the surviving replica did not answer")
            print(f"  sessions {homes} kept their replicas; replica {dead} died and "
                  f"{session} moved on")
        finally:
            nginx.stop()


if __name__ == "__main__":
    sys.exit(run_scenarios([conversations_stay_on_their_replica], sys.argv[1]))

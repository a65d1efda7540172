"""The live dashboard in a real browser: Debian's chromium driven headless by selenium (through
chromium-driver). The page loads with no console errors and its numbers move while a request
streams; /metrics and /v1/mtplx/stats answer in their formats.

Usage: dashboard_test.py PATH/TO/mtplx   (in the environment scripts/install-clients.sh makes)
"""
from __future__ import annotations

import json
import shutil
import sys
import threading
import urllib.error
import urllib.request

from harness import Server, check, run_scenarios, wait_for
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def browser():
    options = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,900"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(driver), options=options)


def text(driver, element_id):
    return driver.find_element("id", element_id).text


def stream_long_reply(server, tokens):
    body = {"messages": [{"role": "user", "content": "Tell me a long story."}],
            "max_tokens": tokens, "ignore_eos": True, "stream": True}
    request = urllib.request.Request(server.base + "/v1/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        for _ in response:
            pass


def dashboard_updates_live(mtplx):
    # One thread and plain decoding keep the bundled model slow enough to watch.
    with Server(mtplx, "--no-mtp") as server:
        driver = browser()
        try:
            driver.get(server.base + "/dashboard")
            wait_for(lambda: text(driver, "status").startswith("live"), 20,
                       f"the page never polled: {text(driver, 'status')!r}")
            check(text(driver, "slots-total") == "4", f"slots: {text(driver, 'slots-total')!r}")
            check(text(driver, "requests") == "0", f"requests: {text(driver, 'requests')!r}")
            streaming = threading.Thread(target=stream_long_reply, args=(server, 6000))
            streaming.start()
            wait_for(lambda: text(driver, "slots-busy") == "1", 30, "no busy slot was shown")
            wait_for(lambda: float(text(driver, "tok-s")) > 0, 30, "tok/s never moved")
            first = float(text(driver, "tok-s"))
            streaming.join()
            wait_for(lambda: text(driver, "requests") == "1", 30,
                       f"the finished request was not counted: {text(driver, 'requests')!r}")
            check(int(text(driver, "generated")) == 6000, text(driver, "generated"))
            check(driver.find_element("id", "chart").get_attribute("innerHTML").count("<path") == 2,
                  "the chart has no line")
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            check(not errors, f"console errors: {errors}")
            print(f"  dashboard showed {first:.0f} tok/s while streaming")
        finally:
            driver.quit()


def metrics_and_stats_formats(mtplx):
    with Server(mtplx, "--api-key", "k3y") as server:
        def get(path, key=True):
            request = urllib.request.Request(server.base + path,
                                             headers={"x-api-key": "k3y"} if key else {})
            try:
                with urllib.request.urlopen(request, timeout=30) as r:
                    return r.status, r.headers.get("Content-Type"), r.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.headers.get("Content-Type"), e.read().decode()
        body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}
        request = urllib.request.Request(server.base + "/v1/chat/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json",
                                                  "x-api-key": "k3y"})
        urllib.request.urlopen(request, timeout=60).read()
        status, kind, page = get("/metrics")
        check(status == 200 and kind.startswith("text/plain; version=0.0.4"), (status, kind))
        samples = {}
        for line in page.splitlines():
            if line.startswith("#"):
                check(line.startswith("# HELP ") or line.startswith("# TYPE "), line)
                continue
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
        check(samples['mtplx_requests_total{finish_reason="length"}'] +
              samples['mtplx_requests_total{finish_reason="stop"}'] == 1, samples)
        check(samples["mtplx_generated_tokens_total"] >= 1, samples)
        check(samples['mtplx_time_to_first_token_seconds_bucket{le="+Inf"}'] == 1, samples)
        check(samples["mtplx_slots"] == 4 and samples["mtplx_slots_busy"] == 0, samples)
        check(samples['mtplx_memory_bytes{kind="model"}'] > 0, samples)
        check('mtplx_acceptance_ratio{depth="1",kind="conditional"}' in samples, samples)
        status, kind, stats = get("/v1/mtplx/stats")
        check(status == 200 and kind.startswith("application/json"), (status, kind))
        stats = json.loads(stats)
        check(stats["tokens"]["generated"] == samples["mtplx_generated_tokens_total"], stats)
        check(stats["slots"] == {"total": 4, "busy": 0, "queued": 0}, stats)
        # Numbers need the key; the page itself does not.
        check(get("/metrics", key=False)[0] == 401, "metrics without the key")
        check(get("/v1/mtplx/stats", key=False)[0] == 401, "stats without the key")
        check(get("/dashboard", key=False)[0] == 200, "the dashboard page needs no key")


if __name__ == "__main__":
    sys.exit(run_scenarios([metrics_and_stats_formats, dashboard_updates_live], sys.argv[1]))

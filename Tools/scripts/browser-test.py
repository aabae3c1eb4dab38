#!/usr/bin/env python3
"""Browser test of the collector's web debugger (issue 20), in Debian's headless chromium.

Starts `collector serve` on a free port with a fresh database, opens the page BEFORE any traffic,
runs the sample flows (the demo against that collector), and asserts on the DOM:
  W1  the live stream shows the new requests without a reload;
  W2  a rejected payload shows its rule and its JSON path, in the stream and in the payload view;
  W3  the funnel table's figures equal `collector report`'s;
  W4  the paywall, Score and Rocalytics views show the demo's traffic;
  W5  hostile content (script tags, attribute breakers, a 100 KB value) is shown literally, runs
      nothing, adds no element, and the page stays responsive;
  W6  the Rocalytics view shows the ingestion status (GET /functions/v1/status) of the demo's app,
      equal to the route's JSON;
  W7  the page works opened at http://localhost:PORT/ too; a page at a name rebound to 127.0.0.1
      reads no captured request (Host refused), and another origin's page posting a text/plain
      event to the collector is refused with nothing stored (Origin refused).
Saves screenshots under out/. Usage: browser-test.py [BIN_DIR] (default Tools/.build/debug).
"""
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "Tools", ".build", "debug")
OUT = os.path.join(ROOT, "out")
EXAMPLE = os.path.join(ROOT, "Packages", "Core", "Contracts", "examples", "onboarding-run", "studio-1-mid-flow.json")


def post(url, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    print("ok  " + message)


def score_event(name, props):
    return {
        "type": "track", "name": name, "eventId": str(uuid.uuid4()), "timestamp": "2026-01-10T09:00:00.000Z",
        "anonymousId": str(uuid.uuid4()), "sessionId": str(uuid.uuid4()), "siteId": "hostile-site", "props": props,
        "context": {"os": "ios", "appVersion": "2.4.0", "locale": "en-US"}, "sdk": {"name": "score-swift", "version": "0.6.0"},
    }


def table_rows(driver, selector):
    """The cell texts of the rows matching `selector`, read in one script (the views re-render
    every 2 s, so elements found one by one can go stale)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(tr => [...tr.cells].map(td => td.textContent))", selector)


def report_rows(text):
    """The table rows of `collector report`: one list of cells per position or alternative."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("  ") or line.strip().startswith(("Position", "Totals")):
            continue
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def main():
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix="collector-browser-")
    db = os.path.join(work, "collector.sqlite")
    collector = subprocess.Popen([os.path.join(BIN, "collector"), "serve", "--port", "0", "--db", db, "--exit-with-parent"],
                                 stdout=subprocess.PIPE, text=True)
    driver = None
    try:
        first = collector.stdout.readline()
        base = re.search(r"http://[0-9.:]+", first).group(0)
        options = Options()
        for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1440,1000",
                         "--no-first-run", "--disable-extensions", "--disable-background-networking",
                         "--host-resolver-rules=MAP rebind.test 127.0.0.1"]:
            options.add_argument(argument)
        chromium = shutil.which("chromium")
        if chromium:
            options.binary_location = chromium
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        driver.set_page_load_timeout(20)
        wait = WebDriverWait(driver, 15)
        driver.get(base + "/")
        wait.until(lambda d: "live" in d.find_element(By.ID, "live-status").text)
        check(len(driver.find_elements(By.CSS_SELECTOR, "tr.request-row")) == 0, "the page opens on an empty stream")
        driver.execute_script("window.__loadMarker = 42")  # survives only if the page is never reloaded

        # W1: the sample flows, shown live.
        demo = subprocess.run([os.path.join(BIN, "demo"), "--collector", base], capture_output=True, text=True, timeout=180)
        check(demo.returncode == 0, "the demo's sample flows ran against the collector")
        count = len(get_json(base + "/api/requests?limit=5000")["requests"])
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.request-row")) == count)
        check(driver.execute_script("return window.__loadMarker") == 42, f"the stream shows all {count} requests without a reload")
        newest = driver.find_element(By.CSS_SELECTOR, "#stream-body tr:first-child td:first-child").text
        check(int(newest) == count, "newest first")
        kinds = {e.text for e in driver.find_elements(By.CSS_SELECTOR, "tr.request-row td.kind")}
        check({"onboarding-run", "paywall-presentation", "score-batch", "rocalytics-track"} <= kinds, "every surface is in the stream")

        # W2: a rejected payload shows its rule and path.
        example = json.load(open(EXAMPLE))
        broken = dict(example, seq="two")
        check(post(base + "/v1/onboarding-runs", broken) == 400, "a snapshot with a string seq is rejected")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.request-row.rejected")) == 1)
        row = driver.find_element(By.CSS_SELECTOR, "tr.request-row.rejected")
        check("schema" in row.find_element(By.CSS_SELECTOR, "code.rule").text, "the rejected row shows the rule")
        check("/seq" in [e.text for e in row.find_elements(By.CSS_SELECTOR, "code.path")], "the rejected row shows the JSON path /seq")
        Select(driver.find_element(By.ID, "filter-outcome")).select_by_value("rejected")
        visible = [r for r in driver.find_elements(By.CSS_SELECTOR, "tr.request-row") if r.is_displayed()]
        check(len(visible) == 1, "the outcome filter keeps the rejected request only")
        Select(driver.find_element(By.ID, "filter-outcome")).select_by_value("")
        check(all(r.is_displayed() for r in driver.find_elements(By.CSS_SELECTOR, "tr.request-row")), "clearing the filter shows every request")
        row.click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#payload-content .json"))
        marked = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#payload-content .json .marked")]
        check(marked == ['"two"'], "the payload view highlights the value at /seq")
        raw = driver.find_element(By.CSS_SELECTOR, "#payload-content pre.raw").text
        check(json.loads(raw) == broken, "the payload view shows the body as received")

        # The onboarding diff against the previous seq of the same run.
        onboarding_rows = driver.execute_script(
            "return (await (await fetch('/api/requests?kind=onboarding-run&outcome=accepted')).json()).requests.map(r => r.id)")
        driver.execute_script("openPayload(arguments[0])", onboarding_rows[0])
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#payload-content table.diff tbody tr"))
        paths = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#payload-content table.diff td.path")]
        check("/seq" in paths and "/status" in paths, "the resumed run's last snapshot shows its changes since the previous seq")

        # The contract's funnel examples (several onboardings, alternatives, derived skips, merges).
        funnel_examples = os.path.dirname(EXAMPLE)
        for name in sorted(os.listdir(funnel_examples)):
            if name.startswith("funnel-"):
                post(base + "/v1/onboarding-runs", open(os.path.join(funnel_examples, name), "rb").read())

        # W3: the funnel table equals `collector report`.
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view=funnels]").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.funnel-table tbody tr"))
        page_rows = table_rows(driver, "table.funnel-table tbody tr")
        report = subprocess.run([os.path.join(BIN, "collector"), "report", "--db", db], capture_output=True, text=True, check=True).stdout
        funnel_count = driver.execute_script("return document.querySelectorAll('section.funnel').length")
        check(page_rows == report_rows(report) and funnel_count == report.count("onboarding ") and funnel_count >= 2,
              f"the funnel tables ({funnel_count} onboardings) equal `collector report`")
        rects = driver.execute_script("return document.querySelectorAll('section.funnel svg.chart rect').length")
        check(rects == 2 * len([r for r in page_rows if not r[0].startswith("↳")]), f"the funnel charts are inline SVG ({rects} bars)")
        driver.save_screenshot(os.path.join(OUT, "collector-funnels.png"))

        # The contract examples: a v1 presentation (start, shown, purchase) through the generic sink.
        examples = os.path.join(ROOT, "Packages", "Core", "Contracts", "examples", "paywall-presentation")
        for name in ["purchased-android-1-start-in-progress.json", "purchased-android-2-shown-in-progress.json",
                     "purchased-android-3-ended-purchased.json"]:
            check(post(base + "/v1/paywall-presentations", open(os.path.join(examples, name), "rb").read()) == 200, "contract example " + name)

        # W4: paywalls, Score, Rocalytics.
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view=paywalls]").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.paywall-table tbody tr"))
        cells = [td.text for td in driver.find_elements(By.CSS_SELECTOR, "table.paywall-table tbody tr td")]
        rows = table_rows(driver, "table.paywall-table tbody tr")
        check(["onboarding_end", "spring_sale_v2", "native", "1", "1", "1", "0", "0", "0", "0", "100%"] in rows, "the paywall view counts the demo's purchase")
        check(["settings_upgrade", "4b1f0e7c-2d1a-4c55-9a0e-6f2d3c1b7a90", "studio", "1", "1", "1", "0", "0", "0", "0", "100%"] in rows,
              "the paywall view counts the contract example's purchase")
        check(driver.execute_script("return document.querySelectorAll('svg.timeline circle').length") == 6, "each presentation's timeline has start, shown and end")
        driver.save_screenshot(os.path.join(OUT, "collector-paywalls.png"))
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view=score]").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.score-table tbody tr"))
        driver.save_screenshot(os.path.join(OUT, "collector-score.png"))
        check("props.email (hashed)" in driver.execute_script("return document.getElementById('score-content').textContent"), "the Score view marks the hashed email")
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view=rocalytics]").click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.runs-table tbody tr"))
        check(table_rows(driver, "table.runs-table tbody tr")[0][-1] == "yes",
              "the Rocalytics view shows the completed run with its onboarding_completed")
        # W6: the ingestion status of the demo's app, as GET /functions/v1/status answers it.
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "table.status-table tbody tr"))
        status = get_json(base + "/functions/v1/status?app=com.example.sampleapp")
        expected = [[e["name"], str(e["count"]), e["latest_received_at"]] for e in status["events"]]
        check(table_rows(driver, "table.status-table tbody tr") == expected, "the Rocalytics view shows the status route's events")
        check({"install", "onboarding_completed", "purchase"} <= {e["name"] for e in status["events"]},
              "the demo's install, onboarding_completed and purchase are in the status")
        driver.save_screenshot(os.path.join(OUT, "collector-rocalytics.png"))

        # W5: hostile content.
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view=live]").click()
        script = "<script>window.__pwned=1</script>"
        breaker = "\"><img src=x onerror=\"window.__pwned=2\">"
        big = "<b>" + "A" * 100_000 + "</b>"
        before = len(get_json(base + "/api/requests?limit=5000")["requests"])
        post(base + "/v1/onboarding-runs", dict(example, run_id=script))
        post(base + "/v1/paywall-presentations", {"schema_version": 1.1, "presentation_id": breaker, "seq": "' onmouseover='window.__pwned=3"})
        check(post(base + "/api/events", {"sentAt": "2026-01-10T09:00:00.000Z", "events": [
            score_event("<img src=x onerror=window.__pwned=4>", {"note": script, "attr": breaker, "big": big})]}) == 200,
            "a Score batch with hostile strings and a 100 KB value is accepted")
        post(base + "/functions/v1/track", {"name": script, "deduplication_id": breaker, "properties": {}})
        # A custom event of a hostile name from a hostile application id: both land in the status view.
        check(post(base + "/functions/v1/track", {"name": script, "deduplication_id": breaker, "properties": {}, "custom_event": True},
                   headers={"X-Application-ID": breaker, "X-Roca-ID": "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f"}) == 200,
              "a custom event with a hostile name and application id is accepted")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.request-row")) == before + 5)
        stream = driver.find_element(By.ID, "stream-body").text
        check(script in stream and breaker in stream, "script tags and attribute breakers are shown literally in the stream")
        for view in ["score", "rocalytics", "paywalls", "live"]:
            driver.find_element(By.CSS_SELECTOR, f"nav button[data-view={view}]").click()
            time.sleep(0.3)
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view=rocalytics]").click()
        wait.until(lambda d: breaker in d.find_element(By.ID, "rocalytics-content").text)
        check(script in driver.find_element(By.ID, "rocalytics-content").text,
              "the status view shows a hostile application id and event name literally")
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view=live]").click()
        score_text = driver.execute_script("return (await (await fetch('/api/score')).json()).names.map(n => n.name)")
        check("<img src=x onerror=window.__pwned=4>" in score_text, "the hostile event name is stored as sent")
        batch_id = driver.execute_script("return (await (await fetch('/api/requests?kind=score-batch')).json()).requests[0].id")
        started = time.time()
        driver.execute_script("openPayload(arguments[0])", batch_id)
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#payload-content pre.raw"))
        raw_length = driver.execute_script("return document.querySelector('#payload-content pre.raw').textContent.length")
        shown_big = driver.execute_script("return [...document.querySelectorAll('#payload-content .json .string')].some(e => e.textContent === JSON.stringify(arguments[0]))", big)
        elapsed = time.time() - started
        check(raw_length > 100_000 and shown_big, "the 100 KB value is shown in full, literally")
        check(elapsed < 5, f"the payload view of a 100 KB body renders in {elapsed:.2f} s")
        driver.save_screenshot(os.path.join(OUT, "collector-payload-hostile.png"))
        started = time.time()
        check(driver.execute_script("return 1 + 1") == 2 and time.time() - started < 1, "the page stays responsive")
        check(driver.execute_script("return window.__pwned") is None, "no hostile script ran")
        injected = driver.execute_script("return document.querySelectorAll('img, b, script:not([src]), [onerror], [onmouseover]').length")
        check(injected == 0, "no element or attribute came from a payload")
        check(driver.execute_script("return document.scripts.length") == 1, "the page's only script is /app.js")

        driver.find_element(By.CSS_SELECTOR, "nav button[data-view=live]").click()
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(os.path.join(OUT, "collector-debugger.png"))

        # W7: the page at localhost works; a rebound name and another origin's page are refused.
        port = base.rsplit(":", 1)[1]
        local = base.replace("127.0.0.1", "localhost")
        driver.get(local + "/")
        wait.until(lambda d: "live" in d.find_element(By.ID, "live-status").text)
        count = len(get_json(base + "/api/requests?limit=5000")["requests"])
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.request-row")) == count)
        check(True, f"the page opened at {local}/ shows the {count} requests")
        # DNS rebinding: the browser resolves rebind.test to 127.0.0.1 (--host-resolver-rules) and
        # sends Host: rebind.test:PORT.
        driver.get(f"http://rebind.test:{port}/api/requests")
        text = driver.find_element(By.TAG_NAME, "body").text
        check("Host is not the collector's own address" in text and "rocalytics-track" not in text,
              "a page at a name rebound to 127.0.0.1 reads no captured request")
        # Another origin's page (a plain server on another loopback port, no CSP of its own) posts a
        # text/plain body, a request a browser sends without asking: refused, stored nowhere.
        other_root = os.path.join(work, "other-origin")
        os.makedirs(other_root)
        with open(os.path.join(other_root, "index.html"), "w") as f:
            f.write("<!doctype html><title>another origin</title><p>another origin</p>")
        attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=other_root))
        threading.Thread(target=attacker.serve_forever, daemon=True).start()
        try:
            driver.get(f"http://127.0.0.1:{attacker.server_address[1]}/")
            forged = json.dumps({"name": "install", "deduplication_id": "forged-install",
                                 "properties": {"install_time": "2026-01-10T07:59:00.000Z"}})
            outcome = driver.execute_script(
                "return fetch(arguments[0] + '/functions/v1/track', {method: 'POST', mode: 'no-cors',"
                " headers: {'Content-Type': 'text/plain'}, body: arguments[1]}).then(r => 'sent ' + r.type, e => 'failed ' + e.message)",
                base, forged)
        finally:
            attacker.shutdown()
        check(outcome == "sent opaque", f"another origin's page posted to {base} ({outcome})")
        after = get_json(base + "/api/requests?limit=5000")["requests"]
        check(len(after) == count, "the cross-origin post was refused: nothing logged or stored")
        print("browser test: passed; screenshots in out/collector-*.png")
    finally:
        if driver is not None:
            driver.quit()
        collector.terminate()
        collector.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

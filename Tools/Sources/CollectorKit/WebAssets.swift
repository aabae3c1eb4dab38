// The collector's web debugger, served by `collector serve` at `/` on its loopback port: plain
// HTML, CSS and JavaScript kept in this source file (no build step, no CDN, nothing fetched from
// elsewhere). Edit the strings below directly.

/// The web debugger's files.
public enum WebAssets {
    /// The Content-Security-Policy of every page response: scripts, styles and requests from this
    /// collector only, no inline script, no plugins, no framing.
    public static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// The page at `/`: the six views' containers; no inline script or style (the Content-Security-Policy forbids both).
    public static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Rocalytics collector</title>
        <link rel="stylesheet" href="/app.css">
        <script src="/app.js" defer></script>
        </head>
        <body>
        <header>
          <h1>Rocalytics collector</h1>
          <span id="live-status" class="status">connecting…</span>
          <nav>
            <button type="button" data-view="live">Live requests</button>
            <button type="button" data-view="payload">Payload</button>
            <button type="button" data-view="funnels">Onboarding funnels</button>
            <button type="button" data-view="paywalls">Paywalls</button>
            <button type="button" data-view="score">Score</button>
            <button type="button" data-view="rocalytics">Rocalytics</button>
          </nav>
        </header>
        <main>
          <section class="view" id="view-live">
            <div class="filters">
              <label>Kind <select id="filter-kind">
                <option value="">all</option>
                <option value="onboarding-run">onboarding run</option>
                <option value="paywall-presentation">paywall presentation</option>
                <option value="score">Score</option>
                <option value="rocalytics">Rocalytics</option>
                <option value="http">refused (HTTP)</option>
                <option value="unknown">unknown route</option>
              </select></label>
              <label>Outcome <select id="filter-outcome">
                <option value="">all</option>
                <option value="accepted">accepted</option>
                <option value="ignored">ignored</option>
                <option value="rejected">rejected</option>
              </select></label>
              <span class="hint">Newest first. Click a request to see its payload.</span>
            </div>
            <table class="stream">
              <thead><tr><th class="num">#</th><th>Time (UTC)</th><th>Route</th><th>Kind</th><th>Run / presentation / event</th><th class="num">Seq</th><th>Outcome</th><th class="num">HTTP</th><th>Why</th></tr></thead>
              <tbody id="stream-body"></tbody>
            </table>
            <p id="empty" class="hint">No requests yet. Point the SDKs at this collector.</p>
          </section>
          <section class="view" id="view-payload" hidden><div id="payload-content"></div></section>
          <section class="view" id="view-funnels" hidden><div id="funnels-content"></div></section>
          <section class="view" id="view-paywalls" hidden><div id="paywalls-content"></div></section>
          <section class="view" id="view-score" hidden><div id="score-content"></div></section>
          <section class="view" id="view-rocalytics" hidden><div id="rocalytics-content"></div></section>
        </main>
        </body>
        </html>
        """#

    /// `/app.css`.
    public static let css = #"""
        :root { --bg: #f7f7f9; --fg: #1c1d21; --muted: #62646c; --line: #dcdde3; --accent: #3056d3; --ok: #1c7c3c; --warn: #9a6400; --bad: #b3261e; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); color: var(--fg); }
        header { position: sticky; top: 0; z-index: 1; background: #fff; border-bottom: 1px solid var(--line); padding: 10px 18px; display: flex; flex-wrap: wrap; align-items: center; gap: 8px 18px; }
        h1 { font-size: 17px; margin: 0; }
        h2 { font-size: 16px; margin: 18px 0 6px; }
        h3 { font-size: 14px; margin: 16px 0 6px; }
        nav { display: flex; gap: 4px; flex-wrap: wrap; }
        nav button { border: 1px solid var(--line); background: #fff; border-radius: 6px; padding: 5px 10px; cursor: pointer; font: inherit; }
        nav button.active { background: var(--accent); border-color: var(--accent); color: #fff; }
        .status { font-size: 12px; color: var(--muted); }
        .status.ok::before { content: "● "; color: var(--ok); }
        .status.down { color: var(--bad); }
        main { padding: 12px 18px 40px; }
        .filters { display: flex; gap: 16px; align-items: center; margin-bottom: 10px; flex-wrap: wrap; }
        select { font: inherit; padding: 2px 4px; }
        table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); width: 100%; table-layout: auto; }
        th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
        th { background: #eef0f5; font-weight: 600; font-size: 12px; white-space: nowrap; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
        td.time, td.route, td.kind { white-space: nowrap; }
        td.subject { font-family: ui-monospace, monospace; font-size: 12px; max-width: 22em; }
        tr.request-row { cursor: pointer; }
        tr.request-row:hover { background: #f0f3fb; }
        tr.request-row.rejected td { background: #fdf1f0; }
        tr.flagged td { background: #fff6e0; }
        .badge { display: inline-block; white-space: nowrap; border-radius: 10px; padding: 0 8px; font-size: 12px; font-weight: 600; color: #fff; }
        .badge.accepted { background: var(--ok); }
        .badge.ignored { background: var(--warn); }
        .badge.rejected { background: var(--bad); }
        .badge.other { background: var(--muted); }
        .why { font-size: 12px; max-width: 36em; }
        .reason { color: var(--bad); }
        .note { color: var(--muted); }
        ul.violations { margin: 2px 0; padding-left: 16px; }
        code { font-family: ui-monospace, monospace; font-size: 12px; background: #f0f1f4; border-radius: 3px; padding: 0 3px; }
        code.rule { color: var(--bad); }
        .hint { color: var(--muted); }
        .meta { color: var(--muted); }
        .json { background: #fff; border: 1px solid var(--line); padding: 8px 10px; font: 12px/1.5 ui-monospace, monospace; overflow-x: auto; max-height: 60vh; overflow-y: auto; }
        .json .children { padding-left: 18px; }
        .json .key { color: #7a3e9d; }
        .json .string { color: #1c6b3a; overflow-wrap: anywhere; }
        .json .number, .json .boolean { color: #0b5cad; }
        .json .null { color: var(--muted); }
        .json .marked { background: #ffd9d6; outline: 1px solid var(--bad); border-radius: 2px; }
        pre.raw { background: #fff; border: 1px solid var(--line); padding: 8px 10px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 40vh; overflow-y: auto; font-size: 12px; }
        table.diff tr.added td { background: #eaf7ee; }
        table.diff tr.removed td { background: #fdf1f0; }
        table.diff tr.changed td { background: #fff6e0; }
        td.path { font-family: ui-monospace, monospace; font-size: 12px; }
        section.funnel, section.presentation, section.device { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 6px 14px 12px; margin-bottom: 14px; }
        svg.chart { display: block; margin: 8px 0; }
        .chart-label, .chart-value { font: 12px system-ui, sans-serif; fill: var(--fg); }
        .bar-total { fill: #9db3f0; }
        .bar-part { fill: var(--bad); }
        svg.timeline .axis { stroke: var(--line); stroke-width: 2; }
        svg.timeline .dot { fill: var(--accent); }
        svg.timeline .dot.ended { fill: var(--ok); }
        .pill { display: inline-block; margin: 1px 4px 1px 0; padding: 0 6px; border-radius: 8px; font-size: 12px; }
        .pill.scrubbed { background: #e7ecfb; color: #243d8f; }
        ol.snapshots, ul.counts, ul.links, ul.duplicates { margin: 4px 0; padding-left: 20px; }
        """#

    /// `/app.js`: polls `/api/requests?after=ID` for the live stream and reads the views' `/api/…` JSON. Payload strings are only ever put in the page as text nodes.
    public static let js = #"""
        // The collector's web debugger. Every string that comes from a payload is put in the page as
        // text (text nodes, textContent): this file never parses strings as HTML (no HTML-setting
        // property, no document writing, no evaluated code); APITests/API6 checks it.
        "use strict";

        const state = { lastId: 0, rows: [], selected: null, view: "live", kind: "", outcome: "", timer: null, viewTimer: null };
        const MAX_ROWS = 500;
        const CELL_CHARS = 160;

        function el(tag, cls, ...children) {
          const node = document.createElement(tag);
          if (cls) node.className = cls;
          for (const child of children) {
            if (child === null || child === undefined) continue;
            node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
          }
          return node;
        }
        function svg(tag, attrs) {
          const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
          for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
          return node;
        }
        function short(text) {
          if (text === null || text === undefined) return "–";
          const s = String(text);
          return s.length > CELL_CHARS ? s.slice(0, CELL_CHARS) + "… (" + s.length + " chars)" : s;
        }
        function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
        async function getJSON(url) {
          const response = await fetch(url, { cache: "no-store" });
          if (!response.ok) throw new Error(url + " answered " + response.status);
          return response.json();
        }
        function badge(outcome) { return el("span", "badge " + (["accepted", "ignored", "rejected"].includes(outcome) ? outcome : "other"), outcome); }
        function violationList(violations) {
          const list = el("ul", "violations");
          for (const v of violations || []) {
            list.appendChild(el("li", "violation-item", el("code", "rule", v.rule), " at ", el("code", "path", v.path === "" ? "/" : v.path), ": ", short(v.message)));
          }
          return list;
        }

        // MARK: live stream

        function kindGroup(kind) {
          if (kind.startsWith("rocalytics-")) return "rocalytics";
          if (kind.startsWith("score-")) return "score";
          return kind;
        }
        function matches(r) {
          return (!state.kind || kindGroup(r.kind) === state.kind || r.kind === state.kind) && (!state.outcome || r.outcome === state.outcome);
        }
        function rowFor(r) {
          const why = el("td", "why");
          if (r.reason) why.appendChild(el("div", "reason", short(r.reason)));
          if (r.note) why.appendChild(el("div", "note", short(r.note)));
          if (r.violations && r.violations.length) why.appendChild(violationList(r.violations));
          const tr = el("tr", "request-row " + r.outcome,
            el("td", "num", String(r.id)), el("td", "time", r.time.slice(11, 23)), el("td", "route", r.route), el("td", "kind", r.kind),
            el("td", "subject", short(r.subject)), el("td", "num", r.seq === null ? "–" : String(r.seq)), el("td", "", badge(r.outcome)),
            el("td", "num status", String(r.status)), why);
          tr.dataset.id = String(r.id);
          tr.hidden = !matches(r);
          tr.addEventListener("click", () => openPayload(r.id));
          return tr;
        }
        async function poll() {
          try {
            const data = await getJSON("/api/requests?limit=500&after=" + state.lastId);
            const body = document.getElementById("stream-body");
            const fresh = data.requests.slice().reverse(); // oldest first, each put on top
            for (const r of fresh) {
              state.lastId = Math.max(state.lastId, r.id);
              state.rows.unshift(r);
              body.insertBefore(rowFor(r), body.firstChild);
            }
            while (state.rows.length > MAX_ROWS) { state.rows.pop(); body.removeChild(body.lastChild); }
            document.getElementById("live-status").textContent = "live · " + state.lastId + " requests received";
            document.getElementById("live-status").className = "status ok";
            document.getElementById("empty").hidden = state.rows.length > 0;
          } catch (e) {
            document.getElementById("live-status").textContent = "collector unreachable: " + e.message;
            document.getElementById("live-status").className = "status down";
          }
          state.timer = setTimeout(poll, 700);
        }
        function applyFilters() {
          state.kind = document.getElementById("filter-kind").value;
          state.outcome = document.getElementById("filter-outcome").value;
          const byId = new Map(state.rows.map(r => [String(r.id), r]));
          for (const tr of document.getElementById("stream-body").children) tr.hidden = !matches(byId.get(tr.dataset.id));
        }

        // MARK: payload view

        function jsonTree(value, path, marked) {
          const wrap = el("span", "node");
          if (marked.has(path)) wrap.classList.add("marked");
          if (Array.isArray(value) || (value && typeof value === "object")) {
            const isArray = Array.isArray(value);
            const entries = isArray ? value.map((v, i) => [String(i), v]) : Object.entries(value);
            wrap.appendChild(el("span", "punct", isArray ? "[" : "{"));
            const inner = el("div", "children");
            entries.forEach(([k, v], i) => {
              const line = el("div", "member");
              if (!isArray) {
                line.appendChild(el("span", "key", JSON.stringify(k)));
                line.appendChild(el("span", "punct", ": "));
              }
              line.appendChild(jsonTree(v, path + "/" + k, marked));
              if (i < entries.length - 1) line.appendChild(el("span", "punct", ","));
              inner.appendChild(line);
            });
            if (entries.length) wrap.appendChild(inner);
            wrap.appendChild(el("span", "punct", isArray ? "]" : "}"));
          } else {
            wrap.appendChild(el("span", "scalar " + (value === null ? "null" : typeof value), JSON.stringify(value)));
          }
          return wrap;
        }
        function flatten(value, path, out) {
          if (value && typeof value === "object") {
            const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
            if (!entries.length) out.set(path, JSON.stringify(value));
            for (const [k, v] of entries) flatten(v, path + "/" + k, out);
          } else out.set(path, JSON.stringify(value));
          return out;
        }
        async function openPayload(id) {
          state.selected = id;
          show("payload");
        }
        async function renderPayload() {
          const root = document.getElementById("payload-content");
          if (state.selected === null) { clear(root); root.appendChild(el("p", "hint", "Click a request in the live stream to see its payload.")); return; }
          const r = await getJSON("/api/requests/" + state.selected);
          clear(root);
          root.appendChild(el("h2", "", "Request " + r.id + " · " + r.method + " " + r.route));
          root.appendChild(el("p", "meta", r.time + " · kind " + r.kind + " · id " + short(r.subject) + " · seq " + (r.seq === null ? "–" : r.seq) +
            " · HTTP " + r.status + " · " + r.body_bytes + " bytes · ", badge(r.outcome)));
          if (r.reason) root.appendChild(el("p", "reason", "Reason: " + r.reason));
          if (r.violations.length) { root.appendChild(el("h3", "", "Violations")); root.appendChild(violationList(r.violations)); }
          let parsed;
          try { parsed = JSON.parse(r.body); } catch (e) { parsed = undefined; }
          if (parsed !== undefined) {
            const marked = new Set(r.violations.map(v => v.path));
            root.appendChild(el("h3", "", "Body, pretty-printed (broken rules highlighted at their paths)"));
            root.appendChild(el("div", "json", jsonTree(parsed, "", marked)));
          }
          if (r.previous) {
            root.appendChild(el("h3", "", "Changes since seq " + r.previous.seq + " of the same run"));
            let before;
            try { before = flatten(JSON.parse(r.previous.body), "", new Map()); } catch (e) { before = new Map(); }
            const after = parsed === undefined ? new Map() : flatten(parsed, "", new Map());
            const table = el("table", "diff", el("thead", "", el("tr", "", el("th", "", "Path"), el("th", "", "Before"), el("th", "", "After"))));
            const tbody = el("tbody", "");
            const paths = [...new Set([...before.keys(), ...after.keys()])].sort();
            for (const p of paths) {
              if (before.get(p) === after.get(p)) continue;
              const kind = !before.has(p) ? "added" : !after.has(p) ? "removed" : "changed";
              tbody.appendChild(el("tr", kind, el("td", "path", p), el("td", "", short(before.get(p))), el("td", "", short(after.get(p)))));
            }
            table.appendChild(tbody);
            root.appendChild(table);
          }
          root.appendChild(el("h3", "", "Body exactly as received"));
          root.appendChild(el("pre", "raw", r.body));
        }

        // MARK: funnels

        function barChart(rows, width) {
          const barH = 18, gap = 6, labelW = 150, max = Math.max(1, ...rows.map(r => r.total));
          const chart = svg("svg", { width, height: rows.length * (barH + gap) + 4, role: "img", class: "chart" });
          rows.forEach((r, i) => {
            const y = i * (barH + gap);
            const label = svg("text", { x: 0, y: y + 13, class: "chart-label" });
            label.textContent = short(r.label).slice(0, 22);
            chart.appendChild(label);
            const scale = (width - labelW - 150) / max;
            chart.appendChild(svg("rect", { x: labelW, y, width: Math.max(1, r.total * scale), height: barH, class: "bar-total" }));
            chart.appendChild(svg("rect", { x: labelW, y, width: r.part * scale, height: barH, class: "bar-part" }));
            const value = svg("text", { x: labelW + r.total * scale + 6, y: y + 13, class: "chart-value" });
            value.textContent = r.text;
            chart.appendChild(value);
          });
          return chart;
        }
        function rate(r) { return r === null ? "—" : r + "%"; }
        async function renderFunnels() {
          const data = await getJSON("/api/funnels");
          const root = document.getElementById("funnels-content");
          clear(root);
          if (!data.funnels.length) root.appendChild(el("p", "hint", "No onboarding runs stored yet."));
          for (const f of data.funnels) {
            const section = el("section", "funnel");
            section.dataset.key = f.key;
            section.dataset.version = f.version;
            section.appendChild(el("h2", "", "onboarding " + f.key + " version " + f.version));
            section.appendChild(el("p", "meta", "Started " + f.started + " · Completed " + f.completed + " · Quit " + f.quit + " · Still in progress " + f.still_in_progress +
              (f.version_conflicts ? " (" + f.version_conflicts + " version-conflict runs left out)" : "")));
            section.appendChild(barChart(f.positions.map(p => ({ label: p.label, total: p.saw_it, part: p.quit_here, text: p.saw_it + " saw it · " + p.quit_here + " quit here" })), 820));
            const table = el("table", "funnel-table", el("thead", "", el("tr", "", ...["Position", "Still in the flow", "Saw it", "Skipped", "Quit here", "Quit rate"].map((h, i) => el("th", i ? "num" : "", h)))));
            const tbody = el("tbody", "");
            for (const p of f.positions) {
              tbody.appendChild(el("tr", "position", el("td", "", p.label), el("td", "num", String(p.still_in_flow)), el("td", "num", String(p.saw_it)),
                el("td", "num", String(p.skipped)), el("td", "num", String(p.quit_here)), el("td", "num", rate(p.quit_rate_percent))));
              for (const a of p.alternatives) {
                tbody.appendChild(el("tr", "alternative", el("td", "", "↳ " + a.step_key), el("td", "num", "—"), el("td", "num", String(a.saw_it)),
                  el("td", "num", "—"), el("td", "num", String(a.quit_here)), el("td", "num", rate(a.quit_rate_percent))));
              }
            }
            table.appendChild(tbody);
            section.appendChild(table);
            root.appendChild(section);
          }
        }

        // MARK: paywalls

        function timeline(item) {
          const times = [["started", item.started_at], ["shown", item.shown_at], ["ended", item.ended_at]].filter(t => t[1]);
          const ms = times.map(t => Date.parse(t[1]));
          const start = Math.min(...ms), span = Math.max(1, Math.max(...ms) - start);
          const chart = svg("svg", { width: 420, height: 26 + times.length * 15, class: "timeline" });
          chart.appendChild(svg("line", { x1: 10, y1: 12, x2: 410, y2: 12, class: "axis" }));
          times.forEach((t, i) => {
            const x = 10 + (ms[i] - start) / span * 400;
            chart.appendChild(svg("circle", { cx: x, cy: 12, r: 5, class: "dot " + t[0] }));
            // One label per line, so that close events never overlap.
            const label = svg("text", { x: Math.min(x, 300), y: 34 + i * 15, class: "chart-label" });
            label.textContent = t[0] + " +" + ((ms[i] - start) / 1000).toFixed(3) + " s";
            chart.appendChild(label);
          });
          return chart;
        }
        async function renderPaywalls() {
          const data = await getJSON("/api/paywalls");
          const root = document.getElementById("paywalls-content");
          clear(root);
          if (!data.paywalls.length) root.appendChild(el("p", "hint", "No paywall presentations stored yet."));
          const cols = ["presentations", "shown", "purchased", "restored", "dismissed", "cancelled", "error"];
          const table = el("table", "paywall-table", el("thead", "", el("tr", "", el("th", "", "Moment / placement"), el("th", "", "Paywall"), el("th", "", "Provider"),
            ...cols.map(c => el("th", "num", c)), el("th", "num", "Conversion"))));
          const tbody = el("tbody", "");
          for (const g of data.paywalls) {
            tbody.appendChild(el("tr", "", el("td", "", short(g.moment)), el("td", "", short(g.paywall)), el("td", "", g.provider),
              ...cols.map(c => el("td", "num", String(g[c]))), el("td", "num", g.conversion_percent === null ? "—" : g.conversion_percent + "%")));
          }
          table.appendChild(tbody);
          root.appendChild(table);
          for (const g of data.paywalls) {
            for (const item of g.items) {
              const box = el("section", "presentation", el("h3", "", "Presentation " + item.presentation_id + " · " + item.status + (item.outcome ? " · " + item.outcome : "")));
              box.appendChild(timeline(item));
              const list = el("ol", "snapshots");
              for (const t of item.timeline) list.appendChild(el("li", "", t.time.slice(11, 23) + " seq " + t.seq + " " + (t.status || "?") + " → ", badge(t.outcome)));
              box.appendChild(list);
              root.appendChild(box);
            }
          }
        }

        // MARK: score

        async function renderScore() {
          const data = await getJSON("/api/score");
          const root = document.getElementById("score-content");
          clear(root);
          if (!data.names.length) root.appendChild(el("p", "hint", "No Score events stored yet."));
          const table = el("table", "score-table", el("thead", "", el("tr", "", ...["Event", "Type", "Stored", "Duplicates after ack", "PII-scrubbed fields", "Context sent", "Not in context (locale, device)"].map((h, i) => el("th", i === 2 || i === 3 ? "num" : "", h)))));
          const tbody = el("tbody", "");
          for (const n of data.names) {
            const scrubbed = el("td", "");
            for (const [field, how] of Object.entries(n.scrubbed)) scrubbed.appendChild(el("span", "pill scrubbed", field + " (" + how + ")"));
            tbody.appendChild(el("tr", n.duplicates ? "flagged" : "", el("td", "", short(n.name)), el("td", "", n.type), el("td", "num", String(n.count)),
              el("td", "num", String(n.duplicates)), scrubbed, el("td", "", n.context.join(", ")), el("td", "", n.consent_dropped_context.join(", ") || "—")));
          }
          table.appendChild(tbody);
          root.appendChild(table);
          root.appendChild(el("h3", "", "Received again after acknowledgement (" + data.duplicates_after_ack.length + ")"));
          const dup = el("ul", "duplicates");
          for (const d of data.duplicates_after_ack) dup.appendChild(el("li", "flagged", short(d.name) + " " + d.event_id + ": first in request " + d.first_request_id + ", again in request " + d.again_request_id));
          root.appendChild(dup);
          root.appendChild(el("h3", "", "Identity link requests (" + data.links.length + ")"));
          const links = el("ul", "links");
          for (const l of data.links) links.appendChild(el("li", "", l.time.slice(11, 23) + " " + short(l.anonymous_id) + " → " + short(l.user_id) + " ", badge(l.outcome)));
          root.appendChild(links);
        }

        // MARK: rocalytics

        async function renderRocalytics() {
          const data = await getJSON("/api/rocalytics");
          const root = document.getElementById("rocalytics-content");
          clear(root);
          if (!data.devices.length) root.appendChild(el("p", "hint", "No Rocalytics requests received yet."));
          for (const d of data.devices) {
            const box = el("section", "device", el("h3", "", "roca id " + short(d.roca_id)), el("p", "meta", "last request " + d.last));
            const list = el("ul", "counts");
            for (const [what, count] of Object.entries(d.counts)) list.appendChild(el("li", "", short(what) + ": " + count));
            box.appendChild(list);
            root.appendChild(box);
          }
          // The Rocalytics API's status route, asked for each application that sent a track event:
          // the check a developer runs after setup (install, onboarding_completed, purchase arriving).
          root.appendChild(el("h3", "", "Ingestion status (GET /functions/v1/status?app=…)"));
          if (!data.applications.length) root.appendChild(el("p", "hint", "No track event received yet: no application to show."));
          for (const app of data.applications) {
            const status = await getJSON("/functions/v1/status?app=" + encodeURIComponent(app));
            const box = el("section", "app-status", el("h4", "", "application " + short(status.application_id)));
            const table = el("table", "status-table", el("thead", "", el("tr", "", ...["Event", "Count", "Latest received"].map(h => el("th", "", h)))));
            const tbody = el("tbody", "");
            for (const e of status.events) tbody.appendChild(el("tr", "", el("td", "", short(e.name)), el("td", "", e.count), el("td", "", e.latest_received_at)));
            table.appendChild(tbody);
            box.appendChild(table);
            const names = status.events.map(e => e.name);
            const missing = ["install", "onboarding_completed", "purchase"].filter(n => !names.includes(n));
            if (missing.length) box.appendChild(el("p", "hint", "not received yet: " + missing.join(", ")));
            root.appendChild(box);
          }
          root.appendChild(el("h3", "", "Completed onboarding runs"));
          const table = el("table", "runs-table", el("thead", "", el("tr", "", ...["Run", "Roca id", "Onboarding", "Completed", "onboarding_completed sent"].map(h => el("th", "", h)))));
          const tbody = el("tbody", "");
          for (const r of data.completed_runs) {
            tbody.appendChild(el("tr", r.onboarding_completed_sent ? "" : "flagged", el("td", "", r.run_id), el("td", "", short(r.roca_id)), el("td", "", short(r.onboarding)),
              el("td", "", r.completed_at), el("td", "", r.onboarding_completed_sent ? "yes" : "no")));
          }
          table.appendChild(tbody);
          root.appendChild(table);
        }

        // MARK: navigation

        const renderers = { payload: renderPayload, funnels: renderFunnels, paywalls: renderPaywalls, score: renderScore, rocalytics: renderRocalytics };
        async function refreshView() {
          clearTimeout(state.viewTimer);
          const render = renderers[state.view];
          if (!render) return;
          try { await render(); } catch (e) { document.getElementById("live-status").textContent = e.message; }
          if (state.view !== "payload") state.viewTimer = setTimeout(refreshView, 2000);
        }
        function show(view) {
          state.view = view;
          for (const section of document.querySelectorAll("main > section.view")) section.hidden = section.id !== "view-" + view;
          for (const tab of document.querySelectorAll("nav button")) tab.classList.toggle("active", tab.dataset.view === view);
          if (location.hash !== "#" + view) history.replaceState(null, "", "#" + view);
          refreshView();
        }
        document.addEventListener("DOMContentLoaded", () => {
          for (const tab of document.querySelectorAll("nav button")) tab.addEventListener("click", () => show(tab.dataset.view));
          document.getElementById("filter-kind").addEventListener("change", applyFilters);
          document.getElementById("filter-outcome").addEventListener("change", applyFilters);
          const initial = location.hash.slice(1);
          show(["live", "payload", "funnels", "paywalls", "score", "rocalytics"].includes(initial) ? initial : "live");
          poll();
        });
        """#
}

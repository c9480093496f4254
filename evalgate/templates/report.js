// evalgate report.html: draws the cases from the JSON data block. Every piece of text from
// the data goes into the page through textContent (via txt()), never as markup: the page's
// CSP forbids HTML sinks anyway (Trusted Types), so a mistake would throw, not execute.
// Every message a reader sees goes through t(message) or nt(singular, plural, n), with
// double-quoted literals: Babel extracts them from here into evalgate's catalogs, and the
// page's data carries the translations of exactly these messages ("i18n"; none in English).
"use strict";
(function () {
  var D = JSON.parse(document.getElementById("evalgate-data").textContent);
  var CASES = D.cases;
  var ROW = 54; // px; .row's height in report.css
  var I18N = D.i18n || { t: {}, nt: {} };
  var STATUS = { P: t("passed"), F: t("failed"), N: t("not evaluated"), R: t("removed") };
  var KIND = {
    regressed: t("regressed"),
    broken_stable: t("broken stable"),
    fixed: t("fixed"),
    flaky: t("flaky"),
    unsteady: t("samples disagree"),
    flaky_main: t("flaky on the default branch"),
    score_drop: t("score dropped"),
    score_rise: t("score rose"),
    added: t("added"),
    changed: t("changed"),
    removed: t("removed")
  };
  // Characters that would hide or reorder text are shown as marks (as the Markdown report
  // does): controls but newline and tab, format characters but the joiners, surrogates.
  var HIDDEN = /(?![\n\t\u200c\u200d])[\p{Cc}\p{Cf}\p{Cs}]/gu;

  function $(id) { return document.getElementById(id); }

  function own(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }

  // A message's {fields} filled in one pass (a value's own braces stay as they are).
  function fill(text, fields) {
    if (!fields) return text;
    return text.replace(/\{(\w+)\}/g, function (m, k) { return own(fields, k) ? String(fields[k]) : m; });
  }

  // A message in the page's language.
  function t(message, fields) {
    return fill(own(I18N.t, message) ? I18N.t[message] : message, fields);
  }

  // A message that depends on a count n ({n} in it, thousands separated as evalgate's n_
  // does): the page's language has at most English's two forms, for 1 and for other counts.
  function nt(singular, plural, n, fields) {
    var forms = own(I18N.nt, singular) ? I18N.nt[singular] : [singular, plural];
    var all = { n: count(n) };
    for (var k in fields || {}) if (own(fields, k)) all[k] = fields[k];
    return fill(forms[n === 1 ? 0 : 1], all);
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) txt(e, text);
    return e;
  }

  function txt(parent, value) {
    var s = String(value);
    var last = 0, m;
    HIDDEN.lastIndex = 0;
    while ((m = HIDDEN.exec(s)) !== null) {
      if (m.index > last) parent.appendChild(document.createTextNode(s.slice(last, m.index)));
      var code = m[0].codePointAt(0).toString(16).toUpperCase();
      var mark = document.createElement("span");
      mark.className = "ctl";
      mark.textContent = "U+" + ("0000" + code).slice(-Math.max(4, code.length));
      mark.title = t("a hidden character, shown");
      parent.appendChild(mark);
      last = m.index + m[0].length;
    }
    if (last < s.length) parent.appendChild(document.createTextNode(last ? s.slice(last) : s));
    return parent;
  }

  function add(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }

  function num(x, digits) {
    return x === undefined || x === null ? "–" : Number(x).toFixed(digits === undefined ? 2 : digits);
  }

  function count(n) { return Number(n).toLocaleString("en-US"); }

  function crit(index) { return D.criteria[index]; }

  function pill(status) { return el("span", "pill st-" + status, STATUS[status] || status); }

  function tag(kind) { return el("span", "tag ch-" + kind, KIND[kind] || kind); }

  // --- filtering ---------------------------------------------------------------------------

  var state = { q: "", suite: "", crit: "", status: "", change: "" };
  var view = [];
  var selected = -1;
  var hay = [];

  function haystack(i) {
    if (hay[i] !== undefined) return hay[i];
    var c = CASES[i];
    var parts = [D.suites[c.s], c.set, c.id, c.end || ""];
    c.crit.forEach(function (r) { parts.push(crit(r.c)); if (r.err) parts.push(r.err); });
    c.inv.forEach(function (v) {
      parts.push(v.u, v.ar, v.er || "", v.br || "");
      v.tools.forEach(function (l) { parts.push(l[1]); });
      (v.btools || []).forEach(function (l) { parts.push(l[1]); });
    });
    c.judge.forEach(function (j) {
      j.per.forEach(function (p) {
        if (p.err) parts.push(p.err);
        if (p.expl) parts.push(p.expl);
        (p.samples || []).forEach(function (s) { if (s.why) parts.push(s.why); });
        (p.reasons || []).forEach(function (r) { parts.push(r); });
        (p.rubrics || []).forEach(function (r) { parts.push(r.id, r.why); });
      });
    });
    hay[i] = parts.join("\n").toLowerCase();
    return hay[i];
  }

  function statusOk(st, want, incomplete) {
    if (want === "I") return incomplete;
    return st === want;
  }

  function matches(i) {
    var c = CASES[i];
    if (state.suite !== "" && c.s !== Number(state.suite)) return false;
    if (state.crit !== "") {
      var k = Number(state.crit), r = null;
      for (var n = 0; n < c.crit.length; n++) if (c.crit[n].c === k) r = c.crit[n];
      if (!r) return false;
      if (state.status && !statusOk(r.st, state.status, r.st === "N")) return false;
    } else if (state.status) {
      var incomplete = c.crit.some(function (x) { return x.st === "N"; });
      if (!statusOk(c.st, state.status, incomplete)) return false;
    }
    var ch = state.change;
    if (ch) {
      if (ch === "flaky") { if (!c.flaky && !c.hist) return false; }
      else if (ch === "regressed") { if (c.ch !== "regressed" && c.ch !== "broken_stable") return false; }
      else if (ch === "moved") { if (c.ch !== "score_drop" && c.ch !== "score_rise") return false; }
      else if (c.ch !== ch) return false;
    }
    if (state.q && haystack(i).indexOf(state.q) < 0) return false;
    return true;
  }

  function applyFilters() {
    view = [];
    for (var i = 0; i < CASES.length; i++) if (matches(i)) view.push(i);
    $("count").textContent = nt("Showing {shown} of {n} case", "Showing {shown} of {n} cases", CASES.length, { shown: count(view.length) });
    $("empty").hidden = view.length > 0;
    $("spacer").style.height = view.length * ROW + "px";
    $("list").scrollTop = 0;
    drawList();
    if (view.length && view.indexOf(selected) < 0) select(view[0], false);
    if (!view.length) { selected = -1; showEmptyDetail(); }
  }

  function showEmptyDetail() {
    var d = $("detail");
    d.replaceChildren(el("p", "muted", t("No case matches these filters.")));
  }

  // --- the list (virtual: only the rows in sight exist) ------------------------------------

  function rowFor(i) {
    var c = CASES[i];
    var row = el("div", "row" + (i === selected ? " sel" : ""));
    row.setAttribute("role", "option");
    row.setAttribute("aria-selected", i === selected ? "true" : "false");
    row.dataset.i = String(i);
    var line1 = el("div", "l1");
    add(line1, pill(c.st), c.ch && c.st !== "R" ? tag(c.ch) : null, c.hist ? tag("flaky_main") : null, c.flaky ? tag("unsteady") : null);
    add(line1, el("span", "id t", c.id));
    var line2 = el("div", "l2 muted");
    add(line2, el("span", "t", D.suites[c.s] + " · " + c.set));
    var bad = c.crit.filter(function (r) { return r.st !== "P"; }).slice(0, 3);
    bad.forEach(function (r) {
      var s = el("span", "mini st-" + r.st);
      txt(s, crit(r.c) + " " + (r.st === "N" ? t("not evaluated") : (r.bsc !== undefined ? num(r.bsc) + " → " : "") + num(r.sc)));
      line2.appendChild(s);
    });
    return add(row, line1, line2);
  }

  function drawList() {
    var list = $("list"), rows = $("rows");
    var top = list.scrollTop, height = list.clientHeight || 600;
    var first = Math.max(0, Math.floor(top / ROW) - 8);
    var last = Math.min(view.length, Math.ceil((top + height) / ROW) + 8);
    rows.style.transform = "translateY(" + first * ROW + "px)";
    var out = [];
    for (var k = first; k < last; k++) out.push(rowFor(view[k]));
    rows.replaceChildren.apply(rows, out);
  }

  function select(i, focusList) {
    selected = i;
    drawList();
    drawDetail(CASES[i]);
    $("detail").scrollTop = 0;
    if (focusList) {
      var list = $("list"), k = view.indexOf(i);
      if (k * ROW < list.scrollTop) list.scrollTop = k * ROW;
      else if ((k + 1) * ROW > list.scrollTop + list.clientHeight) list.scrollTop = (k + 1) * ROW - list.clientHeight;
      drawList();
    }
  }

  // --- one case ----------------------------------------------------------------------------

  function section(title, cls) {
    var s = el("section", "block" + (cls ? " " + cls : ""));
    if (title) s.appendChild(el("h3", null, title));
    return s;
  }

  function textBox(label, text, cls) {
    var box = el("div", "box" + (cls ? " " + cls : ""));
    if (label) box.appendChild(el("div", "label", label));
    box.appendChild(el("pre", "text t", text === "" ? "" : text));
    if (text === "") box.appendChild(el("div", "muted small", t("(empty)")));
    return box;
  }

  function diff(lines, legend) {
    var box = el("div", "box tools");
    var head = el("div", "label", t("Tool calls"));
    head.appendChild(el("span", "legend muted", legend));
    box.appendChild(head);
    if (!lines.length) { box.appendChild(el("div", "muted small", t("no tool calls"))); return box; }
    var pre = el("pre", "diff t");
    lines.forEach(function (l) {
      var cls = l[0] === "-" ? "del" : l[0] === "+" ? "ins" : "eq";
      var line = el("span", "dl " + cls);
      line.appendChild(el("span", "sign", l[0] === "." ? " " : l[0]));
      txt(line, l[1]);
      pre.appendChild(line);
    });
    box.appendChild(pre);
    return box;
  }

  function criteriaTable(c) {
    var table = el("table", "grid");
    var head = el("tr");
    [t("criterion"), t("threshold")].concat(D.baseline ? [t("baseline")] : [], [t("score"), t("status"), ""]).forEach(function (h, n) {
      head.appendChild(el("th", n && n < (D.baseline ? 4 : 3) ? "num" : null, h));
    });
    add(table, add(el("thead"), head));
    var body = el("tbody");
    c.crit.forEach(function (r) {
      var tr = el("tr");
      var name = el("td");
      add(name, el("span", "t mono", crit(r.c)), D.judge.indexOf(crit(r.c)) >= 0 ? el("span", "kind", t("judge")) : null);
      tr.appendChild(name);
      tr.appendChild(el("td", "num", num(r.th)));
      if (D.baseline) {
        var b = el("td", "num", r.bst ? (r.bst === "N" ? "–" : num(r.bsc)) : "–");
        if (r.bst && r.bst !== r.st) b.appendChild(el("span", "mini st-" + r.bst, STATUS[r.bst]));
        tr.appendChild(b);
      }
      tr.appendChild(el("td", "num", num(r.sc)));
      tr.appendChild(add(el("td"), pill(r.st), r.flaky ? tag("unsteady") : null));
      var note = el("td", "small");
      // TRANSLATORS: between the items of a list in report.html ("0.50, 0.70"); Japanese: "、".
      var sep = t(", ");  // apart from the t() below: a t() inside another's arguments is not extracted
      if (r.runs) note.appendChild(el("span", "muted", t("runs: {scores}", { scores: r.runs.map(function (x) { return num(x); }).join(sep) })));
      tr.appendChild(note);
      body.appendChild(tr);
    });
    return add(table, body);
  }

  // ADK's efficiency metrics of a case: its value per turn, then each turn's (each run's turns in order).
  function efficiencyTable(e) {
    var table = el("table", "grid");
    var head = el("tr");
    ["", t("tool calls"), t("model calls"), t("tokens"), t("seconds")].forEach(function (h, n) { head.appendChild(el("th", n ? "num" : null, h)); });
    add(table, add(el("thead"), head));
    var body = el("tbody");
    [[t("per turn"), e.case]].concat(e.per.map(function (cells, k) { return [e.runs ? t("invocation {i}", { i: k + 1 }) : t("turn {i}", { i: k + 1 }), cells]; })).forEach(function (row) {
      var tr = el("tr");
      tr.appendChild(el("td", "muted", row[0]));
      row[1].forEach(function (x) { tr.appendChild(el("td", "num", x)); });
      body.appendChild(tr);
    });
    return add(table, body);
  }

  function sampleTable(p) {
    var table = el("table", "grid samples");
    add(table, add(el("thead"), add(el("tr"), el("th", "num", t("sample")), el("th", "num", t("score")), el("th", null, t("verdict")), el("th", null, t("reason")))));
    var body = el("tbody");
    p.samples.forEach(function (s, n) {
      var verdict = s.ok === null || s.ok === undefined ? el("span", "mini st-N", t("failed")) : el("span", "mini st-" + (s.ok ? "P" : "F"), s.ok ? t("pass") : t("fail"));
      add(body, add(el("tr"), el("td", "num", String(n + 1)), el("td", "num", num(s.sc)), add(el("td"), verdict), el("td", "t why", s.why || "")));
    });
    return add(table, body);
  }

  function rubricTable(rubrics) {
    var table = el("table", "grid rubrics");
    add(table, add(el("thead"), add(el("tr"), el("th", null, t("rubric")), el("th", null, t("verdict")), el("th", null, t("rationale")))));
    var body = el("tbody");
    rubrics.forEach(function (r) {
      var id = el("td", "t");
      id.appendChild(el("span", "mono", r.id));
      if (r.text) id.appendChild(el("div", "muted small t", r.text));
      var v = el("td");
      v.appendChild(el("span", "mini st-" + (r.v === "yes" ? "P" : r.v === "no" ? "F" : "N"), r.v === "yes" ? t("yes") : r.v === "no" ? t("no") : r.v));
      if (r.votes) v.appendChild(el("div", "muted small", r.votes));
      add(body, add(el("tr"), id, v, el("td", "t why", r.why)));
    });
    return add(table, body);
  }

  function sentenceTable(sentences) {
    var table = el("table", "grid");
    add(table, add(el("thead"), add(el("tr"), el("th", "num", t("sample")), el("th", null, t("sentence")), el("th", null, t("label")), el("th", null, t("why")))));
    var body = el("tbody");
    sentences.forEach(function (s) {
      add(body, add(el("tr"), el("td", "num", s.sample === null || s.sample === undefined ? "" : String(s.sample + 1)), el("td", "t", s.text), el("td", "t", s.label), el("td", "t why", s.why)));
    });
    return add(table, body);
  }

  function judgement(p, where) {
    var box = el("details", "judge st-" + p.st);
    if (p.st !== "P") box.open = true;
    var sum = el("summary");
    add(sum, el("span", "t mono", crit(p.c)), el("span", "num", num(p.sc)), pill(p.st));
    if (where) sum.appendChild(el("span", "muted small", where));
    box.appendChild(sum);
    if (p.err) box.appendChild(textBox(t("Not evaluated"), p.err, "error"));
    if (p.expl) box.appendChild(textBox(p.metric ? t("Explanation ({metric})", { metric: p.metric }) : t("Explanation"), p.expl));
    if (p.samples) box.appendChild(sampleTable(p));
    if (p.reasons) {
      var ul = el("ul", "reasons");
      p.reasons.forEach(function (r) { ul.appendChild(el("li", "t", r)); });
      box.appendChild(ul);
    }
    if (p.rubrics) box.appendChild(rubricTable(p.rubrics));
    if (p.sentences) {
      var more = el("details", "sub");
      more.appendChild(el("summary", null, nt("{n} labelled sentence", "{n} labelled sentences", p.sentences.length)));
      more.appendChild(sentenceTable(p.sentences));
      box.appendChild(more);
    }
    if (p.other) {
      var other = el("div", "box");
      other.appendChild(el("div", "label", t("Details")));
      var dl = el("dl", "kv");
      p.other.forEach(function (kv) { add(dl, el("dt", "t", kv[0]), el("dd", "t", kv[1])); });
      box.appendChild(add(other, dl));
    }
    if (!p.err && !p.expl && !p.samples && !p.reasons && !p.rubrics && !p.sentences && !p.other) {
      box.appendChild(el("div", "muted small", t("No details recorded.")));
    }
    return box;
  }

  // Which turn (and run) each criterion's per-invocation verdict belongs to.
  function placeVerdicts(c) {
    var n = c.inv.length, byTurn = [], rest = [];
    for (var i = 0; i < n; i++) byTurn.push([]);
    c.judge.forEach(function (j) {
      var runs = j.runs || 1;
      j.per.forEach(function (p, k) {
        if (n && j.per.length === n * runs) byTurn[k % n].push([p, runs > 1 ? t("run {i}", { i: Math.floor(k / n) + 1 }) : ""]);
        else rest.push([p, t("invocation {i}", { i: k + 1 })]);
      });
    });
    return { byTurn: byTurn, rest: rest };
  }

  function responses(c, v) {
    var grid = el("div", "responses");
    if (v.er !== undefined) grid.appendChild(textBox(t("Expected"), v.er, "expected"));
    if (v.br !== undefined) grid.appendChild(textBox(t("Baseline"), v.br, "baseline"));
    grid.appendChild(textBox(v.br !== undefined ? t("Current") : t("Response"), v.ar, "actual"));
    grid.classList.add("cols-" + grid.childElementCount);
    return grid;
  }

  // What the agent wrote while the case ran: [run, text] per run, collapsed.
  // gate.confirm: each confirmation run of a suspect, apart from its first run.
  function reruns(rr) {
    var box = section(t("Confirmation runs"), "reruns");
    rr.forEach(function (r) {
      var p = el("p", "t");
      add(p, el("span", "mono", t("{how} {run} ({status})", { how: r[1], run: r[0], status: STATUS[r[2]] || r[2] }) + ": "));
      txt(p, r[3]);
      box.appendChild(p);
      if (r[4]) box.appendChild(el("pre", "diff t", r[4]));
    });
    return box;
  }

  function agentLogs(logs) {
    var box = section(t("Agent output"), "logs");
    var many = logs.length > 1 || logs[0][0] !== 1;
    logs.forEach(function (l) {
      var lines = l[2] || l[1].split("\n").length;  // the whole log's lines, as the terminal counts them
      var det = el("details", "log");
      var what = nt("{n} line of logs, stdout and stderr", "{n} lines of logs, stdout and stderr", lines);
      det.appendChild(el("summary", null, many ? t("run {i}: {what}", { i: l[0], what: what }) : what));
      det.appendChild(el("pre", "diff t", l[1]));
      box.appendChild(det);
    });
    return box;
  }

  // gate.pairwise: each changed answer beside the baseline's, and the judge's verdict in each order.
  var PW_OUTCOME = { win: t("better than the baseline's"), loss: t("worse than the baseline's"), tie: t("as good as the baseline's"),
    not_evaluated: t("not evaluated"), left_out: t("not judged (beyond {key})", { key: "max_cases" }) };
  var PW_PICK = { current: t("prefers this run's answer"), baseline: t("prefers the baseline's answer"), equal: t("equally good"), "": t("no verdict") };

  function sideBySide(pw) {
    var box = section(t("Judged side by side with the baseline"));
    var outcome = PW_OUTCOME[pw.o] || pw.o;
    var head = el("p", null, pw.inv.length ? t("{outcome} (net {net})", { outcome: outcome, net: pw.net })
      : pw.o === "tie" ? t("{outcome}: the answers did not change", { outcome: outcome }) : outcome);
    box.appendChild(head);
    if (pw.err) box.appendChild(el("p", "muted t", pw.err));
    pw.inv.forEach(function (p) {
      var turn = el("div", "turn");
      turn.appendChild(el("div", "turn-n muted small", t("invocation {i}", { i: p.i + 1 })));
      var grid = el("div", "responses cols-2");
      grid.appendChild(textBox(t("Baseline"), p.b, "baseline"));
      grid.appendChild(textBox(t("Current"), p.c, "actual"));
      turn.appendChild(grid);
      var table = el("table", "grid");
      var hr = el("tr");
      [t("sample"), t("shown as A"), t("verdict"), t("reason")].forEach(function (h) { hr.appendChild(el("th", null, h)); });
      add(table, add(el("thead"), hr));
      var body = el("tbody");
      p.v.forEach(function (v, n) {
        var tr = el("tr");
        add(tr, el("td", "num", String(n + 1)), el("td", null, v.cf ? t("current") : t("baseline")), el("td", null, PW_PICK[v.pick] || v.pick), el("td", "t", v.why));
        body.appendChild(tr);
      });
      table.appendChild(body);
      turn.appendChild(add(el("div", "scroll"), table));
      box.appendChild(turn);
    });
    return box;
  }

  function drawDetail(c) {
    var d = el("div");
    var head = el("header", "case-head");
    var title = el("h2", "t");
    txt(title, c.set + " / " + c.id);
    head.appendChild(title);
    var meta = el("div", "meta");
    add(meta, pill(c.st), c.ch && c.st !== "R" ? tag(c.ch) : null, c.hist ? tag("flaky_main") : null, c.flaky ? tag("unsteady") : null);
    // A regressed case that fails on the default branch too: its record there, which is why
    // the gate does not blame the pull request for it (the comment and the terminal say so).
    if (c.hist) meta.appendChild(el("span", "muted t", t("{history}: not blamed on this pull request", { history: c.hist })));
    add(meta, add(el("span"), el("span", "muted", t("suite") + " "), el("span", "t", D.suites[c.s])));
    if (c.bst) meta.appendChild(el("span", "muted", t("baseline: {status}", { status: STATUS[c.bst] })));
    if (c.p !== undefined) {
      meta.appendChild(el("span", "muted", c.padj !== undefined ? t("p = {p}, {adjusted} after Holm", { p: num(c.p, 4), adjusted: num(c.padj, 4) }) : "p = " + num(c.p, 4)));
    }
    if (c.end) meta.appendChild(el("span", "muted t", t("conversation ended: {why}", { why: c.end })));
    head.appendChild(meta);
    if (c.src) {
      var src = el("div", "muted small src");
      Object.keys(c.src).forEach(function (k) { src.appendChild(el("span", "t", k + ": " + c.src[k])); });
      head.appendChild(src);
    }
    d.appendChild(head);

    if (c.st === "R") {
      d.appendChild(el("p", "muted", t("In the baseline, not in this run.")));
      $("detail").replaceChildren(d);
      return;
    }
    var ne = c.crit.filter(function (r) { return r.st === "N"; });
    if (ne.length) {
      var box = section(t("Not evaluated"), "ne");
      ne.forEach(function (r) {
        var p = el("p", "t");
        add(p, el("span", "mono", crit(r.c) + ": "));
        txt(p, r.err || t("not evaluated"));
        box.appendChild(p);
      });
      d.appendChild(box);
    }
    if (c.rr) d.appendChild(reruns(c.rr));
    if (c.log) d.appendChild(agentLogs(c.log));
    var crits = section(t("Criteria"));
    crits.appendChild(add(el("div", "scroll"), criteriaTable(c)));
    d.appendChild(crits);

    if (c.eff) {
      var eff = section(t("Efficiency (informational)"));
      eff.appendChild(add(el("div", "scroll"), efficiencyTable(c.eff)));
      d.appendChild(eff);
    }

    var placed = placeVerdicts(c);
    if (c.inv.length) {
      var conv = section(t("Conversation"));
      c.inv.forEach(function (v, k) {
        var turn = el("div", "turn");
        turn.appendChild(el("div", "turn-n muted small", t("turn {i} of {turns}", { i: k + 1, turns: c.inv.length })));
        turn.appendChild(textBox(t("User"), v.u, "user"));
        turn.appendChild(diff(v.tools, v.tools.some(function (l) { return l[0] === "."; }) ? t("actual (no expected calls given)") : t("− expected   + actual")));
        if (v.btools) turn.appendChild(diff(v.btools, t("− baseline   + current")));
        turn.appendChild(responses(c, v));
        if (D.baseline && c.bst && v.br === undefined) turn.appendChild(el("div", "muted small", t("The baseline's response was the same.")));
        var verdicts = placed.byTurn[k];
        if (verdicts.length) {
          var j = el("div", "verdicts");
          verdicts.forEach(function (x) { j.appendChild(judgement(x[0], x[1])); });
          turn.appendChild(j);
        }
        conv.appendChild(turn);
      });
      d.appendChild(conv);
    }
    if (c.pw) d.appendChild(sideBySide(c.pw));
    if (placed.rest.length) {
      var rest = section(c.inv.length ? t("Other verdicts") : t("Verdicts"));
      placed.rest.forEach(function (x) { rest.appendChild(judgement(x[0], x[1])); });
      d.appendChild(rest);
    }
    if (!c.inv.length && !placed.rest.length) d.appendChild(el("p", "muted", t("No invocations recorded for this case.")));
    $("detail").replaceChildren(d);
  }

  // --- controls ------------------------------------------------------------------------------

  function fillSelect(id, names) {
    var s = $(id);
    names.forEach(function (name, i) {
      var o = document.createElement("option");
      o.value = String(i);
      txt(o, name);
      s.appendChild(o);
    });
  }

  var shown = false;

  function showTab(name) {
    ["overview", "cases", "usage"].forEach(function (tab) { $(tab).hidden = tab !== name; });
    document.querySelectorAll("[data-tab]").forEach(function (b) {
      b.setAttribute("aria-selected", b.dataset.tab === name ? "true" : "false");
    });
    if (name === "cases") {
      if (!shown) { shown = true; applyFilters(); }
      else drawList();
    }
  }

  function setFilters(f) {
    state.suite = f.suite || "";
    state.crit = f.crit || "";
    state.status = f.status || "";
    state.change = f.change || "";
    state.q = "";
    $("q").value = "";
    $("f-suite").value = state.suite;
    $("f-crit").value = state.crit;
    $("f-status").value = state.status;
    $("f-change").value = state.change;
    shown = true;
    showTab("cases");
    applyFilters();
  }

  function init() {
    fillSelect("f-suite", D.suites);
    fillSelect("f-crit", D.criteria);
    [["f-suite", "suite"], ["f-crit", "crit"], ["f-status", "status"], ["f-change", "change"]].forEach(function (x) {
      $(x[0]).addEventListener("change", function () { state[x[1]] = $(x[0]).value; applyFilters(); });
    });
    $("q").addEventListener("input", function () { state.q = $("q").value.trim().toLowerCase(); applyFilters(); });
    $("f-clear").addEventListener("click", function () { setFilters({}); });
    $("list").addEventListener("scroll", drawList, { passive: true });
    window.addEventListener("resize", drawList);
    $("rows").addEventListener("click", function (e) {
      var row = e.target.closest(".row");
      if (row) select(Number(row.dataset.i), false);
    });
    $("list").addEventListener("keydown", function (e) {
      var k = view.indexOf(selected), page = Math.max(1, Math.floor($("list").clientHeight / ROW) - 1);
      var to = { ArrowDown: k + 1, ArrowUp: k - 1, PageDown: k + page, PageUp: k - page, Home: 0, End: view.length - 1 }[e.key];
      if (to === undefined || !view.length) return;
      e.preventDefault();
      select(view[Math.max(0, Math.min(view.length - 1, to))], true);
    });
    document.querySelectorAll("[data-tab]").forEach(function (b) {
      b.addEventListener("click", function () { showTab(b.dataset.tab); });
    });
    document.querySelectorAll("[data-go]").forEach(function (b) {
      b.addEventListener("click", function () {
        setFilters({ suite: b.dataset.suite, crit: b.dataset.crit, status: b.dataset.status, change: b.dataset.change });
      });
    });
    document.body.classList.add("ready");
  }

  init();
})();

// The page of smt-serve: sends the text box to POST /translate (one sentence per line) and shows, per sentence,
// the translation, its phrase segmentation (source and target phrases linked on hover), each feature's
// value x weight for the 1-best and the n-best list, and RNNsearch's attention where the system has the model.
// No framework, nothing fetched but this server's own routes; all text goes in with textContent.
"use strict";

let attention = false;
const PALETTE = ["#cfe3f7", "#d7f0d2", "#f9dccd", "#e6d9f5", "#f6efc3", "#cdeeee", "#f4d3e3", "#dfe6c8"];

function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "text") node.textContent = v;
    else if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.appendChild(c);
  return node;
}

function fmt(x, digits = 3) {
  return x === null || x === undefined ? "–" : Number(x).toFixed(digits);
}

async function loadInfo() {
  const status = document.getElementById("system");
  try {
    const info = await (await fetch("/info")).json();
    attention = Boolean(info.attention);
    const rerank = info.rerank ? `, reranked ${info.rerank.nbest_size}-best with ` +
      info.rerank.features.map((f) => f.name).join(" ") : "";
    status.textContent = `System ${info.system}` + (info.run ? ` (run ${info.run})` : "") +
      `: ${info.languages.source} → ${info.languages.target}, ${info.decoder.search} search` + rerank +
      (attention ? `; attention of ${info.attention}` : "");
    const nbest = document.getElementById("nbest");
    nbest.max = info.limits.max_nbest;
    if (Number(nbest.value) > info.limits.max_nbest) nbest.value = info.limits.max_nbest;
  } catch (err) {
    status.textContent = "cannot read /info: " + err;
  }
}

function link(group, on) {
  for (const node of document.querySelectorAll(`.phrase[data-group="${group}"]`)) node.classList.toggle("linked", on);
}

function segmentation(k, r) {
  // one coloured span per phrase, source phrases in source order, target phrases in target order
  const src = [...r.segments].map((s, i) => ({ ...s, i })).sort((a, b) => a.src_start - b.src_start);
  const rows = [["source", src, "source", "src-phrase"], ["target", r.segments.map((s, i) => ({ ...s, i })), "target", "tgt-phrase"]];
  const box = el("div", { class: "phrases" });
  for (const [tag, segs, field, cls] of rows) {
    const row = el("div", { class: "row" }, [el("span", { class: "tag", text: tag })]);
    for (const s of segs) {
      const group = `${k}-${s.i}`;
      const span = el("span", { class: `phrase ${cls}`, "data-group": group, "data-seg": String(s.i),
        title: `source ${s.src_start}–${s.src_end} → target ${s.tgt_start}–${s.tgt_end}`, text: s[field] || "∅" });
      span.style.backgroundColor = PALETTE[s.i % PALETTE.length];
      span.addEventListener("mouseenter", () => link(group, true));
      span.addEventListener("mouseleave", () => link(group, false));
      row.appendChild(span);
    }
    box.appendChild(row);
  }
  return box;
}

function featureTable(best) {
  const head = el("tr", {}, ["feature", "value(s)", "weight(s)", "value × weight"].map((t) => el("th", { text: t })));
  const table = el("table", { class: "features" }, [el("thead", {}, [head])]);
  const body = el("tbody");
  for (const f of best.features) {
    const c = el("td", { text: fmt(f.contribution), class: f.contribution < 0 ? "neg" : "pos" });
    body.appendChild(el("tr", {}, [el("td", { text: f.name + (f.tuneable === false ? " (fixed)" : "") }),
      el("td", { text: f.values.map((v) => fmt(v)).join(" ") }), el("td", { text: f.weights.map((w) => fmt(w, 4)).join(" ") }), c]));
  }
  body.appendChild(el("tr", { class: "best" }, [el("td", { text: "total" }), el("td"), el("td"), el("td", { text: fmt(best.total) })]));
  table.appendChild(body);
  return table;
}

function nbestTable(list) {
  const names = list[0].features.map((f) => f.name);
  const head = el("tr", {}, ["#", "hypothesis", "total", ...names].map((t) => el("th", { text: t })));
  const body = el("tbody");
  list.forEach((h, i) => {
    const cells = [el("td", { text: String(i + 1) }), el("td", { class: "hyp", text: h.text }), el("td", { text: fmt(h.total) })];
    for (const f of h.features) cells.push(el("td", { text: fmt(f.contribution), class: f.contribution < 0 ? "neg" : "pos" }));
    body.appendChild(el("tr", { class: i === 0 ? "best" : "" }, cells));
  });
  return el("div", { class: "scroll" }, [el("table", { class: "nbest" }, [el("thead", {}, [head]), body])]);
}

function heatmap(a) {
  // rows: target tokens (then </s>), columns: source tokens (then </s>); the shade of a cell is its weight relative
  // to the largest of its row (the exact alpha is in its tooltip)
  const head = el("tr", {}, [el("th"), ...a.source.map((w) => el("th", { text: w }))]);
  const body = el("tbody");
  a.rows.forEach((row, t) => {
    const tr = el("tr", {}, [el("th", { text: a.target[t] })]);
    const top = Math.max(...row) || 1;
    row.forEach((p, s) => {
      const td = el("td", { title: `${a.target[t]} → ${a.source[s]}: α = ${p.toFixed(3)}` });
      td.style.backgroundColor = `rgba(31, 92, 153, ${(p / top).toFixed(3)})`;
      tr.appendChild(td);
    });
    body.appendChild(tr);
  });
  return el("div", { class: "scroll" }, [el("table", { class: "heat" }, [el("thead", {}, [head]), body])]);
}

function render(results) {
  const out = document.getElementById("results");
  out.replaceChildren();
  results.forEach((r, k) => {
    const card = el("section", { class: "sentence" }, [
      el("div", { class: "muted", text: r.source }),
      el("div", { class: "translation", text: r.translation }),
      el("h3", { text: "Phrase segmentation" }), segmentation(k, r),
      el("h3", { text: "Features of the 1-best" }), featureTable({ features: r.features, total: r.total }),
    ]);
    if (r.nbest && r.nbest.length > 1) card.append(el("h3", { text: `n-best list (${r.nbest.length}): value × weight per feature` }), nbestTable(r.nbest));
    if (r.attention) card.append(el("h3", { text: `Attention α of ${r.attention.model} over this translation (shade: α / the row's largest α)` }), heatmap(r.attention));
    out.appendChild(card);
  });
}

async function translate(event) {
  event.preventDefault();
  const status = document.getElementById("status");
  const lines = document.getElementById("source").value.split("\n").filter((l) => l.trim());
  if (!lines.length) { status.textContent = "type a sentence first"; return; }
  status.textContent = "translating…";
  const body = { text: lines, nbest: Number(document.getElementById("nbest").value) || 1, trace: true, scores: true, attention };
  try {
    const resp = await fetch("/translate", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const data = await resp.json();
    if (!resp.ok) { status.replaceChildren(el("span", { class: "error", text: data.error })); return; }
    render(data.translations);
    status.textContent = `${data.translations.length} sentence(s) in ${data.seconds.toFixed(2)} s`;
  } catch (err) {
    status.replaceChildren(el("span", { class: "error", text: String(err) }));
  }
}

document.getElementById("form").addEventListener("submit", translate);
loadInfo();

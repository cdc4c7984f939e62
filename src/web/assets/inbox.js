// strands web inbox: live refresh, timeout countdowns, and a JSON check
// before an edited tool call is sent. No framework; the pages work
// without it (forms post, links navigate).
"use strict";

function fmt(secs) {
  const s = Math.abs(Math.round(secs));
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
}

function tick() {
  for (const t of document.querySelectorAll("time.countdown")) {
    const left = (Date.parse(t.getAttribute("datetime")) - Date.now()) / 1000;
    if (!isNaN(left)) t.textContent = left > 0 ? "in " + fmt(left) : "now";
  }
}

function busy(el) {
  const a = document.activeElement;
  if (a && el.contains(a) && (a.tagName === "TEXTAREA" || a.tagName === "INPUT" && a.type !== "checkbox")) return true;
  for (const f of el.querySelectorAll("textarea")) if (f.value !== f.defaultValue) return true;
  return !!el.querySelector("input[type=checkbox]:checked");
}

async function refresh() {
  for (const el of document.querySelectorAll("[data-live]")) {
    if (busy(el)) continue;
    try {
      const res = await fetch(el.getAttribute("data-live"), { credentials: "same-origin", headers: { "Accept": "text/html" } });
      if (!res.ok || res.redirected) continue;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = el.id && doc.getElementById(el.id);
      el.innerHTML = fresh ? fresh.innerHTML : doc.body.innerHTML;
      el.setAttribute("data-refreshed", String(Date.now()));
    } catch (e) { /* the next change tries again */ }
  }
  tick();
}

function live() {
  if (!document.querySelector("[data-live]") || !window.EventSource) return;
  let pending = null;
  // From the event the page was rendered at: nothing in between is missed.
  const at = document.querySelector("[data-after]");
  const after = at ? at.getAttribute("data-after") : "";
  const es = new EventSource("/inbox/events" + (/^[0-9]+$/.test(after) ? "?after=" + after : ""));
  es.addEventListener("change", () => {
    clearTimeout(pending);
    pending = setTimeout(refresh, 150);
  });
}

function jsonCheck(ev) {
  const form = ev.target.closest("form.json-editor");
  if (!form) return;
  const area = form.querySelector("textarea[name=args]");
  const err = form.querySelector(".error");
  try {
    const v = JSON.parse(area.value);
    if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("the arguments must be a JSON object");
    err.hidden = true;
  } catch (e) {
    ev.preventDefault();
    err.textContent = "Not valid: " + e.message;
    err.hidden = false;
    area.focus();
  }
}

document.addEventListener("submit", jsonCheck);
document.addEventListener("DOMContentLoaded", () => {
  tick();
  setInterval(tick, 1000);
  live();
});

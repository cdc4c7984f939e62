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

// Whether the person is typing or has changed anything in `el` (a form's
// values half filled in, a ticked gate): a refresh would lose it.
function busy(el) {
  const a = document.activeElement;
  if (a && el.contains(a) && (a.tagName === "TEXTAREA" || a.tagName === "SELECT" || a.tagName === "INPUT" && a.type !== "checkbox")) return true;
  for (const f of el.querySelectorAll("textarea, input:not([type=hidden])")) {
    if (f.type === "checkbox" ? f.checked !== f.defaultChecked : f.value !== f.defaultValue) return true;
  }
  for (const s of el.querySelectorAll("select")) {
    let first = 0;
    for (let i = 0; i < s.options.length; i++) if (s.options[i].defaultSelected) first = i;
    if (s.selectedIndex !== first) return true;
  }
  return false;
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

// Passkeys: registering one (the Passkeys page) and approving a step-up
// gate with one (a gate's "Confirm with your passkey"). The server sends
// WebAuthn options as JSON; the browser's authenticator answers; the
// answer goes back as JSON (`toJSON`). The server decides; this only
// carries.
async function postJSON(url, body) {
  const r = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: {"content-type": "application/json"},
    body: JSON.stringify(body),
  });
  let data = {};
  try { data = await r.json(); } catch (e) { data = {message: r.status + " " + r.statusText}; }
  if (!r.ok) throw new Error(data.message || (r.status + " " + r.statusText));
  return data;
}

function say(el, ok, text) {
  if (!el) return;
  el.textContent = text;
  el.className = "result " + (ok ? "ok" : "refused");
  el.hidden = false;
}

async function addPasskey(btn) {
  const out = document.getElementById("passkey-result");
  const label = document.getElementById("passkey-label");
  btn.disabled = true;
  try {
    const options = await postJSON(btn.dataset.register, {csrf: btn.dataset.csrf, label: label ? label.value : ""});
    const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options.publicKey);
    const cred = await navigator.credentials.create({publicKey});
    const done = await postJSON(btn.dataset.register + "/finish", {csrf: btn.dataset.csrf, credential: cred.toJSON()});
    say(out, true, done.message);
    setTimeout(() => location.reload(), 300);
  } catch (e) {
    say(out, false, "No passkey was added: " + e.message);
  } finally {
    btn.disabled = false;
  }
}

async function stepUp(btn) {
  const out = document.getElementById("result") || document.getElementById("step-up-result");
  btn.disabled = true;
  try {
    const start = {csrf: btn.dataset.csrf, gate: btn.dataset.gate, decision: "approve"};
    if (btn.dataset.call) start.call = btn.dataset.call;
    const options = await postJSON(btn.dataset.stepUp, start);
    const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options.publicKey);
    const cred = await navigator.credentials.get({publicKey});
    const done = await postJSON(btn.dataset.stepUp + "/finish", {csrf: btn.dataset.csrf, credential: cred.toJSON()});
    say(out, true, done.message);
  } catch (e) {
    say(out, false, e.message);
  } finally {
    btn.disabled = false;
  }
}

document.addEventListener("click", (ev) => {
  const t = ev.target instanceof Element ? ev.target.closest("button") : null;
  if (!t) return;
  if (t.id === "add-passkey") { ev.preventDefault(); addPasskey(t); }
  else if (t.dataset.stepUp) { ev.preventDefault(); stepUp(t); }
});

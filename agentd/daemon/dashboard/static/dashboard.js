// agentd's dashboard, in the browser: live events by server-sent events, the parts of the
// page marked data-live fetched again when a unit's state changes, the current screen
// every few seconds while the unit runs (and the page is seen), bootstraps on demand.
(function () {
  "use strict";
  const SCREEN_EVERY = 3000;  // ms between screen redraws while the unit runs (~9 ms of CPU each)
  const UPTIME_EVERY = 15000;  // ms between refreshes of the live parts while a unit runs
  const KEEP_EVENTS = 200;
  const LONGEST_VALUE = 160;  // characters of one event field shown (bootstrap accounts are long)
  const REFRESH_ON = /^(unit\.|session\.(start|exit|bootstrap|sentinel|handoff)|daemon\.)/;

  // The token came in the address: the cookie holds it now, keep it out of the history.
  const here = new URL(location.href);
  if (here.searchParams.has("token")) {
    here.searchParams.delete("token");
    history.replaceState(null, "", here);
  }

  // A fetch that fails (the daemon restarting, a page being left) is no error: null.
  async function get(url) {
    try {
      const answer = await fetch(url, {cache: "no-store"});
      return answer.ok ? answer : null;
    } catch (_) {
      return null;
    }
  }

  // -- the page's live parts ---------------------------------------------------------------
  let refreshing = null;
  let again = false;  // something changed while the page was being fetched
  // A link or button replaced between its press and its release loses the click: parts
  // fetched while a button is down wait for the release, and go in after its click.
  let pressed = false;
  let held = null;
  document.addEventListener("pointerdown", function () { pressed = true; }, true);
  function release() {
    pressed = false;
    if (held) {
      const fresh = held;
      held = null;
      setTimeout(function () { putIn(fresh); }, 0);  // the click comes in this same task
    }
  }
  document.addEventListener("pointerup", release, true);
  document.addEventListener("pointercancel", release, true);
  window.addEventListener("blur", release);  // a release the page never sees: never stuck

  function putIn(fresh) {
    for (const part of fresh.querySelectorAll("[data-live]")) {
      const old = document.getElementById(part.id);
      if (!old) continue;
      keepOpen(old, part);
      old.replaceWith(document.adoptNode(part));
    }
    watchBootstraps();
  }

  function refreshSoon() {
    if (refreshing) {
      again = true;
      return;
    }
    refreshing = setTimeout(async function () {
      try {
        const answer = await get(location.href);
        if (answer) {
          const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
          if (pressed) {
            held = fresh;  // the newest wins
            document.dispatchEvent(new CustomEvent("agentd:held"));  // (the tests wait for it)
          } else {
            putIn(fresh);
          }
        }
      } catch (_) {
        // the answer broke off: the next change or tick fetches it again
      } finally {
        refreshing = null;
        if (again) {
          again = false;
          refreshSoon();
        }
      }
    }, 300);
  }

  function keepOpen(old, fresh) {  // an open bootstrap stays open, with its text
    for (const open of old.querySelectorAll("details.bootstrap[open]")) {
      const twin = fresh.querySelector(`details.bootstrap[data-src="${open.dataset.src}"]`);
      if (twin) twin.replaceWith(open);
    }
  }

  function running() {
    return document.querySelector('.state.s-running, .state.s-starting') !== null;
  }

  // -- events ---------------------------------------------------------------------------------
  // Each event as a person reads it: its local time, its name, where, what happened in words,
  // then its other fields as "key: value" (lists joined, long values cut, big records counted).
  const list = document.getElementById("events");
  const HEAD = ["timestamp", "level", "event", "unit", "session"];
  const SAID = {
    "unit.state": (e) => [`${e.from} → ${e.to}` + (e.reason ? ` (${e.reason})` : "") +
                          (e.detail ? `: ${e.detail}` : ""), ["from", "to", "reason", "detail"]],
    "session.start": (e) => [`started, pid ${e.pid}`, ["pid"]],
    "session.exit": (e) => [(e.error || (e.code !== null && e.code !== undefined ? `exit ${e.code}` :
                             `signal ${e.signal}`)) + ` after ${e.duration_s}s (${e.reason})`,
                            ["error", "code", "signal", "duration_s", "reason"]],
    "session.sentinel": (e) => [`${e.name} → ${e.action}` + (e.line ? `: ${e.line}` : ""),
                                ["name", "action", "line"]],
    "session.bootstrap": (e) => [`${e.tokens} tokens of ${e.budget}` +
                                 ((e.warnings || []).length ? `, ${e.warnings.length} warning(s)` : ""),
                                 ["tokens", "budget", "explain"]],
    "session.inject": (e) => [`by ${e.mode}, ${e.bytes} bytes`, ["mode", "bytes"]],
    "unit.error": (e) => [e.error, ["error"]],
  };
  function words(value) {
    if (Array.isArray(value)) {
      return value.every((v) => typeof v !== "object") ? value.join("; ") : `${value.length} items`;
    }
    if (value && typeof value === "object") return `${Object.keys(value).length} fields`;
    return String(value);
  }
  function span(cls, text, tag) {
    const part = document.createElement(tag || "span");
    part.className = cls;
    part.textContent = text;
    return part;
  }
  function show(event) {
    if (!list) return;
    const item = document.createElement("li");
    const at = new Date(event.timestamp || "");
    const when = isNaN(at) ? "" : at.toLocaleTimeString([], {hour12: false});
    const where = (event.unit || "-") + (event.session ? ` #${event.session}` : "");
    const [what, used] = SAID[event.event] ? SAID[event.event](event) : ["", []];
    const rest = Object.entries(event)
      .filter(([k, v]) => !HEAD.includes(k) && !used.includes(k) && v !== null && v !== undefined)
      .map(([k, v]) => `${k}: ${cut(words(v))}`).join("  ·  ");
    item.append(span("", when, "time"), span("ev", event.event), span("where", where),
                span("what", what || rest));
    if (what && rest) item.append(span("more", rest));
    item.className = event.level || "info";
    list.prepend(item);
    while (list.children.length > KEEP_EVENTS) list.lastChild.remove();
  }
  function cut(text) {
    return text.length > LONGEST_VALUE ? text.slice(0, LONGEST_VALUE) + "…" : text;
  }
  const recent = document.getElementById("recent-events");
  if (recent) for (const event of JSON.parse(recent.textContent)) show(event);

  const live = document.getElementById("live");
  const feed = new EventSource(document.body.dataset.events);
  feed.onopen = function () { live.textContent = "live"; live.classList.add("on"); };
  feed.onerror = function () { live.textContent = "reconnecting"; live.classList.remove("on"); };
  feed.addEventListener("end", function (e) {
    live.textContent = `ended: ${JSON.parse(e.data)}`;
    live.classList.remove("on");
  });
  feed.onmessage = function (e) {
    const event = JSON.parse(e.data);
    show(event);
    if (REFRESH_ON.test(event.event)) refreshSoon();
  };

  // -- the screen, and uptimes ------------------------------------------------------------------
  // the screen box is a live part: replaced when the unit's state changes, so looked up anew
  async function drawScreen() {
    const screen = document.getElementById("screen");
    if (!screen || document.hidden || !running()) return;
    const answer = await get(screen.dataset.src);
    try {
      const drawn = answer && await answer.json();
      if (!drawn) return;
      screen.textContent = drawn.rows.join("\n");
      const number = document.getElementById("screen-session");
      if (number) number.textContent = drawn.session;
    } catch (_) {
      // broke off: the next tick draws it
    }
  }
  if (document.getElementById("screen")) setInterval(drawScreen, SCREEN_EVERY);
  setInterval(function () { if (!document.hidden && running()) refreshSoon(); }, UPTIME_EVERY);

  // -- bootstraps, fetched when opened -------------------------------------------------------------
  function watchBootstraps() {
    for (const box of document.querySelectorAll("details.bootstrap:not([data-watched])")) {
      box.dataset.watched = "1";
      box.addEventListener("toggle", async function () {
        const pre = box.querySelector("pre");
        if (!box.open || pre.textContent) return;
        const answer = await get(box.dataset.src);
        try {
          if (answer) pre.textContent = await answer.text();
        } catch (_) {
          // broke off: opening it again fetches it again
        }
      });
    }
  }
  watchBootstraps();
})();

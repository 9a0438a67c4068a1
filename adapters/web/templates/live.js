(function () {
  "use strict";
  var main = document.querySelector("main[data-live=on]");
  if (!main || !window.fetch || !window.DOMParser) { return; }
  var url = location.pathname.replace(/\/+$/, "") + "/live" + location.search;
  var mark = main.getAttribute("data-mark") || "";
  var every = Math.max(1000, parseInt(main.getAttribute("data-every"), 10) || 3000);
  var timer = 0, busy = false;
  function later(ms) { clearTimeout(timer); timer = setTimeout(poll, ms); }
  function poll() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(url, {headers: {"If-None-Match": "\"" + mark + "\""}, cache: "no-store", credentials: "omit"})
      .then(function (r) {
        if (r.status === 304) { return null; }
        if (r.status === 403 || r.status === 404) { throw new Error("closed"); }
        if (r.status !== 200) { throw new Error("retry"); }
        return r.text();
      })
      .then(function (html) {
        busy = false;
        if (html === null) { later(every); return; }
        var fresh = new DOMParser().parseFromString(html, "text/html").querySelector("main");
        if (!fresh) { later(every * 4); return; }
        mark = fresh.getAttribute("data-mark") || "";
        main.innerHTML = fresh.innerHTML;
        if (fresh.getAttribute("data-live") === "on") { later(every); } else { main.setAttribute("data-live", "off"); }
      })
      .catch(function (e) {
        busy = false;
        if (e && e.message === "closed") { main.setAttribute("data-live", "off"); return; }
        later(every * 4);
      });
  }
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { later(0); } });
  later(every);
})();

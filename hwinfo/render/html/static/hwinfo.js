// hwinfo's pages refresh in place: every data-refresh seconds, fetch this page again and
// swap each [data-live] element for the one with its id, so nothing flickers and a form
// being typed into is left alone. If the server does not answer, the last content stays,
// dimmed, with a note; the next answer brings it back. Without JavaScript, <noscript>'s
// meta refresh reloads the page instead.
"use strict";
(function () {
  var seconds = Number(document.body.getAttribute("data-refresh"));
  if (!(seconds > 0)) return;
  var note = document.getElementById("offline");
  var lastGood = new Date();
  var timer = null;

  function swap(fresh) {
    var live = fresh.querySelectorAll("[data-live]");
    if (!live.length) throw new Error("not a page of hwinfo's");
    live.forEach(function (element) {
      var old = document.getElementById(element.id);
      if (old) old.replaceWith(document.adoptNode(element));
    });
    document.title = fresh.title;
  }

  function online() {
    lastGood = new Date();
    document.body.classList.remove("offline");
    if (note) note.hidden = true;
  }

  function offline(error) {
    document.body.classList.add("offline");
    if (!note) return;
    note.textContent = "Not updated since " + lastGood.toLocaleTimeString() + ": " +
      (error && error.message ? error.message : "no answer") +
      ". Retrying every " + seconds + " s.";
    note.hidden = false;
  }

  function refresh() {
    timer = null;
    if (document.hidden) return;  // asked again when the page is shown
    var abort = new AbortController();
    var deadline = setTimeout(function () { abort.abort(); }, Math.max(seconds, 5) * 1000);
    fetch(location.href, { cache: "no-store", credentials: "same-origin", signal: abort.signal,
                           headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (response.status === 401 || response.status === 403 || response.status >= 500) {
          throw new Error("the server answered " + response.status);
        }
        return response.text();
      })
      .then(function (text) {
        swap(new DOMParser().parseFromString(text, "text/html"));
        online();
      })
      .catch(offline)
      .finally(function () {
        clearTimeout(deadline);
        schedule();
      });
  }

  function schedule() {
    if (timer === null) timer = setTimeout(refresh, seconds * 1000);
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && timer === null) refresh();
  });
  schedule();
})();

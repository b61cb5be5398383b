// The scoreboard page's script (api/pages): it follows the page's live stream
// (`data-stream`, server-sent events whose `board` event carries the live part's HTML, drawn
// and escaped by the server) and puts each new part in place, and counts the contest clock
// down every second. Without it the page reads the same, with a plain refresh link.
"use strict";
(function () {
  var live = document.getElementById("live");
  var status = document.getElementById("live-status");
  if (!live || !live.dataset.stream) return;
  var offset = 0; // the server's clock minus this browser's, in ms

  function serverNow(iso) {
    var at = Date.parse(iso);
    if (!isNaN(at)) offset = at - Date.now();
  }

  function span(seconds) {
    var whole = Math.max(0, Math.floor(seconds));
    var days = Math.floor(whole / 86400), hours = Math.floor((whole % 86400) / 3600);
    var minutes = Math.floor((whole % 3600) / 60), secs = whole % 60;
    if (days) return days + " d " + hours + " h";
    if (hours) return hours + " h " + minutes + " min";
    return minutes ? minutes + " min " + secs + " s" : secs + " s";
  }

  function tick() {
    var clock = live.querySelector(".clock");
    var text = clock && clock.querySelector(".clock-text");
    if (!text) return;
    var now = Date.now() + offset;
    var opens = Date.parse(clock.dataset.opens), closes = Date.parse(clock.dataset.closes);
    var words;
    if (now < opens) words = "Opens in " + span((opens - now) / 1000);
    else if (now <= closes) words = "Open: closes in " + span((closes - now) / 1000);
    else words = "Closed";
    if (text.textContent !== words) text.textContent = words;
  }

  function say(words) {
    if (status && status.textContent !== words) status.textContent = words;
  }

  function put(html) {
    // Which of the chart tables are open, so a new part keeps them open.
    var open = Array.prototype.map.call(live.querySelectorAll("details"), function (d) {
      return d.open;
    });
    live.innerHTML = html;
    Array.prototype.forEach.call(live.querySelectorAll("details"), function (d, n) {
      if (open[n]) d.open = true;
    });
  }

  var source = null, wait = 2000;
  function connect() {
    source = new EventSource(live.dataset.stream);
    source.addEventListener("open", function () {
      wait = 2000;
      say("Live: the board updates as uploads are judged.");
    });
    source.addEventListener("board", function (message) {
      var data = JSON.parse(message.data);
      serverNow(data.now);
      put(data.html);
      tick();
      live.dataset.updated = data.now;
      say("Live: updated at " + new Date(Date.parse(data.now)).toISOString().slice(11, 19) + " UTC.");
    });
    source.addEventListener("gone", function () {
      source.close();
      say("This contest is no longer here.");
    });
    source.addEventListener("error", function () {
      // The browser retries a dropped stream itself; a refused one (503) is closed: retry later.
      if (source.readyState === EventSource.CLOSED) {
        say("Reconnecting…");
        setTimeout(connect, wait);
        wait = Math.min(wait * 2, 60000);
      }
    });
  }

  serverNow(live.dataset.now);
  tick();
  setInterval(tick, 1000);
  connect();
})();

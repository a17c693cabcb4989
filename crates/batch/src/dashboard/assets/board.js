// The lockgate batch board's live updates: one EventSource per page, no polling, no reload.
// The pages work without this script; it only rewrites, in place, the elements the DOM
// contract names (status text, progress bars, a target row's state and detail cells).
"use strict";
(function () {
  var base = document.body.getAttribute("data-base") || "";

  function text(root, selector, value) {
    var el = root.querySelector(selector);
    if (el) { el.textContent = String(value); }
  }

  // Status, counts and progress bar of one job, inside `root` (a list row or the summary).
  function paint(root, data) {
    var counts = data.counts;
    text(root, ".status", data.status);
    text(root, ".counts .done", counts.done);
    text(root, ".counts .failed", counts.failed);
    text(root, ".counts .pending", counts.pending);
    var bar = root.querySelector("progress.bar");
    if (bar) {
      var total = counts.pending + counts.done + counts.failed;
      bar.max = total;
      bar.value = counts.done + counts.failed;
      bar.textContent = (counts.done + counts.failed) + "/" + total;
    }
    root.setAttribute("data-live", data.status === "queued" || data.status === "running");
  }

  function listPage(table) {
    var rows = {};
    var ids = [];
    table.querySelectorAll("tr[data-job-id]").forEach(function (row) {
      rows[row.getAttribute("data-job-id")] = row;
      if (row.getAttribute("data-live") === "true") { ids.push(row.getAttribute("data-job-id")); }
    });
    if (ids.length === 0 || !window.EventSource) { return; }
    var open = ids.length;
    var source = new EventSource(base + "api/events?ids=" + ids.join(","));
    function on(data) {
      var row = rows[String(data.id)];
      if (row) { paint(row, data); }
    }
    source.addEventListener("progress", function (e) { on(JSON.parse(e.data)); });
    source.addEventListener("end", function (e) {
      on(JSON.parse(e.data));
      open -= 1;
      if (open <= 0) { source.close(); }
    });
  }

  // Re-reads the targets this page shows (the same query: state filter, cursor, limit) and
  // rewrites each row's state and detail: one request per event that stored targets.
  function refreshRows(id, targets) {
    var url = base + "api/jobs/" + id + "/targets" + window.location.search;
    fetch(url, { credentials: "same-origin" }).then(function (r) { return r.ok ? r.json() : null; })
      .then(function (page) {
        if (!page) { return; }
        page.targets.forEach(function (t) {
          var row = targets.querySelector('tr[data-index="' + t.index + '"]');
          if (!row) { return; }
          text(row, "td.state", t.state);
          var detail = row.querySelector("td.detail");
          if (!detail) { return; }
          detail.textContent = "";
          if (t.state === "done") {
            detail.textContent = t.output_bytes + " bytes";
          } else if (t.state === "failed") {
            var err = document.createElement("span");
            err.className = "error";
            err.textContent = t.error;
            detail.appendChild(err);
            if (t.hint) {
              var hint = document.createElement("span");
              hint.className = "hint";
              hint.textContent = t.hint;
              detail.appendChild(document.createTextNode(" "));
              detail.appendChild(hint);
            }
          }
        });
      }).catch(function () {});
  }

  function ended(summary, data) {
    var cancel = document.querySelector("form.cancel");
    if (cancel) { cancel.parentNode.removeChild(cancel); }
    if (data.counts.failed > 0 && data.status !== "queued" && data.status !== "running"
        && !document.querySelector("form.resubmit")) {
      var form = document.createElement("form");
      form.className = "resubmit";
      form.method = "post";
      form.setAttribute("action", data.id + "/resubmit");
      var button = document.createElement("button");
      button.type = "submit";
      button.textContent = "Resubmit the failed targets";
      form.appendChild(button);
      var actions = summary.querySelector(".actions") || summary;
      actions.appendChild(form);
    }
  }

  // The cancel button POSTs in the background (the API's cancel) and the page shows the
  // answer in place; without the script, or if that request fails to leave, the form posts
  // as it is and the server redirects back to the page.
  function cancelInPlace(summary, id) {
    var form = document.querySelector("form.cancel");
    if (!form || !window.fetch) { return; }
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var button = form.querySelector("button");
      if (button) { button.disabled = true; }
      fetch(base + "api/jobs/" + id + "/cancel", { method: "POST", credentials: "same-origin" })
        .then(function (r) {
          // 409: it had ended meanwhile; the event stream brings its end.
          if (!r.ok && r.status !== 409) { throw new Error("cancel answered " + r.status); }
          return r.ok ? r.json() : null;
        })
        .then(function (job) {
          if (!job) { return; }
          paint(summary, job);
          if (job.status !== "queued" && job.status !== "running") { ended(summary, job); }
        })
        .catch(function () { form.submit(); });
    });
  }

  function jobPage(summary) {
    var id = summary.getAttribute("data-job-id");
    cancelInPlace(summary, id);
    if (summary.getAttribute("data-live") !== "true" || !window.EventSource) { return; }
    var targets = document.getElementById("targets");
    var stored = null;
    var source = new EventSource(base + "api/jobs/" + id + "/events");
    function on(data) {
      paint(summary, data);
      var now = data.counts.done + data.counts.failed;
      if (data.target && targets) {
        var row = targets.querySelector('tr[data-index="' + data.target.index + '"]');
        if (row) { text(row, "td.state", data.target.state); }
      }
      // Events are merged (at most one batch per interval): re-read the rows shown, which
      // fills in every target stored since, with its output size or error.
      if (targets && now !== stored) { refreshRows(id, targets); }
      stored = now;
    }
    source.addEventListener("progress", function (e) { on(JSON.parse(e.data)); });
    source.addEventListener("end", function (e) {
      var data = JSON.parse(e.data);
      source.close();
      stored = null;
      on(data);
      if (data.status !== "queued" && data.status !== "running") { ended(summary, data); }
    });
  }

  var jobs = document.getElementById("jobs");
  if (jobs) { listPage(jobs); }
  var summary = document.getElementById("summary");
  if (summary) { jobPage(summary); }
})();

/* The one script of the tahoe-lafs-py gateway: small enhancements of pages that work
   without it. Copy buttons for caps, a confirmation before an unlink, uploads with a
   progress bar (by the form or by dropping files), sorting listings in place, and a
   Back button on error pages. No framework, no build step, nothing fetched from
   elsewhere: every request goes back to the gateway that served the page. */
(function () {
  "use strict";

  var UNITS = ["B", "kB", "MB", "GB", "TB", "PB"];

  /* The same decimal units as the server's pages (tahoe/web/humanize.py). */
  function humanSize(size) {
    if (size < 1000) { return Math.round(size) + " B"; }
    var value = size;
    for (var i = 1; i < UNITS.length; i++) {
      value /= 1000;
      if (value < 999.95 || i === UNITS.length - 1) { return value.toFixed(1) + " " + UNITS[i]; }
    }
    return String(size);
  }

  /* Copy buttons: <button class="copy" data-copy="ID" hidden> copies the text of #ID. */
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "offscreen";
      document.body.appendChild(area);
      area.select();
      var copied = document.execCommand("copy");
      document.body.removeChild(area);
      if (copied) { resolve(); } else { reject(new Error("copy refused")); }
    });
  }

  function setUpCopyButtons() {
    document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
      var source = document.getElementById(button.getAttribute("data-copy"));
      if (!source) { return; }
      button.hidden = false;
      button.addEventListener("click", function () {
        copyText(source.textContent).then(function () {
          button.textContent = "Copied";
          button.classList.add("done");
        }, function () {
          var range = document.createRange();
          range.selectNodeContents(source);
          var selection = window.getSelection();
          selection.removeAllRanges();
          selection.addRange(range);
          button.textContent = "Selected: press Ctrl+C";
        });
        window.setTimeout(function () {
          button.textContent = "Copy";
          button.classList.remove("done");
        }, 2000);
      });
    });
  }

  /* Forms with data-confirm ask first (an unlink). */
  function setUpConfirmations() {
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.getAttribute("data-confirm"))) { event.preventDefault(); }
      });
    });
  }

  /* Error pages: a Back button when there is somewhere to go back to. */
  function setUpBackButtons() {
    document.querySelectorAll("button.back").forEach(function (button) {
      if (window.history.length < 2) { return; }
      button.hidden = false;
      button.addEventListener("click", function () { window.history.back(); });
    });
  }

  /* Uploads: one file after the other, each a POST t=upload to the directory, with a
     progress bar; the listing reloads when all are in. */
  function Uploader(zone) {
    this.zone = zone;
    this.url = zone.getAttribute("data-upload");
    this.form = zone.querySelector("form");
    this.box = zone.querySelector(".progress");
    this.bar = zone.querySelector(".progress progress");
    this.text = zone.querySelector(".progress-text");
  }

  Uploader.prototype.format = function () {
    var checked = this.form.querySelector("input[name=format]:checked");
    return checked ? checked.value : "chk";
  };

  Uploader.prototype.show = function (percent, message, failed) {
    this.box.hidden = false;
    this.box.classList.toggle("failed", Boolean(failed));
    this.bar.value = percent;
    this.text.textContent = message;
  };

  Uploader.prototype.send = function (files, index) {
    var self = this;
    if (index >= files.length) {
      self.show(100, files.length === 1 ? "Uploaded " + files[0].name + "." :
        "Uploaded " + files.length + " files.", false);
      window.location.reload();
      return;
    }
    var file = files[index];
    var prefix = files.length > 1 ? "(" + (index + 1) + " of " + files.length + ") " : "";
    var data = new FormData();
    data.append("t", "upload");
    data.append("format", self.format());
    data.append("file", file, file.name);
    var request = new XMLHttpRequest();
    request.open("POST", self.url);
    request.setRequestHeader("Accept", "text/plain");
    request.upload.addEventListener("progress", function (event) {
      if (!event.lengthComputable) { return; }
      var percent = Math.round(100 * event.loaded / event.total);
      self.show(percent, prefix + file.name + ": " + percent + "% of " + humanSize(file.size) +
        (percent === 100 ? ", storing on the grid…" : ""), false);
    });
    request.addEventListener("load", function () {
      if (request.status >= 200 && request.status < 300) {
        self.send(files, index + 1);
      } else {
        self.show(0, prefix + file.name + " was not uploaded: " + request.status + " " +
          request.responseText.trim(), true);
      }
    });
    request.addEventListener("error", function () {
      self.show(0, prefix + file.name + " was not uploaded: the gateway did not answer.", true);
    });
    self.show(0, prefix + file.name + ": starting…", false);
    request.send(data);
  };

  function setUpUploads() {
    document.querySelectorAll(".dropzone[data-upload]").forEach(function (zone) {
      var uploader = new Uploader(zone);
      if (!uploader.form || !uploader.box) { return; }
      var input = uploader.form.querySelector("input[type=file]");
      input.multiple = true;
      zone.classList.add("droppable");
      var hint = zone.querySelector(".drop-hint");
      if (hint) { hint.hidden = false; }
      uploader.form.addEventListener("submit", function (event) {
        if (!input.files.length) { return; }
        event.preventDefault();
        uploader.send(Array.prototype.slice.call(input.files), 0);
      });
      ["dragenter", "dragover"].forEach(function (name) {
        zone.addEventListener(name, function (event) {
          event.preventDefault();
          zone.classList.add("over");
        });
      });
      zone.addEventListener("dragleave", function (event) {
        if (!zone.contains(event.relatedTarget)) { zone.classList.remove("over"); }
      });
      zone.addEventListener("drop", function (event) {
        event.preventDefault();
        zone.classList.remove("over");
        var files = Array.prototype.slice.call(event.dataTransfer.files || []);
        if (files.length) { uploader.send(files, 0); }
      });
      /* A file dropped beside the box must not replace the page. */
      document.addEventListener("dragover", function (event) { event.preventDefault(); });
      document.addEventListener("drop", function (event) { event.preventDefault(); });
    });
  }

  /* Listings: sort in place by a column (the header links sort on the server without this). */
  function sortValue(cell, numeric) {
    var value = cell.getAttribute("data-sort");
    if (value === null) { value = cell.textContent; }
    return numeric ? parseFloat(value) : value.toLowerCase();
  }

  function setUpSorting() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      var headers = Array.prototype.slice.call(table.querySelectorAll("thead th"));
      headers.forEach(function (header, column) {
        var key = header.getAttribute("data-key");
        var link = header.querySelector("a");
        if (!key || !link) { return; }
        link.addEventListener("click", function (event) {
          event.preventDefault();
          var descending = header.getAttribute("aria-sort") === "ascending";
          var numeric = key === "size" || key === "modified";
          var body = table.tBodies[0];
          var rows = Array.prototype.slice.call(body.rows).filter(function (row) {
            return row.cells.length > column;
          });
          rows.sort(function (a, b) {
            var x = sortValue(a.cells[column], numeric);
            var y = sortValue(b.cells[column], numeric);
            var order = numeric ? x - y : x.localeCompare(y);
            if (order === 0) {
              order = sortValue(a.cells[1], false).localeCompare(sortValue(b.cells[1], false));
            }
            return descending ? -order : order;
          });
          rows.forEach(function (row) { body.appendChild(row); });
          headers.forEach(function (other) {
            var otherLink = other.querySelector("a");
            if (!other.getAttribute("data-key") || !otherLink) { return; }
            other.setAttribute("aria-sort", other === header ?
              (descending ? "descending" : "ascending") : "none");
            otherLink.textContent = otherLink.textContent.replace(/ [▲▼]$/, "") +
              (other === header ? (descending ? " ▼" : " ▲") : "");
          });
          var query = "?sort=" + key + "&order=" + (descending ? "desc" : "asc");
          window.history.replaceState(null, "", window.location.pathname + query);
        });
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    setUpCopyButtons();
    setUpConfirmations();
    setUpBackButtons();
    setUpUploads();
    setUpSorting();
  });
}());

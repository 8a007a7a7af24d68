// factbook: Web Workers for a handbook opened from disk (file://).
//
// Browsers refuse `new Worker(url)` on file:// pages, and MkDocs-Material runs its search in a
// worker, so search is dead in a site opened from disk. On file:// only, this replaces
// `Worker` with one that runs the worker's script in a hidden iframe of the page (same origin
// as the page, so no request leaves the machine) and passes messages both ways. The theme
// itself loads the search index as search/search_index.js on file://; the factbook plugin
// writes that file. Served over http(s), nothing here runs.
(function () {
  "use strict";
  if (location.protocol !== "file:") {
    return;
  }

  function FileWorker(url) {
    this.onmessage = null;
    this.onerror = null;
    this._events = document.createElement("span");
    this._queue = [];
    this._scope = null;
    this._frame = document.createElement("iframe");
    this._frame.hidden = true;
    this._frame.setAttribute("aria-hidden", "true");
    this._frame.tabIndex = -1;
    var worker = this;
    var source = new URL(url, document.baseURI).href;
    function start() {
      document.body.appendChild(worker._frame);
      var scope = worker._frame.contentWindow;
      // the worker's global postMessage answers the page
      scope.postMessage = function (data) {
        worker._emit("message", data);
      };
      scope.importScripts = function () {
        // synchronous loading is impossible here; only non-English search needs it
        throw new Error("importScripts is not available to a worker opened from file://");
      };
      var script = scope.document.createElement("script");
      script.src = source;
      script.onload = function () {
        worker._scope = scope;
        var waiting = worker._queue;
        worker._queue = [];
        waiting.forEach(function (data) {
          worker._deliver(data);
        });
      };
      script.onerror = function () {
        worker._emit("error", "cannot load " + source);
      };
      scope.document.head.appendChild(script);
    }
    if (document.body) {
      start();
    } else {
      document.addEventListener("DOMContentLoaded", start);
    }
  }

  FileWorker.prototype._emit = function (type, data) {
    var worker = this;
    setTimeout(function () {
      var event = new MessageEvent(type, { data: data });
      var handler = type === "message" ? worker.onmessage : worker.onerror;
      if (typeof handler === "function") {
        handler.call(worker, event);
      }
      worker._events.dispatchEvent(event);
    }, 0);
  };

  FileWorker.prototype._deliver = function (data) {
    var scope = this._scope;
    setTimeout(function () {
      scope.dispatchEvent(new scope.MessageEvent("message", { data: data }));
    }, 0);
  };

  FileWorker.prototype.postMessage = function (data) {
    if (this._scope) {
      this._deliver(data);
    } else {
      this._queue.push(data);
    }
  };

  FileWorker.prototype.addEventListener = function (type, listener, options) {
    this._events.addEventListener(type, listener, options);
  };

  FileWorker.prototype.removeEventListener = function (type, listener, options) {
    this._events.removeEventListener(type, listener, options);
  };

  FileWorker.prototype.terminate = function () {
    this._frame.remove();
    this._scope = null;
  };

  window.Worker = FileWorker;
})();

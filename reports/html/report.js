// faultline HTML report: the little script the page has. It opens every
// <details> before printing, and reads the timeline's values at the pointer.
// The page works without it.
(function () {
  'use strict';
  window.addEventListener('beforeprint', function () {
    document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  });

  var svg = document.getElementById('timeline-chart');
  var raw = document.getElementById('timeline-data');
  var out = document.getElementById('timeline-readout');
  if (!svg || !raw || !out) { return; }
  var data = JSON.parse(raw.textContent);
  var xs = data.x || [];
  if (xs.length === 0) { return; }
  var cursor = svg.querySelector('.cursor');

  function at(ms) {
    var s = ms / 1000, h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    s = Math.round((s % 60) * 1000) / 1000;
    return '+' + (h ? h + 'h' : '') + (h || m ? m + 'm' : '') + s + 's';
  }

  // nearest returns the index of the point whose x is closest to x.
  function nearest(x) {
    var lo = 0, hi = xs.length - 1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (xs[mid] < x) { lo = mid + 1; } else { hi = mid; }
    }
    if (lo > 0 && x - xs[lo - 1] < xs[lo] - x) { lo--; }
    return lo;
  }

  function show(ev) {
    var m = svg.getScreenCTM();
    if (!m) { return; }
    var p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(m.inverse());
    if (p.x < xs[0] - 4 || p.x > xs[xs.length - 1] + 4) { hide(); return; }
    var i = nearest(p.x);
    cursor.setAttribute('x1', xs[i]);
    cursor.setAttribute('x2', xs[i]);
    cursor.setAttribute('visibility', 'visible');
    var parts = (data.s || []).map(function (s) { return s.name + ' ' + s.v[i]; });
    out.textContent = at(data.t[i]) + ' — ' + parts.join(' · ');
  }

  function hide() { cursor.setAttribute('visibility', 'hidden'); }

  svg.addEventListener('pointermove', show);
  svg.addEventListener('pointerleave', hide);
})();

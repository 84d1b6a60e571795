/* Direct labels for scatter points, placed so that no label overlaps another label or any point.
 *
 * A Chart.js plugin ("pointLabels"): after the datasets are drawn, each point's label is tried at
 * growing distances in sixteen directions; the first box inside the chart area that touches no
 * placed label and no point is taken, with a leader line when it sits away from its point. The
 * boxes placed are kept on the chart (chart.$pointLabels) so a test can check that none overlap.
 */
(function () {
  "use strict";

  const DISTANCES = [3, 8, 14, 22, 32, 44, 58, 74, 92, 112, 136, 164, 196];
  const DIRECTIONS = Array.from({ length: 16 }, (_, k) => {
    const a = (k * Math.PI) / 8;
    return [Math.cos(a), Math.sin(a)];
  });
  // Right, then the diagonals and the sides: a label reads best right of its point.
  const ORDER = [0, 15, 1, 14, 2, 8, 7, 9, 12, 4, 13, 3, 11, 5, 10, 6].map((i) => DIRECTIONS[i]);

  function overlaps(a, b) {
    return a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b;
  }

  function inside(box, area) {
    return box.l >= area.left && box.r <= area.right && box.t >= area.top && box.b <= area.bottom;
  }

  function candidate(p, dir, dist, w, h) {
    const cx = p.x + dir[0] * (dist + p.r);
    const cy = p.y + dir[1] * (dist + p.r);
    const l = dir[0] > 0.35 ? cx : dir[0] < -0.35 ? cx - w : cx - w / 2;
    const t = dir[1] > 0.35 ? cy : dir[1] < -0.35 ? cy - h : cy - h / 2;
    return { l, t, r: l + w, b: t + h };
  }

  /* points: [{x, y, r, text}] in pixels; measure(text) -> {w, h}. Returns one box per point:
   * {l, t, r, b, x, y, text, leader, clash} (clash: no free place was found). */
  function layout(points, area, measure) {
    const obstacles = points.map((p) => ({ l: p.x - p.r - 2, t: p.y - p.r - 2, r: p.x + p.r + 2, b: p.y + p.r + 2 }));
    const crowd = points.map((p) => points.filter((q) => Math.hypot(q.x - p.x, q.y - p.y) < 120).length);
    const order = points.map((_, i) => i).sort((a, b) => crowd[b] - crowd[a] || points[a].x - points[b].x);
    const placed = new Array(points.length);
    const boxes = [];
    for (const i of order) {
      const p = points[i];
      const { w, h } = measure(p.text);
      let found = null;
      let fallback = null;
      for (const dist of DISTANCES) {
        for (const dir of ORDER) {
          const box = candidate(p, dir, dist, w, h);
          if (!inside(box, area)) continue;
          if (!fallback) fallback = box;
          if (boxes.some((b) => overlaps(box, b))) continue;
          if (obstacles.some((o) => overlaps(box, o))) continue;
          found = box;
          break;
        }
        if (found) break;
      }
      const box = found || fallback || candidate(p, ORDER[0], DISTANCES[0], w, h);
      const near = Math.max(box.l - p.x, p.x - box.r, box.t - p.y, p.y - box.b) <= p.r + DISTANCES[1];
      // Among close neighbours even an adjacent label could be read as another point's: draw its line.
      const crowded = points.some((q, j) => j !== i && Math.hypot(q.x - p.x, q.y - p.y) < 40);
      placed[i] = Object.assign({}, box, { x: p.x, y: p.y, text: p.text, leader: !near || crowded, clash: !found });
      boxes.push(box);
    }
    return placed;
  }

  const plugin = {
    id: "pointLabels",
    afterDatasetsDraw(chart, _args, options) {
      const ctx = chart.ctx;
      const font = options.font || "12px system-ui, sans-serif";
      const bold = options.boldFont || "bold 12px system-ui, sans-serif";
      const points = [];
      chart.data.datasets.forEach((ds, di) => {
        const meta = chart.getDatasetMeta(di);
        if (meta.hidden) return;
        meta.data.forEach((el, j) => {
          const raw = ds.data[j];
          if (!raw || !raw.label) return;
          points.push({ x: el.x, y: el.y, r: (el.options && el.options.radius) || 4, text: raw.label, strong: !!raw.strong });
        });
      });
      const area = { left: chart.chartArea.left + 2, right: chart.chartArea.right - 2, top: chart.chartArea.top + 2, bottom: chart.chartArea.bottom - 2 };
      const measure = (text) => {
        const strong = points.find((p) => p.text === text && p.strong);
        ctx.font = strong ? bold : font;
        return { w: ctx.measureText(text).width + 6, h: 16 };
      };
      const boxes = layout(points, area, measure);
      ctx.save();
      boxes.forEach((b, i) => {
        if (b.leader) {
          ctx.strokeStyle = "rgba(80,80,80,0.55)";
          ctx.lineWidth = 1;
          ctx.beginPath();
          ctx.moveTo(b.x, b.y);
          ctx.lineTo(Math.min(Math.max(b.x, b.l), b.r), Math.min(Math.max(b.y, b.t), b.b));
          ctx.stroke();
        }
        ctx.fillStyle = "rgba(255,255,255,0.85)";
        ctx.fillRect(b.l, b.t, b.r - b.l, b.b - b.t);
        ctx.font = points[i].strong ? bold : font;
        ctx.fillStyle = "#1b1b1b";
        ctx.textBaseline = "middle";
        ctx.fillText(b.text, b.l + 3, (b.t + b.b) / 2);
      });
      ctx.restore();
      chart.$pointLabels = boxes;
    },
  };

  window.PointLabels = { layout, plugin, overlaps };
})();

// Charts drawn on <canvas>: candlesticks with volume, market depth, and
// small time series for the operator dashboard. Each chart owns the
// canvas inside a container, follows the container's size (and the
// screen's pixel ratio) and redraws from the last data it was given.

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

const FONT = "11px ui-monospace, 'DejaVu Sans Mono', Menlo, monospace";

class Canvas {
  constructor(container, draw) {
    this.container = container;
    this.canvas = container.querySelector("canvas");
    this.ctx = this.canvas.getContext("2d");
    this.draw = draw;
    this.width = 0;
    this.height = 0;
    this.pending = false;
    new ResizeObserver(() => this.request()).observe(container);
  }

  request() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.paint();
    });
  }

  paint() {
    const rect = this.container.getBoundingClientRect();
    const ratio = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.floor(rect.width));
    const h = Math.max(1, Math.floor(rect.height));
    if (this.canvas.width !== w * ratio || this.canvas.height !== h * ratio) {
      this.canvas.width = w * ratio;
      this.canvas.height = h * ratio;
    }
    this.width = w;
    this.height = h;
    const ctx = this.ctx;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = FONT;
    this.draw(ctx, w, h);
  }
}

/** Round numbers for an axis between lo and hi: about `count` of them. */
function ticks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(v);
  return out;
}

function emptyNote(ctx, w, h, text) {
  ctx.fillStyle = css("--muted");
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText(text, w / 2, h / 2);
}

/**
 * Candlesticks with volume bars under them. `set(candles, priceDecimals,
 * interval)` takes candles oldest first: {start (ms), open, high, low,
 * close, volume} as numbers.
 */
export class CandleChart {
  constructor(container) {
    this.candles = [];
    this.decimals = 2;
    this.interval = "1m";
    this.surface = new Canvas(container, (ctx, w, h) => this.render(ctx, w, h));
  }

  set(candles, decimals, interval) {
    this.candles = candles;
    this.decimals = decimals;
    this.interval = interval;
    this.surface.request();
  }

  render(ctx, w, h) {
    const axisW = 70;
    const axisH = 18;
    const plotW = w - axisW;
    const plotH = h - axisH;
    const volH = Math.round(plotH * 0.22);
    const priceH = plotH - volH - 6;
    const step = 9;
    const shown = this.candles.slice(-Math.max(1, Math.floor(plotW / step)));
    ctx.strokeStyle = css("--line");
    ctx.lineWidth = 1;
    if (!shown.length) {
      emptyNote(ctx, w, h, "No trades in this interval yet");
      return;
    }
    let lo = Infinity;
    let hi = -Infinity;
    let vmax = 0;
    for (const c of shown) {
      lo = Math.min(lo, c.low);
      hi = Math.max(hi, c.high);
      vmax = Math.max(vmax, c.volume);
    }
    if (hi === lo) {
      hi += Math.abs(hi) * 0.001 || 1;
      lo -= Math.abs(lo) * 0.001 || 1;
    }
    const pad = (hi - lo) * 0.08;
    lo -= pad;
    hi += pad;
    const y = (p) => 4 + (priceH - 4) * (1 - (p - lo) / (hi - lo));
    // Candles are right-aligned: the newest at the right edge.
    const x0 = plotW - shown.length * step;
    const cx = (i) => x0 + i * step + step / 2;

    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    for (const p of ticks(lo, hi, 5)) {
      const yy = Math.round(y(p)) + 0.5;
      ctx.strokeStyle = css("--line");
      ctx.beginPath();
      ctx.moveTo(0, yy);
      ctx.lineTo(plotW, yy);
      ctx.stroke();
      ctx.fillStyle = css("--muted");
      ctx.fillText(p.toFixed(this.decimals), plotW + 6, yy);
    }

    const up = css("--buy");
    const down = css("--sell");
    const volTop = priceH + 6;
    shown.forEach((c, i) => {
      const color = c.close >= c.open ? up : down;
      const x = cx(i);
      ctx.strokeStyle = color;
      ctx.fillStyle = color;
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, y(c.high));
      ctx.lineTo(Math.round(x) + 0.5, y(c.low));
      ctx.stroke();
      const top = y(Math.max(c.open, c.close));
      const bodyH = Math.max(1, y(Math.min(c.open, c.close)) - top);
      ctx.fillRect(Math.round(x - (step - 3) / 2), top, step - 3, bodyH);
      if (vmax > 0) {
        const vh = (volH - 2) * (c.volume / vmax);
        ctx.globalAlpha = 0.45;
        ctx.fillRect(Math.round(x - (step - 3) / 2), volTop + volH - vh, step - 3, vh);
        ctx.globalAlpha = 1;
      }
    });

    // The last price, marked on the axis.
    const last = shown[shown.length - 1];
    const ly = Math.round(y(last.close)) + 0.5;
    const lastColor = last.close >= last.open ? up : down;
    ctx.setLineDash([3, 3]);
    ctx.strokeStyle = lastColor;
    ctx.beginPath();
    ctx.moveTo(0, ly);
    ctx.lineTo(plotW, ly);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = lastColor;
    ctx.fillRect(plotW + 1, ly - 8, axisW - 2, 16);
    ctx.fillStyle = "#0b0f15";
    ctx.fillText(last.close.toFixed(this.decimals), plotW + 6, ly);

    ctx.strokeStyle = css("--line");
    ctx.beginPath();
    ctx.moveTo(0, volTop - 3.5);
    ctx.lineTo(plotW, volTop - 3.5);
    ctx.stroke();
    ctx.fillStyle = css("--muted");
    ctx.fillText(`volume (max ${vmax ? vmax.toPrecision(3) : 0})`, 4, volTop + 8);

    // Time labels, spaced to fit.
    ctx.textAlign = "center";
    ctx.textBaseline = "alphabetic";
    const every = Math.max(1, Math.ceil(80 / step));
    const daily = this.interval === "1d";
    shown.forEach((c, i) => {
      if ((shown.length - 1 - i) % every !== 0) return;
      const d = new Date(c.start);
      const label = daily
        ? `${d.getMonth() + 1}/${d.getDate()}`
        : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
      ctx.fillText(label, Math.min(Math.max(cx(i), 20), plotW - 20), h - 4);
    });
  }
}

/**
 * Cumulative depth: bids (best first, [price, qty] numbers) stepping down
 * to the left of the mid price, asks up to its right.
 */
export class DepthChart {
  constructor(container) {
    this.bids = [];
    this.asks = [];
    this.decimals = 2;
    this.surface = new Canvas(container, (ctx, w, h) => this.render(ctx, w, h));
  }

  set(bids, asks, decimals) {
    this.bids = bids;
    this.asks = asks;
    this.decimals = decimals;
    this.surface.request();
  }

  render(ctx, w, h) {
    const bids = this.bids;
    const asks = this.asks;
    if (!bids.length && !asks.length) {
      emptyNote(ctx, w, h, "The book is empty");
      return;
    }
    const bestBid = bids.length ? bids[0][0] : asks[0][0];
    const bestAsk = asks.length ? asks[0][0] : bids[0][0];
    const mid = (bestBid + bestAsk) / 2;
    // Show the near book: out to the level 80% of the way down each side
    // (at most the 20th), so a few far-away orders do not squeeze
    // everything else into a sliver.
    const reach = (levels) =>
      levels.length ? Math.abs(levels[Math.min(Math.ceil(levels.length * 0.8), 20) - 1][0] - mid) : 0;
    const far = Math.max(reach(bids), reach(asks), mid * 0.0005) * 1.25;
    const lo = mid - far;
    const hi = mid + far;
    const cumulate = (levels) => {
      let sum = 0;
      return levels.map(([p, q]) => [p, (sum += q)]);
    };
    const cb = cumulate(bids.filter(([p]) => p >= lo));
    const ca = cumulate(asks.filter(([p]) => p <= hi));
    const top = Math.max(cb.length ? cb[cb.length - 1][1] : 0, ca.length ? ca[ca.length - 1][1] : 0) * 1.1 || 1;
    const axisH = 18;
    const plotH = h - axisH;
    const x = (p) => ((p - lo) / (hi - lo)) * w;
    const y = (q) => plotH - (q / top) * (plotH - 8);

    const area = (points, color, fill, dir) => {
      if (!points.length) return;
      ctx.beginPath();
      ctx.moveTo(x(points[0][0]), plotH);
      let prev = plotH;
      for (const [p, q] of points) {
        ctx.lineTo(x(p), prev);
        ctx.lineTo(x(p), y(q));
        prev = y(q);
      }
      ctx.lineTo(dir < 0 ? 0 : w, prev);
      ctx.lineTo(dir < 0 ? 0 : w, plotH);
      ctx.closePath();
      ctx.fillStyle = fill;
      ctx.fill();
      ctx.strokeStyle = color;
      ctx.lineWidth = 1.5;
      ctx.stroke();
      ctx.lineWidth = 1;
    };
    area(cb, css("--buy"), css("--buy-bg"), -1);
    area(ca, css("--sell"), css("--sell-bg"), 1);

    ctx.strokeStyle = css("--line");
    ctx.beginPath();
    ctx.moveTo(0, plotH + 0.5);
    ctx.lineTo(w, plotH + 0.5);
    ctx.stroke();
    ctx.fillStyle = css("--muted");
    ctx.textBaseline = "alphabetic";
    ctx.textAlign = "left";
    ctx.fillText(lo.toFixed(this.decimals), 2, h - 4);
    ctx.textAlign = "right";
    ctx.fillText(hi.toFixed(this.decimals), w - 2, h - 4);
    ctx.textAlign = "center";
    ctx.fillStyle = css("--text");
    ctx.fillText(mid.toFixed(this.decimals), w / 2, h - 4);
    ctx.textAlign = "left";
    ctx.textBaseline = "top";
    ctx.fillStyle = css("--muted");
    ctx.fillText(`max ${(top / 1.1).toPrecision(4)}`, 4, 4);
  }
}

/**
 * Small time series: `set(lines, format)` with lines = [{color, values,
 * bars?}] sharing one x axis (one value per second, oldest first).
 */
export class SeriesChart {
  constructor(container) {
    this.lines = [];
    this.format = (v) => String(v);
    this.surface = new Canvas(container, (ctx, w, h) => this.render(ctx, w, h));
  }

  set(lines, format) {
    this.lines = lines;
    this.format = format;
    this.surface.request();
  }

  render(ctx, w, h) {
    const n = Math.max(0, ...this.lines.map((l) => l.values.length));
    if (n < 2) {
      emptyNote(ctx, w, h, "Collecting data…");
      return;
    }
    const axisW = 62;
    const axisH = 16;
    const plotW = w - axisW;
    const plotH = h - axisH;
    const max = Math.max(1, ...this.lines.flatMap((l) => l.values)) * 1.1;
    const y = (v) => plotH - (v / max) * (plotH - 6);
    const x = (i) => (i / (n - 1)) * plotW;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    for (const v of ticks(0, max, 4)) {
      const yy = Math.round(y(v)) + 0.5;
      ctx.strokeStyle = css("--line");
      ctx.beginPath();
      ctx.moveTo(0, yy);
      ctx.lineTo(plotW, yy);
      ctx.stroke();
      ctx.fillStyle = css("--muted");
      ctx.fillText(this.format(v), plotW + 6, yy);
    }
    for (const line of this.lines) {
      ctx.strokeStyle = line.color;
      ctx.fillStyle = line.color;
      if (line.bars) {
        const bw = Math.max(1, plotW / n - 1);
        ctx.globalAlpha = 0.6;
        line.values.forEach((v, i) => ctx.fillRect((i / n) * plotW, y(v), bw, plotH - y(v)));
        ctx.globalAlpha = 1;
        continue;
      }
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      line.values.forEach((v, i) => (i ? ctx.lineTo(x(i), y(v)) : ctx.moveTo(x(i), y(v))));
      ctx.stroke();
      ctx.lineWidth = 1;
    }
    ctx.fillStyle = css("--muted");
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    ctx.fillText(`-${n}s`, 0, h - 3);
    ctx.textAlign = "right";
    ctx.fillText("now", plotW, h - 3);
  }
}

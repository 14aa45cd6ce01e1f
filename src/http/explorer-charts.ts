// The explorer's charts: SVG drawn in the browser from GET /api/history, no library and nothing loaded from
// elsewhere (the page must work offline). Two charts per panel: depth by state and events per sample
// interval, over the window the broker keeps (an hour). Each line carries the numbers it plots in
// `data-values` (and its times in the chart's `data-times`), so a test or a curious user reads the data,
// not the pixels. A chart is one polyline per series, so 1,000 entities cost nothing here: only the namespace
// and the selected entity are drawn.

/** CSS for the chart panels. */
export const CHART_STYLE = `
#charts { display: flex; gap: 16px; flex-wrap: wrap; margin-bottom: 14px; }
.panel { background: #fff; border: 1px solid #e3e6ea; padding: 8px 10px; flex: 1 1 560px; }
.panel h3 { margin: 0 0 6px; font-size: 14px; }
.panel .pair { display: flex; gap: 10px; flex-wrap: wrap; }
figure { margin: 0; width: 284px; }
figcaption { font-size: 12px; color: #4a545e; }
svg.chart { width: 280px; height: 110px; background: #fbfcfd; border: 1px solid #eef1f4; }
svg.chart text { font-size: 9px; fill: #6b7580; }
.legend span { font-size: 11px; margin-right: 8px; white-space: nowrap; }
.legend i { display: inline-block; width: 10px; height: 3px; margin-right: 3px; vertical-align: middle; }
#busiest { font-size: 12px; margin: 6px 0 0; padding-left: 18px; }
#busiest li { cursor: pointer; }
`;

/** Browser code: `drawPanel(prefix, history)` fills `#<prefix>-depth` and `#<prefix>-rates`. */
export const CHART_SCRIPT = `
const DEPTH_LINES = [['active', '#2a6fdb'], ['locked', '#e69f00'], ['scheduled', '#7a5195'], ['deferred', '#56b4e9'], ['deadLettered', '#c0392b']];
const RATE_LINES = [['sent', '#2a6fdb'], ['delivered', '#009e73'], ['completed', '#5b8c00'], ['abandoned', '#e69f00'], ['deadLetterings', '#c0392b'], ['lockExpiries', '#7a5195']];
const SVG_NS = 'http://www.w3.org/2000/svg';
const W = 280, H = 110, PAD_L = 30, PAD_B = 14, PAD_T = 6;

function svgEl(name, attrs) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** Draws one chart: the window ends now and starts spanMs before; y runs from 0 to the largest value. */
function drawChart(svg, lines, h) {
  svg.replaceChildren();
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.dataset.times = JSON.stringify(h.times);
  const end = h.times.length ? h.times[h.times.length - 1] : Date.now();
  const start = end - h.spanMs;
  let max = 1;
  for (const [name] of lines) for (const v of h.series[name]) if (v > max) max = v;
  const x = (t) => PAD_L + (W - PAD_L - 4) * Math.max(0, (t - start) / h.spanMs);
  const y = (v) => H - PAD_B - (H - PAD_B - PAD_T) * (v / max);
  svg.appendChild(svgEl('line', { x1: PAD_L, y1: H - PAD_B, x2: W - 4, y2: H - PAD_B, stroke: '#b8c0c8' }));
  svg.appendChild(svgEl('line', { x1: PAD_L, y1: PAD_T, x2: PAD_L, y2: H - PAD_B, stroke: '#b8c0c8' }));
  const label = (text, ax, ay, anchor) => { const t = svgEl('text', { x: ax, y: ay, 'text-anchor': anchor }); t.textContent = text; svg.appendChild(t); };
  label(String(max), PAD_L - 3, PAD_T + 7, 'end');
  label('0', PAD_L - 3, H - PAD_B, 'end');
  label('-' + Math.round(h.spanMs / 60000) + ' min', PAD_L, H - 3, 'start');
  label('now', W - 4, H - 3, 'end');
  svg.dataset.samples = String(h.times.length);
  if (!h.times.length) label('no samples yet: one every ' + Math.round(h.intervalMs / 1000) + ' s', (W + PAD_L) / 2, H / 2, 'middle');
  for (const [name, color] of lines) {
    const values = h.series[name];
    const points = values.map((v, i) => x(h.times[i]).toFixed(1) + ',' + y(v).toFixed(1)).join(' ');
    const line = svgEl('polyline', { points, fill: 'none', stroke: color, 'stroke-width': 1.5 });
    line.dataset.series = name;
    line.dataset.values = JSON.stringify(values);
    const title = svgEl('title', {}); title.textContent = name + ': now ' + (values.length ? values[values.length - 1] : 0);
    line.appendChild(title);
    svg.appendChild(line);
  }
}

function legend(el, lines) {
  if (el.childElementCount) return;
  for (const [name, color] of lines) {
    const s = document.createElement('span'); const i = document.createElement('i'); i.style.background = color;
    s.append(i, name); el.appendChild(s);
  }
}

/** Fills the depth and rate charts of a panel from one history reply. */
function drawPanel(prefix, h) {
  drawChart(document.getElementById(prefix + '-depth'), DEPTH_LINES, h);
  drawChart(document.getElementById(prefix + '-rates'), RATE_LINES, h);
  legend(document.getElementById(prefix + '-depth-legend'), DEPTH_LINES);
  legend(document.getElementById(prefix + '-rates-legend'), RATE_LINES);
  document.getElementById(prefix + '-rates-caption').textContent = 'Events per ' + Math.round(h.intervalMs / 1000) + ' s';
}
`;

/** The HTML of one chart panel (namespace or selected entity). */
export function chartPanel(prefix: string, title: string, extra = ''): string {
  const fig = (kind: string, caption: string) =>
    `<figure><figcaption id="${prefix}-${kind}-caption">${caption}</figcaption>` +
    `<svg class="chart" id="${prefix}-${kind}" role="img" aria-label="${caption}"></svg>` +
    `<div class="legend" id="${prefix}-${kind}-legend"></div></figure>`;
  return (
    `<div class="panel" id="${prefix}-panel"><h3 id="${prefix}-title">${title}</h3><div class="pair">` +
    fig('depth', 'Depth by state') +
    fig('rates', 'Events per sample') +
    `</div>${extra}</div>`
  );
}

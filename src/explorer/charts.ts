// The charts: SVG drawn here from GET /api/history, no library and nothing loaded from elsewhere (the page must
// work offline). Two charts per panel: depth by state and events per sample interval, over the window the broker
// keeps (an hour). Each line carries the numbers it plots in `data-values` (and its times in the chart's
// `data-times`), so a test or a curious user reads the data, not the pixels. A chart is one polyline per series,
// so 1,000 entities cost nothing here: only the namespace and the selected entity are drawn.

import { api } from './api.js';
import { $ } from './dom.js';
import { select } from './nav.js';
import { state } from './state.js';
import type { History, NamespaceHistory } from './types.js';

type Lines = readonly (readonly [series: string, color: string])[];
const DEPTH_LINES: Lines = [['active', '#2a6fdb'], ['locked', '#e69f00'], ['scheduled', '#7a5195'], ['deferred', '#56b4e9'], ['deadLettered', '#c0392b']];
const RATE_LINES: Lines = [['sent', '#2a6fdb'], ['delivered', '#009e73'], ['completed', '#5b8c00'], ['abandoned', '#e69f00'], ['deadLetterings', '#c0392b'], ['lockExpiries', '#7a5195']];
const SVG_NS = 'http://www.w3.org/2000/svg';
const W = 280, H = 110, PAD_L = 30, PAD_B = 14, PAD_T = 6;

function svgEl<K extends keyof SVGElementTagNameMap>(name: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** Draws one chart: the window ends now and starts spanMs before; y runs from 0 to the largest value. */
function drawChart(svg: SVGSVGElement, lines: Lines, h: History): void {
  svg.replaceChildren();
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.dataset.times = JSON.stringify(h.times);
  const end = h.times.length ? h.times[h.times.length - 1]! : Date.now();
  const start = end - h.spanMs;
  let max = 1;
  for (const [name] of lines) for (const v of h.series[name] ?? []) if (v > max) max = v;
  const x = (t: number): number => PAD_L + (W - PAD_L - 4) * Math.max(0, (t - start) / h.spanMs);
  const y = (v: number): number => H - PAD_B - (H - PAD_B - PAD_T) * (v / max);
  svg.appendChild(svgEl('line', { x1: PAD_L, y1: H - PAD_B, x2: W - 4, y2: H - PAD_B, stroke: '#b8c0c8' }));
  svg.appendChild(svgEl('line', { x1: PAD_L, y1: PAD_T, x2: PAD_L, y2: H - PAD_B, stroke: '#b8c0c8' }));
  const label = (text: string, ax: number, ay: number, anchor: string): void => {
    const t = svgEl('text', { x: ax, y: ay, 'text-anchor': anchor });
    t.textContent = text;
    svg.appendChild(t);
  };
  label(String(max), PAD_L - 3, PAD_T + 7, 'end');
  label('0', PAD_L - 3, H - PAD_B, 'end');
  label('-' + Math.round(h.spanMs / 60000) + ' min', PAD_L, H - 3, 'start');
  label('now', W - 4, H - 3, 'end');
  svg.dataset.samples = String(h.times.length);
  if (!h.times.length) label('no samples yet: one every ' + Math.round(h.intervalMs / 1000) + ' s', (W + PAD_L) / 2, H / 2, 'middle');
  for (const [name, color] of lines) {
    const values = h.series[name] ?? [];
    const points = values.map((v, i) => x(h.times[i]!).toFixed(1) + ',' + y(v).toFixed(1)).join(' ');
    const line = svgEl('polyline', { points, fill: 'none', stroke: color, 'stroke-width': 1.5 });
    line.dataset.series = name;
    line.dataset.values = JSON.stringify(values);
    const title = svgEl('title', {});
    title.textContent = name + ': now ' + (values.length ? values[values.length - 1] : 0);
    line.appendChild(title);
    svg.appendChild(line);
  }
}

function legend(el: HTMLElement, lines: Lines): void {
  if (el.childElementCount) return;
  for (const [name, color] of lines) {
    const s = document.createElement('span');
    const i = document.createElement('i');
    i.style.background = color;
    s.append(i, name);
    el.appendChild(s);
  }
}

/** Fills the depth and rate charts of a panel (`ns` or `entity`) from one history reply. */
function drawPanel(prefix: string, h: History): void {
  drawChart($<SVGSVGElement>('#' + prefix + '-depth'), DEPTH_LINES, h);
  drawChart($<SVGSVGElement>('#' + prefix + '-rates'), RATE_LINES, h);
  legend($('#' + prefix + '-depth-legend'), DEPTH_LINES);
  legend($('#' + prefix + '-rates-legend'), RATE_LINES);
  $('#' + prefix + '-rates-caption').textContent = 'Events per ' + Math.round(h.intervalMs / 1000) + ' s';
}

/** Draws the namespace panel with its busiest entities, then the selected entity's panel. */
export async function loadCharts(): Promise<void> {
  const ns = await api<NamespaceHistory>('history');
  drawPanel('ns', ns);
  const list = $('#busiest');
  list.replaceChildren();
  for (const b of ns.busiest) {
    const li = document.createElement('li');
    li.dataset.entity = b.path;
    li.textContent = b.path + ' — ' + b.traffic + ' sent+delivered, depth ' + b.depth;
    li.onclick = () => select(b.path);
    list.appendChild(li);
  }
  if (!ns.busiest.length) {
    const li = document.createElement('li');
    li.className = 'muted';
    li.textContent = 'No traffic in the last hour.';
    list.appendChild(li);
  }
  $('#entity-charts').hidden = !state.entity;
  if (!state.entity) return;
  const h = await api<History>('history?entity=' + encodeURIComponent(state.entity));
  $('#entity-title').textContent = state.entity;
  drawPanel('entity', h);
}

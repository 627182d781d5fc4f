// SPDX-License-Identifier: Apache-2.0
// charts.js: the Tuning page's plots. Sets up the part of Apache ECharts they use (canvas
// renderer; only the chart types and components below are bundled) and builds the option of
// each plot from a study (the model tuning.js makes from a job): optimization history,
// parallel coordinates, intermediate values, a slice per parameter, one trial's curve.
// Each plot knows the trial of each of its points, so a click on one selects that trial.
import * as echarts from 'echarts/core';
import { LineChart, LinesChart, ParallelChart, ScatterChart } from 'echarts/charts';
import {
  GridComponent,
  ParallelComponent,
  TooltipComponent,
  VisualMapContinuousComponent,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';

echarts.use([
  LineChart,
  LinesChart,
  ParallelChart,
  ScatterChart,
  GridComponent,
  ParallelComponent,
  TooltipComponent,
  VisualMapContinuousComponent,
  CanvasRenderer,
]);

export { echarts };

// The colours of the plots. useTheme() fits them to the page's (light or dark) background.
const LIGHT = {
  fg: '#1d232b',
  muted: '#5b6672',
  line: '#e3e7eb',
  point: '#3b528b',
  early: '#7950f2',
  // Objective colours, worst to best: viridis without its palest end, readable on white and
  // for colour-blind readers; on a dark page the same scale runs the other way (best bright).
  ramp: ['#b5de2b', '#5ec962', '#21918c', '#3b528b', '#440154'],
  order: ['#a5d8ff', '#4dabf7', '#1c7ed6', '#1b2a6b'], // quarters of the trials, first to last
};
const DARK = {
  ...LIGHT,
  fg: '#e3e7ec',
  muted: '#9aa6b2',
  line: '#2f3842',
  point: '#7fb6f5',
  early: '#b197fc',
  ramp: ['#3b528b', '#21918c', '#5ec962', '#b5de2b', '#fde725'],
  order: ['#1c4f80', '#1c7ed6', '#4dabf7', '#a5d8ff'],
};
const ACCENT = '#e8590c'; // the best trial, the best-so-far line, the selected trial's ring
const GREY = '#868e96'; // curves of trials that have no objective
let theme = LIGHT;

// useTheme(el): the plots' colours follow el's: dark ones when its CSS variable --bg (the
// app's background) is dark, with its --fg, --muted and --line for text and axes.
export function useTheme(el) {
  const css = getComputedStyle(el);
  const v = (name) => css.getPropertyValue(name).trim();
  const bg = /^#[0-9a-f]{6}$/i.test(v('--bg')) ? hexRgb(v('--bg')) : [255, 255, 255];
  const base = bg[0] * 0.299 + bg[1] * 0.587 + bg[2] * 0.114 < 128 ? DARK : LIGHT;
  theme = { ...base, fg: v('--fg') || base.fg, muted: v('--muted') || base.muted, line: v('--line') || base.line };
}

const text = () => ({ color: theme.fg, fontSize: 11 });
const axisColours = () => ({
  axisLine: { lineStyle: { color: theme.muted } },
  axisTick: { lineStyle: { color: theme.muted } },
  axisLabel: { color: theme.muted, fontSize: 11, hideOverlap: true },
});

// rampColor(q): the colour at q in [0, 1] (0 worst, 1 best) along the objective scale.
function rampColor(q) {
  const ramp = theme.ramp;
  const x = Math.min(1, Math.max(0, Number.isFinite(q) ? q : 0)) * (ramp.length - 1);
  const i = Math.min(ramp.length - 2, Math.floor(x));
  const a = hexRgb(ramp[i]);
  const b = hexRgb(ramp[i + 1]);
  const f = x - i;
  const c = a.map((n, k) => Math.round(n + (b[k] - n) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function hexRgb(h) {
  return [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
}

// esc(s): s with the characters HTML gives meaning to escaped (tooltips are HTML).
export function esc(s) {
  return String(s).replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c],
  );
}

// fmtNum(v): a number in at most 6 significant digits ("" when not a number).
export function fmtNum(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '';
  return String(Number(v.toPrecision(6)));
}

// Which trial each data item of a drawn option is: picks.get(chart)[seriesIndex][dataIndex].
const picks = new WeakMap();

// createChart(el, size, onPick): an ECharts instance on el (canvas) of size {width, height}
// (given, so that creating it reads no layout; resize it with its new size); onPick(trialId)
// is called when a data item of a trial is clicked.
export function createChart(el, size, onPick) {
  const chart = echarts.init(el, null, { renderer: 'canvas', width: size.width, height: size.height });
  chart.on('click', (p) => {
    const ids = (picks.get(chart) || [])[p.seriesIndex];
    const tid = ids && ids[p.dataIndex];
    if (tid !== undefined) onPick(tid);
  });
  return chart;
}

// drawn(chart, plot): draws plot ({option, ids}: ids[i] the trial ids of series i's data),
// replacing what the chart showed, and resolves once the chart has rendered it (ECharts'
// `finished` event), or after 5 s whatever happened.
export function drawn(chart, plot) {
  picks.set(chart, plot.ids);
  return new Promise((resolve) => {
    let timer = 0;
    const done = () => {
      chart.off('finished', done);
      clearTimeout(timer);
      resolve();
    };
    chart.on('finished', done);
    timer = setTimeout(done, 5000);
    chart.setOption(plot.option, { notMerge: true });
  });
}

// tipOf(study, ids): the tooltip formatter of a plot whose series' trial ids are ids.
function tipOf(study, ids) {
  return (p) => {
    const t = study.byId.get((ids[p.seriesIndex] || [])[p.dataIndex]);
    if (!t) return '';
    const rows = study.params.map((q) => `${esc(q.name)}: ${esc(t.raw[q.name] ?? '')}`);
    const obj = t.objective === null ? t.state : fmtNum(t.objective);
    const early = t.early ? ' (stopped early)' : '';
    return `<b>Trial ${esc(t.id)}</b>${early}<br>${esc(study.metric)}: ${esc(obj)}<br>${rows.join('<br>')}`;
  };
}

// plot(study, option, ids, count): {option, ids, count}: option with a tooltip showing the
// trial under the pointer; count, how many trials it draws (default: every id in ids).
function plot(study, option, ids, count) {
  option.tooltip = { trigger: 'item', confine: true, textStyle: { fontSize: 12 }, formatter: tipOf(study, ids) };
  return { option, ids, count: count ?? ids.reduce((n, g) => n + g.length, 0) };
}

const BASE = { animation: false, textStyle: { fontFamily: 'inherit' } };
const GRID = { left: 56, right: 16, top: 16, bottom: 40, containLabel: false };
// Series of more points than this are drawn as one shape (fast; hover shows no emphasis).
const LARGE = { large: true, largeThreshold: 100 };

function valueAxis(name, extra) {
  return {
    type: 'value',
    name,
    nameLocation: 'middle',
    nameGap: 26,
    nameTextStyle: text(),
    scale: true,
    ...axisColours(),
    splitLine: { lineStyle: { color: theme.line } },
    ...extra,
  };
}

// The ring drawn over the selected trial's point in the history and slice plots.
function ringSeries(data) {
  return {
    id: 'selected',
    type: 'scatter',
    data,
    symbolSize: 16,
    silent: true,
    z: 5,
    itemStyle: { color: 'rgba(0,0,0,0)', borderColor: ACCENT, borderWidth: 2.5 },
  };
}

// niceBounds(lo, hi): [lo, hi] widened to multiples of a round step (1, 2 or 5 times a power
// of ten, about a fifth of the span), as ECharts picks its own axis bounds; a little around
// lo when hi is no more.
function niceBounds(lo, hi) {
  if (!(hi > lo)) return [lo - (Math.abs(lo) * 0.1 || 1), hi + (Math.abs(hi) * 0.1 || 1)];
  const raw = (hi - lo) / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((x) => x >= raw);
  const fix = (v) => Number(v.toPrecision(12));
  return [fix(Math.floor(lo / step) * step), fix(Math.ceil(hi / step) * step)];
}

function parallelRow(study, t) {
  return [...study.params.map((p) => t.values[p.name]), t.objective];
}

// selectedData(kind, study, t, p): the data of the 'selected' series of a plot of that kind
// ('history', 'parallel', 'curves', 'slice' of parameter p) for trial t (none: undefined).
export function selectedData(kind, study, t, p) {
  if (!t) return [];
  if (kind === 'curves') return t.curve;
  if (t.objective === null) return [];
  if (kind === 'history') return [[t.num, t.objective]];
  if (kind === 'parallel') return [parallelRow(study, t)];
  return [[t.values[p.name], t.objective]];
}

// historyOption(study, sel): objective by trial number, one point per finished trial (stopped
// early ones as triangles, the best in the accent colour), with the best-so-far line.
export function historyOption(study, sel) {
  const fin = [...study.finished].sort((a, b) => a.num - b.num);
  const groups = [fin.filter((t) => !t.early && t !== study.best), fin.filter((t) => t.early && t !== study.best)];
  groups.push(study.best ? [study.best] : []);
  const bestLine = [];
  let best = null;
  for (const t of fin) {
    if (best === null || study.better(t.objective, best)) best = t.objective;
    bestLine.push([t.num, best]);
  }
  const pts = (g) => g.map((t) => [t.num, t.objective]);
  const dot = (name, g, symbol, color) => ({
    name,
    type: 'scatter',
    data: pts(g),
    symbol,
    symbolSize: symbol === 'circle' ? 7 : 9,
    itemStyle: { color, opacity: 0.85 },
    ...LARGE,
  });
  const last = fin.length ? fin[fin.length - 1].num : 1;
  return plot(
    study,
    {
      ...BASE,
      grid: GRID,
      xAxis: valueAxis('trial', { minInterval: 1, min: 0, max: last + 1, scale: false }),
      yAxis: valueAxis(study.metric, { nameGap: 44 }),
      series: [
        dot('finished', groups[0], 'circle', theme.point),
        dot('stopped early', groups[1], 'triangle', theme.early),
        dot('best', groups[2], 'circle', ACCENT),
        {
          id: 'best-so-far',
          type: 'line',
          step: 'end',
          data: bestLine,
          showSymbol: false,
          silent: true,
          lineStyle: { color: ACCENT, width: 2 },
        },
        ringSeries(selectedData('history', study, study.byId.get(sel))),
      ],
    },
    groups.map((g) => g.map((t) => t.id)),
  );
}

// paramAxis(p, study): the axis of parameter p: categories; or values from the spec's bounds
// (widened to the trials' values, should one fall outside), log-scaled for UNIT_LOG_SCALE.
function paramAxis(p, study) {
  if (p.kind === 'cat') return { type: 'category', data: p.values.map(String) };
  const vals = study.finished.map((t) => t.values[p.name]).filter((v) => typeof v === 'number');
  const lo = Math.min(...vals, ...(Number.isFinite(p.min) ? [p.min] : []));
  const hi = Math.max(...vals, ...(Number.isFinite(p.max) ? [p.max] : []));
  const base = { scale: true, minInterval: p.int ? 1 : 0 };
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return { type: 'value', ...base };
  if (p.log && lo > 0) return { type: 'log', min: lo, max: hi, ...base };
  const [min, max] = niceBounds(lo, hi);
  return { type: 'value', min, max, ...base };
}

// parallelOption(study, sel): one axis per parameter plus the objective; one line per finished
// trial, coloured by its objective; the selected trial drawn thick on top.
export function parallelOption(study, sel) {
  const dims = study.params.length;
  const name = { nameTextStyle: text(), ...axisColours() };
  const axes = study.params.map((p, i) => ({ dim: i, name: p.name, ...name, ...paramAxis(p, study) }));
  axes.push({ dim: dims, name: study.metric, type: 'value', scale: true, ...name });
  const [lo, hi] = study.range;
  // One value (or all the same): it is the best, as in the other plots.
  const [vmin, vmax] = hi > lo ? [lo, hi] : study.goal === 'MINIMIZE' ? [lo, lo + 1] : [lo - 1, lo];
  return plot(
    study,
    {
      ...BASE,
      parallel: { left: 40, right: 96, top: 36, bottom: 28, parallelAxisDefault: { nameGap: 12 } },
      parallelAxis: axes,
      visualMap: {
        type: 'continuous',
        seriesIndex: 0,
        dimension: dims,
        min: vmin,
        max: vmax,
        inRange: { color: study.goal === 'MINIMIZE' ? [...theme.ramp].reverse() : theme.ramp },
        text: study.goal === 'MINIMIZE' ? ['worst', 'best'] : ['best', 'worst'],
        textStyle: { color: theme.muted, fontSize: 11 },
        right: 4,
        top: 'middle',
        itemWidth: 10,
        itemHeight: 120,
      },
      series: [
        {
          type: 'parallel',
          data: study.finished.map((t) => parallelRow(study, t)),
          lineStyle: { width: 1.2, opacity: 0.55 },
          emphasis: { lineStyle: { width: 3, opacity: 1 } },
          progressive: 0,
        },
        {
          id: 'selected',
          type: 'parallel',
          data: selectedData('parallel', study, study.byId.get(sel)),
          silent: true,
          lineStyle: { width: 3.5, opacity: 1, color: ACCENT },
        },
      ],
    },
    [study.finished.map((t) => t.id)],
  );
}

const SHADES = 6; // the curves' colours: this many steps of the objective scale

// curvesOption(study, sel): each trial's reported objective by training step (allMetrics),
// coloured by its final objective (grey: none); trials stopped early dashed, ended by a cross.
export function curvesOption(study, sel) {
  const groups = new Map(); // "shade/early" -> trials
  const singles = []; // trials that reported once: a dot (a polyline of one point throws)
  const shadeOf = (t) => (t.objective === null ? -1 : Math.round(study.quality(t.objective) * (SHADES - 1)));
  const colorOf = (shade) => (shade < 0 ? GREY : rampColor(shade / (SHADES - 1)));
  for (const t of study.trials) {
    if (!t.curve.length) continue;
    if (t.curve.length === 1) {
      singles.push(t);
      continue;
    }
    const shade = shadeOf(t);
    const key = `${shade}/${t.early}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(t);
  }
  const series = [];
  const ids = [];
  for (const [key, g] of [...groups].sort((a, b) => parseInt(a[0], 10) - parseInt(b[0], 10))) {
    const shade = parseInt(key, 10);
    series.push({
      type: 'lines',
      coordinateSystem: 'cartesian2d',
      polyline: true,
      data: g.map((t) => ({ coords: t.curve })),
      lineStyle: {
        color: colorOf(shade),
        width: 1.2,
        opacity: 0.75,
        type: key.endsWith('true') ? 'dashed' : 'solid',
      },
      emphasis: { lineStyle: { width: 3, opacity: 1 } },
      ...LARGE,
    });
    ids.push(g.map((t) => t.id));
  }
  series.push({
    id: 'single',
    type: 'scatter',
    data: singles.map((t) => ({ value: t.curve[0], itemStyle: { color: colorOf(shadeOf(t)) } })),
    symbolSize: 6,
  });
  ids.push(singles.map((t) => t.id));
  const early = study.trials.filter((t) => t.early && t.curve.length);
  series.push({
    type: 'scatter',
    data: early.map((t) => t.curve[t.curve.length - 1]),
    symbol: 'path://M0,0L10,10M10,0L0,10',
    symbolSize: 8,
    itemStyle: { color: 'rgba(0,0,0,0)', borderColor: '#c92a2a', borderWidth: 2 },
  });
  ids.push(early.map((t) => t.id));
  series.push({
    id: 'selected',
    type: 'line',
    data: selectedData('curves', study, study.byId.get(sel)),
    silent: true,
    symbolSize: 5,
    z: 5,
    lineStyle: { color: ACCENT, width: 3 },
    itemStyle: { color: ACCENT },
  });
  const ext = study.curveExtent;
  const [y0, y1] = niceBounds(ext.y[0], ext.y[1]);
  const count = ids.reduce((n, g) => n + g.length, 0) - early.length;
  return plot(
    study,
    {
      ...BASE,
      grid: GRID,
      xAxis: valueAxis('step', { min: ext.x[0], max: ext.x[1], scale: false }),
      yAxis: valueAxis(study.metric, { min: y0, max: y1, nameGap: 44 }),
      series,
    },
    ids,
    count,
  );
}

// sliceOption(study, p, sel): the objective against parameter p's value, one point per finished
// trial, coloured by when it ran (each quarter of the trials stronger than the one before).
export function sliceOption(study, p, sel) {
  const n = study.finished.length;
  const byNum = [...study.finished].sort((a, b) => a.num - b.num);
  const quarters = theme.order.map((_, i) => byNum.slice(Math.floor((i * n) / 4), Math.floor(((i + 1) * n) / 4)));
  const axis = paramAxis(p, study);
  const xAxis =
    p.kind === 'cat'
      ? { ...axis, ...axisColours() }
      : valueAxis('', axis);
  const series = quarters.map((q, i) => ({
    type: 'scatter',
    data: q.map((t) => [t.values[p.name], t.objective]),
    symbolSize: 7,
    itemStyle: { color: theme.order[i], opacity: 0.9 },
    ...LARGE,
  }));
  series.push(ringSeries(selectedData('slice', study, study.byId.get(sel), p)));
  return plot(
    study,
    { ...BASE, grid: { ...GRID, bottom: 28 }, xAxis, yAxis: valueAxis(study.metric, { nameGap: 44 }), series },
    quarters.map((q) => q.map((t) => t.id)),
  );
}

// trialCurveOption(t, study): one trial's reported values by step, for its details.
export function trialCurveOption(t, study) {
  const option = {
    ...BASE,
    grid: { ...GRID, top: 12 },
    xAxis: valueAxis('step'),
    yAxis: valueAxis(study.metric, { nameGap: 44 }),
    series: [
      {
        type: 'line',
        data: t.curve,
        symbolSize: 6,
        lineStyle: { color: ACCENT, width: 2, type: t.early ? 'dashed' : 'solid' },
        itemStyle: { color: ACCENT },
      },
    ],
  };
  const r = plot(study, option, [t.curve.map(() => t.id)]);
  r.option.tooltip = { trigger: 'axis', confine: true, textStyle: { fontSize: 12 } };
  return r;
}

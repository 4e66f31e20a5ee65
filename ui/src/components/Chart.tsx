// A line chart over time (uPlot), sized to its container. The axes stay readable whatever
// the data: time ticks as hours and minutes (seconds over a short span, the date over days),
// a short span (one point, a few seconds) is shown as two minutes, and the y axis starts at 0.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

const pad = (n: number) => String(n).padStart(2, "0");

/** A time tick's label for a visible span of `span` seconds. */
export function tickLabel(t: number, span: number): string {
  const d = new Date(t * 1000);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  if (span <= 5 * 60) return `${hm}:${pad(d.getSeconds())}`;
  if (span <= 24 * 3600) return hm;
  return `${d.toLocaleDateString("en-GB", { day: "numeric", month: "short" })} ${hm}`;
}

const MIN_SPAN_S = 120;

/** The visible time range: the data's, at least MIN_SPAN_S wide (ending at the newest point),
 * so that a few seconds of points never get ticks one second apart with equal labels. */
export function timeRange(min: number | null, max: number | null): [number, number] {
  if (min == null || max == null) return [0, MIN_SPAN_S];
  return max - min < MIN_SPAN_S ? [max - MIN_SPAN_S, max] : [min, max];
}

function yLabel(v: number): string {
  return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString("en") : String(Math.round(v * 10) / 10);
}

export function Chart(props: { title: string; unit: string; times: number[]; values: (number | null)[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current!;
    const css = getComputedStyle(document.documentElement);
    const fg = css.getPropertyValue("--fg").trim() || "#1f2937";
    const line = css.getPropertyValue("--line").trim() || "#d9dde3";
    const axis = { stroke: fg, grid: { stroke: line, width: 1 }, ticks: { stroke: line, width: 1 } };
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 180,
      legend: { show: false },
      scales: {
        x: { time: true, range: (_u, min, max) => timeRange(min, max) },
        y: { range: (_u, _min, max) => [0, Math.max(1, (max ?? 0) * 1.1)] },
      },
      axes: [
        {
          ...axis,
          space: 70,
          values: (u, splits) => {
            const span = (u.scales.x.max ?? 0) - (u.scales.x.min ?? 0);
            return splits.map((t) => tickLabel(t, span));
          },
        },
        { ...axis, label: props.unit, size: 60, values: (_u, splits) => splits.map(yLabel) },
      ],
      series: [{}, { label: props.title, stroke: "#2563eb", width: 2, fill: "rgba(37, 99, 235, 0.08)", points: { show: props.times.length < 3 } }],
    };
    plot.current = new uPlot(opts, [props.times, props.values] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: 180 }));
    resize.observe(el);
    return () => { resize.disconnect(); plot.current?.destroy(); };
  }, [props.times.length < 3]);
  useEffect(() => {
    plot.current?.setData([props.times, props.values] as uPlot.AlignedData);
  }, [props.times, props.values]);
  const latest = props.values.filter((v) => v != null).at(-1);
  return (
    <figure class="chart" data-points={props.times.length}>
      <figcaption>{props.title}</figcaption>
      <div ref={box} role="img" aria-label={`${props.title}: latest ${latest != null ? yLabel(latest) : "none"} ${props.unit}`} />
    </figure>
  );
}

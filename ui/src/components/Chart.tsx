// A line chart over time (uPlot), sized to its container.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

export function Chart(props: { title: string; unit: string; times: number[]; values: (number | null)[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current!;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 180,
      legend: { show: false },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [{}, { label: props.unit, size: 60 }],
      series: [{}, { label: props.title, stroke: "#2563eb", width: 2, fill: "rgba(37, 99, 235, 0.08)" }],
    };
    plot.current = new uPlot(opts, [props.times, props.values] as uPlot.AlignedData, el);
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: 180 }));
    resize.observe(el);
    return () => { resize.disconnect(); plot.current?.destroy(); };
  }, []);
  useEffect(() => {
    plot.current?.setData([props.times, props.values] as uPlot.AlignedData);
  }, [props.times, props.values]);
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={box} role="img" aria-label={`${props.title}: latest ${props.values.at(-1) ?? "none"} ${props.unit}`} />
    </figure>
  );
}

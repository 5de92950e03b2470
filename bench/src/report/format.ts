// Number formatting shared by the Markdown tables and the chart.

export function formatRate(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

export function formatMs(value: number): string {
  if (value < 1) return value.toFixed(3);
  if (value < 10) return value.toFixed(2);
  return value.toFixed(1);
}

export function formatSpeedup(value: number | null): string {
  return value === null ? '—' : `${value.toFixed(2)}×`;
}

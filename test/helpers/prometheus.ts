/** Reads Prometheus text exposition (what `/admin/metrics/prometheus` answers) in tests. */
export type Samples = Array<{ name: string; labels: Record<string, string>; value: number }>;

export function parsePrometheus(text: string): Samples {
  const out: Samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** The sum of the samples of `name` whose labels include `labels` (0 when there is none). */
export function sample(samples: Samples, name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

export async function scrape(url: string): Promise<{ status: number; type: string; text: string; samples: Samples }> {
  const r = await fetch(url);
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type') ?? '', text, samples: parsePrometheus(text) };
}

/**
 * MMS's metric log lines (reference §5.2, MMS metrics/Metric.java):
 * `Name.Unit:value|#Level:Host|#hostname:h,timestamp:epochSeconds`, and for a model's series
 * `|#ModelName:m,Level:Model|`. One line per series per interval.
 */
import { intervalValue, type Snapshot } from './interval';

export function mmsRenderer(hostname: string): (snapshot: Snapshot) => string[] {
  const host = clean(hostname);
  return (snapshot) => {
    const tail = `|#hostname:${host},timestamp:${Math.floor(snapshot.timestampMs / 1000)}`;
    return snapshot.series.map((s) => {
      const dims = s.model === null ? 'Level:Host' : `ModelName:${clean(s.model)},Level:Model`;
      // MMS writes counts with unit Count; CloudWatch's None means the same.
      const unit = s.def.unit === 'None' ? 'Count' : s.def.unit;
      return `${s.def.name}.${unit}:${round(intervalValue(s))}|#${dims}${tail}`;
    });
  };
}

/** The line's separators cannot appear inside a value. */
function clean(value: string): string {
  return value.replace(/[|,:#\s]/g, '_');
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** Bytes as MB for log lines and error messages: one decimal below 10 MB (a model in a shared host is a fraction of one). */
export const mb = (bytes: number): string => {
  const n = bytes / 2 ** 20;
  return `${n > 0 && n < 10 && !Number.isInteger(n) ? n.toFixed(1) : Math.round(n)} MB`;
};

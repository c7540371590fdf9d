import net from 'node:net';

const kLoopbackNames = new Set(['localhost', 'localhost.']);

/** Whether a host name (IPv6 in brackets or not) names this machine's loopback interface. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (kLoopbackNames.has(h) || h === '::1') return true;
  return net.isIPv4(h) && h.startsWith('127.');
}

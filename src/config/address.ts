/** Listen addresses in MMS's syntax: http://host[:port], https://host[:port], unix:/path. */
import type { ListenAddress } from './types';

export const kAddressForms = 'http://host:port, https://host[:port] or unix:/path';

/** Host is a bracketed IPv6 literal or a name / IPv4 without ':' or '/'. */
const kTcpAddress = /^(https?):\/\/(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]]+)(?::(\d+))?\/?$/i;
const kUnixAddress = /^unix:(\/\S*)$/i;

export function parseAddress(raw: string): ListenAddress | { problem: string } {
  const unix = kUnixAddress.exec(raw);
  if (unix) return { raw, scheme: 'unix', host: '', port: 0, path: unix[1] };
  const tcp = kTcpAddress.exec(raw);
  if (!tcp) return { problem: `not of the form ${kAddressForms}` };
  const scheme = tcp[1].toLowerCase() as 'http' | 'https';
  // Default ports as MMS's Connector: 443 for https, 80 for http.
  const port = tcp[3] === undefined ? (scheme === 'https' ? 443 : 80) : Number(tcp[3]);
  if (port > 65535) return { problem: `port ${tcp[3]} is above 65535` };
  return { raw, scheme, host: tcp[2].replace(/^\[|\]$/g, ''), port, path: '' };
}

/** The same address on another port (SAGEMAKER_BIND_TO_PORT); `raw` is rewritten so logs show the real port. */
export function withPort(address: ListenAddress, port: number): ListenAddress {
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return { ...address, port, raw: `${address.scheme}://${host}:${port}` };
}

export function sameAddress(a: ListenAddress, b: ListenAddress): boolean {
  return (
    a.scheme === b.scheme && a.host.toLowerCase() === b.host.toLowerCase() && a.port === b.port && a.path === b.path
  );
}

/** Two different TCP listeners on one fixed port cannot both bind (0.0.0.0:8080 vs 127.0.0.1:8080). */
export function portClash(a: ListenAddress, b: ListenAddress): boolean {
  return a.scheme !== 'unix' && b.scheme !== 'unix' && a.port !== 0 && a.port === b.port && !sameAddress(a, b);
}

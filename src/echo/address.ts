// HOST:PORT as the user wrote it -> a numeric address the native code connects to or binds.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { UserError } from '../cli-util.js';

export interface ParsedAddress {
  host: string;
  port: number;
}

/** "127.0.0.1:9999", "localhost:9999", "[::1]:9999". Malformed -> UserError. */
export function parseAddress(text: string): ParsedAddress {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:\s]+):(\d+)$/.exec(text);
  if (!m) throw new UserError(`invalid address '${text}': expected HOST:PORT (e.g. 127.0.0.1:9999)`);
  const port = Number(m[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UserError(`invalid address '${text}': port must be 1..65535`);
  }
  return { host: m[1], port };
}

/** A host name or literal -> a numeric IP (first IPv4 answer preferred). */
export async function resolveHost(host: string): Promise<string> {
  if (isIP(host)) return host;
  try {
    const found = await lookup(host, { family: 0, order: 'ipv4first' });
    return found.address;
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'ERROR';
    throw new UserError(`cannot resolve '${host}' (${code})`);
  }
}

/** HOST:PORT for printing, with brackets around IPv6. */
export function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

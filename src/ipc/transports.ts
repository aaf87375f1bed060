// bench ipc's transports by the names users see. The addon (native/ipc/transports.c) spells two of
// them the old way; the names are mapped here, at the boundary, and nowhere else.
import { native } from '../native.js';

/** The addon's name -> the name users see (the old spellings stay accepted: src/aliases.ts). */
const fromAddon: Readonly<Record<string, string>> = { 'uring-stream': 'io_uring-stream', 'shm-ring': 'shm-queue' };
const toAddon = Object.fromEntries(Object.entries(fromAddon).map(([a, b]) => [b, a]));

/** Every transport the addon has, in its table's order, by the names users see. */
export const transportNames: readonly string[] = native.ipcTransports.map((t) => fromAddon[t] ?? t);

/** The addon's name of a transport. */
export function addonTransport(name: string): string {
  return toAddon[name] ?? name;
}

/** A message of the addon that begins with its name of `name`, begun with the user's instead
 * ("shm-ring delivered wrong bytes..."). */
export function inUserWords(name: string, message: string): string {
  const addon = addonTransport(name);
  return addon !== name && message.startsWith(`${addon} `) ? `${name}${message.slice(addon.length)}` : message;
}

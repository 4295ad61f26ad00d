import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { InputError } from '../../kb/errors.ts';

/**
 * Writes JSON out item by item (a tasks file holds the note once per mention: it can be large), as
 * a JSON array with one item per line — Label Studio imports it, and the import's refusals can name
 * the line of each task — or as JSON lines.
 */
export async function writeJsonItems(path: string, items: Iterable<unknown>, form: 'array' | 'lines'): Promise<number> {
  const out = createWriteStream(path);
  let failure: Error | undefined;
  out.on('error', (error) => (failure ??= error));
  let count = 0;
  const write = async (text: string) => {
    if (failure) return;
    if (!out.write(text)) await Promise.race([once(out, 'drain'), once(out, 'error')]);
  };
  if (form === 'array') await write('[');
  for (const item of items) {
    const json = JSON.stringify(item);
    await write(form === 'array' ? `${count === 0 ? '\n' : ',\n'}${json}` : `${json}\n`);
    count++;
  }
  if (form === 'array') await write(count === 0 ? ']\n' : '\n]\n');
  await new Promise<void>((resolve) => out.end(resolve));
  if (failure) throw new InputError(`cannot write ${path}: ${failure.message}`, 'BAD_OUTPUT', failure);
  return count;
}

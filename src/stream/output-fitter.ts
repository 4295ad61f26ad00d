import { createHash } from 'node:crypto';
import type { OutboundRecord as Message } from './kafka/client-types.ts';
import { CuilinkError } from '../kb/errors.ts';
import type { LinkedNote } from '../link/types.ts';
import type { DeadLetterInfo, EncodedRecord, StageCodec } from './stage-codec.ts';
import { recordBytes, type TopicSizeLimits } from './topic-size-limits.ts';

/** Header on a LinkedNote whose candidate lists were cut to fit the output topic: the most kept per mention. */
export const CANDIDATES_CUT_HEADER = 'cuilink-candidates-cut';
/** A dead letter's original key is cut to this many bytes when the whole record does not fit. */
const MAX_CUT_KEY_BYTES = 256;

/**
 * Makes every record the stage produces fit its topic's `max.message.bytes`, by documented rules:
 * - a LinkedNote too large keeps fewer candidates per mention (halving down to 0; the chosen
 *   concept stays on each mention), with the CANDIDATES_CUT_HEADER; if even none fit, undefined:
 *   the input is dead-lettered OUTPUT_TOO_LARGE instead;
 * - a dead letter too large carries a cut original (then a cut key and no original headers),
 *   marked `originalTruncated`, with the whole original's SHA-256 and size, and its source topic,
 *   partition and offset so that it can be found again.
 */
export class OutputFitter {
  constructor(
    private readonly codec: StageCodec,
    private readonly sizes: TopicSizeLimits,
  ) {}

  async linked(topic: string, note: LinkedNote, toMessage: (encoded: EncodedRecord) => Message): Promise<Message | undefined> {
    const full = toMessage(await this.codec.encodeLinkedNote(note, topic));
    if (this.sizes.fits(topic, full)) return full;
    // Not Math.max(...): a note may have more mentions than a call takes arguments (RangeError).
    const most = note.mentions.reduce((max, m) => Math.max(max, m.candidates.length), 0);
    for (let keep = Math.floor(most / 2); ; keep = Math.floor(keep / 2)) {
      const cut: LinkedNote = { ...note, mentions: note.mentions.map((m) => ({ ...m, candidates: m.candidates.slice(0, keep) })) };
      const encoded = toMessage(await this.codec.encodeLinkedNote(cut, topic));
      const message = { ...encoded, headers: { ...encoded.headers, [CANDIDATES_CUT_HEADER]: String(keep) } };
      if (this.sizes.fits(topic, message)) return message;
      if (keep === 0) return undefined;
    }
  }

  /** The dead letter as a message for `topic`; `cut` when its original had to be cut to fit. */
  async deadLetter(topic: string, info: DeadLetterInfo, toMessage: (encoded: EncodedRecord, key: Buffer | null) => Message): Promise<{ message: Message; cut: boolean }> {
    const full = toMessage(await this.codec.encodeDeadLetter(info, topic), info.key);
    if (this.sizes.fits(topic, full)) return { message: full, cut: false };
    const value = info.value ?? Buffer.alloc(0);
    const truncated = { sha256: createHash('sha256').update(value).digest('hex'), size: value.length };
    const budget = this.sizes.recordBudget(topic);
    const attempts: DeadLetterInfo[] = [
      { ...info, truncated },
      { ...info, truncated, key: info.key?.subarray(0, MAX_CUT_KEY_BYTES) ?? null, headers: {} },
    ];
    for (const base of attempts) {
      const empty = toMessage(await this.codec.encodeDeadLetter({ ...base, value: Buffer.alloc(0) }, topic), base.key);
      // Room for the original: what is left beside everything else, less the length prefix's growth.
      let room = budget - recordBytes(empty) - 8;
      while (room >= 0) {
        const message = toMessage(await this.codec.encodeDeadLetter({ ...base, value: value.subarray(0, room) }, topic), base.key);
        const over = recordBytes(message) - budget;
        if (over <= 0) return { message, cut: true };
        room -= over;
      }
    }
    throw new CuilinkError('DEAD_LETTER_TOO_LARGE', `${topic} accepts at most ${this.sizes.maxMessageBytes(topic)} bytes per record batch: not even a dead letter without its original fits`);
  }
}

import { readFileSync } from 'node:fs';
import { Tokenizer } from '@huggingface/tokenizers';
import { InputError } from '../kb/errors.ts';

/** One tokenized sequence with its special tokens, ready for a BERT-style encoder. */
export interface TokenizedSequence {
  ids: number[];
  /** Segment ids: 0 for the first text (and [CLS]), 1 for the pair's second text. */
  typeIds: number[];
}

/**
 * A BERT WordPiece tokenizer read from a model directory's tokenizer.json (no network). It does
 * its own truncation: a marked mention keeps its markers and the words around them, and pairs
 * are cut as Hugging Face's longest_first cuts them, as the Python training side does.
 */
export class WordPieceTokenizer {
  private readonly tokenizer: Tokenizer;
  private readonly cls: number;
  private readonly sep: number;
  readonly padId: number;
  private readonly asTrained: (text: string) => string;

  private constructor(tokenizer: Tokenizer, cls: number, sep: number, padId: number, asTrained: (text: string) => string) {
    this.tokenizer = tokenizer;
    this.asTrained = asTrained;
    this.cls = cls;
    this.sep = sep;
    this.padId = padId;
  }

  static load(file: string): WordPieceTokenizer {
    let json: { added_tokens?: { id: number; content: string }[]; normalizer?: BertNormalizerConfig | null };
    try {
      json = JSON.parse(readFileSync(file, 'utf8')) as typeof json;
    } catch (error) {
      throw new InputError(`cannot read tokenizer ${file}: ${(error as Error).message}`, 'BAD_MODEL', error);
    }
    const tokenizer = new Tokenizer(json, {});
    const special = tokenizer.encode('', { add_special_tokens: true }).ids;
    if (special.length !== 2) throw new InputError(`${file}: expected a [CLS] … [SEP] template, got ${special.length} special tokens`, 'BAD_MODEL');
    const pad = json.added_tokens?.find((t) => t.content === '[PAD]')?.id ?? 0;
    return new WordPieceTokenizer(tokenizer, special[0]!, special[1]!, pad, rustNormalizerParity(json.normalizer));
  }

  /** Id of a single token (a marker), or undefined when the vocabulary lacks it. */
  tokenId(token: string): number | undefined {
    const ids = this.tokenizer.encode(token, { add_special_tokens: false }).ids;
    return ids.length === 1 ? ids[0] : undefined;
  }

  pieces(text: string): number[] {
    return this.tokenizer.encode(this.asTrained(text), { add_special_tokens: false }).ids;
  }

  /** `[CLS] text [SEP]` in at most maxLength tokens; the window follows `anchorId` when given. */
  encode(text: string, maxLength: number, anchorId?: number): TokenizedSequence {
    const ids = fitAround(this.pieces(text), maxLength - 2, anchorId);
    return { ids: [this.cls, ...ids, this.sep], typeIds: new Array<number>(ids.length + 2).fill(0) };
  }

  /** `[CLS] a [SEP] b [SEP]` in at most maxLength tokens, cut as longest_first cuts (see longestFirstLengths). */
  encodePair(a: string, b: string, maxLength: number, anchorId?: number): TokenizedSequence {
    let first = this.pieces(a);
    let second = this.pieces(b);
    const [keepFirst, keepSecond] = longestFirstLengths(first.length, second.length, Math.max(2, maxLength - 3));
    first = fitAround(first, keepFirst, anchorId);
    second = second.slice(0, keepSecond);
    return {
      ids: [this.cls, ...first, this.sep, ...second, this.sep],
      typeIds: [...new Array<number>(first.length + 2).fill(0), ...new Array<number>(second.length + 1).fill(1)],
    };
  }
}

interface BertNormalizerConfig {
  type?: string;
  handle_chinese_chars?: boolean;
  lowercase?: boolean;
}

/** CJK ideographs outside the BMP, as the Rust BertNormalizer lists them (the BMP ones the JS port finds). */
const ASTRAL_CJK = /[\u{20000}-\u{2A6DF}\u{2A700}-\u{2B73F}\u{2B740}-\u{2B81F}\u{2B920}-\u{2CEAF}\u{2F800}-\u{2FA1F}]/gu;

/**
 * Where the JS BertNormalizer differs from the Rust one the models were trained with (Python
 * `tokenizers`), undone on the raw text: it looks for CJK ideographs one UTF-16 unit at a time, so
 * one outside the BMP is not split off its word ("a𠀀b" is one [UNK], not a, [UNK], b), and its
 * String.toLowerCase turns a word-final 'Σ' into 'ς', where Rust lower-cases each character alone
 * to 'σ' (different ids). Both edits leave text without such characters unchanged.
 */
function rustNormalizerParity(normalizer: BertNormalizerConfig | null | undefined): (text: string) => string {
  if (normalizer?.type !== 'BertNormalizer') return (text) => text;
  const chinese = normalizer.handle_chinese_chars === true;
  const lowercase = normalizer.lowercase === true;
  return (text) => {
    let out = chinese ? text.replace(ASTRAL_CJK, ' $& ') : text;
    if (lowercase) out = out.replaceAll('Σ', 'σ');
    return out;
  };
}

/**
 * Tokens each side of a pair keeps, as Hugging Face's truncation="longest_first" (the tokenizers
 * Rust rule) keeps them: the default cross-encoder was trained on those cuts. The longer side is
 * cut to what the shorter leaves; when both are over half, each keeps half and the longer one the
 * odd token (the second on a tie), which is not what cutting one token at a time gives.
 */
function longestFirstLengths(first: number, second: number, budget: number): [number, number] {
  if (first + second <= budget) return [first, second];
  let keepShorter = Math.min(first, second);
  let keepLonger = Math.max(keepShorter, budget - keepShorter);
  if (keepShorter + keepLonger > budget) {
    keepShorter = Math.floor(budget / 2);
    keepLonger = keepShorter + (budget % 2);
  }
  return first > second ? [keepLonger, keepShorter] : [keepShorter, keepLonger];
}

/** At most `max` ids; when too long, a window centred on the first `anchorId` rather than the head. */
function fitAround(ids: number[], max: number, anchorId?: number): number[] {
  if (ids.length <= max) return ids;
  const at = anchorId === undefined ? -1 : ids.indexOf(anchorId);
  if (at < 0) return ids.slice(0, max);
  const start = Math.min(Math.max(0, at - Math.floor(max / 4)), ids.length - max);
  return ids.slice(start, start + max);
}

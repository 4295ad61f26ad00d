import { isUtf8 } from 'node:buffer';
import avro from 'avsc';
import { CuilinkError } from '../../kb/errors.ts';

/**
 * Limits checked on the encoded bytes before any record is built from them: a count or a length
 * above these is rejected with `code` (e.g. NOTE_TOO_LARGE) without allocating anything for it.
 */
export interface DecodeLimits {
  /** Most items in any one array or map. */
  maxArrayItems?: number;
  /** Most bytes in any one string or bytes value. */
  maxStringBytes?: number;
  /** The code a limit breach is reported with; RECORD_TOO_LARGE when absent. */
  code?: string;
}

/** Items with an encoded size of 0 (null, empty records) bound an array by this, whatever the limits say. */
const MAX_ZERO_SIZE_ITEMS = 1_000_000;

/**
 * The deepest a value may nest (records, arrays, maps, unions in one another; cuilink's own
 * schemas nest 7 deep). A writer schema from a registry may be recursive (a NoteEvent evolved with
 * an optional `previous: NoteEvent` is a compatible change), and its record as deep as its bytes
 * allow: walked without a bound, 10,000 levels (90 KB) overflowed the stack, a RangeError that
 * stopped the stream stage instead of dead-lettering the record.
 */
const MAX_NESTING = 64;

/**
 * Walks Avro binary `bytes` against the writer schema without building the record, checking
 * every length prefix and block count against the bytes left and against `limits`, and every
 * string for valid UTF-8. avsc itself trusts counts (an array claiming 2^31 - 1 items in a 9-byte
 * value makes it allocate and loop for minutes), so this runs before it. The walk is linear in
 * the bytes: every item it visits consumes at least one byte, or is bounded by MAX_ZERO_SIZE_ITEMS.
 * Throws CuilinkError UNDECODABLE (truncated, bad varint, bad union branch, trailing bytes),
 * BAD_TEXT_ENCODING (a string that is not UTF-8, e.g. a lone surrogate) or `limits.code` (also
 * for values nested deeper than MAX_NESTING).
 */
export function checkAvroBounds(writer: avro.Type, bytes: Buffer, kind: string, limits: DecodeLimits = {}): void {
  const walker = new BoundsWalker(bytes, kind, limits);
  walker.visit(writer, writer.name ?? kind);
  if (walker.pos !== bytes.length) throw walker.undecodable(`${bytes.length - walker.pos} trailing bytes after the record`);
}

const minSizes = new WeakMap<avro.Type, number>();

/** The fewest bytes a value of `type` can take. */
function minSize(type: avro.Type): number {
  const known = minSizes.get(type);
  if (known !== undefined) return known;
  minSizes.set(type, 0); // guards recursive schemas while computing
  const t = unwrap(type);
  let size: number;
  switch (t.typeName) {
    case 'null':
      size = 0;
      break;
    case 'float':
      size = 4;
      break;
    case 'double':
      size = 8;
      break;
    case 'fixed':
      size = (t as unknown as { size: number }).size;
      break;
    case 'record':
    case 'error':
      size = (t as avro.types.RecordType).fields.reduce((sum, f) => sum + minSize(f.type), 0);
      break;
    default:
      size = 1; // boolean, int, long, enum, string, bytes, union, array, map
  }
  minSizes.set(type, size);
  return size;
}

/** A logical type's underlying type (duck-typed: a registry client may carry its own avsc copy). */
function unwrap(type: avro.Type): avro.Type {
  const underlying = (type as { underlyingType?: avro.Type }).underlyingType;
  return underlying ?? type;
}

class BoundsWalker {
  pos = 0;
  private depth = 0;

  constructor(
    private readonly bytes: Buffer,
    private readonly kind: string,
    private readonly limits: DecodeLimits,
  ) {}

  undecodable(why: string): CuilinkError {
    return new CuilinkError('UNDECODABLE', `value is not a readable ${this.kind} Avro record: ${why}`);
  }

  private tooLarge(why: string): CuilinkError {
    return new CuilinkError(this.limits.code ?? 'RECORD_TOO_LARGE', `${this.kind} ${why}`);
  }

  visit(type: avro.Type, path: string): void {
    // No unwinding on a throw: any error ends the walk.
    if (++this.depth > MAX_NESTING) throw this.tooLarge(`${path.slice(0, 120)}${path.length > 120 ? '…' : ''}: values nested more than ${MAX_NESTING} deep`);
    this.visitValue(type, path);
    this.depth--;
  }

  private visitValue(type: avro.Type, path: string): void {
    const t = unwrap(type);
    switch (t.typeName) {
      case 'null':
        return;
      case 'boolean':
        this.need(1, path);
        if (this.bytes[this.pos]! > 1) throw this.undecodable(`${path}: invalid boolean`);
        this.pos += 1;
        return;
      case 'int':
        this.varint(5, path);
        return;
      case 'long':
        this.varint(10, path);
        return;
      case 'float':
        this.skip(4, path);
        return;
      case 'double':
        this.skip(8, path);
        return;
      case 'fixed':
        this.skip((t as unknown as { size: number }).size, path);
        return;
      case 'enum': {
        const index = this.varint(5, path);
        if (index < 0 || index >= (t as avro.types.EnumType).symbols.length) throw this.undecodable(`${path}: enum index ${index} out of range`);
        return;
      }
      case 'string':
      case 'bytes': {
        const length = this.length(path);
        if (this.limits.maxStringBytes !== undefined && length > this.limits.maxStringBytes) throw this.tooLarge(`${path}: ${length} bytes exceeds the limit of ${this.limits.maxStringBytes}`);
        this.need(length, path);
        if (t.typeName === 'string' && !isUtf8(this.bytes.subarray(this.pos, this.pos + length))) {
          throw new CuilinkError('BAD_TEXT_ENCODING', `${this.kind} ${path}: not valid UTF-8 (invalid bytes or a lone surrogate); offsets and mention text would not match what the producer meant`);
        }
        this.pos += length;
        return;
      }
      case 'record':
      case 'error':
        for (const field of (t as avro.types.RecordType).fields) this.visit(field.type, `${path}.${field.name}`);
        return;
      case 'array':
        this.blocks((t as avro.types.ArrayType).itemsType, path, false);
        return;
      case 'map':
        this.blocks((t as avro.types.MapType).valuesType, path, true);
        return;
      default: {
        if (t.typeName.startsWith('union')) {
          const branches = (t as avro.types.UnwrappedUnionType).types;
          const index = this.varint(10, path);
          if (index < 0 || index >= branches.length) throw this.undecodable(`${path}: union branch ${index} out of range`);
          this.visit(branches[index]!, path);
          return;
        }
        throw this.undecodable(`${path}: unsupported Avro type ${t.typeName}`);
      }
    }
  }

  /** Array or map blocks: a count (negative: followed by the block's byte size), items, until a 0 count. */
  private blocks(itemType: avro.Type, path: string, isMap: boolean): void {
    const itemMin = minSize(itemType) + (isMap ? 1 : 0);
    let total = 0;
    for (;;) {
      let count = this.varint(10, path);
      if (count === 0) return;
      if (count < 0) {
        count = -count;
        const size = this.varint(10, path);
        if (size < 0) throw this.undecodable(`${path}: negative block size`);
        this.need(size, path);
      }
      total += count;
      if (this.limits.maxArrayItems !== undefined && total > this.limits.maxArrayItems) throw this.tooLarge(`${path}: ${total} items exceeds the limit of ${this.limits.maxArrayItems}`);
      const left = this.bytes.length - this.pos;
      if (itemMin > 0 ? count * itemMin > left : total > MAX_ZERO_SIZE_ITEMS) throw this.undecodable(`${path}: claims ${count} items but only ${left} bytes are left`);
      for (let i = 0; i < count; i++) {
        if (isMap) this.visit(STRING_TYPE, `${path}{key}`);
        this.visit(itemType, `${path}[${total - count + i}]`);
      }
    }
  }

  private length(path: string): number {
    const length = this.varint(10, path);
    if (length < 0) throw this.undecodable(`${path}: negative length`);
    return length;
  }

  private need(n: number, path: string): void {
    if (n > this.bytes.length - this.pos) throw this.undecodable(`${path}: needs ${n} bytes but only ${this.bytes.length - this.pos} are left`);
  }

  private skip(n: number, path: string): void {
    this.need(n, path);
    this.pos += n;
  }

  /** A zig-zag varint of at most `maxBytes` bytes, as a (possibly imprecise above 2^53) number. */
  private varint(maxBytes: number, path: string): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < maxBytes; i++) {
      if (this.pos >= this.bytes.length) throw this.undecodable(`${path}: truncated`);
      const byte = this.bytes[this.pos++]!;
      value += (byte & 0x7f) * scale;
      scale *= 128;
      if ((byte & 0x80) === 0) return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
    }
    throw this.undecodable(`${path}: varint longer than ${maxBytes} bytes`);
  }
}

const STRING_TYPE = avro.Type.forSchema('string');
